//! Black-box tests of what `portico serve` serves, over HTTP on an ephemeral port, on a
//! temporary SQLite file (or a database of a throwaway PostgreSQL server). Most serve the app in
//! this process (`portico_testkit::Server`: `Served::build` + `Served::serve`, what the binary
//! runs); the tests about a process run the real `portico` executable
//! (`portico_testkit::Process`): its log lines, signals and kills, restarts, environment
//! variables read at start, metrics (one recorder per process), memory peaks, the CLI. The
//! accounts door's and the scripts' tests that need only the served app are beside their crates
//! (`crates/portico-accounts/tests`, `crates/portico-script/tests`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

mod integration {
    mod accounts;
    mod admin_page;
    mod aggregates;
    mod api_keys;
    mod auto_api;
    mod auto_conditional;
    mod auto_queries;
    mod backups;
    mod batch;
    mod channels;
    mod check;
    // Some helpers serve only the tests of builds with scripts.
    #[cfg_attr(not(feature = "scripts"), allow(dead_code))]
    mod common;
    mod email_code;
    mod field_rules;
    mod files;
    mod hygiene;
    mod import;
    mod in_process;
    mod indexes;
    // Jobs and schedules are defined by scripts.
    #[cfg(feature = "scripts")]
    mod jobs;
    mod js_client;
    mod lifecycle;
    mod live;
    mod log_secrets;
    mod login_parity;
    mod mail_languages;
    mod memory;
    mod oauth2;
    mod oidc;
    mod operations;
    mod passkeys;
    mod py_client;
    mod read_replicas;
    mod relations;
    mod request_ids;
    mod route_limits;
    mod routes_api;
    mod safe_defaults;
    mod scale_out;
    #[cfg(feature = "scripts")]
    mod scripts;
    mod search;
    // Its served app holds the platform through scripts.
    #[cfg(feature = "scripts")]
    mod shutdown;
    mod timestamps;
    mod users;
    mod webhooks;
    mod workspace;
    mod zero_config;
}
