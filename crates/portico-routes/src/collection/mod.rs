//! Generated collection routes (`add_collection`): getAll, post, get, put, patch, delete.

mod aggregate;
mod batch;
mod client_body;
mod conditional;
mod expand;
mod fields;
mod files;
mod handlers;
mod list;
mod live;
mod records;
mod scope;
mod search;

use std::collections::BTreeMap;
use std::sync::Arc;

use portico_platform::Collection;
use portico_store::Selector;
use serde_json::{Value, json};

use crate::endpoint_doc::EndpointDoc;
use crate::route_table::{Generated, RouteExtras, compile};
use crate::{Api, Context, Endpoint, Endpoints, Error, Op, Reply, Result, RouteOptions};
use records::{Accounts, Documents, Records};

use crate::hooks::{AfterHook, BeforeHook};
pub use batch::{BatchOptions, DEFAULT_BATCH_LIMIT};
pub use scope::AccessScope;

/// How one generated endpoint is configured: `false` suppresses it; an [`Endpoint`] sets its
/// options, and its action (when given) replaces the default behaviour.
#[derive(Debug, Clone)]
pub enum CollectionEndpoint {
    /// Not generated.
    Disabled,
    /// Generated with these options (and this action, when set).
    Configured(Endpoint),
}

impl From<bool> for CollectionEndpoint {
    fn from(on: bool) -> Self {
        if on {
            CollectionEndpoint::Configured(Endpoint::options())
        } else {
            CollectionEndpoint::Disabled
        }
    }
}

impl From<Endpoint> for CollectionEndpoint {
    fn from(e: Endpoint) -> Self {
        CollectionEndpoint::Configured(e)
    }
}

/// Options of [`Api::add_collection`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CollectionOptions {
    pub(crate) path: Option<String>,
    pub(crate) route_options: RouteOptions,
    pub(crate) excluded: Vec<Op>,
    pub(crate) endpoints: BTreeMap<Op, CollectionEndpoint>,
    pub(crate) scope: Option<AccessScope>,
    pub(crate) before: Option<BeforeHook>,
    pub(crate) after: Option<AfterHook>,
    pub(crate) max_page_size: Option<u64>,
    pub(crate) default_page_size: Option<u64>,
}

impl CollectionOptions {
    /// Every endpoint generated, at the collection's name, no authentication.
    pub fn new() -> Self {
        CollectionOptions::default()
    }

    /// Base path of the two routes (`<path>` and `<path>/:id`); the collection's name by default.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Options applied to every generated endpoint.
    pub fn route_options(mut self, options: RouteOptions) -> Self {
        self.route_options = options;
        self
    }

    /// Does not generate `op`.
    pub fn exclude(mut self, op: Op) -> Self {
        self.excluded.push(op);
        self
    }

    /// Does not generate the endpoints named (`"delete"`, `"getAll"`...).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for an unknown name.
    pub fn excluded_endpoints<'a>(
        mut self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self> {
        for name in names {
            self.excluded.push(name.parse()?);
        }
        Ok(self)
    }

    /// Configures `op`: `false` suppresses it, an [`Endpoint`] sets its options (and action).
    pub fn endpoint(mut self, op: Op, config: impl Into<CollectionEndpoint>) -> Self {
        self.endpoints.insert(op, config.into());
        self
    }

