//! The shared test kit (`portico-testkit`) as these tests use it: a [`Workspace`] serves its
//! config in this process ([`Workspace::serve`], a [`Server`]) or runs the `portico` binary
//! ([`Workspace::serve_binary`] and the others returning a [`Process`]) when a test needs a
//! process: its log lines, signals, a kill, environment variables read at start, the CLI.

#[allow(unused_imports)] // each test module takes what it needs
pub(crate) use portico_testkit::{
    Http, Process, Reply, S3Server, Scenario, Server, Workspace, cluster, contains, portico,
    run_scenarios, text, x_auth,
};
