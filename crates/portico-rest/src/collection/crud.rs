//! The default actions of generated endpoints.

use portico_platform::Error as PlatformError;
use portico_store::{Document, Projection, Query, Selector, Update, UpdateOptions};
use serde_json::{Value, json};

use super::client_body::{BodyUse, check};
use super::list::{ListParams, link_header};
use super::{AfterEvent, CollectionState, HookEvent, Op, users};
use crate::{Context, Reply};

/// A default action's successful outcome: the `data`, and extra headers.
pub(crate) struct Outcome {
    pub(crate) data: Value,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) id: Option<String>,
}

impl Outcome {
    pub(crate) fn data(data: Value) -> Outcome {
        Outcome {
            data,
            headers: Vec::new(),
            id: None,
        }
    }
}

/// The reply for a missing (or out-of-scope) id.
pub(crate) fn not_found() -> Reply {
    Reply::fail(404, "Item not found")
}

/// Maps a platform error: client errors keep their message, a duplicate id is 409, the rest
/// is an internal error (logged, not sent).
pub(crate) fn platform_error(e: PlatformError) -> Reply {
    match &e {
        PlatformError::Store(portico_store::Error::DuplicateId { .. }) => {
            Reply::error(409, "An item with this _id exists already")
        }
        _ if e.is_client_error() => Reply::error(e.status_code(), e.to_string()),
        _ => Reply::from(e),
    }
}

/// Runs a generated endpoint's default action.
pub(crate) async fn run(state: &CollectionState, op: Op, ctx: Context) -> Reply {
    let id = ctx.url_param("id").map(str::to_owned);
    let body = match op {
        Op::Post | Op::Put | Op::Patch => match &ctx.body_params {
            Value::Object(map) => Some(map.clone()),
            _ => return Reply::error(400, "The request body must be an object"),
        },
        _ => None,
    };
    let mut event = HookEvent {
        op,
        user_id: ctx.user_id.clone(),
        id,
        body,
    };
    if let Some(before) = &state.before {
        event = match before.call(event).await {
            Ok(e) => e,
            Err(reply) => return reply,
        };
    }
    let result = if state.users {
        users::run(state, op, &ctx, event.id.as_deref(), event.body).await
    } else {
        run_plain(state, op, &ctx, event.id.as_deref(), event.body).await
    };
    let outcome = match result {
        Ok(o) => o,
        Err(reply) => return reply,
    };
    let data = match &state.after {
        Some(after) => {
            after
                .call(AfterEvent {
                    op,
                    user_id: ctx.user_id.clone(),
                    id: outcome.id.clone().or(event.id),
                    data: outcome.data,
                })
                .await
        }
        None => outcome.data,
    };
    let mut reply = Reply::success(data);
    if op == Op::Post {
        reply = reply.with_status(201);
    }
    for (name, value) in outcome.headers {
        reply = reply.with_header(name, value);
    }
    reply
}

/// `base` narrowed to the caller's scope.
pub(crate) fn scoped(
    state: &CollectionState,
    ctx: &Context,
    base: Option<Value>,
) -> Result<Selector, Reply> {
    let scope = state.scope.as_ref().map(|s| s.selector(ctx));
    let value = match (base, scope) {
        (Some(b), Some(s)) => json!({"$and": [b, s]}),
        (Some(b), None) => b,
        (None, Some(s)) => s,
        (None, None) => return Ok(Selector::all()),
    };
    Selector::parse(&value).map_err(|e| Reply::internal(format!("access scope selector: {e}")))
}

fn by_id(id: &str) -> Value {
    json!({"_id": id})
}

fn require_id(id: Option<&str>) -> Result<&str, Reply> {
    id.ok_or_else(not_found)
}

/// Lists one page: the documents, `X-Total-Count` and `Link`.
pub(crate) async fn list(
    state: &CollectionState,
    ctx: &Context,
    params: ListParams,
    projection: Option<Projection>,
) -> Result<Outcome, Reply> {
    let selector = scoped(state, ctx, params.filter.clone())?;
    let total = state
        .collection
        .count(&selector)
        .await
        .map_err(platform_error)?;
    let query = Query {
        selector,
        sort: params.sort.clone(),
        skip: params.skip,
        limit: Some(params.limit),
        projection,
    };
    let docs = state
        .collection
        .find(&query)
        .await
        .map_err(platform_error)?;
    let mut headers = vec![("X-Total-Count".to_owned(), total.to_string())];
    // Under `Router::nest` the request's uri lost the outer prefix; links use the original one.
    let uri = ctx
        .request
        .extensions
        .get::<axum::extract::OriginalUri>()
        .map_or(&ctx.request.uri, |o| &o.0);
    if let Some(link) = link_header(uri.path(), uri.query(), params.skip, params.limit, total) {
        headers.push(("Link".to_owned(), link));
    }
    Ok(Outcome {
        data: Value::Array(docs.into_iter().map(Value::Object).collect()),
        headers,
        id: None,
    })
}

