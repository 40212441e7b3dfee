//! `createdAt` and `updatedAt` on documents written through either door.

use serde_json::json;

use super::common::{Workspace, x_auth};

const CONFIG: &str = r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "posts"
[[api.collection]]
name = "raw"
timestamps = false
[auto]
auth_failure_delay_ms = 0
collections = ["posts", "bare"]
no_timestamps = ["bare"]
[auto.rules.posts]
insert = "authenticated"
update = "authenticated"
[auto.rules.bare]
insert = "authenticated"
[[auto.publication]]
name = "newest"
collection = "posts"
sort = { createdAt = -1 }
"#;

#[tokio::test]
async fn both_doors_stamp_created_and_updated_at_unless_turned_off() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve();
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let auth = format!("Bearer {token}");
    let bearer = [("Authorization", auth.as_str())];

    let created = server
        .call(
            "POST",
            "/api/posts",
            Some(json!({"n": 1, "createdAt": "forged"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    let first = created.body["data"].clone();
    let stamp = first["createdAt"].as_str().unwrap_or_default().to_owned();
    assert!(stamp.ends_with('Z') && stamp != "forged", "{first}");
    assert_eq!(first["updatedAt"], json!(stamp));
    let id = first["_id"].as_str().unwrap_or_default();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let patched = server
        .call(
            "PATCH",
            &format!("/api/posts/{id}"),
            Some(json!({"n": 2})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(
        patched.body["data"]["createdAt"],
        json!(stamp),
        "{}",
        patched.raw
    );
    assert!(
        patched.body["data"]["updatedAt"].as_str() > Some(stamp.as_str()),
        "{}",
        patched.raw
    );

    std::thread::sleep(std::time::Duration::from_millis(5));
    let auto = server
        .call("POST", "/posts", Some(json!({"n": 3})), &bearer)
        .await;
    assert_eq!(auto.status, 200, "{}", auto.raw);
    let auto_id = auto.body.as_str().unwrap_or_default().to_owned();
    let newest = server.call("GET", "/publications/newest", None, &[]).await;
    let posts = newest.body["posts"].as_array().cloned().unwrap_or_default();
    assert_eq!(posts.len(), 2, "{}", newest.raw);
    assert_eq!(
        posts[0]["_id"],
        json!(auto_id),
        "newest first: {}",
        newest.raw
    );
    assert!(posts[0]["createdAt"].is_string() && posts[0]["updatedAt"].is_string());

    let raw = server
        .call("POST", "/api/raw", Some(json!({"n": 1})), &x_auth(&token))
        .await;
    assert!(raw.body["data"].get("createdAt").is_none(), "{}", raw.raw);
    let bare = server
        .call("POST", "/bare", Some(json!({"n": 1})), &bearer)
        .await;
    assert_eq!(bare.status, 200, "{}", bare.raw);
}
