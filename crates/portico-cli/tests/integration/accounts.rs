//! The account lifecycle through the binary: mail queued while the SMTP server (Python's
//! aiosmtpd, the kit's `mail::SmtpSink`) is down survives a restart of the server and is sent
//! once it is up. The other account tests serve the app in process, beside their crate
//! (`crates/portico-accounts/tests`).

use std::time::{Duration, Instant};

use portico_testkit::mail::SmtpSink;
use portico_testkit::mail_app::{self, link_token, post};
use serde_json::json;

use super::common::Workspace;

fn config(smtp: &str, accounts: &str) -> String {
    mail_app::config(
        smtp,
        mail_app::Extra {
            register: true,
            admin: false,
            accounts,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_waits_for_a_dead_smtp_server_across_a_restart() {
    let mut sink = SmtpSink::stopped();
    let ws = Workspace::new();
    ws.config(&config(&sink.url(), ""));
    ws.add_account("bob", Some("bob@example.com"), "bob-password", &[]);
    let first = ws.serve_binary();
    let started = Instant::now();
    let asked = post(
        &first,
        "/auth/password-reset",
        json!({"email": "bob@example.com"}),
        &[],
    )
    .await;
    assert_eq!(
        asked.status, 202,
        "a dead mail server never fails the request: {}",
        asked.raw
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // Let the sender fail at least once, then restart the server with the mail still queued.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&first.log)
        .unwrap_or_default()
        .contains("could not send a mail")
    {
        assert!(Instant::now() < deadline, "no failed attempt logged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (clean, _) = first.stop();
    assert!(clean);
    let second = ws.serve_binary();
    sink.up();
    let mails = sink.wait_for(1).await;
    let token = link_token(&mails[0], "bob@example.com", "reset-password");
    // Sent once: later polls find nothing left.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(sink.mails().len(), 1);
    let done = post(
        &second,
        "/auth/password-reset/confirm",
        json!({"token": token, "password": "bob-new-password"}),
        &[],
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.raw);
    second.rest_login("/api/", "bob", "bob-new-password").await;
}
