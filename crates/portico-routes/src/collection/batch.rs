//! `POST {api}batch` ([`Api::add_batch`]): several writes to this API's generated collections,
//! checked one by one exactly as the single requests are (route, method, auth, roles, access
//! scope, body rules), then written all or nothing in one store transaction
//! ([`portico_store::Store::batch`]).
//!
//! A sub-request is `{"method": "POST"|"PUT"|"PATCH"|"DELETE", "url": "...", "body": {...}}`;
//! its url is the path a single request would use (`/api/v1/articles/42`), or that path
//! relative to the API (`articles/42`). The reply is 200 with one `{"status", "body"}` per
//! sub-request, or the failing sub-request's status with a JSend error naming its index, and
//! nothing written.
//!
//! Not batchable (the sub-request is refused with 400, naming why): endpoints with an action of
//! their own, collections with before/after hooks (they may read or write elsewhere), the
//! `users` collection (accounts are created by the accounts service), and collections with a
//! JSON Schema (validating inside the transaction is not done yet).

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use http::Method;
use portico_platform::FieldView;
use portico_store::{BatchFailure, BatchOp, BatchOutcome, Document, Update};
use serde_json::{Value, json};

use super::client_body::BodyUse;
use super::fields::guard_write;
use super::records::checked;
use super::{CollectionState, not_found, scoped};
use crate::auth::{Caller, admit};
use crate::endpoint_doc::EndpointDoc;
use crate::options::AuthOptions;
use crate::route_table::{BatchTarget, RouteExtras, RouteTable, compile};
use crate::{Api, Context, Endpoint, Endpoints, Op, Reply, Result, RouteOptions};

/// How many sub-requests a batch may hold unless [`BatchOptions::max_requests`] says otherwise.
pub const DEFAULT_BATCH_LIMIT: usize = 100;

/// Options of [`Api::add_batch`].
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_routes::BatchOptions;
///
/// let options = BatchOptions::default().max_requests(20);
/// assert_eq!(options.max_requests, 20);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BatchOptions {
    /// The most sub-requests one batch may hold (default [`DEFAULT_BATCH_LIMIT`]); a larger
    /// batch is refused with 413 before anything is checked.
    pub max_requests: usize,
}

impl BatchOptions {
    /// Sets [`max_requests`](BatchOptions::max_requests): the most sub-requests one batch may hold
    /// (default [`DEFAULT_BATCH_LIMIT`]).
    pub fn max_requests(mut self, max_requests: usize) -> Self {
        self.max_requests = max_requests;
        self
    }
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            max_requests: DEFAULT_BATCH_LIMIT,
        }
    }
}

impl Api {
    /// Adds `POST {api}batch`: writes to this API's generated collections, all or nothing (see
    /// the module docs of `collection::batch` in the crate docs' "Batches" section).
    ///
    /// # Errors
    /// [`crate::Error::DuplicatePath`] when a route named `batch` exists already.
    pub fn add_batch(&mut self, options: BatchOptions) -> Result<()> {
        let batch = Arc::new(Batch {
            routes: self.routes.clone(),
            prefix: self.prefix.clone(),
            auth: self.options.auth.clone(),
            max: options.max_requests,
        });
        let endpoint = Endpoint::options().action(move |ctx: Context| {
            let batch = batch.clone();
            async move { batch.run(ctx).await }
        });
        let mut endpoints = Endpoints::new();
        endpoints.post = Some(endpoint);
        let doc = EndpointDoc::new("several writes to generated collections, all or nothing")
            .rules(vec![
                "each sub-request is checked as the single request (auth, roles, scope)".into(),
            ])
            .request(request_schema(options.max_requests))
            .reply(reply_schema());
        let extras = RouteExtras {
            docs: vec![("POST", doc)],
            ..RouteExtras::default()
        };
        let pattern = compile(&"batch".into())?;
        if self.has_route(&pattern) {
            return Err(crate::Error::DuplicatePath(pattern.display().to_owned()));
        }
        self.insert_route_with(pattern, RouteOptions::default(), endpoints, extras)
    }
}

fn request_schema(max: usize) -> Value {
    json!({
        "type": "object",
        "required": ["requests"],
        "properties": {"requests": {
            "type": "array",
            "minItems": 1,
            "maxItems": max,
            "items": {
                "type": "object",
                "required": ["method", "url"],
                "properties": {
                    "method": {"enum": ["POST", "PUT", "PATCH", "DELETE"]},
                    "url": {"type": "string"},
                    "body": {"type": "object"}
                }
            }
        }}
    })
}

fn reply_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["status", "body"],
            "properties": {"status": {"type": "integer"}, "body": {"type": "object"}}
        }
    })
}

struct Batch {
    routes: RouteTable,
    prefix: String,
    auth: AuthOptions,
    max: usize,
}

/// One checked sub-request: the write, and how to show its outcome.
struct Planned {
    op: BatchOp,
    target: Arc<dyn BatchTarget>,
    view: FieldView,
}