async fn run_plain(
    state: &CollectionState,
    op: Op,
    ctx: &Context,
    id: Option<&str>,
    body: Option<Document>,
) -> Result<Outcome, Reply> {
    let collection = &state.collection;
    match op {
        Op::GetAll => {
            let params = ListParams::parse(
                &ctx.query_params,
                state.default_page_size,
                state.max_page_size,
            )?;
            let projection = match &params.fields {
                Some(fields) => Some(
                    Projection::parse_list(&fields.join(","))
                        .map_err(|e| Reply::error(400, format!("Invalid fields: {e}")))?,
                ),
                None => None,
            };
            list(state, ctx, params, projection).await
        }
        Op::Get => get_scoped(state, ctx, require_id(id)?).await,
        Op::Post => {
            let mut doc = body.unwrap_or_default();
            check(&mut doc, BodyUse::Create, None)?;
            if let Some(scope) = &state.scope {
                doc.extend(scope.stamp(ctx));
            }
            let new_id = collection.insert(doc).await.map_err(platform_error)?;
            let created = collection.get(&new_id).await.map_err(platform_error)?;
            Ok(Outcome {
                data: created.map(Value::Object).unwrap_or(Value::Null),
                headers: Vec::new(),
                id: Some(new_id),
            })
        }
        Op::Put | Op::Patch => {
            let id = require_id(id)?;
            let mut doc = body.unwrap_or_default();
            let how = if op == Op::Put {
                BodyUse::Replace
            } else {
                BodyUse::Change
            };
            check(&mut doc, how, Some(id))?;
            let stamp = state
                .scope
                .as_ref()
                .map(|s| s.stamp(ctx))
                .unwrap_or_default();
            let update = if op == Op::Put {
                doc.extend(stamp);
                Update::replace(doc)
            } else {
                for key in doc.keys() {
                    let top = key.split('.').next().unwrap_or(key);
                    if stamp.get(top).is_some_and(|v| doc.get(key) != Some(v)) {
                        return Err(Reply::error(
                            400,
                            format!("The field {top} cannot be changed"),
                        ));
                    }
                }
                if doc.is_empty() {
                    return get_scoped(state, ctx, id).await;
                }
                Update::set(doc)
            }
            .map_err(|e| Reply::error(400, e.to_string()))?;
            if state.scope.is_some() {
                let selector = scoped(state, ctx, Some(by_id(id)))?;
                let result = collection
                    .update(&selector, &update, UpdateOptions::default())
                    .await
                    .map_err(platform_error)?;
                if result.matched == 0 {
                    return Err(not_found());
                }
                get_scoped(state, ctx, id).await
            } else {
                match collection
                    .update_by_id(id, &update)
                    .await
                    .map_err(platform_error)?
                {
                    Some(doc) => Ok(Outcome::data(Value::Object(doc))),
                    None => Err(not_found()),
                }
            }
        }
        Op::Delete => {
            let id = require_id(id)?;
            let removed = if state.scope.is_some() {
                let selector = scoped(state, ctx, Some(by_id(id)))?;
                collection.remove(&selector).await.map_err(platform_error)? > 0
            } else {
                collection.remove_by_id(id).await.map_err(platform_error)?
            };
            if removed {
                Ok(Outcome::data(json!({"message": "Item removed"})))
            } else {
                Err(not_found())
            }
        }
    }
}

/// The document with `id`, when the caller's scope allows it. Without a scope this is the
/// store's get-by-id fast path (no selector to parse or match).
async fn get_scoped(state: &CollectionState, ctx: &Context, id: &str) -> Result<Outcome, Reply> {
    let found = if state.scope.is_some() {
        let selector = scoped(state, ctx, Some(by_id(id)))?;
        state.collection.find_one(&selector).await
    } else {
        state.collection.get(id).await
    };
    match found.map_err(platform_error)? {
        Some(doc) => Ok(Outcome::data(Value::Object(doc))),
        None => Err(not_found()),
    }
}
