//! [`Collection`]: a named collection of documents, with server writes and rule-checked client writes.
//!
//! | part | file |
//! |---|---|
//! | the handle, its options, ids, schema and timestamps | `mod.rs` |
//! | server writes and reads (no rules) | `server.rs` |
//! | rules, client writes, conditional writes, field checks | `client.rs` |
//! | write hooks (before and after each write) | `hooks.rs` |
//! | write events (jobs stored with each write, such as webhook deliveries) | `events.rs` |
//! | aggregates and search over what a publication publishes ([`crate::Platform::aggregate_publication`]) | `aggregate.rs` |

mod aggregate;
mod client;
mod events;
mod hooks;
mod server;

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, RwLock};

use portico_store::{Document, IdKind, Selector, Store, Update};
use serde_json::Value;

use crate::field_rules::{FieldRules, FieldView, roles_of};
use crate::rules::RuleSet;
use crate::schema::Schema;
use crate::time::now_iso;
use crate::timestamps;
use crate::{Error, Result};

pub use client::{IfMatch, PROTECTED_ACCOUNT_FIELDS};
pub use events::WriteEvents;
pub use hooks::{HookOp, HookWhen, WriteHooks, hook_refusal};

/// How a collection is declared.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::{CollectionOptions, IdKind};
///
/// let options = CollectionOptions::default()
///     .id_kind(IdKind::ObjectId)
///     .timestamps(true)
///     .search(["title", "body"]);
/// assert_eq!(options.search, ["title", "body"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CollectionOptions {
    /// How new `_id`s are made (random 17-character ids, or 24-hex object ids).
    pub id_kind: IdKind,
    /// A JSON Schema every inserted document, and every document an update produces, must satisfy
    /// (validated without `_id`).
    pub schema: Option<Value>,
    /// Stamps `createdAt` on every inserted document and `updatedAt` on every write (server
    /// time, ISO-8601 strings as account records hold them), on server and client writes alike;
    /// values a writer gives for them are replaced, and a replacement keeps `createdAt`.
    pub timestamps: bool,
    /// Field-level read rules: which callers see which fields (see [`FieldRules`]). A caller
    /// who fails a field's rules never sees it, cannot query on it and cannot write it.
    pub field_rules: FieldRules,
    /// Fields holding ids of other collections' documents, which reads may expand (see
    /// [`crate::Platform::expand`]).
    pub relations: crate::relations::Relations,
    /// The fields full-text search covers (`search = ["title", "body"]`); none: the collection
    /// cannot be searched (see [`Collection::search`]).
    pub search: Vec<String>,
    /// Sorted indexes (`["city", "-createdAt"]`, see [`portico_store::IndexSpec`]), made by
    /// [`crate::Platform::ensure_indexes`]: sorted and filtered lists they serve read only the
    /// entries they need instead of the whole collection.
    pub indexes: Vec<portico_store::IndexSpec>,
}

impl CollectionOptions {
    /// Sets [`id_kind`](CollectionOptions::id_kind): how new `_id`s are made.
    pub fn id_kind(mut self, id_kind: IdKind) -> Self {
        self.id_kind = id_kind;
        self
    }

    /// Sets [`schema`](CollectionOptions::schema): a JSON Schema every inserted document, and every
    /// document an update produces, must satisfy (validated without `_id`) (to `Some`).
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// Sets [`timestamps`](CollectionOptions::timestamps): stamps `createdAt` on every inserted
    /// document and `updatedAt` on every write (server time, ISO-8601 strings as account records
    /// hold them), on server and client writes alike.
    pub fn timestamps(mut self, timestamps: bool) -> Self {
        self.timestamps = timestamps;
        self
    }

    /// Sets [`field_rules`](CollectionOptions::field_rules): field-level read rules.
    pub fn field_rules(mut self, field_rules: FieldRules) -> Self {
        self.field_rules = field_rules;
        self
    }

    /// Sets [`relations`](CollectionOptions::relations): fields holding ids of other collections'
    /// documents, which reads may expand (see [`crate::Platform::expand`]).
    pub fn relations(mut self, relations: crate::relations::Relations) -> Self {
        self.relations = relations;
        self
    }

