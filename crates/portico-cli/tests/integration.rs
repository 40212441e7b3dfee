//! Black-box tests of the `portico` binary: every test runs the real executable, on a temporary
//! SQLite file, and drives it over HTTP on an ephemeral port.

mod integration {
    mod auto_api;
    mod auto_conditional;
    mod batch;
    mod check;
    mod common;
    mod import;
    mod lifecycle;
    mod operations;
    mod routes_api;
    mod safe_defaults;
    mod timestamps;
    mod users;
    mod workspace;
    mod zero_config;
}
