//! The auto API's half of the login parity test: every row of
//! [`LOGIN_VARIANTS`](portico_testkit::login_variants::LOGIN_VARIANTS) sent to `POST /users/login`, and
//! the outcome class compared with the row's. The routes door runs the same table.

use portico_auto::{AutoApi, LoginOptions};
use portico_platform::{NewUser, Password, Platform, password_digest};

use crate::common::{Reply, Server, platform, serve};
use portico_testkit::login_variants::{LOGIN_VARIANTS, LoginOutcome, LoginVariant, fill};

/// A fresh platform with ada and bob, served with the login add-on; ada's id.
async fn setup() -> (Platform, Server, String) {
    let p = platform().await;
    let mut ids = Vec::new();
    for (name, password) in [("ada", "correct horse"), ("bob", "bob's own")] {
        let id = p
            .accounts()
            .create_user(NewUser {
                username: Some(name.into()),
                email: Some(format!("{name}@example.com")),
                password: Some(Password::Plain(password.into())),
                ..NewUser::default()
            })
            .await
            .expect("user");
        ids.push(id);
    }
    let router = AutoApi::new(p.clone())
        .with_login(LoginOptions::default())
        .router()
        .expect("router");
    let server = serve(router).await;
    (p, server, ids.swap_remove(0))
}

async fn login(s: &Server, content_type: &str, body: String) -> Reply {
    s.send(
        s.client
            .post(s.url("/users/login"))
            .header("content-type", content_type)
            .body(body),
    )
    .await
}

/// The outcome class of a reply; `None` for anything outside the classes.
fn outcome(reply: &Reply, ada_id: &str) -> Option<LoginOutcome> {
    match reply.status {
        200 if reply.json["id"] == ada_id => Some(LoginOutcome::Success),
        401 => Some(LoginOutcome::Unauthorized),
        429 if reply.header("retry-after").is_some() => Some(LoginOutcome::TooMany),
        400 => Some(LoginOutcome::BadRequest),
        _ => None,
    }
}

async fn run(variant: &LoginVariant) -> Option<LoginOutcome> {
    let (_p, s, ada_id) = setup().await;
    for _ in 0..variant.failures_before {
        let wrong = r#"{"username": "ada", "password": "wrong"}"#.to_owned();
        assert_eq!(login(&s, "application/json", wrong).await.status, 401);
    }
    let body = fill(variant.body, &ada_id, &password_digest("correct horse"));
    let reply = login(&s, variant.content_type, body).await;
    outcome(&reply, &ada_id)
}

#[tokio::test]
async fn every_credential_variant_has_its_outcome() {
    let mut wrong = Vec::new();
    for variant in LOGIN_VARIANTS {
        let got = run(variant).await;
        if got != Some(variant.expected) {
            wrong.push(format!(
                "{}: expected {:?}, got {got:?}",
                variant.name, variant.expected
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
