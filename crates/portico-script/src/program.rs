//! What every runtime of one loaded program shares.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use portico_platform::Platform;

use crate::ScriptConfig;
use crate::error::LoadError;

/// The program's sources, settings and the platform its host operations use.
pub(crate) struct Shared {
    /// The application's folder: module names are relative to it.
    pub(crate) root: PathBuf,
    pub(crate) config: ScriptConfig,
    pub(crate) platform: Platform,
    /// The server's async runtime, where host operations run.
    pub(crate) tokio: tokio::runtime::Handle,
    pub(crate) http: crate::fetch::Client,
    sources: Mutex<HashMap<String, String>>,
    files: Mutex<HashMap<String, PathBuf>>,
    load_error: Mutex<Option<LoadError>>,
}

impl Shared {
    pub(crate) fn new(
        root: PathBuf,
        config: ScriptConfig,
        platform: Platform,
        tokio: tokio::runtime::Handle,
    ) -> Shared {
        Shared {
            root,
            http: crate::fetch::Client::new(&config.fetch_hosts),
            config,
            platform,
            tokio,
            sources: Mutex::default(),
            files: Mutex::default(),
            load_error: Mutex::default(),
        }
    }

    pub(crate) fn sources_lock(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.sources.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn files_lock(&self) -> MutexGuard<'_, HashMap<String, PathBuf>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps the first error met while loading modules (the engine's own error says less).
    pub(crate) fn set_load_error(&self, error: LoadError) {
        let mut slot = self
            .load_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(error);
        }
    }

    pub(crate) fn take_load_error(&self) -> Option<LoadError> {
        self.load_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The files the program was loaded from (for `--watch`).
    pub(crate) fn files(&self) -> Vec<PathBuf> {
        self.files_lock().values().cloned().collect()
    }
}
