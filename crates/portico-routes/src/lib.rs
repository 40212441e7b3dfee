//! Portico routes: hand-written REST routes and generated collection routes with token
//! authentication, roles, JSend replies, CORS and URL versioning, served as an [`axum::Router`].
//!
//! ```no_run
//! use portico_routes::{Api, ApiOptions, CollectionOptions, Context, Endpoint, Endpoints, RouteOptions};
//! use serde_json::json;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let platform = portico_platform::Platform::open("sqlite:blog.db").await?;
//!     let options = ApiOptions::default().use_default_auth(true).version("v1");
//!     let mut api = Api::new(options, platform.clone())?;
//!     // GET /api/v1/articles/:id/comments, POST for editors only.
//!     api.add_route(
//!         "articles/:id/comments",
//!         RouteOptions::default(),
//!         Endpoints::new()
//!             .get(|ctx: Context| async move { json!({"article": ctx.url_param("id")}) })
//!             .post(Endpoint::new(|ctx: Context| async move {
//!                 json!({"statusCode": 201, "body": {"status": "success", "data": ctx.body_params}})
//!             }).role_required("editor")),
//!     )?;
//!     // GET/POST /api/v1/articles, GET/PUT/PATCH/DELETE /api/v1/articles/:id
//!     api.add_collection(
//!         platform.collection("articles"),
//!         CollectionOptions::new().route_options(RouteOptions::new().auth_required(true)),
//!     )?;
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     axum::serve(listener, api.router()).await?;
//!     Ok(())
//! }
//! ```
//!
//! To run the blog example and try it with curl, see the crate README.
//!
//! **Live lists.** A generated collection's getAll url requested with `Accept: text/event-stream`
//! streams server-sent events (`added`, `ready`, `changed`, `removed`, and `end` when the caller
//! is logged out) instead of answering one page: the same `where`, `sort`, `skip`, `limit`,
//! `fields`, access scope and authentication as the snapshot (see
//! [`portico_platform::Platform::live_query`]). A server with its `max_streams` open answers 503.
//!
#![doc = include_str!("../GUIDE.md")]

mod api;
mod auth;
mod collection;
mod context;
mod cors;
mod describe;
mod dispatch;
mod endpoint;
mod endpoint_doc;
mod error;
mod hooks;
mod login;
mod op;
mod options;
mod reply;
mod route_table;
#[cfg(feature = "scripts")]
pub mod scripts;

pub use api::{Api, RouteInfo, normalize_api_path};
pub use collection::{
    AccessScope, BatchOptions, CollectionEndpoint, CollectionOptions, DEFAULT_BATCH_LIMIT,
};
pub use context::{Context, ResolvedOptions};
pub use endpoint::{Endpoint, Endpoints, IntoEndpoint, IntoRoles, RouteOptions};
pub use error::{Error, Result};
pub use hooks::{
    AfterEvent, AfterHook, AuthOutcome, AuthUserHook, BeforeHook, Hook, HookEvent, LoginHook,
};
pub use op::Op;
pub use options::{ApiOptions, AuthOptions, CorsOptions, DelayRange, LoginRateLimit, RateLimit};
pub use portico_edge::{AuthenticatedUser, RoutePath, TrustedProxies};
pub use reply::{IntoReply, Reply};
