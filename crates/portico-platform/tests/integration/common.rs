//! Shared helpers: platforms on each backend, documents from JSON.

use portico_platform::{Document, Platform};
use serde_json::Value;
use tempfile::TempDir;

/// The result type of every test.
pub(crate) type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A platform on the memory store.
pub(crate) async fn memory() -> Result<Platform, Box<dyn std::error::Error>> {
    Ok(Platform::open("memory:").await?)
}

/// A platform on a fresh SQLite file; keep the directory alive while using it.
pub(crate) async fn sqlite() -> Result<(TempDir, Platform), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite:{}", dir.path().join("x.db").display());
    let platform = Platform::open(&url).await?;
    Ok((dir, platform))
}

/// A platform on a fresh database of this test binary's throwaway PostgreSQL cluster (started
/// on first use, stopped when the binary exits).
#[cfg(feature = "postgres")]
pub(crate) async fn postgres() -> Result<Platform, Box<dyn std::error::Error>> {
    let url = postgres_database().await?;
    Ok(Platform::open(&url).await?)
}

/// The URL of a fresh database of this test binary's PostgreSQL cluster.
#[cfg(feature = "postgres")]
pub(crate) async fn postgres_database() -> Result<String, Box<dyn std::error::Error>> {
    use std::sync::OnceLock;

    use portico_store::postgres::testing::TestCluster;
    static CLUSTER: OnceLock<Result<TestCluster, String>> = OnceLock::new();
    let url = tokio::task::spawn_blocking(|| match CLUSTER.get_or_init(TestCluster::start) {
        Ok(cluster) => cluster.create_database(),
        Err(e) => Err(format!("cannot start PostgreSQL for the tests: {e}")),
    })
    .await??;
    Ok(url)
}

/// The object `v` as a document (panics on a non-object: a mistake in the test itself).
pub(crate) fn doc(v: Value) -> Document {
    match v {
        Value::Object(m) => m,
        other => panic!("test document must be an object, got {other}"),
    }
}
