//! Black-box tests of the `portico` binary: every test runs the real executable, on a temporary
//! SQLite file, and drives it over HTTP on an ephemeral port.

mod integration {
    mod auto_api;
    mod check;
    mod common;
    mod hygiene;
    mod import;
    mod lifecycle;
    mod log_secrets;
    mod routes_api;
    mod users;
}
