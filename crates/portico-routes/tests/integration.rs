//! Integration tests of portico-routes: the router driven as a tower service, and a few over a
//! real socket; memory and SQLite platforms.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

mod integration {
    mod common;

    mod auth;
    mod bodies;
    mod collections;
    mod conditional;
    mod config;
    mod edge;
    mod listing;
    mod live;
    mod login;
    mod replies;
    mod routes;
    mod scope;
    mod server;
    mod sqlite;
    mod users;
    mod versions;
}
