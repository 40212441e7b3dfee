//! Integration tests of the platform, run against the memory store and a real SQLite file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

/// Declares each test twice: once on `memory:`, once on `sqlite:<tempdir>/x.db`.
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
#[path = "integration/import.rs"]
mod import;
#[path = "integration/login.rs"]
mod login;
#[path = "integration/methods.rs"]
mod methods;
#[path = "integration/publications.rs"]
mod publications;