/// The failing sub-request's reply: its status, a JSend error naming its index.
fn failed(index: usize, reply: &Reply) -> Reply {
    let message = reply
        .body()
        .and_then(|b| b.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("failed");
    Reply::new(json!({
        "status": "error",
        "message": format!("batch request {index}: {message}"),
        "data": {"index": index}
    }))
    .with_status(reply.status())
}

fn bad(message: impl Into<String>) -> Reply {
    Reply::error(400, message)
}

impl Batch {
    async fn run(&self, ctx: Context) -> Reply {
        let requests = match self.requests(&ctx) {
            Ok(r) => r,
            Err(reply) => return reply,
        };
        let mut caller: Option<Caller> = None;
        let mut planned = Vec::with_capacity(requests.len());
        for (index, request) in requests.iter().enumerate() {
            match self.plan(&ctx, request, &mut caller).await {
                Ok(p) => planned.push(p),
                Err(reply) => return failed(index, &reply),
            }
        }
        let (ops, shown): (Vec<_>, Vec<_>) = planned
            .into_iter()
            .map(|p| (p.op, (p.target, p.view)))
            .unzip();
        match ctx.platform.store().batch(ops).await {
            Ok(outcomes) => {
                let items: Vec<Value> = outcomes
                    .into_iter()
                    .zip(shown)
                    .map(|(outcome, (target, view))| target.show(outcome, &view))
                    .collect();
                Reply::success(Value::Array(items))
            }
            Err(err) => {
                let reply = match err.failure {
                    BatchFailure::NoMatch => not_found(),
                    BatchFailure::Store(e) => Reply::from(e),
                    BatchFailure::Unsupported => {
                        Reply::error(501, "This database does not support batches")
                    }
                };
                failed(err.index, &reply)
            }
        }
    }

    /// The `requests` array, within the limit.
    fn requests(&self, ctx: &Context) -> std::result::Result<Vec<Value>, Reply> {
        let requests = match ctx.body_params.get("requests") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(bad(
                    "The body must be {\"requests\": [{\"method\", \"url\", \"body\"}, ...]}",
                ));
            }
        };
        if requests.is_empty() {
            return Err(bad("A batch needs at least one request"));
        }
        if requests.len() > self.max {
            return Err(Reply::error(
                413,
                format!(
                    "A batch may hold at most {} requests; this one has {}",
                    self.max,
                    requests.len()
                ),
            ));
        }
        Ok(requests.clone())
    }

    /// Checks one sub-request as its single request would be, and makes its write.
    async fn plan(
        &self,
        ctx: &Context,
        request: &Value,
        caller: &mut Option<Caller>,
    ) -> std::result::Result<Planned, Reply> {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("method must be POST, PUT, PATCH or DELETE"))?;
        let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
            .map_err(|_| bad("method must be POST, PUT, PATCH or DELETE"))?;
        let url = request
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("url must be a string"))?;
        if url.contains('?') || url.contains('#') {
            return Err(bad("A batch url has no query string"));
        }
        // The dispatcher's lookup: a path under the API's base path, or one relative to it.
        let (route, params) = if url.starts_with('/') {
            self.routes.find(&self.prefix, url)
        } else {
            self.routes.find_relative(url)
        }
        .ok_or_else(not_found)?;
        let url_params: std::collections::BTreeMap<String, String> = params.into_iter().collect();
        let id = url_params.get("id").cloned();
        let (op, endpoint) = match (&method, &id) {
            (&Method::POST, None) => (Op::Post, route.endpoints.post.as_ref()),
            (&Method::PUT, Some(_)) => (Op::Put, route.endpoints.put.as_ref()),
            (&Method::PATCH, Some(_)) => (Op::Patch, route.endpoints.patch.as_ref()),
            (&Method::DELETE, Some(_)) => (Op::Delete, route.endpoints.delete.as_ref()),
            _ => return Err(not_found().with_status(405)),
        };
        let endpoint = endpoint.ok_or_else(|| not_found().with_status(405))?;
        let generated = route
            .generated
            .as_ref()
            .ok_or_else(|| bad("Only writes to generated collections can be batched"))?;
        if !generated.ops.contains(&op) {
            return Err(bad(
                "This endpoint has an action of its own and cannot be batched",
            ));
        }
        let target = generated.target.clone();
        target.batchable()?;
        let mut sub = ctx.clone();
        sub.user = None;
        sub.user_id = None;
        sub.options = endpoint.resolve(&route.options);
        admit(&mut sub, &self.auth, caller).await?;
        sub.url_params = url_params;
        let body = match (op, request.get("body")) {
            (Op::Delete, _) => None,
            (_, Some(Value::Object(map))) => Some(map.clone()),
            _ => return Err(bad("The request body must be an object")),
        };
        let op_write = target.write(&sub, op, id.as_deref(), body).await?;
        let view = target.view(&sub).await?;
        Ok(Planned {
            op: op_write,
            target,
            view,
        })
    }
}

