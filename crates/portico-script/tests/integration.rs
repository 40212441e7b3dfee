//! Integration tests of the scripts on the served app (`portico_testkit::Server`: what
//! `portico serve` serves, built in this process with the `scripts` feature), over HTTP on an
//! ephemeral port, on a temporary SQLite file or a database of a throwaway PostgreSQL server.
//! The tests of scripts that need the `portico` process (its log lines, `check`, `types`,
//! `--watch`) are portico-cli's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on setup failures

mod integration {
    mod common;

    mod scripts;
}