    /// Sets [`search`](CollectionOptions::search): the fields full-text search covers (`search =
    /// ["title", "body"]`).
    pub fn search<S: Into<String>>(mut self, search: impl IntoIterator<Item = S>) -> Self {
        self.search = search.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`indexes`](CollectionOptions::indexes): sorted indexes (`["city", "-createdAt"]`, see
    /// [`portico_store::IndexSpec`]), made by [`crate::Platform::ensure_indexes`].
    pub fn indexes(mut self, indexes: Vec<portico_store::IndexSpec>) -> Self {
        self.indexes = indexes;
        self
    }
}

/// Where a collection learns which of its fields only server code writes: the file fields its
/// platform's files service declares (their metadata changes only by an upload or a delete).
/// Asked on each client write, so a field declared after the collection is covered too.
pub(crate) trait ServerFields: Send + Sync {
    /// The server-written fields of `collection`.
    fn of(&self, collection: &str) -> Vec<String>;
}

struct Inner {
    name: String,
    options: CollectionOptions,
    schema: Option<Schema>,
    store: Arc<dyn Store>,
    rules: RwLock<RuleSet>,
    server_fields: Arc<dyn ServerFields>,
    hooks: RwLock<Option<Arc<dyn WriteHooks>>>,
    events: RwLock<Option<Arc<dyn WriteEvents>>>,
}

/// A collection handle. Cheap to clone; clones share the rules.
///
/// Server-side methods (`insert`, `update`, ...) apply no rules (the schema is still validated);
/// the `client_*` methods apply the allow/deny rules first.
#[derive(Clone)]
pub struct Collection {
    inner: Arc<Inner>,
}

impl fmt::Debug for Collection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Collection")
            .field("name", &self.inner.name)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Collection {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        name: &str,
        options: CollectionOptions,
        server_fields: Arc<dyn ServerFields>,
    ) -> Result<Collection> {
        if name.is_empty() || name.starts_with('$') || name.contains('\0') {
            return Err(Error::InvalidArgument(format!(
                "invalid collection name {name:?}"
            )));
        }
        let schema = options.schema.as_ref().map(Schema::compile).transpose()?;
        Ok(Collection {
            inner: Arc::new(Inner {
                name: name.to_string(),
                options,
                schema,
                store,
                rules: RwLock::new(RuleSet::default()),
                server_fields,
                hooks: RwLock::new(None),
                events: RwLock::new(None),
            }),
        })
    }

