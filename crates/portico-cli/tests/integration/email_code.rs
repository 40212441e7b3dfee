//! Sign-in by a mailed code or link (`/auth/email-code`) through the binary, with mail sent to
//! a real SMTP server (aiosmtpd, the kit's `mail::SmtpSink`): codes and links work once, and no
//! login token reaches the log; no account oracle (same reply, mail count and timing for known
//! and unknown addresses, timed on a process of its own). The other sign-in tests serve the app
//! in process, beside their crate (`crates/portico-accounts/tests`).

use std::time::{Duration, Instant};

use portico_testkit::mail::SmtpSink;
use portico_testkit::mail_app::{
    self, code_and_token, items_status, request_code as request, wrong_code as wrong,
};
use serde_json::{Value, json};

use super::common::{Http, Reply, Workspace};

fn config(smtp: &str, accounts: &str) -> String {
    mail_app::config(
        smtp,
        mail_app::Extra {
            register: false,
            admin: true,
            accounts,
        },
    )
}

async fn post(server: &Http, path: &str, body: Value) -> Reply {
    mail_app::post(server, path, body, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_and_links_sign_in_once_on_sqlite() {
    let sink = SmtpSink::started();
    let ws = Workspace::new();
    ws.config(&config(
        &sink.url(),
        "require_verified_email = true\nemail_code_attempts = 3\n\
         mail_rate_limit_per_email = { attempts = 50, per_seconds = 3600 }",
    ));
    let ann_id = ws.add_account("ann", Some("ann@example.com"), "ann-password", &[]);
    let server = ws.serve_binary();
    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["emailCode"], true, "{}", methods.raw);
    assert_eq!(methods.body["emailCodeSignup"], false, "{}", methods.raw);
    // The address is not verified: the password login is refused.
    let login = json!({"username": "ann", "password": "ann-password"});
    assert_eq!(post(&server, "/api/login", login.clone()).await.status, 403);

    // A code signs in once; it proves the address (the password login works from then on).
    let mail = request(&server, &sink, "Ann@Example.com", 1).await;
    let (code, token) = code_and_token(&mail, "ann@example.com");
    let confirm = |email: &str, code: &str| json!({"email": email, "code": code});
    let bad = post(
        &server,
        "/auth/email-code/confirm",
        confirm("ann@example.com", &wrong(&code)),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.raw);
    assert_eq!(bad.body["error"], "invalid-code", "{}", bad.raw);
    let ok = post(
        &server,
        "/auth/email-code/confirm",
        confirm("ann@example.com", &code),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    assert_eq!(ok.body["id"], json!(ann_id), "{}", ok.raw);
    let login_token = ok.body["token"].as_str().unwrap_or_default().to_owned();
    assert_eq!(items_status(&server, &login_token).await, 200);
    assert_eq!(items_status(&server, "not-a-token").await, 401);
    assert_eq!(post(&server, "/api/login", login.clone()).await.status, 200);
    // Used: neither the code nor the link of that mail works again.
    let again = post(
        &server,
        "/auth/email-code/confirm",
        confirm("ann@example.com", &code),
    )
    .await;
    assert_eq!(again.status, 400, "{}", again.raw);
    let link = post(&server, "/auth/email-code/confirm", json!({"token": token})).await;
    assert_eq!(link.status, 400, "{}", link.raw);

    // The link signs in once, and a newer mail voids the older one.
    let (old_code, _) = code_and_token(
        &request(&server, &sink, "ann@example.com", 2).await,
        "ann@example.com",
    );
    let (_, token) = code_and_token(
        &request(&server, &sink, "ann@example.com", 3).await,
        "ann@example.com",
    );
    let old = post(
        &server,
        "/auth/email-code/confirm",
        confirm("ann@example.com", &old_code),
    )
    .await;
    assert_eq!(old.status, 400, "an older code: {}", old.raw);
    let ok = post(&server, "/auth/email-code/confirm", json!({"token": token})).await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    assert_eq!(ok.body["id"], json!(ann_id), "{}", ok.raw);
    let again = post(&server, "/auth/email-code/confirm", json!({"token": token})).await;
    assert_eq!(again.status, 400, "{}", again.raw);

    // Three guesses per code (email_code_attempts), then even the right code is refused.
    let (code, _) = code_and_token(
        &request(&server, &sink, "ann@example.com", 4).await,
        "ann@example.com",
    );
    for _ in 0..3 {
        let r = post(
            &server,
            "/auth/email-code/confirm",
            confirm("ann@example.com", &wrong(&code)),
        )
        .await;
        assert_eq!(r.status, 400, "{}", r.raw);
    }
    let late = post(
        &server,
        "/auth/email-code/confirm",
        confirm("ann@example.com", &code),
    )
    .await;
    assert_eq!(late.status, 400, "past the attempts: {}", late.raw);

    // No account has the address (sign-up is off): the same 202, a mail saying so, no code.
    let mail = request(&server, &sink, "nobody@example.com", 5).await;
    assert_eq!(mail["to"], json!(["nobody@example.com"]), "{mail}");
    let text = mail["text"].as_str().unwrap_or_default();
    assert!(text.contains("no account has this address"), "{text}");
    assert!(!text.contains("email-code?token="), "{text}");
    let guess = post(
        &server,
        "/auth/email-code/confirm",
        confirm("nobody@example.com", "123456"),
    )
    .await;
    assert_eq!(guess.status, 400, "{}", guess.raw);

    // Malformed bodies are refused before anything is looked up.
    for body in [
        json!({}),
        json!({"email": "ann@example.com"}),
        json!({"token": "t", "code": "123456"}),
        json!([1]),
    ] {
        let r = post(&server, "/auth/email-code/confirm", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.raw);
        assert_eq!(r.body["error"], "invalid-body", "{body}: {}", r.raw);
    }
    let r = post(
        &server,
        "/auth/email-code",
        json!({"email": "not an address"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    let (ok, log) = server.stop();
    assert!(ok, "{log}");
    assert!(!log.contains(&login_token), "a login token in the log");
}

/// The median of `samples` in microseconds.
fn median(mut samples: Vec<i64>) -> i64 {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// `Ok` when the known and unknown address's times (taken in adjacent pairs) are within 5%:
/// the median of the pairs' differences against the median time (pairing cancels the drift
/// of a shared machine's load); prints both medians either way.
fn comparable(what: &str, times: &[Vec<i64>; 2]) -> Result<(), String> {
    let diffs: Vec<i64> = times[0].iter().zip(&times[1]).map(|(k, u)| k - u).collect();
    let (k, u) = (median(times[0].clone()), median(times[1].clone()));
    let d = median(diffs);
    let line =
        format!("{what}: median known {k} us, unknown {u} us, median paired difference {d} us");
    eprintln!("{line}");
    if d.abs() * 20 <= k.max(u) {
        Ok(())
    } else {
        Err(line)
    }
}

/// Pairs per round of [`known_and_unknown_addresses_look_the_same`].
const PAIRS: usize = 150;

/// One round of requests for a code, known and unknown address interleaved; each request's
/// mail is awaited before the next one is timed. `sent`: the mails sent before the round.
async fn request_round(
    server: &Http,
    sink: &SmtpSink,
    emails: [&str; 2],
    sent: usize,
) -> [Vec<i64>; 2] {
    let mut times = [Vec::new(), Vec::new()];
    let mut replies = [Vec::new(), Vec::new()];
    for i in 0..2 * PAIRS {
        // known, unknown, unknown, known, ...: each comes first as often as second.
        let which = (i + i / 2) % 2;
        let started = Instant::now();
        let r = post(server, "/auth/email-code", json!({"email": emails[which]})).await;
        times[which].push(i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX));
        replies[which].push((r.status, r.raw));
        // The mail is sent before the next request is timed: what is compared is the request's
        // own work, not the overlap with the sender's (which does the same for both, later).
        sink.wait_for(sent + 1 + i).await;
    }
    assert!(
        replies.iter().flatten().all(|r| *r == replies[0][0]),
        "the same reply: {:?}",
        replies[0][0]
    );
    assert_eq!(replies[0][0].0, 202);
    times
}

/// One round of confirmations with a wrong code, known and unknown address interleaved.
async fn confirm_round(server: &Http, emails: [&str; 2]) -> [Vec<i64>; 2] {
    let mut times = [Vec::new(), Vec::new()];
    let mut replies = [Vec::new(), Vec::new()];
    for i in 0..2 * PAIRS {
        let which = (i + i / 2) % 2;
        let started = Instant::now();
        let r = post(
            server,
            "/auth/email-code/confirm",
            json!({"email": emails[which], "code": "000000"}),
        )
        .await;
        times[which].push(i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX));
        replies[which].push((r.status, r.raw));
    }
    assert!(
        replies.iter().flatten().all(|r| *r == replies[0][0]),
        "{replies:?}"
    );
    assert_eq!(replies[0][0].0, 400);
    times
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_and_unknown_addresses_look_the_same() {
    let sink = SmtpSink::started();
    let ws = Workspace::new();
    ws.config(&config(
        &sink.url(),
        "mail_rate_limit_per_email = { attempts = 1000, per_seconds = 3600 }\n\
         mail_rate_limit_per_address = { attempts = 1000, per_seconds = 3600 }\n\
         email_code_rate_limit_per_address = { attempts = 1000, per_seconds = 3600 }\n\
         email_code_rate_limit_per_email = { attempts = 1000, per_seconds = 3600 }",
    ));
    ws.add_account("kim", Some("kim@example.com"), "kim-password", &[]);
    // A process of its own: the known address's mail work (outbox, sender) must not share a
    // process with the client timing it (in process, the known address ran 5-10% slower).
    let server = ws.serve_binary();
    let known = "kim@example.com";
    let unknown = "someone-else@example.com";

    // Warm up both paths, then time them interleaved, so drift hits both alike. A request
    // takes about a millisecond, where a busy machine's noise is as large: a round that misses
    // is taken again, up to three, as a lookup that shows would be slower in every round.
    for email in [known, unknown] {
        post(&server, "/auth/email-code", json!({"email": email})).await;
    }
    sink.wait_for(2).await;
    let mut sent = 2;
    let mut misses = Vec::new();
    for _ in 0..3 {
        let times = request_round(&server, &sink, [known, unknown], sent).await;
        sent += 2 * PAIRS;
        match comparable("request", &times) {
            Ok(()) => {
                misses.clear();
                break;
            }
            Err(miss) => misses.push(miss),
        }
    }
    assert!(
        misses.is_empty(),
        "every round differed by 5% or more: {misses:#?}"
    );
    // One mail per request, whoever's address.
    let mails = sink.wait_for(sent).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.mails().len(), sent, "one mail per request");
    let count = |to: &str| mails.iter().filter(|m| m["to"] == json!([to])).count();
    assert_eq!(count(known), count(unknown));

    // Confirmations with a wrong code: the same reply, comparable time.
    for _ in 0..3 {
        let times = confirm_round(&server, [known, unknown]).await;
        match comparable("confirm", &times) {
            Ok(()) => {
                misses.clear();
                break;
            }
            Err(miss) => misses.push(miss),
        }
    }
    assert!(
        misses.is_empty(),
        "every round differed by 5% or more: {misses:#?}"
    );
}
