//! Answering a request: find its route in the current table, then run the method, publication
//! or collection write it names.
//!
//! All requests go through one handler so that methods, publications and collections defined
//! after the router was built are reachable: when the table has no route for a request, the
//! handler checks whether the platform's registries changed since the table was built, rebuilds
//! it if so, and looks again. A request for a route that exists costs one read lock and a scan
//! of the table; only misses look at the registries.

use std::sync::{Arc, PoisonError, RwLock};

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode};
use portico_edge::{AuthenticatedUser, ParsedBody, PathMatch, parse_body, parse_form, read_body};
use portico_platform::{Collection, IdKind, Platform};
use serde_json::Value;

use crate::args::{ArgsRequest, default_args};
use crate::collection_write::{check_id, insert_document, update_modifier};
use crate::route::{Lookup, Route, RouteTable, Target};
use crate::route_doc::listing;
use crate::{ApiError, AutoConfig};

/// What every request handler shares.
pub(crate) struct Shared {
    pub(crate) platform: Platform,
    pub(crate) config: AutoConfig,
    pub(crate) body_limit: usize,
    /// Routes served by other routers (the login add-on), listed by `api-routes`.
    pub(crate) listed: Vec<(Method, &'static str, &'static str)>,
    table: RwLock<Arc<RouteTable>>,
}

/// A lookup that owns what it found, so the table lock is not held across awaits.
enum Resolved {
    Found(Route, PathMatch),
    OtherMethods(Vec<Method>),
    NotFound,
}

impl Shared {
    pub(crate) fn new(
        platform: Platform,
        config: AutoConfig,
        body_limit: usize,
        listed: Vec<(Method, &'static str, &'static str)>,
        table: RouteTable,
    ) -> Shared {
        Shared {
            platform,
            config,
            body_limit,
            listed,
            table: RwLock::new(Arc::new(table)),
        }
    }

    fn table(&self) -> Arc<RouteTable> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The current table, rebuilt first when the platform's registries changed.
    pub(crate) fn refresh(&self) -> Arc<RouteTable> {
        let current = self.table();
        if current.is_current(&self.platform) {
            return current;
        }
        let (table, errors) = RouteTable::build(
            &self.platform,
            &self.config,
            &self.listed,
            Some(current.registry()),
        );
        for error in errors {
            // Setup-time errors were fatal in `AutoApi::router`; a definition made later can only
            // be reported here.
            tracing::error!(%error, "auto API: an endpoint defined after startup was skipped");
        }
        let table = Arc::new(table);
        *self.table.write().unwrap_or_else(PoisonError::into_inner) = table.clone();
        table
    }

    fn resolve_in(table: &RouteTable, method: &Method, path: &str) -> Resolved {
        match table.lookup(method, path) {
            Lookup::Found(route, found) => Resolved::Found(route.clone(), found),
            Lookup::OtherMethods(methods) => Resolved::OtherMethods(methods),
            Lookup::NotFound => Resolved::NotFound,
        }
    }

    /// Whether ids of `collection` are object ids: listed in `object_id_collections`, or
    /// declared on the platform with [`IdKind::ObjectId`].
    fn uses_object_ids(&self, collection: &Collection) -> bool {
        collection.id_kind() == IdKind::ObjectId
            || self.config.is_object_id_collection(collection.name())
    }

    fn resolve(&self, method: &Method, path: &str) -> Resolved {
        let resolved = Self::resolve_in(&self.table(), method, path);
        if let Resolved::Found(..) = resolved {
            return resolved;
        }
        Self::resolve_in(&self.refresh(), method, path)
    }
}

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
    let platform = &shared.platform;

    match &route.target {
        Target::Preflight | Target::Listed(_) => {
            let table = shared.refresh();
            Ok(preflight(&table.methods_at(&path)))
        }
        Target::ApiRoutes => Ok(Json(listing(&shared.refresh().docs(None))).into_response()),
        Target::Method(name) => {
            let args = request_args(shared, &route, parts, body, found).await?;
            let reply = platform.call(name, user_id, args).await?;
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
        Target::Publication(name) => {
            if portico_edge::wants_event_stream(&parts.headers) {
                return crate::live::publication(shared, &route, parts, body, found, name).await;
            }
            let args = request_args(shared, &route, parts, body, found).await?;
            let published = platform.subscribe(name, user_id, args).await?;
            Ok(Json(Value::Object(published)).into_response())
        }
        Target::Insert(name) => {
            let collection = collection(platform, name)?;
            let object_ids = shared.uses_object_ids(&collection);
            let body = body_of(shared, &parts, body).await?.into_value()?;
            let doc = insert_document(body, object_ids)?;
            let id = collection.client_insert(user_id.as_deref(), doc).await?;
            Ok(Json(Value::String(id)).into_response())
        }
        Target::Update(name) => {
            let collection = collection(platform, name)?;
            let id = found.param("_id").unwrap_or_default();
            check_id(id, shared.uses_object_ids(&collection))?;
            let body = body_of(shared, &parts, body).await?.into_value()?;
            let update = update_modifier(body, id)?;
            let if_match = crate::conditional::if_match(&parts.headers)?;
            let count = collection
                .client_update_if(user_id.as_deref(), id, &update, &if_match)
                .await?;
            Ok(Json(Value::from(count)).into_response())
        }
        Target::Remove(name) => {
            let collection = collection(platform, name)?;
            let id = found.param("_id").unwrap_or_default();
            check_id(id, shared.uses_object_ids(&collection))?;
            let if_match = crate::conditional::if_match(&parts.headers)?;
            let count = collection
                .client_remove_if(user_id.as_deref(), id, &if_match)
                .await?;
            Ok(Json(Value::from(count)).into_response())
        }
    }
}

/// Reads and parses a request body through the edge, under the configured limit.
async fn body_of(shared: &Shared, parts: &Parts, body: Body) -> Result<ParsedBody, ApiError> {
    let bytes = read_body(&parts.headers, body, shared.body_limit).await?;
    Ok(parse_body(&parts.headers, &bytes)?)
}

fn collection(platform: &Platform, name: &str) -> Result<Collection, ApiError> {
    platform.get_collection(name).ok_or_else(|| {
        ApiError::internal(format!(
            "collection {name:?} has a route but is not declared"
        ))
    })
}

/// The positional arguments of a method or publication call: its `args_extractor`, or the
/// default rule of [`crate::args`].
pub(crate) async fn request_args(
    shared: &Shared,
    route: &Route,
    parts: Parts,
    body: Body,
    found: PathMatch,
) -> Result<Vec<Value>, ApiError> {
    let url_args = found.numbered(route.arg_count);
    let raw_body = read_body(&parts.headers, body, shared.body_limit).await?;
    let parsed = parse_body(&parts.headers, &raw_body)?;
    let Some(extractor) = &route.extractor else {
        return default_args(&url_args, parsed);
    };
    let query = parse_form(parts.uri.query().unwrap_or_default().as_bytes())
        .map_err(|e| ApiError::bad_request("invalid-query", e.to_string()))?;
    let request = ArgsRequest {
        method: parts.method,
        uri: parts.uri,
        headers: parts.headers,
        params: found.params,
        url_args,
        query,
        body: parsed,
        raw_body,
    };
    (extractor.0)(request).await.map_err(ApiError::from)
}
