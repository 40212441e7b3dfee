//! Opening a store from a URL, and reading the stored format of the database a URL names.

use std::sync::Arc;

use crate::{Error, Result, Store};

/// Opens the store a URL names: `memory:`, `sqlite:PATH` (the file is created when missing),
/// `postgres://user:password@host:port/database` (or `postgresql://`; see
/// `postgres::PostgresStore::open` for the options).
///
/// `sqlite:` also accepts the `sqlite://PATH` spelling (`sqlite:///var/db/app.db` is the
/// absolute path `/var/db/app.db`). The returned future is `Send`: it can be spawned.
///
/// # Errors
/// [`crate::Error::InvalidUrl`] for an unknown scheme or a backend not compiled in;
/// [`crate::Error::Open`] when the backend cannot open (bad path, not a database file);
/// [`crate::Error::Unavailable`] when a database server cannot be reached or refuses the
/// credentials.
pub async fn open(url: &str) -> Result<Arc<dyn Store>> {
    // A plain function, not a closure: the future must not hold a `&dyn Fn` (not `Send`)
    // across an await.
    fn invalid(url: &str, reason: &str) -> Error {
        Error::InvalidUrl {
            url: url.to_string(),
            reason: reason.to_string(),
        }
    }
    let invalid = |reason: &str| invalid(url, reason);
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
            match open_sqlite(path) {
                Some(opening) => opening.await,
                None => Err(invalid("the sqlite backend is not enabled in this build")),
            }
        }
        "postgres" | "postgresql" => match open_postgres(url) {
            Some(opening) => opening.await,
            None => Err(invalid(
                "the postgres backend is not enabled in this build (cargo feature `postgres`)",
            )),
        },
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

/// The future opening a store, `Send` so that `open` can be spawned.
type Opening<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Arc<dyn Store>>> + Send + 'a>>;

#[cfg(feature = "sqlite")]
fn open_sqlite(path: &str) -> Option<Opening<'_>> {
    Some(Box::pin(async move {
        let store: Arc<dyn Store> = Arc::new(crate::sqlite::SqliteStore::open(path).await?);
        Ok(store)
    }))
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_path: &str) -> Option<Opening<'_>> {
    None
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> Option<Opening<'_>> {
    Some(Box::pin(async move {
        let store: Arc<dyn Store> = Arc::new(crate::postgres::PostgresStore::open(url).await?);
        Ok(store)
    }))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: &str) -> Option<Opening<'_>> {
    None
}

/// The stored format of the database `url` names, read without changing anything: `None` for
/// a database without Portico's tables (or a SQLite file that does not exist, or `memory:`).
///
/// # Errors
/// As [`crate::open`] for a URL that does not parse or a database that cannot be read.
pub async fn stored_format(url: &str) -> Result<Option<u32>> {
    let invalid = |reason: &str| Error::InvalidUrl {
        url: crate::redact_url(url),
        reason: reason.to_owned(),
    };
    // `_rest`: only the sqlite backend reads it.
    let Some((scheme, _rest)) = url.split_once(':') else {
        return Err(invalid("expected a scheme"));
    };
    match scheme {
        "memory" => Ok(None),
        #[cfg(feature = "sqlite")]
        "sqlite" => {
            let path = std::path::PathBuf::from(_rest.strip_prefix("//").unwrap_or(_rest));
            tokio::task::spawn_blocking(move || crate::sqlite::read_stored_format(&path))
                .await
                .map_err(|e| Error::Backend(format!("sqlite: the blocking task failed: {e}")))?
        }
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => crate::postgres::stored_format(url).await,
        _ => Err(invalid("no backend for this scheme in this build")),
    }
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
        #[cfg(not(feature = "postgres"))]
        match open("postgres://localhost/db").await {
            Err(Error::InvalidUrl { reason, .. }) => assert!(reason.contains("postgres")),
            other => panic!("postgres should be refused, got {:?}", other.map(|_| ())),
        }
    }

    #[tokio::test]
    async fn open_can_be_spawned() {
        // `tokio::spawn` needs a `Send` future: this fails to compile otherwise.
        let handle = tokio::spawn(async { open("memory:").await.map(|_| ()) });
        let opened = handle.await.expect("task");
        assert_eq!(opened.is_ok(), cfg!(feature = "memory"));
        let dir = std::env::temp_dir().join(format!("portico-open-{}", std::process::id()));
        let url = format!("sqlite:{}", dir.join("missing-dir/x.db").display());
        let handle = tokio::spawn(async move { open(&url).await.map(|_| ()) });
        assert!(handle.await.expect("task").is_err());
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn an_unreachable_postgres_is_unavailable_quickly() {
        // Nothing listens on port 1; the error must come back as `Unavailable`, not hang.
        let opened = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            open("postgres://nobody:pw@127.0.0.1:1/db"),
        )
        .await
        .expect("open returns within the connect timeout");
        match opened {
            Err(Error::Unavailable(reason)) => assert!(!reason.contains("pw"), "{reason}"),
            other => panic!("expected Unavailable, got {:?}", other.map(|_| ())),
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
