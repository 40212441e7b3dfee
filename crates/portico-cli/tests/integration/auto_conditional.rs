//! `If-Match` on the auto API's collection writes, with tags read from the routes door.

use serde_json::json;

use super::common::Workspace;

const CONFIG: &str = "[[api]]\n[[api.collection]]\nname = \"w\"\nauth_required = false\n[auto]\ncollections = [\"w\"]\n[auto.rules.w]\ninsert = \"anyone\"\nupdate = \"anyone\"\nremove = \"anyone\"\n";

#[tokio::test]
async fn auto_writes_honour_if_match_in_the_auto_error_format() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    let id = server.call("POST", "/w", Some(json!({"n": 1})), &[]).await;
    assert_eq!(id.status, 200, "{}", id.raw);
    let id = id.body.as_str().unwrap_or_default().to_owned();
    let read = server.call("GET", &format!("/api/w/{id}"), None, &[]).await;
    let tag = read.header("etag").unwrap_or_default().to_owned();
    assert!(tag.starts_with('"'), "{tag}");

    // Two clients hold the same tag: the first write wins, the second is refused.
    let first = server
        .call(
            "PATCH",
            &format!("/w/{id}"),
            Some(json!({"n": 2})),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(
        (first.status, first.body.clone()),
        (200, json!(1)),
        "{}",
        first.raw
    );
    let second = server
        .call(
            "PATCH",
            &format!("/w/{id}"),
            Some(json!({"n": 3})),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(second.status, 412, "{}", second.raw);
    assert_eq!(second.body["error"], "precondition-failed");
    assert!(second.body["reason"].is_string());
    let now = server.call("GET", &format!("/api/w/{id}"), None, &[]).await;
    assert_eq!(now.body["data"]["n"], 2);

    let stale = server
        .call("DELETE", &format!("/w/{id}"), None, &[("If-Match", &tag)])
        .await;
    assert_eq!(stale.status, 412, "{}", stale.raw);
    let bad = server
        .call(
            "DELETE",
            &format!("/w/{id}"),
            None,
            &[("If-Match", "no-quotes")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.raw);
    let current = now.header("etag").unwrap_or_default().to_owned();
    let removed = server
        .call(
            "DELETE",
            &format!("/w/{id}"),
            None,
            &[("If-Match", &current)],
        )
        .await;
    assert_eq!(
        (removed.status, removed.body.clone()),
        (200, json!(1)),
        "{}",
        removed.raw
    );
    let gone = server
        .call(
            "PATCH",
            &format!("/w/{id}"),
            Some(json!({"n": 4})),
            &[("If-Match", "*")],
        )
        .await;
    assert_eq!(gone.status, 412, "{}", gone.raw);
}
