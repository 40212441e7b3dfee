//! Integration tests of portico-store, compiled as one binary.
//!
//! | module | what |
//! |---|---|
//! | `common` | backends to run against (memory, SQLite in a temp dir) and small helpers |
//! | `conformance` | one suite, written once as a macro, run against every backend |
//! | `differential` | random documents and operations: every backend answers as memory does |
//! | `durability` | a SQLite writer killed with SIGKILL keeps every acknowledged write |
//! | `fuzz` | selector, modifier and bounded-JSON fuzzing from the corpus in `fuzz/corpus/` |
//!
//! With no backend feature enabled there is nothing to test.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures
#![cfg(any(feature = "memory", feature = "sqlite"))]

#[path = "integration/common.rs"]
mod common;
#[path = "integration/conformance.rs"]
mod conformance;
#[cfg(all(feature = "memory", feature = "sqlite"))]
#[path = "integration/differential.rs"]
mod differential;
#[cfg(feature = "sqlite")]
#[path = "integration/durability.rs"]
mod durability;
#[path = "integration/fuzz.rs"]
mod fuzz;
