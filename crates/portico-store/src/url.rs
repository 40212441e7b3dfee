//! Opening a store from a URL.

use std::sync::Arc;

use crate::{Result, Store};

/// Opens the store a URL names: `memory:`, `sqlite:PATH` (the file is created when missing).
///
/// # Errors
/// [`crate::Error::InvalidUrl`] for an unknown scheme or a backend not compiled in;
/// [`crate::Error::Open`] when the backend cannot open (bad path, not a database file).
pub async fn open(url: &str) -> Result<Arc<dyn Store>> {
    todo!("store: open {url}")
}