    /// Restricts every generated endpoint to the documents the scope selects for the caller,
    /// and stamps its fields on created documents.
    pub fn scope(mut self, scope: AccessScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Runs before every default action (validate, reshape the body, or refuse).
    pub fn before(mut self, hook: BeforeHook) -> Self {
        self.before = Some(hook);
        self
    }

    /// Runs after every default action, on the reply's `data`.
    pub fn after(mut self, hook: AfterHook) -> Self {
        self.after = Some(hook);
        self
    }

    /// Page size of getAll without `limit` (the API's by default).
    pub fn default_page_size(mut self, size: u64) -> Self {
        self.default_page_size = Some(size);
        self
    }

    /// Largest getAll `limit` (the API's by default).
    pub fn max_page_size(mut self, size: u64) -> Self {
        self.max_page_size = Some(size);
        self
    }
}

/// What the default actions of one generated collection share.
pub(crate) struct CollectionState {
    pub(crate) collection: Collection,
    pub(crate) records: Box<dyn Records>,
    pub(crate) scope: Option<AccessScope>,
    pub(crate) before: Option<BeforeHook>,
    pub(crate) after: Option<AfterHook>,
    pub(crate) default_page_size: u64,
    pub(crate) max_page_size: u64,
    pub(crate) max_reply_bytes: usize,
    /// The API's generated collections, for expansions into related ones.
    pub(crate) readers: crate::api::Readers,
    /// The options of the generated get (`GET /:id`), which an expansion into this collection
    /// requires of its caller; `None` when get is not generated or has an action of its own
    /// (then nothing is expanded from this collection).
    pub(crate) read_options: Option<crate::ResolvedOptions>,
}

impl Api {
    /// Generates the routes `<path>` (getAll, post) and `<path>/:id` (get, put, patch, delete)
    /// for `collection`. The collection named `users` is special: get and getAll expose only
    /// `_id` and `profile`, post creates an account (password hashed), put sets `profile`.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a route exists at either path, [`Error::InvalidPath`] for a
    /// bad path.
    pub fn add_collection(
        &mut self,
        collection: Collection,
        options: CollectionOptions,
    ) -> Result<()> {
        let base = options
            .path
            .clone()
            .unwrap_or_else(|| collection.name().to_owned());
        let base = base.trim_matches('/').to_owned();
        let mut route_options = options.route_options.clone();
        if options
            .scope
            .as_ref()
            .is_some_and(AccessScope::requires_user)
        {
            route_options.auth_required = true;
        }
        let read_options = generated_get(&options).map(|get| get.resolve(&route_options));
        let state = self.collection_state(collection, &options, read_options);
        let routes = GeneratedRoutes::new(&state, &options);
        let list_matcher = compile(&base.as_str().into())?;
        let name = state.collection.name().to_owned();
        let item_path = if base.is_empty() {
            ":id".to_owned()
        } else {
            format!("{base}/:id")
        };
        let item_matcher = compile(&item_path.clone().into())?;
        // Check both before adding either, so a failed call leaves the API unchanged.
        for m in [&list_matcher, &item_matcher] {
            if self.has_route(m) {
                return Err(Error::DuplicatePath(m.display().to_owned()));
            }
        }
        // A generated write stores its body as one document: a body over the store's document
        // limit is refused by its length before a byte of it is read.
        let document_limit = self
            .options
            .body_limit
            .min(portico_store::MAX_DOCUMENT_BYTES);
        let (list_limit, item_limit) = routes.body_limits(document_limit);
        let GeneratedRoutes {
            list,
            item,
            list_docs,
            item_docs,
            batchable,
        } = routes;
        if !list.is_empty() {
            let extras = RouteExtras {
                body_limit: list_limit,
                docs: list_docs,
                generated: Some(Generated {
                    target: state.clone(),
                    ops: batchable.clone(),
                }),
                ..RouteExtras::default()
            };
            self.insert_route_with(list_matcher, route_options.clone(), list, extras)?;
        }
        self.add_files_of(&state, &item_path, &route_options, &options)?;
        self.readers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(name)
            .or_insert_with(|| {
                let any: Arc<dyn std::any::Any + Send + Sync> = state.clone();
                Arc::downgrade(&any)
            });
        if !item.is_empty() {
            let extras = RouteExtras {
                body_limit: item_limit,
                docs: item_docs,
                generated: Some(Generated {
                    target: state,
                    ops: batchable,
                }),
                ..RouteExtras::default()
            };
            self.insert_route_with(item_matcher, route_options, item, extras)?;
        }
        Ok(())
    }

