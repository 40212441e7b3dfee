//! Every `[[api]]` and `[[api.collection]]` key, observed over HTTP.

use serde_json::json;

use super::common::{Scenario, Workspace, run_scenarios};

#[tokio::test]
async fn api_keys_shape_every_reply() {
    let ws = Workspace::new();
    ws.config(
        r#"
[[api]]
api_path = "rest/"
version = "v2"
use_default_auth = true
pretty_json = true
enable_cors = true
default_headers = { "X-Example" = "1" }
auth_failure_delay_ms = 0
login_rate_limit = { attempts = 2, per_seconds = 60 }
cors_origins = ["https://app.example.com"]

[[api.collection]]
name = "articles"

[[api]]
api_path = "plain/"
enable_cors = false
auth_failure_delay_ms = 0

[[api.collection]]
name = "articles"
"#,
    );
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve();

    // api_path + version; pretty_json; default_headers.
    let reply = server
        .call(
            "GET",
            "/rest/v2/articles",
            None,
            &[("Origin", "https://app.example.com")],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    assert!(
        reply.raw.contains("\n  "),
        "pretty JSON is indented: {}",
        reply.raw
    );
    assert_eq!(reply.header("x-example"), Some("1"));
    // cors_origins: a listed origin is echoed, another gets no allow-origin header.
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    let other = server
        .call(
            "GET",
            "/rest/v2/articles",
            None,
            &[("Origin", "https://evil.example.com")],
        )
        .await;
    assert_eq!(other.header("access-control-allow-origin"), None);
    // The second API: not pretty, no CORS header at all, and not under the first one's path.
    let plain = server
        .call(
            "GET",
            "/plain/articles",
            None,
            &[("Origin", "https://app.example.com")],
        )
        .await;
    assert_eq!(plain.status, 200);
    assert!(!plain.raw.contains('\n'), "{}", plain.raw);
    assert_eq!(plain.header("access-control-allow-origin"), None);
    assert_eq!(plain.header("x-example"), None);
    let absent = server.call("GET", "/rest/articles", None, &[]).await;
    assert_eq!(absent.status, 404);

    // use_default_auth: login exists on the first API only.
    let (token, _) = server.rest_login("/rest/v2/", "ann", "ann-password").await;
    assert!(!token.is_empty());
    let none = server
        .call(
            "POST",
            "/plain/login",
            Some(json!({"username": "ann", "password": "ann-password"})),
            &[],
        )
        .await;
    assert_ne!(none.status, 200);

    // login_rate_limit: 2 failures per identity, then 429.
    let bad = json!({"username": "ann", "password": "wrong"});
    for _ in 0..2 {
        let r = server
            .call("POST", "/rest/v2/login", Some(bad.clone()), &[])
            .await;
        assert_eq!(r.status, 401);
    }
    let limited = server.call("POST", "/rest/v2/login", Some(bad), &[]).await;
    assert_eq!(limited.status, 429, "{}", limited.raw);
    assert!(limited.header("retry-after").is_some());
}

#[tokio::test]
async fn collection_keys_decide_paths_auth_roles_and_endpoints() {
    let ws = Workspace::new();
    ws.config(
        r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0

[[api.collection]]
name = "articles"
path = "posts"
auth_required = false
role_required = ["editor"]
excluded_endpoints = ["delete"]
endpoints = { getAll = { auth_required = false, role_required = "reader" }, put = false }
max_page_size = 2

[[api.collection]]
name = "drafts"
auth_required = true
endpoints = { getAll = { auth_required = false } }
"#,
    );
    ws.add_user("ed", "ed-password", &["editor"]);
    ws.add_user("rita", "rita-password", &["reader"]);
    let server = ws.serve();
    let (ed, _) = server.rest_login("/api/", "ed", "ed-password").await;
    let (rita, _) = server.rest_login("/api/", "rita", "rita-password").await;

    let mut table = vec![
        Scenario::new("path: /api/posts, not the name", "GET", "/api/articles")
            .token(&ed)
            .status(404),
    ];
    for n in 0..3 {
        table.push(
            Scenario::new("role_required: an editor writes", "POST", "/api/posts")
                .token(&ed)
                .body(json!({"n": n}))
                .status(201)
                .has(json!({"data": {"n": n}})),
        );
    }
    table.extend([
        Scenario::new("role_required: a reader does not", "POST", "/api/posts")
            .token(&rita)
            .body(json!({}))
            .status(403),
        Scenario::new("anonymous writers must log in", "POST", "/api/posts")
            .body(json!({}))
            .status(401),
        Scenario::new("getAll.role_required adds `reader`", "GET", "/api/posts")
            .token(&rita)
            .keep("id", "/data/0/_id"),
        Scenario::new(
            "max_page_size clamps a larger limit",
            "GET",
            "/api/posts?limit=50",
        )
        .token(&ed),
        Scenario::new("excluded_endpoints = delete", "DELETE", "/api/posts/{id}")
            .token(&ed)
            .status(405),
        Scenario::new("put = false", "PUT", "/api/posts/{id}")
            .token(&ed)
            .body(json!({"n": 9}))
            .status(405),
        Scenario::new("patch is still served", "PATCH", "/api/posts/{id}")
            .token(&ed)
            .body(json!({"n": 9}))
            .has(json!({"status": "success"})),
        Scenario::new("getAll opened on a closed collection", "GET", "/api/drafts"),
        Scenario::new("the collection's auth_required", "POST", "/api/drafts")
            .body(json!({"t": 1}))
            .status(401),
        Scenario::new("a user writes a draft", "POST", "/api/drafts")
            .token(&rita)
            .body(json!({"t": 1}))
            .status(201)
            .has(json!({"data": {"t": 1}})),
    ]);
    let replies = run_scenarios(&server, &table).await;
    let page = &replies[7];
    assert_eq!(
        page.body["data"].as_array().map(Vec::len),
        Some(2),
        "{}",
        page.raw
    );
}

#[tokio::test]
async fn owner_field_scopes_every_endpoint_to_the_caller() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n",
    );
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann, ann_id) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;

    run_scenarios(
        &server,
        &[
            Scenario::new("post stamps the caller's id", "POST", "/api/notes")
                .token(&ann)
                .body(json!({"text": "ann's", "ownerId": "someone-else"}))
                .status(201)
                .has(json!({"data": {"ownerId": ann_id}}))
                .keep("id", "/data/_id"),
            Scenario::new("another user lists none of it", "GET", "/api/notes")
                .token(&bob)
                .has(json!({"data": []}))
                .lacks(json!({"text": "ann's"})),
            Scenario::new("nor reads it", "GET", "/api/notes/{id}")
                .token(&bob)
                .status(404),
            Scenario::new("nor removes it", "DELETE", "/api/notes/{id}")
                .token(&bob)
                .status(404),
            Scenario::new("an owned list needs a caller", "GET", "/api/notes").status(401),
            Scenario::new("the owner reads it", "GET", "/api/notes/{id}")
                .token(&ann)
                .has(json!({"data": {"text": "ann's"}})),
        ],
    )
    .await;
}

