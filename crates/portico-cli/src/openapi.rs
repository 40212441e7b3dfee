//! `portico openapi`: the server's OpenAPI 3.1 document (see [`document`]), printed for a config
//! without serving it.

use std::path::PathBuf;

use serde_json::Value;

use crate::serve;
pub use crate::serve::openapi::{TITLE, document, self_doc};

/// `portico openapi`: the document `serve` would answer at `/openapi.json` for the same config
/// (even when the config turns that route off).
///
/// Built as [`serve::described`] builds it.
///
/// # Errors
/// A bad config, an unreachable database (no config file), or a front door refusing the config.
pub async fn run(config: Option<PathBuf>, database_flag: Option<String>) -> crate::Result<Value> {
    // The route itself is part of the document even when `openapi = false` keeps it off.
    let (_, app) =
        serve::described(config, database_flag, |config| config.openapi = Some(true)).await?;
    Ok(document(&app.routes))
}