    /// A collection with default options and no name check (the store refuses unusable names on use).
    pub(crate) fn unchecked(
        store: Arc<dyn Store>,
        name: &str,
        server_fields: Arc<dyn ServerFields>,
    ) -> Collection {
        Collection {
            inner: Arc::new(Inner {
                name: name.to_string(),
                options: CollectionOptions::default(),
                schema: None,
                store,
                rules: RwLock::new(RuleSet::default()),
                server_fields,
                hooks: RwLock::new(None),
                events: RwLock::new(None),
            }),
        }
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// How new ids are made.
    pub fn id_kind(&self) -> IdKind {
        self.inner.options.id_kind
    }

    /// The options it was declared with.
    pub fn options(&self) -> &CollectionOptions {
        &self.inner.options
    }

    /// What the caller `user_id` may see of this collection's documents: the collection's field
    /// rules for that caller (their roles are read from the `users` collection when a rule
    /// names a role, so a role change applies at once).
    ///
    /// # Errors
    /// Store failures of the role lookup.
    pub async fn field_view(&self, user_id: Option<&str>) -> Result<FieldView> {
        let rules = &self.inner.options.field_rules;
        if rules.is_empty() {
            return Ok(FieldView::all());
        }
        let roles = if rules.needs_roles() {
            caller_roles(self.store(), user_id).await?
        } else {
            Vec::new()
        };
        Ok(rules.view(user_id, &roles))
    }

    /// [`Collection::field_view`] for a caller whose roles were read already.
    pub(crate) fn field_view_with(&self, user_id: Option<&str>, roles: &[String]) -> FieldView {
        self.inner.options.field_rules.view(user_id, roles)
    }

    /// True when some field rule of this collection depends on the caller's roles.
    pub(crate) fn field_rules_need_roles(&self) -> bool {
        self.inner.options.field_rules.needs_roles()
    }

    /// Keeps a sorted index over `spec` (see [`portico_store::IndexSpec`]), created and
    /// filled now when missing: lists sorted by its fields (after equality on the fields
    /// before them), and equality, `$in` and ranges on its fields, then read only the index
    /// entries they need. Results never change, only what they cost.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use portico_platform::Platform;
    /// use portico_store::IndexSpec;
    ///
    /// let platform = Platform::open("memory:").await?;
    /// let tasks = platform.collection("tasks");
    /// tasks.ensure_index(&IndexSpec::new(["ownerId", "-createdAt"])?).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Store`] for a unique spec over stored duplicates or a document with too many
    /// values for the index; store failures.
    pub async fn ensure_index(&self, spec: &portico_store::IndexSpec) -> Result<()> {
        Ok(self.store().ensure_sorted_index(self.name(), spec).await?)
    }

    /// The page of documents holding every word of `search.text` in the collection's search
    /// fields (its `search` option; `search.fields` is set from it), best first, with how many
    /// match in all. No rules apply: a door narrows `search.selector` to the caller's scope and
    /// refuses a search over fields hidden from the caller.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the collection has no search fields; store failures
    /// (also when the index was not made: see [`crate::Platform::ensure_search_indexes`]).
    pub async fn search(&self, search: &portico_store::Search) -> Result<(Vec<Document>, u64)> {
        let fields = &self.inner.options.search;
        if fields.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "The collection {} cannot be searched (it has no search fields)",
                self.name()
            )));
        }
        let mut search = search.clone();
        search.fields.clone_from(fields);
        Ok(self.store().search(self.name(), &search).await?)
    }

    /// True when some field of this collection has read rules.
    pub fn has_field_rules(&self) -> bool {
        !self.inner.options.field_rules.is_empty()
    }

    fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    fn validate(&self, doc: &Document) -> Result<()> {
        match &self.inner.schema {
            Some(schema) => schema.validate(doc),
            None => Ok(()),
        }
    }

    /// Gives `doc` a new `_id` of this collection's kind when it has none.
    fn ensure_id(&self, doc: &mut Document) -> Result<String> {
        match doc.get("_id") {
            None | Some(Value::Null) => {
                let id = self.id_kind().generate();
                // `_id` first, as stored documents show it.
                // In place, not a new map: a body parsed by the doors has room for `_id` and
                // the timestamps (see `portico_store::json::parse_bounded`).
                doc.shift_insert(0, "_id".into(), Value::String(id.clone()));
                Ok(id)
            }
            Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
            Some(_) => Err(Error::InvalidArgument(
                "_id must be a non-empty string".into(),
            )),
        }
    }

    /// The document an upsert inserts, with an `_id` of this collection's kind unless the
    /// selector or the update names one.
    fn upsert_document(&self, selector: &Selector, update: &Update) -> Result<Document> {
        let mut doc = update.upsert_document(selector)?;
        if self.id_kind() != IdKind::Random {
            // The store makes a fresh random id when none is given: two calls then disagree.
            let again = update.upsert_document(selector)?;
            if again.get("_id") != doc.get("_id") {
                doc.insert("_id".into(), Value::String(self.id_kind().generate()));
            }
        }
        Ok(doc)
    }

    /// Stamps a new document when the collection keeps timestamps.
    fn stamp_new(&self, doc: &mut Document) {
        if self.inner.options.timestamps {
            timestamps::stamp_new(doc, &now_iso());
        }
    }

    /// `update` with `updatedAt` (and for a replacement the kept `createdAt`) when the collection
    /// keeps timestamps; as given when it does not. A borrowed update is cloned to be stamped
    /// (a replacement's document is shared, a modifier's values copied); a given one is not.
    async fn stamp_update<'u>(
        &self,
        selector: &Selector,
        update: Cow<'u, Update>,
    ) -> Result<Cow<'u, Update>> {
        if !self.inner.options.timestamps {
            return Ok(update);
        }
        let created = if update.is_replacement() {
            self.find_one(selector)
                .await?
                .and_then(|doc| doc.get(timestamps::CREATED_AT).cloned())
        } else {
            None
        };
        timestamps::stamp_update(update.into_owned(), created, &now_iso()).map(Cow::Owned)
    }
}

/// The roles of the caller `user_id` (none for an anonymous caller or a removed account), read
/// from the store: field rules see a role change at once.
pub(crate) async fn caller_roles(store: &dyn Store, user_id: Option<&str>) -> Result<Vec<String>> {
    let Some(id) = user_id else {
        return Ok(Vec::new());
    };
    Ok(store
        .get(crate::accounts::USERS, id)
        .await?
        .map(|user| roles_of(&user))
        .unwrap_or_default())
}
