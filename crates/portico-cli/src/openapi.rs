//! The server's OpenAPI 3.1 document: made by `portico_edge::openapi` from the route
//! descriptions of everything `serve` builds, so `GET /openapi.json` and `portico openapi`
//! print the same document and neither can drift from what is served.

use std::path::PathBuf;

use portico_edge::{Access, Door, RouteDoc, openapi};
use serde_json::{Value, json};

use crate::{database, serve};

/// The document's title.
pub const TITLE: &str = "Portico";

/// The OpenAPI document describing `routes` (as [`serve::App::routes`] lists them).
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

/// `portico openapi`: the document `serve` would answer at `/openapi.json` for the same config
/// (even when the config turns that route off).
///
/// A config file's routes do not depend on the data, so it is built on an in-memory store;
/// without a config file the zero-config default reads the database's collections, so the
/// database `serve` would use is opened.
///
/// # Errors
/// A bad config, an unreachable database (no config file), or a front door refusing the config.
pub async fn run(config: Option<PathBuf>, database_flag: Option<String>) -> crate::Result<Value> {
    let (path, mut config) = database::load_config(config.as_deref())?;
    let platform = match &path {
        Some(_) => database::open("memory:").await?,
        None => {
            let choice = database::choose_database(database_flag.as_deref(), None, &config);
            let platform = database::open(&choice.url).await?;
            config = serve::zero_config(&platform, &choice.url).await?;
            platform
        }
    };
    // The route itself is part of the document even when `openapi = false` keeps it off.
    config.openapi = Some(true);
    let app = serve::build_server(&config, &platform)?;
    Ok(document(&app.routes))
}
