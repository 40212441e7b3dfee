//! Field-level read rules in the `portico` binary: a hidden field never shows on either door
//! (get, list, write replies, batch replies, live events, publications), the entity tags do
//! not change with it, a filter or sort on it is 400 and a write to it 403.

use serde_json::{Value, json};

use super::common::{Http, Reply, Workspace, x_auth};
use portico_testkit::sse::Sse;

const CONFIG: &str = r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
batch_limit = 5
[[api.collection]]
name = "staff"
auth_required = true
timestamps = false
field_rules = { salary = "role:hr", notes = "owner:ownerId" }

[auto]
auth_failure_delay_ms = 0
collections = ["staff"]
no_timestamps = ["staff"]
[auto.rules.staff]
insert = "authenticated"
update = "authenticated"
[[auto.publication]]
name = "staff"
collection = "staff"
"#;

async fn get(server: &Http, path: &str, token: &str) -> Reply {
    server.call("GET", path, None, &x_auth(token)).await
}

async fn send(server: &Http, method: &str, path: &str, body: Value, token: &str) -> Reply {
    server.call(method, path, Some(body), &x_auth(token)).await
}

fn bearer(token: &str) -> [(&'static str, String); 1] {
    [("Authorization", format!("Bearer {token}"))]
}

async fn auto(server: &Http, method: &str, path: &str, body: Option<Value>, token: &str) -> Reply {
    let auth = bearer(token);
    let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
    server.call(method, path, body, &headers).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_fields_never_show_and_cannot_be_queried_or_written() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("hank", "hank-password", &["hr"]);
    let olga_id = ws.add_user("olga", "olga-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (hank, _) = server.rest_login("/api/", "hank", "hank-password").await;
    let (olga, _) = server.rest_login("/api/", "olga", "olga-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;

    // hr writes the salary; notes are the owner's only, even for hr.
    let created = send(
        &server,
        "POST",
        "/api/staff",
        json!({"_id": "e1", "name": "Eve", "salary": 100, "ownerId": olga_id}),
        &hank,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    assert_eq!(created.body["data"]["salary"], 100);
    let refused = send(
        &server,
        "POST",
        "/api/staff",
        json!({"name": "X", "ownerId": olga_id, "notes": "n"}),
        &hank,
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.raw);
    assert!(refused.raw.contains("notes"), "{}", refused.raw);
    let noted = send(
        &server,
        "PATCH",
        "/api/staff/e1",
        json!({"notes": "olga's"}),
        &olga,
    )
    .await;
    assert_eq!(noted.status, 200, "{}", noted.raw);
    assert_eq!(noted.body["data"]["notes"], "olga's");
    assert!(noted.body["data"].get("salary").is_none(), "{}", noted.raw);
    let paid = send(
        &server,
        "PATCH",
        "/api/staff/e1",
        json!({"salary": 1}),
        &olga,
    )
    .await;
    assert_eq!(paid.status, 403, "{}", paid.raw);

    // get: each caller sees what its rules allow.
    let as_bob = get(&server, "/api/staff/e1", &bob).await;
    assert_eq!(as_bob.status, 200, "{}", as_bob.raw);
    assert!(
        !as_bob.raw.contains("salary") && !as_bob.raw.contains("olga's"),
        "{}",
        as_bob.raw
    );
    let as_hank = get(&server, "/api/staff/e1", &hank).await;
    assert_eq!(as_hank.body["data"]["salary"], 100);
    assert!(as_hank.body["data"].get("notes").is_none());
    let as_olga = get(&server, "/api/staff/e1", &olga).await;
    assert_eq!(as_olga.body["data"]["notes"], "olga's");

    // The entity tag is computed without the hidden field: a raise does not change bob's.
    let tag = as_bob.header("etag").unwrap_or_default().to_owned();
    assert_ne!(Some(tag.as_str()), as_hank.header("etag"));
    let raise = send(
        &server,
        "PATCH",
        "/api/staff/e1",
        json!({"salary": 200}),
        &hank,
    )
    .await;
    assert_eq!(raise.status, 200, "{}", raise.raw);
    let again = server
        .call(
            "GET",
            "/api/staff/e1",
            None,
            &[
                ("X-Auth-Token", bob.as_str()),
                ("If-None-Match", tag.as_str()),
            ],
        )
        .await;
    assert_eq!(again.status, 304, "{}", again.raw);

    // list: hidden in every item; filtering or sorting on a hidden field is 400 naming it.
    let list = get(&server, "/api/staff", &bob).await;
    assert_eq!(list.status, 200, "{}", list.raw);
    assert!(
        !list.raw.contains("salary") && !list.raw.contains("olga's"),
        "{}",
        list.raw
    );
    for query in [
        "where=%7B%22salary%22%3A%7B%22%24gt%22%3A150%7D%7D",
        "sort=salary",
        "sort=-salary.amount",
    ] {
        let r = get(&server, &format!("/api/staff?{query}"), &bob).await;
        assert_eq!(r.status, 400, "{query}: {}", r.raw);
        assert!(r.raw.contains("salary"), "{}", r.raw);
    }
    let owner_filter = get(
        &server,
        "/api/staff?where=%7B%22notes%22%3A%22x%22%7D",
        &olga,
    )
    .await;
    assert_eq!(owner_filter.status, 400, "{}", owner_filter.raw);
    let hr_filter = get(&server, "/api/staff?where=%7B%22salary%22%3A200%7D", &hank).await;
    assert_eq!(hr_filter.status, 200, "{}", hr_filter.raw);
    assert_eq!(hr_filter.body["data"][0]["salary"], 200);

    // put by bob keeps what bob cannot see; a conditional write takes bob's own tag.
    let put = server
        .call(
            "PUT",
            "/api/staff/e1",
            Some(json!({"name": "Eve B", "ownerId": olga_id})),
            &[("X-Auth-Token", bob.as_str()), ("If-Match", tag.as_str())],
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.raw);
    assert!(!put.raw.contains("salary"), "{}", put.raw);
    let kept = get(&server, "/api/staff/e1", &hank).await;
    assert_eq!(
        (
            kept.body["data"]["salary"].clone(),
            kept.body["data"]["name"].clone()
        ),
        (json!(200), json!("Eve B"))
    );
    assert_eq!(
        get(&server, "/api/staff/e1", &olga).await.body["data"]["notes"],
        "olga's"
    );

    // batch replies are shown through the caller's rules; a hidden field in a batch is 403.
    let batch = send(
        &server,
        "POST",
        "/api/batch",
        json!({"requests": [{"method": "PATCH", "url": "staff/e1", "body": {"name": "Eve C"}}]}),
        &bob,
    )
    .await;
    assert_eq!(batch.status, 200, "{}", batch.raw);
    assert_eq!(batch.body["data"][0]["body"]["name"], "Eve C");
    assert!(
        !batch.raw.contains("salary") && !batch.raw.contains("olga's"),
        "{}",
        batch.raw
    );
    let batch = send(
        &server,
        "POST",
        "/api/batch",
        json!({"requests": [{"method": "PATCH", "url": "staff/e1", "body": {"salary": 5}}]}),
        &bob,
    )
    .await;
    assert_eq!(batch.status, 403, "{}", batch.raw);

    // live: bob's events never carry the field, hank's do.
    let open = |token: &str| {
        reqwest::Client::new()
            .get(server.url("/api/staff"))
            .header("x-auth-token", token.to_owned())
    };
    let mut bob_live = Sse::open(open(&bob)).await;
    let (name, added) = bob_live.next().await;
    assert_eq!(name, "added");
    assert!(
        added["fields"].get("salary").is_none() && added["fields"].get("notes").is_none(),
        "{added}"
    );
    assert_eq!(bob_live.next().await.0, "ready");
    let mut hank_live = Sse::open(open(&hank)).await;
    assert_eq!(hank_live.next().await.1["fields"]["salary"], 200);
    assert_eq!(hank_live.next().await.0, "ready");
    let change = send(
        &server,
        "PATCH",
        "/api/staff/e1",
        json!({"salary": 300, "name": "Eve D"}),
        &hank,
    )
    .await;
    assert_eq!(change.status, 200, "{}", change.raw);
    let (name, changed) = bob_live.next().await;
    assert_eq!(name, "changed");
    assert_eq!(changed["fields"]["name"], "Eve D");
    assert!(changed["fields"].get("salary").is_none(), "{changed}");
    assert_eq!(hank_live.next().await.1["fields"]["salary"], 300);

    // auto API: publications hide it, writes to it are 403.
    let (bob_auto, _) = server.auto_login("bob", "bob-password").await;
    let (hank_auto, _) = server.auto_login("hank", "hank-password").await;
    let published = auto(&server, "GET", "/publications/staff", None, &bob_auto).await;
    assert_eq!(published.status, 200, "{}", published.raw);
    assert_eq!(published.body["staff"][0]["name"], "Eve D");
    assert!(
        !published.raw.contains("salary") && !published.raw.contains("olga's"),
        "{}",
        published.raw
    );
    let published = auto(&server, "GET", "/publications/staff", None, &hank_auto).await;
    assert_eq!(published.body["staff"][0]["salary"], 300);
    let insert = auto(
        &server,
        "POST",
        "/staff",
        Some(json!({"name": "Z", "salary": 1})),
        &bob_auto,
    )
    .await;
    assert_eq!(insert.status, 403, "{}", insert.raw);
    let update = auto(
        &server,
        "PATCH",
        "/staff/e1",
        Some(json!({"salary": 1})),
        &bob_auto,
    )
    .await;
    assert_eq!(update.status, 403, "{}", update.raw);
    let update = auto(
        &server,
        "PATCH",
        "/staff/e1",
        Some(json!({"name": "Eve E"})),
        &bob_auto,
    )
    .await;
    assert_eq!(update.status, 200, "{}", update.raw);
    assert_eq!(
        get(&server, "/api/staff/e1", &hank).await.body["data"]["salary"],
        300
    );
}

#[test]
fn field_rules_are_checked_with_the_config() {
    let stderr = Workspace::new().check_refuses("[[api]]\n[[api.collection]]\nname = \"staff\"\nfield_rules = { salary = \"role:\" }\n[auto]\n[auto.field_rules.users]\nx = \"anyone\"\n");
    assert!(stderr.contains("field_rules.salary"), "{stderr}");
    assert!(stderr.contains("users"), "{stderr}");
}