    /// What every generated operation of `collection` shares.
    fn collection_state(
        &self,
        collection: Collection,
        options: &CollectionOptions,
        read_options: Option<crate::ResolvedOptions>,
    ) -> Arc<CollectionState> {
        let records: Box<dyn Records> = if collection.name() == "users" {
            Box::new(Accounts)
        } else {
            Box::new(Documents)
        };
        Arc::new(CollectionState {
            records,
            collection,
            scope: options.scope.clone(),
            before: options.before.clone(),
            after: options.after.clone(),
            default_page_size: options
                .default_page_size
                .unwrap_or(self.options.default_page_size),
            max_page_size: options.max_page_size.unwrap_or(self.options.max_page_size),
            max_reply_bytes: self.options.max_reply_bytes,
            readers: self.readers.clone(),
            read_options,
        })
    }
}

/// The generated get of `options` (`None` when it is not generated or has its own action).
fn generated_get(options: &CollectionOptions) -> Option<Endpoint> {
    if options.excluded.contains(&Op::Get) {
        return None;
    }
    let endpoint = match options.endpoints.get(&Op::Get) {
        Some(CollectionEndpoint::Disabled) => return None,
        Some(CollectionEndpoint::Configured(e)) => e.clone(),
        None => Endpoint::options(),
    };
    endpoint.action.is_none().then_some(endpoint)
}

/// The endpoints of a generated collection: on the list path (getAll, post) and on the item
/// path (get, put, patch, delete), their descriptions, and the operations that run the
/// generated action (those a batch may include).
struct GeneratedRoutes {
    list: Endpoints,
    item: Endpoints,
    list_docs: Vec<(&'static str, EndpointDoc)>,
    item_docs: Vec<(&'static str, EndpointDoc)>,
    batchable: Vec<Op>,
}

impl GeneratedRoutes {
    /// Every operation `options` keeps, with the generated action unless it has its own.
    fn new(state: &Arc<CollectionState>, options: &CollectionOptions) -> GeneratedRoutes {
        let mut routes = GeneratedRoutes {
            list: Endpoints::new(),
            item: Endpoints::new(),
            list_docs: Vec::new(),
            item_docs: Vec::new(),
            batchable: Vec::new(),
        };
        for op in Op::ALL {
            if options.excluded.contains(&op) {
                continue;
            }
            let mut endpoint = match options.endpoints.get(&op) {
                Some(CollectionEndpoint::Disabled) => continue,
                Some(CollectionEndpoint::Configured(e)) => e.clone(),
                None => Endpoint::options(),
            };
            if endpoint.action.is_none() {
                routes.batchable.push(op);
                let state = state.clone();
                endpoint = endpoint.action(move |ctx: Context| {
                    let state = state.clone();
                    async move { handlers::run(&state, op, ctx).await }
                });
            }
            let (endpoints, docs) = match op {
                Op::GetAll | Op::Post => (&mut routes.list, &mut routes.list_docs),
                Op::Get | Op::Put | Op::Patch | Op::Delete => {
                    (&mut routes.item, &mut routes.item_docs)
                }
            };
            let (method, slot) = match op {
                Op::GetAll => ("GET", &mut endpoints.get),
                Op::Post => ("POST", &mut endpoints.post),
                Op::Get => ("GET", &mut endpoints.get),
                Op::Put => ("PUT", &mut endpoints.put),
                Op::Patch => ("PATCH", &mut endpoints.patch),
                Op::Delete => ("DELETE", &mut endpoints.delete),
            };
            *slot = Some(endpoint);
            docs.push((method, describe_op(state, op)));
        }
        routes
    }

    /// The body limits of the list and item routes: `document_limit` where the writes are
    /// generated; none below the API's where a write endpoint has an action of its own.
    fn body_limits(&self, document_limit: usize) -> (Option<usize>, Option<usize>) {
        let own_action = |op: Op, endpoint: &Option<Endpoint>| {
            endpoint.is_some() && !self.batchable.contains(&op)
        };
        let list = if own_action(Op::Post, &self.list.post) {
            None
        } else {
            Some(document_limit)
        };
        let item = if own_action(Op::Put, &self.item.put) || own_action(Op::Patch, &self.item.patch)
        {
            None
        } else {
            Some(document_limit)
        };
        (list, item)
    }
}

/// What a generated operation does, for route descriptions.
fn describe_op(state: &CollectionState, op: Op) -> EndpointDoc {
    let name = state.collection.name();
    let users = name == "users";
    let mut rules: Vec<String> = state.scope.iter().map(|s| s.rule().to_owned()).collect();
    if users {
        rules.push("only _id and profile are shown".to_owned());
    }
    let field_rules = &state.collection.options().field_rules;
    if !field_rules.is_empty() {
        let fields: Vec<String> = field_rules
            .iter()
            .map(|(field, words)| {
                let words: Vec<String> = words.iter().map(ToString::to_string).collect();
                format!("{field} ({})", words.join(" or "))
            })
            .collect();
        rules.push(format!(
            "fields shown only to callers passing their rules, never filtered, sorted or written by others: {}",
            fields.join(", ")
        ));
    }
    let document = if users {
        json!({"type": "object", "properties": {"_id": {"type": "string"}, "profile": {"type": "object"}}})
    } else {
        let mut schema = state
            .collection
            .options()
            .schema
            .clone()
            .unwrap_or_else(|| json!({"type": "object"}));
        if let Value::Object(map) = &mut schema {
            map.remove("$schema");
        }
        schema
    };
    let body = if users && op == Op::Post {
        json!({"type": "object", "properties": {
            "username": {"type": "string"}, "email": {"type": "string"},
            "password": {"type": "string"}, "profile": {"type": "object"}
        }})
    } else if users {
        json!({"type": "object", "description": "profile fields"})
    } else {
        document.clone()
    };
    let doc = match op {
        Op::GetAll => EndpointDoc::new(format!("list {name}"))
            .query(&[
                "where", "sort", "limit", "skip", "fields", "expand", "search", "total", "group",
                "count", "sum", "avg", "min", "max",
            ])
            .reply(json!({"type": "array", "items": document})),
        Op::Post => EndpointDoc::new(format!("create a document in {name}"))
            .request(body)
            .reply(document),
        Op::Get => EndpointDoc::new(format!("read one document of {name}"))
            .query(&["expand"])
            .reply(document),
        Op::Put => EndpointDoc::new(format!("replace a document of {name}"))
            .request(body)
            .reply(document),
        Op::Patch => EndpointDoc::new(format!("change fields of a document of {name}"))
            .request(json!({"type": "object"}))
            .reply(document),
        Op::Delete => EndpointDoc::new(format!("remove a document of {name}"))
            .reply(json!({"type": "object", "properties": {"message": {"type": "string"}}})),
    };
    doc.rules(rules)
}

/// 404 for an id the caller cannot see.
pub(crate) fn not_found() -> Reply {
    Reply::fail(404, "Item not found")
}

/// A platform error as a reply (the one mapping of errors to statuses).
pub(crate) fn platform_error(e: portico_platform::Error) -> Reply {
    Reply::from(e)
}

/// `base` (a selector value) within the collection's access scope, for the caller of `ctx`.
pub(crate) fn scoped(
    state: &CollectionState,
    ctx: &Context,
    base: Option<Value>,
) -> std::result::Result<Selector, Reply> {
    let scope = state.scope.as_ref().map(|s| s.selector(ctx));
    let value = match (base, scope) {
        (Some(b), Some(s)) => json!({"$and": [b, s]}),
        (Some(b), None) => b,
        (None, Some(s)) => s,
        (None, None) => return Ok(Selector::all()),
    };
    Selector::parse(&value).map_err(|e| Reply::internal(format!("access scope selector: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excluded_names_are_checked() {
        assert!(
            CollectionOptions::new()
                .excluded_endpoints(["delete", "put"])
                .is_ok()
        );
        assert!(
            CollectionOptions::new()
                .excluded_endpoints(["remove"])
                .is_err()
        );
    }
}