impl BatchTarget for CollectionState {
    fn batchable(&self) -> std::result::Result<(), Reply> {
        batchable(self)
    }

    fn write<'a>(
        &'a self,
        ctx: &'a Context,
        op: Op,
        id: Option<&'a str>,
        body: Option<Document>,
    ) -> BoxFuture<'a, std::result::Result<BatchOp, Reply>> {
        write(self, ctx, op, id, body).boxed()
    }

    fn view<'a>(
        &'a self,
        ctx: &'a Context,
    ) -> BoxFuture<'a, std::result::Result<FieldView, Reply>> {
        super::fields::view(self, ctx).boxed()
    }

    fn show(&self, outcome: BatchOutcome, view: &FieldView) -> Value {
        show(self, outcome, view)
    }
}

/// Refuses collections whose writes a batch cannot reproduce faithfully.
fn batchable(state: &CollectionState) -> std::result::Result<(), Reply> {
    let name = state.collection.name();
    if name == portico_platform::USERS {
        return Err(bad("Accounts cannot be written in a batch"));
    }
    if state.before.is_some() || state.after.is_some() || state.collection.has_write_hooks() {
        return Err(bad(format!(
            "Collection {name} has hooks and cannot be written in a batch"
        )));
    }
    if state.collection.options().schema.is_some() {
        return Err(bad(format!(
            "Collection {name} has a JSON Schema and cannot be written in a batch"
        )));
    }
    Ok(())
}

/// The write of one checked sub-request, made of the collection's own single-write pieces
/// ([`portico_platform::Collection::prepared_insert`] and `prepared_update`: ids of its kind,
/// timestamps, a replacement keeping `createdAt`) and the caller's access scope.
async fn write(
    state: &CollectionState,
    ctx: &Context,
    op: Op,
    id: Option<&str>,
    body: Option<Document>,
) -> std::result::Result<BatchOp, Reply> {
    let collection = &state.collection;
    let name = collection.name().to_owned();
    let stamp = state
        .scope
        .as_ref()
        .map(|s| s.stamp(ctx))
        .unwrap_or_default();
    let invalid = |e: portico_store::Error| bad(e.to_string());
    let target = |id: &str| scoped(state, ctx, Some(json!({"_id": id})));
    let view = super::fields::view(state, ctx).await?;
    let guard = |id, body, how| guard_write(state, ctx, &view, id, body, how);
    let (selector, update) = match (op, id) {
        (Op::Post, _) => {
            let mut doc = checked(body.unwrap_or_default(), BodyUse::Create, None)?;
            doc.extend(stamp);
            guard(None, &mut doc, BodyUse::Create).await?;
            let doc = collection.prepared_insert(doc).map_err(Reply::from)?;
            return Ok(BatchOp::Insert {
                collection: name,
                doc,
            });
        }
        (Op::Delete, Some(id)) => {
            return Ok(BatchOp::Remove {
                collection: name,
                selector: target(id)?,
            });
        }
        (Op::Put, Some(id)) => {
            let mut doc = checked(body.unwrap_or_default(), BodyUse::Replace, Some(id))?;
            doc.extend(stamp);
            guard(Some(id), &mut doc, BodyUse::Replace).await?;
            (target(id)?, Update::replace(doc).map_err(invalid)?)
        }
        (Op::Patch, Some(id)) => {
            let mut doc = checked(body.unwrap_or_default(), BodyUse::Change, Some(id))?;
            guard(Some(id), &mut doc, BodyUse::Change).await?;
            for key in doc.keys() {
                let top = key.split('.').next().unwrap_or(key);
                if stamp.get(top).is_some_and(|v| doc.get(key) != Some(v)) {
                    return Err(bad(format!("The field {top} cannot be changed")));
                }
            }
            let update = if doc.is_empty() {
                // Nothing to change: the document must still be there (and visible).
                Update::parse(&json!({"$set": {}})).map_err(invalid)?
            } else {
                Update::set(doc).map_err(invalid)?
            };
            (target(id)?, update)
        }
        _ => return Err(not_found()),
    };
    let update = collection
        .prepared_update(&selector, &update)
        .await
        .map_err(Reply::from)?;
    Ok(BatchOp::Update {
        collection: name,
        selector,
        update,
    })
}

/// One sub-request's reply: the status and body its single request would answer.
fn show(state: &CollectionState, outcome: BatchOutcome, view: &FieldView) -> Value {
    match outcome {
        BatchOutcome::Inserted(doc) => {
            json!({"status": 201, "body": Value::Object(state.records.show(view.applied(doc)))})
        }
        BatchOutcome::Updated(doc) => {
            json!({"status": 200, "body": Value::Object(state.records.show(view.applied(doc)))})
        }
        BatchOutcome::Removed(_) => json!({"status": 200, "body": {"message": "Item removed"}}),
    }
}
