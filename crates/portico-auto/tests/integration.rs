//! Integration tests of the auto API over real HTTP: a server on 127.0.0.1:0 driven by reqwest.
//! One binary; the suites live in `tests/integration/`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

#[path = "integration/common.rs"]
mod common;

#[path = "integration/auth.rs"]
mod auth;
#[path = "integration/browser.rs"]
mod browser;
#[path = "integration/collections.rs"]
mod collections;
#[path = "integration/errors.rs"]
mod errors;
#[path = "integration/headers.rs"]
mod headers;
#[path = "integration/late.rs"]
mod late;
#[path = "integration/live.rs"]
mod live;
#[path = "integration/login.rs"]
mod login;
#[path = "integration/login_parity.rs"]
mod login_parity;
#[path = "integration/methods.rs"]
mod methods;
#[path = "integration/publications.rs"]
mod publications;
#[path = "integration/routes.rs"]
mod routes;
#[path = "integration/sqlite.rs"]
mod sqlite;