/// A path no door has a route for answers one 404 body, whichever door's area it is in.
#[tokio::test]
async fn unknown_paths_get_one_404_body_from_both_doors() {
    let ws = Workspace::new();
    ws.config("[[api]]\nversion = \"v1\"\n[[api.collection]]\nname = \"items\"\n[auto]\ncollections = [\"items\"]\n");
    let server = ws.serve();
    let mut bodies = Vec::new();
    for path in [
        "/nope",
        "/api/v1/nope",
        "/api/v1/items/x/y",
        "/methods/none",
        "/publications/none/x",
    ] {
        let reply = server.call("GET", path, None, &[]).await;
        assert_eq!(reply.status, 404, "{path}: {}", reply.raw);
        bodies.push(reply.body);
    }
    assert!(bodies.iter().all(|b| *b == bodies[0]), "{bodies:?}");
    assert_eq!(
        bodies[0],
        serde_json::json!({"status": "error", "message": "API endpoint does not exist"})
    );
}

/// `trusted_proxies`: behind a listed proxy, login limits count the forwarded client, on both
/// doors; a bad entry is a config mistake.
#[tokio::test]
async fn trusted_proxies_decide_whose_failures_count() {
    let ws = Workspace::new();
    ws.config("trusted_proxies = [\"127.0.0.1\"]\n[[api]]\nuse_default_auth = true\n[auto]\ncollections = []\n");
    ws.add_user("ann", "right-pass", &[]);
    let server = ws.serve();
    let wrong = json!({"username": "ann", "password": "wrong"});
    for n in 0..5 {
        let path = if n % 2 == 0 {
            "/api/login"
        } else {
            "/users/login"
        };
        let reply = server
            .call(
                "POST",
                path,
                Some(wrong.clone()),
                &[("x-forwarded-for", "203.0.113.5")],
            )
            .await;
        assert_eq!(reply.status, 401, "{n}: {}", reply.raw);
    }
    let limited = server
        .call(
            "POST",
            "/api/login",
            Some(wrong.clone()),
            &[("x-forwarded-for", "203.0.113.5")],
        )
        .await;
    assert_eq!(limited.status, 429);
    let right = json!({"username": "ann", "password": "right-pass"});
    let other = server
        .call(
            "POST",
            "/users/login",
            Some(right),
            &[("x-forwarded-for", "198.51.100.2")],
        )
        .await;
    assert_eq!(other.status, 200, "{}", other.raw);
    let bad = Workspace::new();
    bad.config("trusted_proxies = [\"not-an-ip\"]\n");
    let out = bad.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success());
    assert!(super::common::text(&out.stderr).contains("trusted_proxies"));
}
