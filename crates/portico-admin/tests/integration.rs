//! Integration tests of portico-admin: the admin router on a real socket over a SQLite platform;
//! its API's access checks from Rust, and the page itself in headless Chromium.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

mod integration {
    mod common;

    mod api;
    mod browser;
    mod security;
}
