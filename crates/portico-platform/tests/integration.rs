//! Integration tests of the platform, run against the memory store, a real SQLite file and (with
//! the `postgres` feature) a throwaway PostgreSQL server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

/// Declares each test on every backend: `memory:`, `sqlite:<tempdir>/x.db`, and with the
/// `postgres` feature a fresh database of the test binary's PostgreSQL cluster.
macro_rules! on_every_backend {
    ($(async fn $name:ident($p:ident: Platform) -> TestResult $body:block)*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                async fn run($p: Platform) -> TestResult $body

                #[tokio::test]
                async fn memory() -> TestResult {
                    run(crate::common::memory().await?).await
                }

                #[tokio::test]
                async fn sqlite() -> TestResult {
                    let (dir, platform) = crate::common::sqlite().await?;
                    let result = run(platform).await;
                    drop(dir);
                    result
                }

                #[cfg(feature = "postgres")]
                #[tokio::test]
                async fn postgres() -> TestResult {
                    run(crate::common::postgres().await?).await
                }
            }
        )*
    };
}

#[path = "integration/accounts.rs"]
mod accounts;
#[path = "integration/collections.rs"]
mod collections;
#[path = "integration/common.rs"]
mod common;
#[path = "integration/files.rs"]
mod files;
#[path = "integration/import.rs"]
mod import;
#[path = "integration/jobs.rs"]
mod jobs;
#[path = "integration/live.rs"]
mod live;
#[path = "integration/login.rs"]
mod login;
#[path = "integration/methods.rs"]
mod methods;
#[path = "integration/publications.rs"]
mod publications;
#[path = "integration/relations.rs"]
mod relations;
#[path = "integration/token_cache.rs"]
mod token_cache;
