//! Portico's test kit (dev only, never published): what the crates' integration tests share.
//!
//! - [`Workspace`]: a temporary directory with a config file and a SQLite database (or a
//!   database of this test binary's throwaway PostgreSQL cluster, [`cluster`]).
//! - [`Server`]: the app `portico serve` serves, built in this process by
//!   `portico_cli::serve::Served::build` and served on `127.0.0.1:0` by `Served::serve` on a
//!   runtime of its own thread (so sync tests and async tests alike can call it); stopped when
//!   dropped.
//! - [`Process`]: the `portico` binary itself, for the tests that need a process: its log lines,
//!   signals, a kill, environment variables read at start, the CLI.
//! - [`Http`]: requests to either (what both dereference to), and [`Reply`].
//! - [`Scenario`]: request-scenario tables, run in order against a server, each failure naming
//!   its scenario.
//! - [`sse::Sse`]: a server-sent events reader for live streams; [`login_variants`]: the
//!   credential variants both front doors must answer alike.
//! - [`Workspace::create_user`] and [`Workspace::create_account`]: accounts made in this
//!   process (what `portico users add` does, without the binary).
//! - [`mail::SmtpSink`]: a real SMTP server (aiosmtpd) whose received mails a test reads, and
//!   the links and codes in them; [`mail_app`]: the small app of the account tests that mail.
//! - [`support_dir`]: the helper programs the tests run (the SMTP sink, the OpenID Connect and
//!   OAuth 2 providers, the passkey scenarios), for tests of any crate.
//!
//! The kit panics on a setup failure (a directory it cannot create, a server that does not
//! start): that is how a test fails, saying what went wrong.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test kit fails its test by panicking

mod binary;
mod http;
mod in_process;
pub mod login_variants;
pub mod mail;
pub mod mail_app;
mod s3;
mod scenario;
pub mod sse;
mod users;
mod workspace;

pub use binary::{Process, binary, portico, text};
pub use http::{Http, Reply, x_auth};
pub use in_process::Server;
pub use s3::S3Server;
pub use scenario::{Scenario, contains, run_scenarios};
pub use workspace::Workspace;

/// The folder of the helper programs the tests run (`crates/portico-cli/tests/support`: the
/// SMTP sink, the OpenID Connect and OAuth 2 test providers, the passkey scenarios and their
/// npm/pip set-up by `ci/test.sh`), found from this kit's own folder, so tests in any crate
/// reach it.
pub fn support_dir() -> std::path::PathBuf {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the kit is in crates/");
    crates.join("portico-cli/tests/support")
}

/// This test binary's throwaway PostgreSQL cluster, started on first use and stopped when the
/// binary exits. Without PostgreSQL installed, the tests using it fail saying what to install.
pub fn cluster() -> &'static portico_store::postgres::testing::TestCluster {
    use std::sync::OnceLock;

    use portico_store::postgres::testing::TestCluster;
    static CLUSTER: OnceLock<Result<TestCluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(TestCluster::start) {
        Ok(cluster) => cluster,
        Err(e) => panic!("cannot start PostgreSQL for the tests: {e}"),
    }
}

/// A document from a JSON object (a test's literal): panics on anything else.
pub fn doc(value: serde_json::Value) -> portico_platform::Document {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("a document is a JSON object, not {other}"),
    }
}
