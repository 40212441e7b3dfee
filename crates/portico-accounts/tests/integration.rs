//! Integration tests of the accounts door on the served app (`portico_testkit::Server`: what
//! `portico serve` serves, built in this process), over HTTP on an ephemeral port, on a
//! temporary SQLite file or a database of a throwaway PostgreSQL server, with mail sent to a
//! real SMTP server (`portico_testkit::mail::SmtpSink`). Accounts are made in process
//! (`Workspace::create_user`). The account tests that need the `portico` process (a restart,
//! log lines, environment variables read at start, the CLI) are portico-cli's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on setup failures

mod integration {
    mod common;

    mod accounts;
    mod email_code;
    mod guests;
    mod login_parity;
    mod passkeys;
}
