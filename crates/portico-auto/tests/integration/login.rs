//! The password login add-on: login, register, identical failures, rate limits.

use std::time::Duration;

use portico_auto::{AutoApi, BearerTokenLayer, LoginOptions};
use portico_platform::{
    AccountsConfig, MethodError, NewUser, Password, Platform, PlatformConfig, password_digest,
};
use serde_json::{Value, json};

use crate::common::{Server, platform, serve};

async fn app(p: &Platform, options: LoginOptions) -> Server {
    p.method("whoami", |inv, _args| async move {
        Ok::<Value, MethodError>(json!(inv.user_id()))
    })
    .unwrap();
    serve(
        AutoApi::new(p.clone())
            .with_login(options)
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await
}

async fn ada(p: &Platform) -> String {
    p.accounts()
        .create_user(NewUser {
            username: Some("ada".into()),
            email: Some("ada@example.com".into()),
            password: Some(Password::Plain("correct horse".into())),
            ..NewUser::default()
        })
        .await
        .unwrap()
}

fn assert_token_reply(reply: &Value, user_id: &str) {
    assert_eq!(reply["id"], user_id);
    assert_eq!(reply["token"].as_str().map(str::len), Some(43));
    let expires = reply["tokenExpires"].as_str().expect("tokenExpires");
    let expires = chrono::DateTime::parse_from_rfc3339(expires).expect("ISO-8601");
    let days = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_days();
    assert!((89..=90).contains(&days), "expires in {days} days");
}

#[tokio::test]
async fn login_by_username_email_and_digest() {
    let p = platform().await;
    let id = ada(&p).await;
    let s = app(&p, LoginOptions::default()).await;
    for body in [
        json!({"username": "ada", "password": "correct horse"}),
        json!({"email": "ADA@example.com", "password": "correct horse"}),
        json!({"user": "ada@example.com", "password": "correct horse"}),
        json!({"username": "ada", "password": password_digest("correct horse"), "hashed": true}),
        json!({"username": "ada", "password": {"digest": password_digest("correct horse"), "algorithm": "sha-256"}}),
    ] {
        let r = s.post("/users/login", body.clone()).await;
        assert_eq!(r.status, 200, "{body}: {}", r.text);
        assert_token_reply(&r.json, &id);
        // The token works as a bearer token.
        let token = r.json["token"].as_str().unwrap();
        let me = s.post_as("/methods/whoami", json!([]), token).await;
        assert_eq!(me.json, json!(id));
    }
}

#[tokio::test]
async fn form_encoded_login() {
    let p = platform().await;
    let id = ada(&p).await;
    let s = app(&p, LoginOptions::default()).await;
    let r = s
        .post_raw(
            "/users/login",
            "application/x-www-form-urlencoded",
            "username=ada&password=correct+horse",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_token_reply(&r.json, &id);
}

#[tokio::test]
async fn every_login_failure_is_the_same_401() {
    let p = platform().await;
    ada(&p).await;
    // A user without a password.
    p.accounts()
        .create_user(NewUser {
            username: Some("nopass".into()),
            ..NewUser::default()
        })
        .await
        .unwrap();
    let s = app(&p, LoginOptions::default()).await;
    let expected = json!({"error": "unauthorized", "reason": "Incorrect credentials"});
    for body in [
        json!({"username": "ada", "password": "wrong"}),
        json!({"username": "nobody", "password": "correct horse"}),
        json!({"username": "nopass", "password": "x"}),
        json!({"username": "ada"}),
        json!({"password": "correct horse"}),
        json!({"username": "ada", "password": "abc", "hashed": true}),
    ] {
        let r = s.post("/users/login", body.clone()).await;
        assert_eq!((r.status, &r.json), (401, &expected), "{body}");
    }
}

#[tokio::test]
async fn register_then_use_the_token() {
    let p = platform().await;
    let s = app(&p, LoginOptions::default()).await;
    let r = s
        .post(
            "/users/register",
            json!({"username": "grace", "email": "grace@example.com", "password": "cobol-1959", "profile": {"name": "Grace"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json["id"].as_str().unwrap().to_owned();
    assert_token_reply(&r.json, &id);
    let user = p.accounts().find_user_by_id(&id).await.unwrap().unwrap();
    assert_eq!(user["profile"], json!({"name": "Grace"}));
    let me = s
        .post_as(
            "/methods/whoami",
            json!([]),
            r.json["token"].as_str().unwrap(),
        )
        .await;
    assert_eq!(me.json, json!(id));
    // And log in with the new password.
    let r = s
        .post(
            "/users/login",
            json!({"username": "grace", "password": "cobol-1959"}),
        )
        .await;
    assert_eq!(r.status, 200);
    // Taken names, also in another case, and missing passwords are refused.
    let r = s
        .post(
            "/users/register",
            json!({"username": "GRACE", "password": "x-long-password"}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    // The platform's login service reports a taken name as an invalid user.
    assert_eq!(r.json["error"], "invalid-user");
    assert!(r.text.contains("exists"), "{}", r.text);
    // A password shorter than password_min_length (default 8) is refused; nothing is made.
    let r = s
        .post(
            "/users/register",
            json!({"username": "shorty", "password": "1234567"}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("at least 8 characters"), "{}", r.text);
    assert!(
        p.accounts()
            .find_user_by_username("shorty")
            .await
            .unwrap()
            .is_none()
    );
    let r = s
        .post("/users/register", json!({"username": "newbie"}))
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn register_forbidden_is_403() {
    let p = platform().await;
    let s = app(&p, {
        let mut o = LoginOptions::default();
        o.allow_register = false;
        o
    })
    .await;
    let r = s
        .post("/users/register", json!({"username": "x", "password": "y"}))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json,
        json!({"error": "forbidden", "reason": "Signups forbidden"})
    );

    let mut config = PlatformConfig::default();
    config.accounts = {
        let mut o = AccountsConfig::default();
        o.forbid_client_account_creation = true;
        o
    };
    let p = Platform::open_with("memory:", config).await.unwrap();
    let s = app(&p, LoginOptions::default()).await;
    let r = s
        .post("/users/register", json!({"username": "x", "password": "y"}))
        .await;
    assert_eq!(r.status, 403);
    assert!(p.accounts().list_users().await.unwrap().is_empty());
}

#[tokio::test]
async fn failed_logins_are_rate_limited_with_retry_after() {
    let p = platform().await;
    ada(&p).await;
    let mut options = LoginOptions::default();
    options.attempts_per_identity = 2;
    options.attempts_per_address = 100;
    options.window = Duration::from_secs(30);
    let s = app(&p, options).await;
    for _ in 0..2 {
        let r = s
            .post(
                "/users/login",
                json!({"username": "ada", "password": "bad"}),
            )
            .await;
        assert_eq!(r.status, 401);
    }
    // Even the right password waits now.
    let r = s
        .post(
            "/users/login",
            json!({"username": "ADA", "password": "correct horse"}),
        )
        .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.json["error"], "too-many-requests");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry));
    // Another identity is not affected.
    let r = s
        .post("/users/login", json!({"username": "eve", "password": "x"}))
        .await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn failed_logins_are_limited_per_address() {
    let p = platform().await;
    ada(&p).await;
    let mut options = LoginOptions::default();
    options.attempts_per_identity = 100;
    options.attempts_per_address = 3;
    options.window = Duration::from_secs(30);
    let s = app(&p, options).await;
    for name in ["u1", "u2", "u3"] {
        let r = s
            .post("/users/login", json!({"username": name, "password": "x"}))
            .await;
        assert_eq!(r.status, 401);
    }
    let r = s
        .post(
            "/users/login",
            json!({"username": "ada", "password": "correct horse"}),
        )
        .await;
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
}

#[tokio::test]
async fn login_routes_are_listed_and_answer_preflights() {
    let p = platform().await;
    let s = app(&p, LoginOptions::default()).await;
    let r = s.get("/publications/api-routes").await;
    let paths: Vec<&str> = r.json["api-routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(paths.contains(&"/users/login") && paths.contains(&"/users/register"));
    let r = s.options("/users/login").await;
    assert_eq!(r.status, 200);
    let r = s.get("/users/login").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.json["error"], "method-not-allowed");
    // Malformed JSON is a bad request, not a login attempt.
    let r = s.post_raw("/users/login", "application/json", "{").await;
    assert_eq!(r.status, 400);
}

/// `X-Forwarded-For` names the client only when the peer is a trusted proxy: behind one, each
/// client has its own per-address budget; without one, the header changes nothing.
#[tokio::test]
async fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
    async fn attempt(s: &Server, name: String, forwarded: &str) -> u16 {
        let body = json!({"username": name, "password": "x"});
        let request = s
            .client
            .post(s.url("/users/login"))
            .header("x-forwarded-for", forwarded)
            .json(&body);
        s.send(request).await.status
    }
    let options = |trusted: &[&str]| {
        let mut o = LoginOptions::default();
        o.attempts_per_address = 3;
        o.trusted_proxies = portico_auto::TrustedProxies::parse(trusted).unwrap();
        o
    };

    let p = platform().await;
    let s = app(&p, options(&["127.0.0.1"])).await;
    for i in 0..3 {
        assert_eq!(attempt(&s, format!("a{i}"), "203.0.113.1").await, 401);
    }
    assert_eq!(attempt(&s, "a9".into(), "203.0.113.1").await, 429);
    assert_eq!(attempt(&s, "b0".into(), "203.0.113.2").await, 401);

    let p = platform().await;
    let s = app(&p, options(&[])).await;
    for i in 0..3 {
        assert_eq!(attempt(&s, format!("a{i}"), "203.0.113.1").await, 401);
    }
    assert_eq!(attempt(&s, "b0".into(), "203.0.113.2").await, 429);
}

/// Login bodies are capped at 64 KB.
#[tokio::test]
async fn login_bodies_are_small() {
    let p = platform().await;
    let s = app(&p, LoginOptions::default()).await;
    let big = json!({"username": "ada", "password": "x".repeat(70 * 1024)});
    let r = s.post("/users/login", big).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.json["error"], "payload-too-large");
}

/// Sign-ups are limited per client address (each costs a password hash).
#[tokio::test]
async fn registrations_are_rate_limited() {
    let p = platform().await;
    let mut options = LoginOptions::default();
    options.register_per_address = Some(portico_platform::Limit::new(2, Duration::from_secs(60)));
    let s = app(&p, options).await;
    for name in ["r1", "r2"] {
        let r = s
            .post(
                "/users/register",
                json!({"username": name, "password": "pw-long-1"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = s
        .post(
            "/users/register",
            json!({"username": "r3", "password": "pw-long-1"}),
        )
        .await;
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
    assert_eq!(p.accounts().list_users().await.unwrap().len(), 2);
}
