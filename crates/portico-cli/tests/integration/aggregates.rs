//! Aggregates in the `portico` binary, on SQLite and PostgreSQL: groups on a list url under
//! the caller's owner scope and field rules, and on an auto API publication.

use serde_json::{Value, json};

use super::common::{Http, Workspace, x_auth};

const CONFIG: &str = r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "orders"
owner_field = "ownerId"
field_rules = { margin = "role:finance" }

[auto]
auth_failure_delay_ms = 0
collections = ["orders"]
[[auto.publication]]
name = "mine"
collection = "orders"
owner_field = "ownerId"
fields = { secret = 0 }
"#;

async fn groups(server: &Http, query: &str, token: &str) -> (u16, Value) {
    let r = server
        .call("GET", &format!("/api/orders?{query}"), None, &x_auth(token))
        .await;
    (r.status, r.body["data"].clone())
}

async fn aggregates_follow_scope_and_rules(ws: Workspace) {
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &["finance"]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;
    for (token, status, amount) in [
        (&ann, "open", 10),
        (&ann, "open", 5),
        (&ann, "paid", 7),
        (&bob, "open", 1000),
    ] {
        let mut body = json!({"status": status, "amount": amount, "secret": 1});
        if *token == ann {
            body["margin"] = json!(2);
        }
        let r = server
            .call("POST", "/api/orders", Some(body), &x_auth(token))
            .await;
        assert_eq!(r.status, 201, "{}", r.raw);
    }

    // Grouped, under ann's owner scope: bob's order never counts.
    let (status, data) = groups(
        &server,
        "group=status&count=true&sum=amount&avg=amount&min=amount&max=amount&sort=-count",
        &ann,
    )
    .await;
    assert_eq!(status, 200, "{data}");
    assert_eq!(
        data,
        json!([
            {"_id": "open", "count": 2, "sum_amount": 15, "avg_amount": 7.5, "min_amount": 5, "max_amount": 10},
            {"_id": "paid", "count": 1, "sum_amount": 7, "avg_amount": 7.0, "min_amount": 7, "max_amount": 7},
        ])
    );
    // Without group: one row; with where and limit.
    let (_, data) = groups(&server, "count=true&sum=amount", &bob).await;
    assert_eq!(data, json!([{"_id": null, "count": 1, "sum_amount": 1000}]));
    let (_, data) = groups(
        &server,
        "group=status&count=true&where=%7B%22amount%22%3A%7B%22%24gt%22%3A6%7D%7D&limit=1",
        &ann,
    )
    .await;
    assert_eq!(data, json!([{"_id": "open", "count": 1}]));
    // A field hidden from the caller cannot be grouped, summed or filtered on.
    let (_, data) = groups(&server, "sum=margin", &ann).await;
    assert_eq!(data, json!([{"_id": null, "sum_margin": 6}]));
    for query in [
        "sum=margin",
        "group=margin&count=true",
        "count=true&where=%7B%22margin%22%3A2%7D",
    ] {
        let r = server
            .call("GET", &format!("/api/orders?{query}"), None, &x_auth(&bob))
            .await;
        assert_eq!(r.status, 400, "{query}: {}", r.raw);
        assert!(r.raw.contains("margin"), "{}", r.raw);
    }
    let r = server
        .call("GET", "/api/orders?sum=a.0", None, &x_auth(&ann))
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);

    // The auto API: a publication's groups, under its owner scope and projection.
    let (ann_auto, _) = server.auto_login("ann", "ann-password").await;
    let auth = format!("Bearer {ann_auto}");
    let r = server
        .call(
            "GET",
            "/publications/mine?group=status&count=true&sum=amount",
            None,
            &[("Authorization", auth.as_str())],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(
        r.body,
        json!([{"_id": "open", "count": 2, "sum_amount": 15}, {"_id": "paid", "count": 1, "sum_amount": 7}])
    );
    let r = server
        .call(
            "GET",
            "/publications/mine?sum=secret",
            None,
            &[("Authorization", auth.as_str())],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    let r = server
        .call("GET", "/publications/mine?count=true", None, &[])
        .await;
    assert_eq!(r.body, json!([{"_id": null, "count": 0}]), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_on_sqlite() {
    aggregates_follow_scope_and_rules(Workspace::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_on_postgres() {
    aggregates_follow_scope_and_rules(Workspace::on_postgres()).await;
}
