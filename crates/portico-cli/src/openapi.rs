//! `portico openapi`: the server's OpenAPI 3.1 document (see [`document`]), printed for a config
//! without serving it.

use std::path::PathBuf;

use serde_json::Value;

pub use crate::serve::openapi::{TITLE, document, self_doc};
use crate::{database, serve};

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
    crate::doors::declare_collections(&config, &platform)?;
    let scripts = crate::scripts::load(&config, &platform).await?;
    let doors = crate::doors::Doors::build_with(&config, &platform, scripts.as_ref())
        .map_err(|errors| crate::doors::refused(path.as_deref(), errors))?;
    let app = serve::assemble(&config, &platform, doors)?;
    Ok(document(&app.routes))
}
