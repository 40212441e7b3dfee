//! Conditional requests on generated collections: ETag, If-None-Match, If-Match.

use axum::body::Body;
use portico_routes::{Api, CollectionOptions};
use serde_json::json;

use super::common::{call, call_json, memory, opts, req, send};

async fn setup() -> (axum::Router, String) {
    let platform = memory().await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(platform.collection("articles"), CollectionOptions::new())
        .unwrap();
    api.add_collection(platform.collection("users"), CollectionOptions::new())
        .unwrap();
    let r = api.router();
    let created = call_json(&r, "POST", "/api/articles", None, &json!({"title": "a"})).await;
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    (r, id)
}

fn with_header(
    method: &str,
    uri: &str,
    name: &str,
    value: &str,
    body: Option<serde_json::Value>,
) -> http::Request<Body> {
    let b = req(method, uri, None).header(name, value);
    match body {
        Some(v) => b
            .header("content-type", "application/json")
            .body(Body::from(v.to_string()))
            .unwrap(),
        None => b.body(Body::empty()).unwrap(),
    }
}

#[tokio::test]
async fn reads_send_etags_and_answer_304_when_current() {
    let (r, id) = setup().await;
    let uri = format!("/api/articles/{id}");
    let first = call(&r, "GET", &uri, None).await;
    let tag = first.header("etag").unwrap().to_owned();
    assert!(tag.starts_with('"') && tag.len() == 34, "{tag}");
    let again = send(&r, with_header("GET", &uri, "if-none-match", &tag, None)).await;
    assert_eq!(again.status, 304);
    assert!(again.text.is_empty());
    let other = send(
        &r,
        with_header("GET", &uri, "if-none-match", "\"nope\"", None),
    )
    .await;
    assert_eq!(other.status, 200);
    // The list has a weak tag of its own.
    let list = call(&r, "GET", "/api/articles", None).await;
    let weak = list.header("etag").unwrap().to_owned();
    assert!(weak.starts_with("W/\""));
    let cached = send(
        &r,
        with_header("GET", "/api/articles", "if-none-match", &weak, None),
    )
    .await;
    assert_eq!(cached.status, 304);
    call_json(&r, "POST", "/api/articles", None, &json!({"title": "b"})).await;
    let changed = send(
        &r,
        with_header("GET", "/api/articles", "if-none-match", &weak, None),
    )
    .await;
    assert_eq!(changed.status, 200);
}

#[tokio::test]
async fn writes_with_a_stale_tag_are_412_and_change_nothing() {
    let (r, id) = setup().await;
    let uri = format!("/api/articles/{id}");
    let tag = call(&r, "GET", &uri, None)
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    let ok = send(
        &r,
        with_header("PATCH", &uri, "if-match", &tag, Some(json!({"title": "b"}))),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let new_tag = ok.header("etag").unwrap().to_owned();
    assert_ne!(new_tag, tag);
    for (method, body) in [
        ("PATCH", Some(json!({"title": "c"}))),
        ("PUT", Some(json!({"title": "c"}))),
        ("DELETE", None),
    ] {
        let stale = send(&r, with_header(method, &uri, "if-match", &tag, body)).await;
        assert_eq!(stale.status, 412, "{method}: {}", stale.text);
        assert_eq!(stale.json()["status"], "error");
    }
    assert_eq!(
        call(&r, "GET", &uri, None).await.json()["data"]["title"],
        "b"
    );
    // A missing document is still 404, a star needs only existence.
    let gone = send(
        &r,
        with_header("DELETE", "/api/articles/none", "if-match", &tag, None),
    )
    .await;
    assert_eq!(gone.status, 404);
    let star = send(&r, with_header("DELETE", &uri, "if-match", "*", None)).await;
    assert_eq!(star.status, 200);
}

#[tokio::test]
async fn of_two_writers_with_one_tag_exactly_one_wins() {
    let (r, id) = setup().await;
    let uri = format!("/api/articles/{id}");
    let tag = call(&r, "GET", &uri, None)
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    let tasks: Vec<_> = (0..2)
        .map(|n| {
            let r = r.clone();
            let uri = uri.clone();
            let tag = tag.clone();
            tokio::spawn(async move {
                send(
                    &r,
                    with_header("PATCH", &uri, "if-match", &tag, Some(json!({"writer": n}))),
                )
                .await
                .status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, vec![200, 412]);
}

#[tokio::test]
async fn users_have_no_tags_so_if_match_never_holds() {
    let (r, _id) = setup().await;
    let platform_user = call_json(
        &r,
        "POST",
        "/api/users",
        None,
        &json!({"username": "ann", "password": "pw"}),
    )
    .await;
    let uid = platform_user.json()["data"]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let uri = format!("/api/users/{uid}");
    assert!(call(&r, "GET", &uri, None).await.header("etag").is_none());
    let resp = send(
        &r,
        with_header("PUT", &uri, "if-match", "\"x\"", Some(json!({"a": 1}))),
    )
    .await;
    assert_eq!(resp.status, 412);
}
