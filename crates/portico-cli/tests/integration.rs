//! Black-box tests of the `portico` binary: every test runs the real executable, on a temporary
//! SQLite file (or a database of a throwaway PostgreSQL server, for `scale_out`), and drives it
//! over HTTP on an ephemeral port.

mod integration {
    mod auto_api;
    mod check;
    mod common;
    mod import;
    mod lifecycle;
    mod routes_api;
    mod scale_out;
    mod users;
}
