//! [`Collection`]: a named collection of documents, with server writes and rule-checked client writes.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use portico_store::{
    Document, IdKind, Query, Selector, Store, Update, UpdateOptions, UpdateResult,
};
use serde_json::Value;

use crate::rules::{RuleSet, Write};
use crate::schema::Schema;
use crate::time::now_iso;
use crate::timestamps;
use crate::{Cursor, Error, Result, Rules};

/// How a collection is declared.
#[derive(Debug, Clone, Default, PartialEq)]
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
}

struct Inner {
    name: String,
    options: CollectionOptions,
    schema: Option<Schema>,
    store: Arc<dyn Store>,
    rules: RwLock<RuleSet>,
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
            }),
        })
    }

    /// A collection with default options and no name check (the store refuses unusable names on use).
    pub(crate) fn unchecked(store: Arc<dyn Store>, name: &str) -> Collection {
        Collection {
            inner: Arc::new(Inner {
                name: name.to_string(),
                options: CollectionOptions::default(),
                schema: None,
                store,
                rules: RwLock::new(RuleSet::default()),
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
    /// keeps timestamps; `None` when it does not.
    async fn stamp_update(&self, selector: &Selector, update: &Update) -> Result<Option<Update>> {
        if !self.inner.options.timestamps {
            return Ok(None);
        }
        let created = if update.is_replacement() {
            self.find_one(selector)
                .await?
                .and_then(|doc| doc.get(timestamps::CREATED_AT).cloned())
        } else {
            None
        };
        timestamps::stamp_update(update, created, &now_iso()).map(Some)
    }

    // ----- server side: no rules -----

    /// Refuses field names a client may not write: `$`-prefixed ones (a client document is data,
    /// never an operator) and dotted or empty ones (unreachable by path), at any depth. The
    /// top-level `_id` is the one exception.
    fn check_client_fields(doc: &Document) -> Result<()> {
        doc.iter()
            .filter(|(k, _)| *k != "_id")
            .try_for_each(|(k, v)| check_field(k, v, ""))
    }

    /// Refuses a client write to an account's `roles` or `services` (or anything under them):
    /// only server code (the CLI, the admin page, the accounts service) changes those, whatever
    /// the collection's rules say. `fields` are the top-level fields the write sets.
    fn check_protected<'a>(&self, fields: impl IntoIterator<Item = &'a str>) -> Result<()> {
        if self.name() != crate::accounts::USERS {
            return Ok(());
        }
        match fields
            .into_iter()
            .find(|f| PROTECTED_ACCOUNT_FIELDS.contains(f))
        {
            Some(field) => Err(Error::ProtectedField(field.to_owned())),
            None => Ok(()),
        }
    }

    /// Inserts `doc` (a new `_id` of the collection's kind when it has none) and returns its `_id`.
    ///
    /// # Errors
    /// [`Error::Validation`] when the schema refuses it; a store error for a duplicate `_id`.
    pub async fn insert(&self, doc: Document) -> Result<String> {
        let doc = self.prepared_insert(doc)?;
        Ok(self.store().insert(self.name(), doc).await?)
    }

    /// [`Collection::insert`], returning the document as stored (with its `_id` and
    /// timestamps), so a reply can show it without reading it back.
    ///
    /// # Errors
    /// As [`Collection::insert`].
    pub async fn insert_returning(&self, doc: Document) -> Result<Document> {
        let doc = self.prepared_insert(doc)?;
        self.store().insert(self.name(), doc.clone()).await?;
        Ok(doc)
    }

    /// The document [`Collection::insert`] would store, for a writer that stores it itself (a
    /// batch of writes in one store transaction, [`Store::batch`]): `doc` with an `_id` of the
    /// collection's kind when it has none, `createdAt`/`updatedAt` when the collection keeps
    /// timestamps, checked against the schema.
    ///
    /// # Errors
    /// As [`Collection::insert`], before anything is written.
    pub fn prepared_insert(&self, mut doc: Document) -> Result<Document> {
        self.ensure_id(&mut doc)?;
        self.stamp_new(&mut doc);
        self.validate(&doc)?;
        Ok(doc)
    }

    /// The update [`Collection::update`] would apply to what `selector` finds, for a writer
    /// that applies it itself: with `updatedAt` when the collection keeps timestamps, and for a
    /// replacement the `createdAt` of the document found now (server time when there is none).
    ///
    /// # Errors
    /// Store failures of the read, an update that cannot take the stamp.
    pub async fn prepared_update(&self, selector: &Selector, update: &Update) -> Result<Update> {
        Ok(self
            .stamp_update(selector, update)
            .await?
            .unwrap_or_else(|| update.clone()))
    }

    /// [`Collection::insert`], returning the `_id` and the document's JSON text as stored (see
    /// [`Store::insert_json`]): for a reply that embeds it, with no copy of the document made.
    ///
    /// # Errors
    /// As [`Collection::insert`].
    pub async fn insert_json(&self, mut doc: Document) -> Result<(String, String)> {
        self.ensure_id(&mut doc)?;
        self.stamp_new(&mut doc);
        self.validate(&doc)?;
        Ok(self.store().insert_json(self.name(), doc).await?)
    }

    /// Inserts every document of `docs`, all or none, and returns their `_id`s in order.
    ///
    /// Each document is checked as by [`Collection::insert`] (a new `_id` of the collection's
    /// kind when it has none, then the schema) before anything is written; then all of them are
    /// written in one store batch ([`Store::insert_many`]), much faster than one by one.
    ///
    /// # Errors
    /// [`Error::Validation`] (or [`Error::InvalidArgument`] for a bad `_id`) for the first
    /// document refused, and a store [`portico_store::Error::DuplicateId`] when an `_id` exists
    /// already or repeats within `docs`; nothing is written then.
    pub async fn insert_many(&self, mut docs: Vec<Document>) -> Result<Vec<String>> {
        for doc in &mut docs {
            self.ensure_id(doc)?;
            self.stamp_new(doc);
            self.validate(doc)?;
        }
        Ok(self.store().insert_many(self.name(), docs).await?)
    }

    /// Inserts every document of `batches`, all or none, and returns how many it inserted: an
    /// import of any size that holds a batch at a time ([`Store::insert_stream`]).
    ///
    /// Each document is checked as by [`Collection::insert_many`] as its batch comes. `batches`
    /// may block (a channel from a reader thread); an error it yields stops the stream.
    ///
    /// # Errors
    /// The first error of `batches`, or as [`Collection::insert_many`]; nothing is written then.
    pub async fn insert_stream<I>(&self, batches: I) -> Result<u64>
    where
        I: Iterator<Item = Result<Vec<Document>>> + Send + 'static,
    {
        // A refusal that is not the store's goes to the store as an error that stops the
        // stream, and is kept here to be returned as it was.
        let refused: Arc<std::sync::Mutex<Option<Error>>> = Arc::default();
        let keep = Arc::clone(&refused);
        let this = self.clone();
        let checked = batches.map(move |batch| {
            let checked = batch.and_then(|mut docs| {
                for doc in &mut docs {
                    this.ensure_id(doc)?;
                    this.stamp_new(doc);
                    this.validate(doc)?;
                }
                Ok(docs)
            });
            checked.map_err(|e| match e {
                Error::Store(e) => e,
                other => {
                    let message = other.to_string();
                    *keep.lock().unwrap_or_else(PoisonError::into_inner) = Some(other);
                    portico_store::Error::InvalidDocument(message)
                }
            })
        });
        match self
            .store()
            .insert_stream(self.name(), Box::new(checked))
            .await
        {
            Ok(n) => Ok(n),
            Err(e) => Err(refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or(Error::Store(e))),
        }
    }

    /// The documents matching `query`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find(&self, query: &Query) -> Result<Vec<Document>> {
        Ok(self.store().find(self.name(), query).await?)
    }

    /// The documents matching `query`, each as its compact JSON text (see
    /// [`Store::find_json`]): for a reply that embeds them without decoding them.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_json(&self, query: &Query) -> Result<Vec<String>> {
        Ok(self.store().find_json(self.name(), query).await?)
    }

    /// [`Collection::find_json`] and the number of documents `query.selector` matches, read
    /// together (see [`Store::find_json_counted`]): a list page and its total.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_json_counted(&self, query: &Query) -> Result<(Vec<String>, u64)> {
        Ok(self.store().find_json_counted(self.name(), query).await?)
    }

    /// The first document matching `selector`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_one(&self, selector: &Selector) -> Result<Option<Document>> {
        Ok(self.store().find_one(self.name(), selector).await?)
    }

    /// The document with `_id == id`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn get(&self, id: &str) -> Result<Option<Document>> {
        Ok(self.store().get(self.name(), id).await?)
    }

    /// The document with `_id == id` as its compact JSON text (see [`Store::get_json`]): for
    /// a reply that embeds it without decoding it.
    ///
    /// # Errors
    /// Store failures.
    pub async fn get_json(&self, id: &str) -> Result<Option<String>> {
        Ok(self.store().get_json(self.name(), id).await?)
    }

    /// How many documents match `selector`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn count(&self, selector: &Selector) -> Result<u64> {
        Ok(self.store().count(self.name(), selector).await?)
    }

    /// Applies `update` to the first (or with `multi` every) matching document; with `upsert`,
    /// inserts when nothing matches.
    ///
    /// With a schema, the documents the update would produce are validated first and nothing is
    /// written when one fails. (The check reads, then the store writes atomically; a concurrent
    /// writer between the two can still produce a document the schema was not shown.)
    ///
    /// # Errors
    /// [`Error::Validation`], store errors (a modifier that cannot be applied).
    pub async fn update(
        &self,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        let stamped = self.stamp_update(selector, update).await?;
        let update = stamped.as_ref().unwrap_or(update);
        let result = self.update_stamped(selector, update, options).await?;
        if let (Some(id), true) = (&result.upserted_id, self.inner.options.timestamps) {
            // An upsert's new document was built from the update, which carries no `createdAt`.
            let created = Update::set(Document::from_iter([(
                timestamps::CREATED_AT.to_owned(),
                Value::String(now_iso()),
            )]))?;
            self.store()
                .update(
                    self.name(),
                    &Selector::by_id(id),
                    &created,
                    UpdateOptions::default(),
                )
                .await?;
        }
        Ok(result)
    }

    async fn update_stamped(
        &self,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        if self.inner.schema.is_some() {
            let mut query = Query::new(selector.clone());
            if !options.multi {
                query.limit = Some(1);
            }
            let docs = self.find(&query).await?;
            if docs.is_empty() && options.upsert {
                let doc = self.upsert_document(selector, update)?;
                self.validate(&doc)?;
                // Insert the validated document itself so its `_id` is of this collection's kind.
                let id = self.store().insert(self.name(), doc).await?;
                return Ok(UpdateResult {
                    matched: 0,
                    modified: 0,
                    upserted_id: Some(id),
                });
            }
            for mut doc in docs {
                update.apply(&mut doc)?;
                self.validate(&doc)?;
            }
        } else if options.upsert
            && self.id_kind() == IdKind::ObjectId
            && self.count(selector).await? == 0
        {
            // The store would give the upsert a random id; this collection wants an object id.
            let doc = self.upsert_document(selector, update)?;
            let id = self.store().insert(self.name(), doc).await?;
            return Ok(UpdateResult {
                matched: 0,
                modified: 0,
                upserted_id: Some(id),
            });
        }
        Ok(self
            .store()
            .update(self.name(), selector, update, options)
            .await?)
    }

    /// Applies `update` to the document `id` and returns the document after the change, `None`
    /// when there is no such document.
    ///
    /// # Errors
    /// As [`Collection::update`].
    pub async fn update_by_id(&self, id: &str, update: &Update) -> Result<Option<Document>> {
        let result = self
            .update(&Selector::by_id(id), update, UpdateOptions::default())
            .await?;
        if result.matched == 0 {
            return Ok(None);
        }
        self.get(id).await
    }

    /// Removes every document matching `selector`; returns how many.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove(&self, selector: &Selector) -> Result<u64> {
        Ok(self.store().remove(self.name(), selector).await?)
    }

    /// Removes the document `id`; true when it existed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove_by_id(&self, id: &str) -> Result<bool> {
        Ok(self.remove(&Selector::by_id(id)).await? > 0)
    }

    /// A cursor over this collection, for a publication to return.
    pub fn cursor(&self, query: Query) -> Cursor {
        Cursor::new(self.name(), query)
    }

    // ----- rules -----

    /// Adds allow rules for client writes.
    pub fn allow(&self, rules: Rules) {
        self.inner
            .rules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .allow
            .push(rules);
    }

    /// Who the rules let write with `op` (`insert`, `update` or `remove`), in words: the
    /// descriptions of the allow rules ([`Rules::described`]) and deny rules, or `nobody`.
    pub fn rule_summary(&self, op: &str) -> String {
        self.inner
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .summary(op)
    }

    /// Adds deny rules for client writes; a deny returning true overrides every allow.
    pub fn deny(&self, rules: Rules) {
        self.inner
            .rules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .deny
            .push(rules);
    }

    /// Refuses an update (`update`) or remove at once when no allow rule could let it through,
    /// before the document is looked up: otherwise a missing id (0 changed) and an existing one
    /// (access denied) would answer differently, telling a caller which ids exist.
    fn refuse_without_allow(&self, update: bool) -> Result<()> {
        let rules = self
            .inner
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if rules.may_allow(update) {
            Ok(())
        } else {
            Err(Error::AccessDenied)
        }
    }

    async fn check(&self, user_id: Option<&str>, write: Write<'_>) -> Result<()> {
        let rules = self
            .inner
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if rules.permits(user_id, &write).await {
            Ok(())
        } else {
            Err(Error::AccessDenied)
        }
    }

    // ----- client side: rules applied -----

    /// Inserts a client's document when the rules allow it; returns its `_id`.
    ///
    /// A missing `_id` is generated before the rules run, so they see it. A client-chosen `_id`
    /// must be a non-empty string (24 hex digits in an object-id collection). Field names may not
    /// start with `$` or contain `.`.
    ///
    /// In the `users` collection, `roles` and `services` are refused whatever the rules say
    /// ([`Error::ProtectedField`]).
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::ProtectedField`], [`Error::InvalidArgument`] for a bad
    /// `_id` or field name,
    /// [`Error::Validation`],
    /// a store error for a duplicate `_id`.
    pub async fn client_insert(&self, user_id: Option<&str>, mut doc: Document) -> Result<String> {
        let id = self.ensure_id(&mut doc)?;
        Collection::check_client_fields(&doc)?;
        self.check_protected(doc.keys().map(String::as_str))?;
        self.stamp_new(&mut doc);
        if !self.id_kind().is_valid(&id) {
            return Err(Error::InvalidArgument(format!("invalid _id {id:?}")));
        }
        self.check(user_id, Write::Insert(&doc)).await?;
        self.validate(&doc)?;
        Ok(self.store().insert(self.name(), doc).await?)
    }

    /// Applies a client's modifier (such as `{"$set": {...}}`) to the document `id` when the rules
    /// allow it; returns how many documents were updated (0 when there is no such document).
    ///
    /// The update rules see the document before the change, the changed top-level field names
    /// and `modifier` as given. Whole-document replacement is not accepted from clients, nor a
    /// change that would store a `$`-prefixed or dotted field name, nor (in the `users`
    /// collection) a change to `roles` or `services` ([`Error::ProtectedField`]). With no allow
    /// rule for updates, every id is [`Error::AccessDenied`] (a missing one too), so the answer
    /// tells nothing about which ids exist.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a replacement, a store error for a malformed modifier,
    /// [`Error::AccessDenied`], [`Error::Validation`].
    pub async fn client_update(
        &self,
        user_id: Option<&str>,
        id: &str,
        modifier: &Value,
    ) -> Result<u64> {
        self.client_update_if(user_id, id, modifier, &IfMatch::Absent)
            .await
    }

    /// [`Collection::client_update`] as a conditional write (`If-Match`): with
    /// [`IfMatch::Any`] the document must exist, with [`IfMatch::Tags`] it must still have one
    /// of the tags ([`portico_store::etag`]). The tag the rules saw is checked again inside the
    /// write's transaction, so of two writers racing with the same tag exactly one succeeds.
    ///
    /// # Errors
    /// As [`Collection::client_update`], and [`Error::PreconditionFailed`] when the document is
    /// missing, has another tag, or changed between the check and the write.
    pub async fn client_update_if(
        &self,
        user_id: Option<&str>,
        id: &str,
        modifier: &Value,
        if_match: &IfMatch,
    ) -> Result<u64> {
        let update = Update::parse(modifier)?;
        if update.is_replacement() {
            return Err(Error::InvalidArgument(
                "a client update must use modifiers such as $set, not replace the document".into(),
            ));
        }
        self.refuse_without_allow(true)?;
        let Some((doc, selector)) = self.conditional_target(id, if_match).await? else {
            return Ok(0);
        };
        let fields = update.field_names();
        self.check_protected(fields.iter().map(String::as_str))?;
        self.check(user_id, Write::Update(&doc, &fields, modifier))
            .await?;
        let update = match self.stamp_update(&Selector::by_id(id), &update).await? {
            Some(stamped) => stamped,
            None => update,
        };
        let mut changed = doc.clone();
        update.apply(&mut changed)?;
        Collection::check_client_fields(&changed)?;
        self.validate(&changed)?;
        let result = self
            .store()
            .update(self.name(), &selector, &update, UpdateOptions::default())
            .await?;
        if result.matched == 0 && !matches!(if_match, IfMatch::Absent) {
            return Err(Error::PreconditionFailed);
        }
        Ok(result.matched)
    }

    /// Removes the document `id` for a client when the rules allow it; returns how many were
    /// removed (0 when there is no such document and some allow rule decides removes; with none,
    /// every id is [`Error::AccessDenied`], so the answer tells nothing about which ids exist).
    ///
    /// # Errors
    /// [`Error::AccessDenied`], store failures.
    pub async fn client_remove(&self, user_id: Option<&str>, id: &str) -> Result<u64> {
        self.client_remove_if(user_id, id, &IfMatch::Absent).await
    }

    /// [`Collection::client_remove`] as a conditional write (`If-Match`), checked inside the
    /// remove's transaction as for [`Collection::client_update_if`].
    ///
    /// # Errors
    /// As [`Collection::client_remove`], and [`Error::PreconditionFailed`].
    pub async fn client_remove_if(
        &self,
        user_id: Option<&str>,
        id: &str,
        if_match: &IfMatch,
    ) -> Result<u64> {
        self.refuse_without_allow(false)?;
        let Some((doc, selector)) = self.conditional_target(id, if_match).await? else {
            return Ok(0);
        };
        self.check(user_id, Write::Remove(&doc)).await?;
        let removed = self.remove(&selector).await?;
        if removed == 0 && !matches!(if_match, IfMatch::Absent) {
            return Err(Error::PreconditionFailed);
        }
        Ok(removed)
    }

    /// The document `id` a client write would change, and the selector the write must use:
    /// by `_id` alone, and for a tag condition also by the entity tag read now, so the store
    /// re-checks it inside the write's transaction. `None` when an unconditional write finds no
    /// document.
    async fn conditional_target(
        &self,
        id: &str,
        if_match: &IfMatch,
    ) -> Result<Option<(Document, Selector)>> {
        let Some(doc) = self.get(id).await? else {
            return match if_match {
                IfMatch::Absent => Ok(None),
                _ => Err(Error::PreconditionFailed),
            };
        };
        let selector = Selector::by_id(id);
        let selector = match if_match {
            IfMatch::Absent | IfMatch::Any => selector,
            IfMatch::Tags(tags) => {
                let tag = portico_store::etag(&doc);
                if !tags.contains(&tag) {
                    return Err(Error::PreconditionFailed);
                }
                selector.and_etag(tag)
            }
        };
        Ok(Some((doc, selector)))
    }
}

/// What a client's conditional write expects of the stored document: the meaning of an
/// `If-Match` header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum IfMatch {
    /// No condition (no header): write whatever is stored; a missing document is a count of 0.
    #[default]
    Absent,
    /// `*`: the document must exist (a document removed before the write is a failed
    /// precondition, not a count of 0).
    Any,
    /// The document must still have one of these entity tags ([`portico_store::etag`]).
    Tags(Vec<String>),
}

/// The top-level fields of a user record no client write may set (see
/// [`Collection::client_insert`]).
pub const PROTECTED_ACCOUNT_FIELDS: [&str; 2] = ["roles", "services"];

/// Checks the field `key` (found at `at`) and everything below it; see
/// [`Collection::check_client_fields`].
fn check_field(key: &str, value: &Value, at: &str) -> Result<()> {
    let path = if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    };
    if key.starts_with('$') {
        return Err(Error::InvalidArgument(format!(
            "field names may not start with '$': {path:?}"
        )));
    }
    if key.is_empty() || key.contains('.') {
        return Err(Error::InvalidArgument(format!(
            "field names may not be empty or contain '.': {path:?}"
        )));
    }
    check_nested(value, &path)
}

/// Checks the field names inside `value` (objects, and objects inside arrays at any depth).
fn check_nested(value: &Value, path: &str) -> Result<()> {
    match value {
        Value::Object(m) => m.iter().try_for_each(|(k, v)| check_field(k, v, path)),
        Value::Array(items) => items.iter().try_for_each(|v| check_nested(v, path)),
        _ => Ok(()),
    }
}
