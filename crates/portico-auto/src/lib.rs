//! Portico's automatic JSON HTTP API: every method, publication and collection write of a
//! [`Platform`](portico_platform::Platform) as an HTTP endpoint, as an [`axum::Router`].
//!
//! ```no_run
//! use portico_auto::{AutoApi, AutoConfig, BearerTokenLayer, LoginOptions};
//! use portico_platform::{MethodError, Platform, Rules, arg};
//! use serde_json::{Value, json};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let platform = Platform::open("sqlite:todos.db").await?;
//! let todos = platform.collection("todos");
//! // Signed-in users may insert, change and remove their own todos over HTTP.
//! todos.allow(
//!     Rules::new()
//!         .insert(|user, doc| async move { user.is_some() && doc.get("owner") == user.map(Value::from).as_ref() })
//!         .update(|user, doc, _fields, _modifier| async move { user.is_some() && doc.get("owner") == user.map(Value::from).as_ref() })
//!         .remove(|user, doc| async move { user.is_some() && doc.get("owner") == user.map(Value::from).as_ref() }),
//! );
//! // POST /methods/add with a body of [2, 3] answers 5.
//! platform.method("add", |_inv, args| async move {
//!     Ok::<Value, MethodError>(json!(arg::<f64>(&args, 0)? + arg::<f64>(&args, 1)?))
//! })?;
//! // GET /publications/todos answers {"todos": [...]}.
//! let all = todos.clone();
//! platform.publish("todos", move |_sub, _args| {
//!     let all = all.clone();
//!     async move { Ok(vec![all.cursor(Default::default())]) }
//! })?;
//!
//! let app = AutoApi::new(platform)
//!     .configure(AutoConfig::default())
//!     .with_login(LoginOptions::default())
//!     .with_token_authentication(BearerTokenLayer::new())
//!     .router()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! | Endpoint | Request | Reply |
//! |---|---|---|
//! | `GET /publications/<name>` (or the publication's `url` / `http_method`) | url `:N` segments are argument N (strings) | 200 `{"<collection>": [documents...]}` |
//! | `POST /methods/<name>` (or the method's `url` / `http_method`) | see *Arguments* | 200, or the status set with `set_http_status_code`; the method's value as-is (a method returning `null` answers `null`) |
//! | `OPTIONS` on every method url | — | empty 200 with the global headers (CORS preflight) |
//! | `POST /<collection>` | a JSON document | 200 with the new `_id` (a JSON string); 409 when the `_id` exists |
//! | `PATCH /<collection>/<_id>` | fields to `$set` (dotted names are paths) | 200 with the number of documents changed |
//! | `DELETE /<collection>/<_id>` | — | 200 with the number of documents removed |
//! | `GET /publications/api-routes` | — | `{"api-routes": [{"_id": path, "methods": [...], "path": path}]}`, each method once per path |
//! | `POST /users/login`, `POST /users/register` ([`AutoApi::with_login`]) | credentials | `{"id", "token", "tokenExpires"}` |
//!
//! **Conditional writes.** `PATCH` and `DELETE /<collection>/<_id>` take `If-Match` with the
//! document's entity tag ([`portico_store::etag`], as the routes door sends it in `ETag`): a
//! document that changed answers 412 `{"error": "precondition-failed", ...}`. The tag is
//! checked inside the write's transaction, so of two writers sending the same tag exactly one
//! succeeds. `If-Match: *` only requires the document to exist. The auto API
//! returns no document from these writes, so it sends no `ETag` itself.
//!
//! **OpenAPI.** [`AutoApi::routes`] describes every route; [`portico_edge::openapi::document`]
//! makes an OpenAPI 3.1 document of it (merged with other doors' routes if you like) and
//! [`portico_edge::openapi::router`] serves it at `/openapi.json`.
//!
//! **Requests** are read by the shared HTTP edge ([`portico_edge`]), exactly as the routes door
//! reads them: bodies under a size limit, JSON or bracketed forms by content type (another
//! content type is 415), `:name` path patterns, bearer tokens, the client address.
//!
//! **Arguments.** Without an `args_extractor` option, url arguments come first; then a JSON
//! array body gives one argument per element, one JSON object is the only argument, an empty body
//! adds nothing, and a form-encoded body is one object of string fields. Any other body shape is
//! a 400. An extractor made with [`args_extractor`] replaces this rule: it is async and gets the
//! parsed request ([`ArgsRequest`]: url parameters by name and number, the query string, the
//! parsed body and its bytes, the headers). Options are the platform's
//! [`EndpointOptions`](portico_platform::EndpointOptions), with a typed
//! [`HttpMethod`](portico_platform::HttpMethod).
//!
//! **Collection writes** go through the collection's allow/deny rules, exactly as a client write
//! on the platform: refused, they answer 403 `{"error":"access-denied","reason":"Access denied"}`.
//! With no allow rule for an update or a remove, the answer is that 403 whatever the id, so a
//! caller cannot tell which ids exist. An insert with an `_id` that exists is a 409 (on both
//! doors): someone who already knows an id can learn that it exists, which is why generated ids
//! are 17 random characters; nothing of the document's content is sent. A body is data, never a
//! modifier: a `$`-prefixed field name or a PATCH that changes `_id` is a 400 and nothing is
//! written. [`AutoConfig`] chooses which collections get endpoints and which use object ids.
//!
//! **Errors** are JSON `{"error": code, "reason": text, "details"?, "data"?}` ([`ApiError`]): a
//! method's own error is 400 unless it carries another status; a platform error takes its status
//! from [`portico_platform::Error::status_code`]; an internal error is 500 with the reason
//! "Internal server error" (the real message is logged); unknown routes (404), other methods on a
//! known path (405), malformed bodies (400), oversized ones (413, over 50 MB by default) and
//! panics (500) answer in the same shape.
//!
//! **Authentication** is two separate tower layers ([`auth`]): [`BearerTokenLayer`] reads
//! `Authorization: Bearer <token>` or `X-Auth-Token: <token>` (both doors take both styles; and
//! `?access_token=` only when allowed), [`TokenAuthLayer`]
//! looks the token up, honouring expiry. A request without a valid token runs with no user. A
//! host's own axum handler can take the edge's [`AuthenticatedUser`] extractor.
//!
//! **Routes as data.** [`AutoApi::routes`] describes every route ([`RouteDoc`]: method, path,
//! who may call it, rules, JSON Schemas of the bodies where known); the `api-routes` listing is
//! made from it, and `portico routes` and API documents can read it too.
//!
//! **Live publications.** A publication's url requested with `Accept: text/event-stream` streams
//! server-sent events instead of answering once: `added` (each document of the initial set, then
//! each one that comes to match), `ready`, `changed` and `removed`, each with a JSON `data` line,
//! and a `: ping` comment after 15 s of quiet (see [`portico_platform::Platform::subscribe_live`]
//! and [`portico_edge::event_stream`]). It runs as the caller and ends (`end` event) when the
//! caller's token is logged out or expires; a server with its `max_streams` open answers 503
//! `{"error":"too-many-streams",...}`. A reconnecting client gets a fresh initial set.
//!
//! **Late definitions.** Methods, publications and collections defined after
//! [`AutoApi::router`] are served too: a request that finds no route makes the router look at
//! the platform's registries again.
//!
//! **Mounting.** The router answers every path (unknown ones with a JSON 404) through a
//! catch-all route. Merged with another router, that router's own routes take precedence over
//! the catch-all (but its fallback is never reached); nested under a prefix with
//! [`axum::Router::nest`], it answers only below that prefix (its listing shows paths without it).

pub mod auth;

mod aggregate;
mod api;
mod api_error;
mod args;
mod collection_write;
mod conditional;
mod config;
mod dispatch;
mod error;
mod layers;
mod live;
mod login;
mod queries;
mod route;
mod route_doc;
mod state;

pub use aggregate::{DEFAULT_LIMIT as DEFAULT_AGGREGATE_LIMIT, MAX_LIMIT as MAX_AGGREGATE_LIMIT};
pub use api::AutoApi;
pub use api_error::ApiError;
pub use args::{ArgsRequest, args_extractor};
pub use auth::{AuthenticatedUser, BearerToken, BearerTokenLayer, RefusedToken, TokenAuthLayer};
pub use config::AutoConfig;
pub use error::{Error, Result};
pub use login::{LoginOptions, PasswordLogin};
pub use portico_edge::{Access, DEFAULT_BODY_LIMIT, RouteDoc, TrustedProxies};
pub use route::API_ROUTES;
