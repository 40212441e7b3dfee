//! Answering a request: find its route in the current table, then run the method, publication
//! or collection write it names.
//!
//! All requests go through one handler so that methods, publications and collections defined
//! after the router was built are reachable: when the table has no route for a request, the
//! handler checks whether the platform's registries changed since the table was built, rebuilds
//! it if so, and looks again (see [`crate::state::Shared`]).

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode};
use portico_edge::{AuthenticatedUser, ParsedBody, PathMatch, parse_body, read_body};
use portico_platform::{Collection, Platform};
use serde_json::Value;

use crate::ApiError;
use crate::auth::RefusedToken;
use crate::collection_write::{check_id, insert_document, update_modifier};
use crate::route::{Route, Target};
use crate::route_doc::listing;
use crate::state::{Resolved, Shared, request_args};

/// The axum handler behind every auto API route.
pub(crate) async fn dispatch(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    answer(&shared, parts, body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// An empty 200: the reply to a cross-origin preflight. The global response headers (such as
/// `Access-Control-Allow-Origin`) are added by the router's header layer.
fn preflight(allow: &[Method]) -> Response {
    let mut response = StatusCode::OK.into_response();
    let list = allow
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if let Ok(value) = HeaderValue::from_str(&list) {
        response.headers_mut().insert(http::header::ALLOW, value);
    }
    response
}

/// Finds the request's route and answers it, by what the route names.
async fn answer(shared: &Shared, parts: Parts, body: Body) -> Result<Response, ApiError> {
    let path = parts.uri.path().to_owned();
    let (route, found) = match shared.resolve(&parts.method, &path) {
        Resolved::Found(route, found) => (route, found),
        Resolved::OtherMethods(methods) if parts.method == Method::OPTIONS => {
            return Ok(preflight(&methods));
        }
        Resolved::OtherMethods(methods) => {
            return Err(ApiError::method_not_allowed(&parts.method, &path, &methods));
        }
        Resolved::NotFound => {
            let mut response = ApiError::route_not_found(&parts.method, &path).into_response();
            response.extensions_mut().insert(portico_edge::NoRoute);
            return Ok(response);
        }
    };
    let user_id = parts
        .extensions
        .get::<AuthenticatedUser>()
        .map(|user| user.user_id().to_owned());
    if parts.extensions.get::<RefusedToken>().is_some()
        && route.target.token_must_be_valid(&shared.config)
    {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "The login token is unknown or expired.",
        ));
    }
    let request = Matched {
        shared,
        route: &route,
        parts,
        body,
        found,
        user_id,
    };
    match &route.target {
        Target::Preflight | Target::Listed(_) => {
            let table = shared.refresh();
            Ok(preflight(&table.methods_at(&path)))
        }
        Target::ApiRoutes => Ok(Json(listing(&shared.refresh().docs(None))).into_response()),
        Target::Method(name) => call_method(request, name).await,
        Target::Publication(name) => publication(request, name).await,
        Target::Insert(name) => insert(request, name).await,
        Target::Update(name) => update(request, name).await,
        Target::Remove(name) => remove(request, name).await,
    }
}

/// A request whose route was found, with its caller.
struct Matched<'a> {
    shared: &'a Shared,
    route: &'a Route,
    parts: Parts,
    body: Body,
    found: PathMatch,
    user_id: Option<String>,
}

impl Matched<'_> {
    /// The call's positional arguments, and its caller.
    async fn into_args(self) -> Result<(Vec<Value>, Option<String>), ApiError> {
        let args = request_args(self.shared, self.route, self.parts, self.body, self.found).await?;
        Ok((args, self.user_id))
    }
}

/// Calls the method `name`; its reply is the method's value, with the status it set.
async fn call_method(request: Matched<'_>, name: &str) -> Result<Response, ApiError> {
    let shared = request.shared;
    let (args, user_id) = request.into_args().await?;
    let reply = shared.platform.call(name, user_id, args).await?;
    let status = match reply.status {
        None => StatusCode::OK,
        Some(code) => StatusCode::from_u16(code).map_err(|_| {
            ApiError::internal(format!("method {name:?} set the invalid status {code}"))
        })?,
    };
    if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        return Ok(status.into_response());
    }
    Ok((status, Json(reply.value)).into_response())
}

