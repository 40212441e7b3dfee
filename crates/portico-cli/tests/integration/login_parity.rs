//! Login parity across the two front doors of one server: every credential variant of the
//! shared table goes to the routes door's `POST /api/login` and to the auto API's
//! `POST /users/login`, and both must give the outcome class the table names. The failure
//! counts are one service's, so a limit reached through one door holds at the other.

use serde_json::Value;
use sha2::Digest;

use super::common::{Server, Workspace};

#[path = "../../../portico-auto/tests/integration/login_variants.rs"]
mod login_variants;

use login_variants::{LOGIN_VARIANTS, Outcome, fill};

const CONFIG: &str = "[[api]]\nuse_default_auth = true\n[auto]\ncollections = []\n";

/// Sends `body` with `content_type` to `path`; the status, the `Retry-After` header and the
/// body as JSON (null when it is not JSON).
async fn post(server: &Server, path: &str, content_type: &str, body: String) -> (u16, bool, Value) {
    let response = server
        .http
        .post(server.url(path))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let retry = response.headers().contains_key("retry-after");
    let text = response.text().await.unwrap_or_default();
    (
        status,
        retry,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// The outcome class of a reply, for a door whose successful reply names the user at `id`.
fn class(reply: &(u16, bool, Value), user_id: Option<&Value>, ada: &str) -> Option<Outcome> {
    match reply {
        (200, _, _) if user_id.and_then(Value::as_str) == Some(ada) => Some(Outcome::Success),
        (401, _, _) => Some(Outcome::Unauthorized),
        (429, true, _) => Some(Outcome::TooMany),
        (400, _, _) => Some(Outcome::BadRequest),
        _ => None,
    }
}

#[tokio::test]
async fn both_doors_answer_every_credential_variant_alike() {
    let digest = hex::encode(sha2::Sha256::digest(b"correct horse"));
    let mut wrong = Vec::new();
    for variant in LOGIN_VARIANTS {
        // A fresh server per row: rows that exhaust a limit must not leak into the next.
        let ws = Workspace::new();
        ws.config(CONFIG);
        let db = ws.database();
        let mut ids = Vec::new();
        for (name, password) in [("ada", "correct horse"), ("bob", "bob's own")] {
            let email = format!("{name}@example.com");
            let out = ws.run(&[
                "users",
                "add",
                "--database",
                &db,
                "--username",
                name,
                "--email",
                &email,
                "--password",
                password,
            ]);
            assert!(out.status.success(), "{out:?}");
            ids.push(super::common::text(&out.stdout).trim().to_owned());
        }
        let ada = ids.swap_remove(0);
        let server = ws.serve();
        let body = fill(variant.body, &ada, &digest);
        let wrong_password = r#"{"username": "ada", "password": "wrong"}"#;
        for n in 0..variant.failures_before {
            // Alternate the doors: the failures are counted once, whichever door saw them.
            let path = if n % 2 == 0 {
                "/api/login"
            } else {
                "/users/login"
            };
            let (status, _, _) =
                post(&server, path, "application/json", wrong_password.into()).await;
            assert_eq!(status, 401, "{}: failure {n} through {path}", variant.name);
        }
        let routes = post(&server, "/api/login", variant.content_type, body.clone()).await;
        let auto = post(&server, "/users/login", variant.content_type, body).await;
        let got_routes = class(&routes, routes.2.pointer("/data/userId"), &ada);
        let got_auto = class(&auto, auto.2.get("id"), &ada);
        if got_routes != Some(variant.expected) || got_auto != Some(variant.expected) {
            wrong.push(format!(
                "{}: expected {:?}, routes door {got_routes:?} ({:?}), auto API {got_auto:?} ({:?})",
                variant.name, variant.expected, routes.0, auto.0
            ));
        }
        let _ = server.stop();
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
