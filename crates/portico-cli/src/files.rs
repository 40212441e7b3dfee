//! Files attached to documents in the `portico` binary: the files service a config asks for,
//! its fields declared on the platform, and the upload paths the body budget leaves alone.

use std::sync::Arc;

use portico_platform::{Files, Platform};

use crate::config::Config;

/// True when some collection of the config has file fields.
pub fn wanted(config: &Config) -> bool {
    config
        .apis
        .iter()
        .flat_map(|api| &api.collections)
        .any(|c| !c.files.is_empty())
}

/// Opens the config's files store for `serve` on `database` and gives it to `platform`; start
/// its cleaner with [`start_cleaner`] once the config's collections are declared. Nothing when
/// no collection has file fields.
///
/// # Errors
/// [`crate::Error::Setup`] for a local directory with a PostgreSQL database (unless
/// `shared_storage = true`) and for a store that cannot be opened.
pub fn open(config: &Config, platform: &Platform, database: &str) -> crate::Result<()> {
    if !wanted(config) {
        return Ok(());
    }
    if let Some(message) = config.files.refusal(database) {
        return Err(crate::Error::Setup(message));
    }
    let files = Files::open(config.files.platform_config())
        .map_err(|e| crate::Error::Setup(e.to_string()))?;
    if platform.set_files(files) {
        declare(config, platform)?;
    }
    Ok(())
}

/// Starts the cleaner of the platform's files service (deleting removed documents' files,
/// sweeping what a crash left; the first sweep at once). Call it after the config's collections
/// are declared: the sweep reads documents through their collections, and reading one not
/// declared yet declares it with default options, which the config's declaration would then
/// refuse (`collection "posts" is declared already with other options`, a server restarted
/// over a store holding files).
pub fn start_cleaner(platform: &Platform) {
    if let Some(files) = platform.files() {
        files.start_cleaner(platform);
    }
}

/// Declares the config's file fields on the platform's files service; on a platform without
/// one (listing routes, checking a config), on an in-memory one first.
///
/// # Errors
/// [`crate::Error::Setup`] for a field the service refuses.
pub fn declare(config: &Config, platform: &Platform) -> crate::Result<()> {
    if !wanted(config) {
        return Ok(());
    }
    if platform.files().is_none() {
        platform.set_files(Files::with_store(
            config.files.platform_config(),
            Arc::new(object_store::memory::InMemory::new()),
        ));
    }
    let Some(files) = platform.files() else {
        return Ok(());
    };
    for collection in config.apis.iter().flat_map(|api| &api.collections) {
        for (field, spec) in &collection.files {
            files
                .declare(&collection.name, field, spec.clone())
                .map_err(|e| crate::Error::Setup(e.to_string()))?;
        }
    }
    Ok(())
}
