//! `[[limits]]` through the binary: requests per window to a path or below a prefix, per
//! client address (as the trusted proxies tell it) or per account, answered 429 with
//! `Retry-After` past the limit; the count shared by two instances of one PostgreSQL database.

use std::time::Duration;

use serde_json::json;

use super::common::{Http, Workspace, x_auth};

const LIMITS: &str = "trusted_proxies = [\"127.0.0.1\"]\n\
[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
[[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n\
[accounts]\napp_url = \"http://app.test\"\n\
[[limits]]\npath = \"/auth/*\"\nrequests = 3\nwindow_secs = 60\n\
[[limits]]\npath = \"/api/notes\"\nper = \"account\"\nrequests = 2\nwindow_secs = 2\nmethods = [\"post\"]\n";

async fn methods(server: &Http, from: &str) -> super::common::Reply {
    server
        .call("GET", "/auth/methods", None, &[("X-Forwarded-For", from)])
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_count_per_address_and_per_account() {
    let ws = Workspace::new();
    ws.config(LIMITS);
    ws.add_user("ann", "ann-secret", &[]);
    ws.add_user("bob", "bob-secret", &[]);
    let server = ws.serve();

    // Three requests below /auth/ per address in the minute; another address has its own.
    for _ in 0..3 {
        assert_eq!(methods(&server, "10.0.0.1").await.status, 200);
    }
    let refused = methods(&server, "10.0.0.1").await;
    assert_eq!(refused.status, 429, "{}", refused.raw);
    assert_eq!(
        refused.body["error"], "too-many-requests",
        "{}",
        refused.raw
    );
    let wait: u64 = refused
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(methods(&server, "10.0.0.2").await.status, 200);
    // Other paths are not limited by it.
    let health = server
        .call("GET", "/healthz", None, &[("X-Forwarded-For", "10.0.0.1")])
        .await;
    assert_eq!(health.status, 200);

    // Two notes per account in two seconds (POST only), whatever the address.
    let (ann, _) = server.rest_login("/api/", "ann", "ann-secret").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-secret").await;
    let write = |token: &str, from: &'static str| {
        let token = token.to_owned();
        let server = &server;
        async move {
            server
                .call(
                    "POST",
                    "/api/notes",
                    Some(json!({"title": "n"})),
                    &[("X-Auth-Token", &token), ("X-Forwarded-For", from)],
                )
                .await
                .status
        }
    };
    assert_eq!(write(&ann, "10.0.0.3").await, 201);
    assert_eq!(write(&ann, "10.0.0.4").await, 201);
    assert_eq!(write(&ann, "10.0.0.5").await, 429);
    assert_eq!(write(&bob, "10.0.0.3").await, 201);
    assert_eq!(
        server
            .call("GET", "/api/notes", None, &x_auth(&ann))
            .await
            .status,
        200
    );
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(write(&ann, "10.0.0.5").await, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_a_limit_on_postgres() {
    let ws = Workspace::on_postgres();
    ws.config(LIMITS);
    let a = ws.serve();
    let b = ws.serve();
    assert_eq!(methods(&a, "10.0.0.9").await.status, 200);
    assert_eq!(methods(&b, "10.0.0.9").await.status, 200);
    assert_eq!(methods(&a, "10.0.0.9").await.status, 200);
    assert_eq!(methods(&b, "10.0.0.9").await.status, 429);
    assert_eq!(methods(&a, "10.0.0.9").await.status, 429);
    assert_eq!(methods(&b, "10.0.0.8").await.status, 200);
}