/// Answers the publication `name` once, or follows it live for `Accept: text/event-stream`.
async fn publication(request: Matched<'_>, name: &str) -> Result<Response, ApiError> {
    let shared = request.shared;
    let params = crate::queries::params(request.parts.uri.query());
    let expand = crate::queries::expand(&params)?;
    let search = crate::queries::search(&params)?;
    let live = portico_edge::wants_event_stream(&request.parts.headers);
    if live && expand.is_some() {
        return Err(ApiError::bad_request(
            "invalid-expand",
            "a live publication (text/event-stream) cannot expand relations",
        ));
    }
    if live && search.is_some() {
        return Err(ApiError::bad_request(
            "invalid-search",
            "a live publication (text/event-stream) cannot be searched",
        ));
    }
    if live {
        let Matched {
            route,
            parts,
            body,
            found,
            ..
        } = request;
        return crate::live::publication(shared, route, parts, body, found, name).await;
    }
    let aggregate = crate::aggregate::from_query(request.parts.uri.query())?;
    if aggregate.is_some() && (expand.is_some() || search.is_some()) {
        return Err(ApiError::bad_request(
            "invalid-aggregate",
            "groups cannot be combined with expand or search",
        ));
    }
    let (args, user_id) = request.into_args().await?;
    if let Some(spec) = aggregate {
        let groups = shared
            .platform
            .aggregate_publication(name, user_id, args, spec)
            .await?;
        let groups = groups.into_iter().map(Value::Object).collect();
        return Ok(Json(Value::Array(groups)).into_response());
    }
    let (mut published, total) = match search {
        Some(search) => {
            let (found, total) = shared
                .platform
                .search_publication(name, user_id.clone(), args, search)
                .await?;
            (found, Some(total))
        }
        None => (
            shared
                .platform
                .subscribe(name, user_id.clone(), args)
                .await?,
            None,
        ),
    };
    if let Some(expand) = &expand {
        crate::queries::expand_published(
            &shared.platform,
            &shared.config,
            user_id.as_deref(),
            expand,
            &mut published,
        )
        .await?;
    }
    let mut response = Json(Value::Object(published)).into_response();
    if let Some(total) = total {
        response
            .headers_mut()
            .insert("x-total-count", http::HeaderValue::from(total));
    }
    Ok(response)
}

/// Inserts the body into the collection `name`; the reply is the new `_id`.
async fn insert(request: Matched<'_>, name: &str) -> Result<Response, ApiError> {
    let shared = request.shared;
    let collection = collection(&shared.platform, name)?;
    let object_ids = shared.uses_object_ids(&collection);
    let body = body_of(shared, &request.parts, request.body)
        .await?
        .into_value()?;
    let doc = insert_document(body, object_ids)?;
    let id = collection
        .client_insert(request.user_id.as_deref(), doc)
        .await?;
    Ok(Json(Value::String(id)).into_response())
}

/// Updates the document `:_id` of the collection `name` with the body; the reply is the count.
async fn update(request: Matched<'_>, name: &str) -> Result<Response, ApiError> {
    let shared = request.shared;
    let collection = collection(&shared.platform, name)?;
    let id = request.found.param("_id").unwrap_or_default();
    check_id(id, shared.uses_object_ids(&collection))?;
    let body = body_of(shared, &request.parts, request.body)
        .await?
        .into_value()?;
    let update = update_modifier(body, id)?;
    let if_match = crate::conditional::if_match(&request.parts.headers)?;
    let count = collection
        .client_update_if(request.user_id.as_deref(), id, &update, &if_match)
        .await?;
    Ok(Json(Value::from(count)).into_response())
}

/// Removes the document `:_id` of the collection `name`; the reply is the count.
async fn remove(request: Matched<'_>, name: &str) -> Result<Response, ApiError> {
    let shared = request.shared;
    let collection = collection(&shared.platform, name)?;
    let id = request.found.param("_id").unwrap_or_default();
    check_id(id, shared.uses_object_ids(&collection))?;
    let if_match = crate::conditional::if_match(&request.parts.headers)?;
    let count = collection
        .client_remove_if(request.user_id.as_deref(), id, &if_match)
        .await?;
    Ok(Json(Value::from(count)).into_response())
}

/// Reads and parses the body of a collection write through the edge: it becomes one document,
/// so a body over the store's document limit (or the configured limit, when lower) is refused
/// by its length before a byte of it is read. The bytes are dropped once parsed.
async fn body_of(shared: &Shared, parts: &Parts, body: Body) -> Result<ParsedBody, ApiError> {
    let limit = shared.body_limit.min(portico_store::MAX_DOCUMENT_BYTES);
    let bytes = read_body(&parts.headers, body, limit).await?;
    Ok(parse_body(&parts.headers, &bytes)?)
}

fn collection(platform: &Platform, name: &str) -> Result<Collection, ApiError> {
    platform.get_collection(name).ok_or_else(|| {
        ApiError::internal(format!(
            "collection {name:?} has a route but is not declared"
        ))
    })
}
