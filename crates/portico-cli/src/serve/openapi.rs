//! The server's OpenAPI 3.1 document: made by `portico_edge::openapi` from the route
//! descriptions of everything `serve` builds, so `GET /openapi.json` and `portico openapi`
//! print the same document and neither can drift from what is served.

use portico_edge::{Access, Door, RouteDoc, openapi};
use serde_json::{Value, json};

/// The document's title.
pub const TITLE: &str = "Portico";

/// The OpenAPI document describing `routes` (as [`super::App::routes`] lists them).
pub fn document(routes: &[RouteDoc]) -> Value {
    openapi::document(routes, TITLE, env!("CARGO_PKG_VERSION"))
}

/// The description of `GET /openapi.json` itself.
pub fn self_doc() -> RouteDoc {
    RouteDoc::new(
        Door::Server,
        axum::http::Method::GET,
        openapi::OPENAPI_PATH,
        Access::Public,
    )
    .summary("this OpenAPI document")
    .reply_body(json!({"type": "object", "required": ["openapi", "paths"]}))
}
