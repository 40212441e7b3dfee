//! The account lifecycle on the served app: verification, password reset and email change
//! with mail sent to a real SMTP server (Python's aiosmtpd, the kit's `mail::SmtpSink`) and the
//! mailed links followed over HTTP; two instances on one PostgreSQL database sending each mail
//! once; two-factor codes on both doors.

use std::time::Duration;

use portico_testkit::mail::SmtpSink;
use portico_testkit::mail_app::{self, APP_URL, link_token, post};
use serde_json::json;

use super::common::{Workspace, x_auth};

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
async fn verify_reset_and_change_by_mailed_links_on_sqlite() {
    let sink = SmtpSink::started();
    let ws = Workspace::new();
    ws.config(&config(
        &sink.url(),
        "require_verified_email = true\nemail_change_token_secs = 8\n\
         mail_rate_limit_per_email = { attempts = 3, per_seconds = 3600 }",
    ));
    ws.create_user("root", "root-password", &["admin"]);
    let server = ws.serve();

    // Sign-up: the account is made, a verification mail goes out, no token until verified.
    let signup = post(
        &server,
        "/users/register",
        json!({"username": "ann", "email": "ann@example.com", "password": "first-password"}),
        &[],
    )
    .await;
    assert_eq!(signup.status, 403, "{}", signup.raw);
    assert_eq!(signup.body["error"], "email-not-verified", "{}", signup.raw);
    let login = json!({"username": "ann", "password": "first-password"});
    let rest = post(&server, "/api/login", login.clone(), &[]).await;
    assert_eq!(rest.status, 403, "routes door: {}", rest.raw);
    assert!(
        rest.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not verified"),
        "{}",
        rest.raw
    );
    let auto = post(&server, "/users/login", login.clone(), &[]).await;
    assert_eq!(auto.status, 403, "auto API: {}", auto.raw);
    // The admin page refuses an account without a verified address too (root has none).
    let admin = post(
        &server,
        "/_/api/login",
        json!({"user": "root", "password": "root-password"}),
        &[],
    )
    .await;
    assert_eq!(admin.status, 403, "admin page: {}", admin.raw);

    let first = link_token(
        &sink.wait_for(1).await[0],
        "ann@example.com",
        "verify-email",
    );
    // Asking again mails a newer link, which voids the first.
    let again = post(
        &server,
        "/auth/verify-email",
        json!({"email": "ann@example.com"}),
        &[],
    )
    .await;
    assert_eq!(again.status, 202, "{}", again.raw);
    let second = link_token(
        &sink.wait_for(2).await[1],
        "ann@example.com",
        "verify-email",
    );
    let stale = post(
        &server,
        "/auth/verify-email/confirm",
        json!({"token": first}),
        &[],
    )
    .await;
    assert_eq!(
        (stale.status, stale.body["error"].as_str()),
        (400, Some("invalid-token")),
        "{}",
        stale.raw
    );
    let ok = post(
        &server,
        "/auth/verify-email/confirm",
        json!({"token": second}),
        &[],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    assert_eq!(ok.body["email"], "ann@example.com");
    let twice = post(
        &server,
        "/auth/verify-email/confirm",
        json!({"token": second}),
        &[],
    )
    .await;
    assert_eq!(twice.status, 400, "a link works once: {}", twice.raw);

    // Verified: both doors let ann in.
    let (rest_token, _) = server.rest_login("/api/", "ann", "first-password").await;
    let (auto_token, _) = server.auto_login("ann", "first-password").await;
    assert_eq!(
        server
            .call("GET", "/api/items", None, &x_auth(&rest_token))
            .await
            .status,
        200
    );

    // Reset: the same reply for an address with and without an account.
    let known = post(
        &server,
        "/auth/password-reset",
        json!({"email": "ann@example.com"}),
        &[],
    )
    .await;
    let unknown = post(
        &server,
        "/auth/password-reset",
        json!({"email": "nobody@example.com"}),
        &[],
    )
    .await;
    assert_eq!((known.status, unknown.status), (202, 202));
    assert_eq!(known.raw, unknown.raw, "no account oracle");
    let reset = link_token(
        &sink.wait_for(3).await[2],
        "ann@example.com",
        "reset-password",
    );
    let short = post(
        &server,
        "/auth/password-reset/confirm",
        json!({"token": reset, "password": "short"}),
        &[],
    )
    .await;
    assert_eq!(short.status, 400, "{}", short.raw);
    let done = post(
        &server,
        "/auth/password-reset/confirm",
        json!({"token": reset, "password": "second-password"}),
        &[],
    )
    .await;
    assert_eq!(
        done.status, 200,
        "a refused password leaves the link working: {}",
        done.raw
    );
    let reused = post(
        &server,
        "/auth/password-reset/confirm",
        json!({"token": reset, "password": "third-password"}),
        &[],
    )
    .await;
    assert_eq!(reused.status, 400, "{}", reused.raw);
    // Every login token from before the reset is refused, on both doors.
    assert_eq!(
        server
            .call("GET", "/api/items", None, &x_auth(&rest_token))
            .await
            .status,
        401
    );
    let bearer = format!("Bearer {auto_token}");
    let old = post(
        &server,
        "/auth/email-change",
        json!({"email": "x@example.com"}),
        &[("Authorization", &bearer)],
    )
    .await;
    assert_eq!(old.status, 401, "{}", old.raw);
    assert_eq!(
        post(&server, "/api/login", login, &[]).await.status,
        401,
        "old password"
    );
    let (token, _) = server.auto_login("ann", "second-password").await;
    let bearer = format!("Bearer {token}");

    // Email change: the link goes to the new address; an expired one is refused.
    let change = post(
        &server,
        "/auth/email-change",
        json!({"email": "ann@new.example"}),
        &[("Authorization", &bearer)],
    )
    .await;
    assert_eq!(change.status, 202, "{}", change.raw);
    let expired = link_token(
        &sink.wait_for(4).await[3],
        "ann@new.example",
        "confirm-email-change",
    );
    // The link lives 8 s: long enough that the fresh link below is used in time on a loaded
    // machine (mail delivery and the login before it take seconds there), short enough to wait out.
    tokio::time::sleep(Duration::from_millis(8200)).await;
    let late = post(
        &server,
        "/auth/email-change/confirm",
        json!({"token": expired}),
        &[],
    )
    .await;
    assert_eq!(late.status, 400, "expired: {}", late.raw);
    post(
        &server,
        "/auth/email-change",
        json!({"email": "ann@new.example"}),
        &[("Authorization", &bearer)],
    )
    .await;
    let fresh = link_token(
        &sink.wait_for(5).await[4],
        "ann@new.example",
        "confirm-email-change",
    );
    let moved = post(
        &server,
        "/auth/email-change/confirm",
        json!({"token": fresh}),
        &[],
    )
    .await;
    assert_eq!(
        (moved.status, moved.body["email"].as_str()),
        (200, Some("ann@new.example")),
        "{}",
        moved.raw
    );
    let by_new = post(
        &server,
        "/api/login",
        json!({"email": "ann@new.example", "password": "second-password"}),
        &[],
    )
    .await;
    assert_eq!(
        by_new.status, 200,
        "the new address is verified: {}",
        by_new.raw
    );
    let by_old = post(
        &server,
        "/api/login",
        json!({"email": "ann@example.com", "password": "second-password"}),
        &[],
    )
    .await;
    assert_eq!(by_old.status, 401, "{}", by_old.raw);

    // Rate limit per address, counted for unknown addresses the same way.
    for _ in 0..2 {
        let r = post(
            &server,
            "/auth/password-reset",
            json!({"email": "nobody@example.com"}),
            &[],
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.raw);
    }
    let limited = post(
        &server,
        "/auth/password-reset",
        json!({"email": "nobody@example.com"}),
        &[],
    )
    .await;
    assert_eq!(limited.status, 429, "{}", limited.raw);
    assert!(limited.header("retry-after").is_some());

    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["passwordReset"], true, "{}", methods.raw);
    assert_eq!(
        methods.body["requireVerifiedEmail"], true,
        "{}",
        methods.raw
    );
    // Nothing was ever mailed to the address without an account.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mails = sink.mails();
    assert_eq!(mails.len(), 5, "{mails:?}");
    assert!(
        mails
            .iter()
            .all(|m| m["to"] != json!(["nobody@example.com"]))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_postgres_send_each_mail_once() {
    let sink = SmtpSink::started();
    let ws = Workspace::on_postgres();
    ws.config(&config(&sink.url(), ""));
    const USERS: usize = 6;
    for i in 0..USERS {
        ws.create_account(
            &format!("u{i}"),
            Some(&format!("u{i}@example.com")),
            "old-password",
            &[],
        );
    }
    let a = ws.serve();
    let b = ws.serve();
    for i in 0..USERS {
        let server = if i % 2 == 0 { &a } else { &b };
        let r = post(
            server,
            "/auth/password-reset",
            json!({"email": format!("u{i}@example.com")}),
            &[],
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.raw);
    }
    sink.wait_for(USERS).await;
    // Both senders poll a few more times; nothing is sent twice.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let mails = sink.mails();
    let mut to: Vec<String> = mails
        .iter()
        .map(|m| m["to"][0].as_str().unwrap_or_default().to_owned())
        .collect();
    to.sort();
    to.dedup();
    assert_eq!((mails.len(), to.len()), (USERS, USERS), "{mails:?}");
    // A link mailed by one instance works on the other.
    let mail = mails
        .iter()
        .find(|m| m["to"] == json!(["u0@example.com"]))
        .expect("u0's mail");
    let token = link_token(mail, "u0@example.com", "reset-password");
    let done = post(
        &b,
        "/auth/password-reset/confirm",
        json!({"token": token, "password": "new-password"}),
        &[],
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.raw);
    let again = post(
        &a,
        "/auth/password-reset/confirm",
        json!({"token": token, "password": "other-password"}),
        &[],
    )
    .await;
    assert_eq!(again.status, 400, "{}", again.raw);
    a.rest_login("/api/", "u0", "new-password").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_factor_codes_on_both_doors() {
    let ws = Workspace::new();
    ws.config(&format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"items\"\nauth_required = true\n\
         [auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n\
         [accounts]\napp_url = \"{APP_URL}\"\n"
    ));
    ws.create_user("tia", "tia-password", &[]);
    let server = ws.serve();
    let (token, _) = server.auto_login("tia", "tia-password").await;
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str())];
    let setup = post(&server, "/auth/totp/setup", json!({}), &auth).await;
    assert_eq!(setup.status, 200, "{}", setup.raw);
    let secret = setup.body["secret"].as_str().unwrap_or_default().to_owned();
    assert!(
        setup.body["uri"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("otpauth://totp/Portico:tia?secret={secret}")),
        "{}",
        setup.raw
    );
    // Stay inside one 30-second step for the rest of the test.
    let now = || {
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        )
        .unwrap_or(0)
    };
    if now() % 30 > 15 {
        tokio::time::sleep(Duration::from_secs(
            u64::try_from(31 - now() % 30).unwrap_or(0),
        ))
        .await;
    }
    let t = now();
    let code = |dt: i64| portico_platform::totp_code(&secret, t + dt).expect("code");
    let wrong = post(
        &server,
        "/auth/totp/enable",
        json!({"code": code(150)}),
        &auth,
    )
    .await;
    assert_eq!(wrong.status, 400, "a code of another time: {}", wrong.raw);
    // The previous step's code counts (clocks drift).
    let enabled = post(
        &server,
        "/auth/totp/enable",
        json!({"code": code(-30)}),
        &auth,
    )
    .await;
    assert_eq!(enabled.status, 200, "{}", enabled.raw);
    let recovery: Vec<String> = enabled.body["recoveryCodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    assert_eq!(recovery.len(), 8, "{}", enabled.raw);

    let login = |totp: Option<String>| {
        let mut body = json!({"username": "tia", "password": "tia-password"});
        if let Some(code) = totp {
            body["totp"] = json!(code);
        }
        body
    };
    let rest = post(&server, "/api/login", login(None), &[]).await;
    assert_eq!(rest.status, 401, "{}", rest.raw);
    assert!(
        rest.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("two-factor"),
        "{}",
        rest.raw
    );
    let auto = post(&server, "/users/login", login(None), &[]).await;
    assert_eq!(
        (auto.status, auto.body["error"].as_str()),
        (401, Some("totp-required")),
        "{}",
        auto.raw
    );
    let ok = post(&server, "/api/login", login(Some(code(0))), &[]).await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    let reused = post(&server, "/users/login", login(Some(code(0))), &[]).await;
    assert_eq!(
        (reused.status, reused.body["error"].as_str()),
        (401, Some("totp-invalid")),
        "a code works once: {}",
        reused.raw
    );
    let next = post(&server, "/users/login", login(Some(code(30))), &[]).await;
    assert_eq!(
        next.status, 200,
        "the next step's code counts: {}",
        next.raw
    );
    let older = post(&server, "/api/login", login(Some(code(-30))), &[]).await;
    assert_eq!(
        older.status, 401,
        "a step before the last used one: {}",
        older.raw
    );
    let by_recovery = post(
        &server,
        "/users/login",
        login(Some(recovery[0].clone())),
        &[],
    )
    .await;
    assert_eq!(by_recovery.status, 200, "{}", by_recovery.raw);
    let again = post(
        &server,
        "/users/login",
        login(Some(recovery[0].clone())),
        &[],
    )
    .await;
    assert_eq!(
        again.status, 401,
        "a recovery code works once: {}",
        again.raw
    );
    let fresh = format!(
        "Bearer {}",
        by_recovery.body["token"].as_str().unwrap_or_default()
    );
    let off = post(
        &server,
        "/auth/totp/disable",
        json!({"code": recovery[1]}),
        &[("Authorization", &fresh)],
    )
    .await;
    assert_eq!(off.status, 200, "{}", off.raw);
    let plain = post(&server, "/api/login", login(None), &[]).await;
    assert_eq!(plain.status, 200, "codes off: {}", plain.raw);
    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["totp"], true, "{}", methods.raw);
}
