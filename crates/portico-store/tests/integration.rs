//! Integration tests of portico-store, compiled as one binary.
//!
//! | module | what |
//! |---|---|
//! | `common` | backends to run against (memory, SQLite in a temp dir, PostgreSQL) and helpers |
//! | `conformance` | one suite, written once as a macro, run against every backend |
//! | `differential` | random documents and operations: every backend answers as memory does |
//! | `durability` | a writer killed with SIGKILL keeps every acknowledged write (SQLite, PostgreSQL) |
//! | `fuzz` | selector, modifier and bounded-JSON fuzzing from the corpus in `fuzz/corpus/` |
//! | `postgres` | what only PostgreSQL has: instances sharing a database, a server that goes away |
//! | `read_cache` | PostgreSQL's read cache: never hides another instance's write, bounded memory |
//! | `replicas` | reads served by a streaming replica, read-your-writes, a lagging or stopped replica |
//!
//! The PostgreSQL tests (feature `postgres`) start one throwaway cluster per test binary and use
//! a fresh database per test; they need Debian's `postgresql` package (`initdb`, `pg_ctl`) and
//! fail, never skip, without it.
//!
//! With no backend feature enabled there is nothing to test.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures
#![cfg(any(feature = "memory", feature = "sqlite", feature = "postgres"))]

#[path = "integration/common.rs"]
mod common;
#[path = "integration/conformance.rs"]
mod conformance;
#[cfg(all(feature = "memory", feature = "sqlite"))]
#[path = "integration/differential.rs"]
mod differential;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[path = "integration/durability.rs"]
mod durability;
#[path = "integration/feed.rs"]
mod feed;
#[path = "integration/fuzz.rs"]
mod fuzz;
#[cfg(feature = "postgres")]
#[path = "integration/postgres.rs"]
mod postgres;
#[cfg(feature = "postgres")]
#[path = "integration/read_cache.rs"]
mod read_cache;
#[cfg(feature = "postgres")]
#[path = "integration/replicas.rs"]
mod replicas;
