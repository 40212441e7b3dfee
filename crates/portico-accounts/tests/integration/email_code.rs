//! Sign-in by a mailed code or link (`/auth/email-code`) on the served app, with mail sent to
//! a real SMTP server (aiosmtpd, the kit's `mail::SmtpSink`): two-factor codes still asked for
//! after a code; sign-up on first use, a bounded number of guesses and expiry across two
//! instances on PostgreSQL.

use std::time::Duration;

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
async fn a_code_still_asks_for_the_two_factor_code() {
    let sink = SmtpSink::started();
    let ws = Workspace::new();
    ws.config(&config(&sink.url(), ""));
    ws.create_account("tia", Some("tia@example.com"), "tia-password", &[]);
    let server = ws.serve();
    let (token, _) = server.auto_login("tia", "tia-password").await;
    let bearer = format!("Bearer {token}");
    let setup = server
        .call(
            "POST",
            "/auth/totp/setup",
            Some(json!({})),
            &[("Authorization", &bearer)],
        )
        .await;
    let secret = setup.body["secret"].as_str().unwrap_or_default().to_owned();
    let now = || {
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        )
        .unwrap_or(0)
    };
    let enable = portico_platform::totp_code(&secret, now() - 30).expect("code");
    let enabled = server
        .call(
            "POST",
            "/auth/totp/enable",
            Some(json!({"code": enable})),
            &[("Authorization", &bearer)],
        )
        .await;
    assert_eq!(enabled.status, 200, "{}", enabled.raw);

    let (code, _) = code_and_token(
        &request(&server, &sink, "tia@example.com", 1).await,
        "tia@example.com",
    );
    let body = json!({"email": "tia@example.com", "code": code});
    let needs = post(&server, "/auth/email-code/confirm", body.clone()).await;
    assert_eq!(needs.status, 401, "{}", needs.raw);
    assert_eq!(needs.body["error"], "totp-required", "{}", needs.raw);
    // The code was not used up by asking.
    let mut with = body.clone();
    with["totp"] = json!(portico_platform::totp_code(&secret, now() + 30).expect("code"));
    let ok = post(&server, "/auth/email-code/confirm", with).await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_attempts_and_expiry_across_instances_on_postgres() {
    let sink = SmtpSink::started();
    let ws = Workspace::on_postgres();
    ws.config(&config(
        &sink.url(),
        "email_code_signup = true\nemail_code_token_secs = 3\nemail_code_attempts = 3\n\
         mail_rate_limit_per_email = { attempts = 50, per_seconds = 3600 }",
    ));
    ws.create_user("root", "root-secret", &["admin"]);
    let a = ws.serve();
    let b = ws.serve();
    let methods = a.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["emailCodeSignup"], true, "{}", methods.raw);

    // Sign-up on first use: requested through one instance, confirmed through the other.
    let (code, _) = code_and_token(
        &request(&a, &sink, "new@example.com", 1).await,
        "new@example.com",
    );
    let ok = post(
        &b,
        "/auth/email-code/confirm",
        json!({"email": "new@example.com", "code": code}),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    let new_id = ok.body["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        items_status(&a, ok.body["token"].as_str().unwrap_or_default()).await,
        200
    );
    let admin = a.admin_token("root", "root-secret").await;
    let users = a
        .call("GET", "/_/api/users", None, &[("X-Auth-Token", &admin)])
        .await;
    assert_eq!(users.status, 200, "{}", users.raw);
    let made = users.raw.contains(&new_id) && users.raw.contains("new@example.com");
    assert!(made, "the new account: {}", users.raw);
    // The second sign-in finds the account made by the first.
    let (code, _) = code_and_token(
        &request(&b, &sink, "NEW@example.com", 2).await,
        "new@example.com",
    );
    let again = post(
        &a,
        "/auth/email-code/confirm",
        json!({"email": "new@example.com", "code": code}),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.raw);
    assert_eq!(again.body["id"], json!(new_id), "{}", again.raw);

    // Guesses count across instances: three in all, then the right code is refused.
    let (code, _) = code_and_token(
        &request(&a, &sink, "new@example.com", 3).await,
        "new@example.com",
    );
    for (i, server) in [&a, &b, &a].into_iter().enumerate() {
        let r = post(
            server,
            "/auth/email-code/confirm",
            json!({"email": "new@example.com", "code": wrong(&code)}),
        )
        .await;
        assert_eq!(r.status, 400, "guess {i}: {}", r.raw);
    }
    let late = post(
        &b,
        "/auth/email-code/confirm",
        json!({"email": "new@example.com", "code": code}),
    )
    .await;
    assert_eq!(late.status, 400, "{}", late.raw);

    // Expiry: a code and a link older than email_code_token_secs are refused.
    let (code, token) = code_and_token(
        &request(&b, &sink, "new@example.com", 4).await,
        "new@example.com",
    );
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let old = post(
        &a,
        "/auth/email-code/confirm",
        json!({"email": "new@example.com", "code": code}),
    )
    .await;
    assert_eq!(old.status, 400, "{}", old.raw);
    let old = post(&a, "/auth/email-code/confirm", json!({"token": token})).await;
    assert_eq!(old.status, 400, "{}", old.raw);
}
