//! Opening a store from a URL.

use std::sync::Arc;

use crate::{Error, Result, Store};

/// Opens the store a URL names: `memory:`, `sqlite:PATH` (the file is created when missing).
///
/// `sqlite:` also accepts the `sqlite://PATH` spelling (`sqlite:///var/db/app.db` is the
/// absolute path `/var/db/app.db`). `postgres://` URLs are recognised, but that backend is not
/// part of this build yet.
///
/// # Errors
/// [`crate::Error::InvalidUrl`] for an unknown scheme or a backend not compiled in;
/// [`crate::Error::Open`] when the backend cannot open (bad path, not a database file).
pub async fn open(url: &str) -> Result<Arc<dyn Store>> {
    let invalid = |reason: &str| Error::InvalidUrl {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err(invalid(
            "expected a scheme: memory:, sqlite:PATH or postgres://...",
        ));
    };
    match scheme {
        "memory" => {
            if !(rest.is_empty() || rest == "//") {
                return Err(invalid("a memory: URL takes nothing after the scheme"));
            }
            open_memory().ok_or_else(|| invalid("the memory backend is not enabled in this build"))
        }
        "sqlite" => {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(invalid(
                    "a sqlite: URL needs a file path, as in sqlite:app.db",
                ));
            }
            open_sqlite(path, &invalid).await
        }
        "postgres" | "postgresql" => Err(invalid(
            "the postgres backend is not available in this build",
        )),
        _ => Err(invalid(
            "unknown scheme (expected memory:, sqlite:PATH or postgres://...)",
        )),
    }
}

#[cfg(feature = "memory")]
fn open_memory() -> Option<Arc<dyn Store>> {
    Some(Arc::new(crate::memory::MemoryStore::new()))
}

#[cfg(not(feature = "memory"))]
fn open_memory() -> Option<Arc<dyn Store>> {
    None
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(path: &str, _invalid: &dyn Fn(&str) -> Error) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(crate::sqlite::SqliteStore::open(path).await?))
}

#[cfg(not(feature = "sqlite"))]
async fn open_sqlite(_path: &str, invalid: &dyn Fn(&str) -> Error) -> Result<Arc<dyn Store>> {
    Err(invalid("the sqlite backend is not enabled in this build"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_urls_are_invalid() {
        for url in [
            "",
            "memory",
            "memory:x",
            "mysql://x",
            "sqlite:",
            "sqlite://",
        ] {
            assert!(
                matches!(open(url).await, Err(Error::InvalidUrl { .. })),
                "{url}"
            );
        }
        match open("postgres://localhost/db").await {
            Err(Error::InvalidUrl { reason, .. }) => assert!(reason.contains("postgres")),
            other => panic!("postgres should be refused, got {:?}", other.map(|_| ())),
        }
    }

    #[cfg(feature = "memory")]
    #[tokio::test]
    async fn memory_url_opens() {
        for url in ["memory:", "memory://"] {
            let store = open(url).await;
            assert!(store.is_ok(), "{url}");
        }
    }
}
