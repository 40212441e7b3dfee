//! Full-text search in the `portico` binary, on SQLite (FTS5) and PostgreSQL (`tsvector`):
//! `?search=` ranks matches, combines with `where`, the owner scope and paging, and the index
//! follows every write: post, patch, put, delete, a batch, and `portico import` beside the
//! running server.

use serde_json::{Value, json};

use super::common::{Http, Workspace, x_auth};

const CONFIG: &str = r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
batch_limit = 5
[[api.collection]]
name = "notes"
owner_field = "ownerId"
search = ["title", "body"]
field_rules = { title = "role:staff" }
[[api.collection]]
name = "posts"
auth_required = true
search = ["title", "body", "tags"]
"#;

/// The ids of a search's matches in order, and the total header.
async fn found(server: &Http, query: &str, token: &str) -> (Vec<String>, String) {
    let r = server
        .call("GET", &format!("/api/posts?{query}"), None, &x_auth(token))
        .await;
    assert_eq!(r.status, 200, "{query}: {}", r.raw);
    let ids = r.body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|d| d["_id"].as_str().map(str::to_owned))
        .collect();
    (
        ids,
        r.header("x-total-count").unwrap_or_default().to_owned(),
    )
}

async fn post(server: &Http, path: &str, body: Value, token: &str) {
    let r = server.call("POST", path, Some(body), &x_auth(token)).await;
    assert_eq!(r.status, 201, "{}", r.raw);
}

async fn search_follows_every_write(ws: Workspace) {
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &["staff"]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;

    for (id, title, body, tags, n) in [
        ("p1", "Apple pie", "A pie with apples", json!(["baking"]), 1),
        (
            "p2",
            "Apple apple APPLE",
            "pie, apple pie and more apple",
            json!(["Baking", "fruit"]),
            2,
        ),
        ("p3", "Cherry pie", "no fruit named here", json!([]), 3),
        ("p4", "Apples", "pies", json!({"nested": "apple pie"}), 4),
    ] {
        let doc = json!({"_id": id, "title": title, "body": body, "tags": tags, "n": n});
        post(&server, "/api/posts", doc, &ann).await;
    }
    // Every word required, whole words, any case; the best match first; strings inside
    // arrays and objects count.
    let (ids, total) = found(&server, "search=apple%20PIE", &bob).await;
    assert_eq!(ids[0], "p2", "the most occurrences first: {ids:?}");
    let mut rest = ids[1..].to_vec();
    rest.sort();
    assert_eq!(rest, ["p1", "p4"]);
    assert_eq!(total, "3");
    let (ids, _) = found(&server, "search=baking", &bob).await;
    assert_eq!(ids.len(), 2);
    // Combined with where and paging; the total counts every match.
    let (ids, total) = found(
        &server,
        "search=pie&where=%7B%22n%22%3A%7B%22%24gte%22%3A2%7D%7D&limit=1&skip=1",
        &bob,
    )
    .await;
    assert_eq!((ids.len(), total.as_str()), (1, "3"));
    let (ids, total) = found(&server, "search=pie&limit=2", &bob).await;
    assert_eq!((ids.len(), total.as_str()), (2, "4"));
    // Query syntax of the engines is only text here.
    for text in [
        "%22apple",
        "apple%20OR%20cherry",
        "title%3Acherry",
        "*",
        "NOT%20pie",
    ] {
        let r = server
            .call(
                "GET",
                &format!("/api/posts?search={text}"),
                None,
                &x_auth(&bob),
            )
            .await;
        assert_eq!(r.status, 200, "{text}: {}", r.raw);
    }
    let (ids, _) = found(&server, "search=apple%20OR%20cherry", &bob).await;
    assert!(
        ids.is_empty(),
        "OR is a word to find, not an operator: {ids:?}"
    );

    // Writes: patch, put, delete, a batch.
    let r = server
        .call(
            "PATCH",
            "/api/posts/p3",
            Some(json!({"body": "an apple pie after all"})),
            &x_auth(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = server
        .call(
            "PUT",
            "/api/posts/p1",
            Some(json!({"title": "Plum tart", "body": "plums"})),
            &x_auth(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = server
        .call("DELETE", "/api/posts/p2", None, &x_auth(&ann))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let (mut ids, _) = found(&server, "search=apple%20pie", &bob).await;
    ids.sort();
    assert_eq!(ids, ["p3", "p4"]);
    let (ids, _) = found(&server, "search=plum", &bob).await;
    assert_eq!(ids, ["p1"]);
    let batch = json!({"requests": [
        {"method": "POST", "url": "/api/posts", "body": {"_id": "b1", "title": "kiwi"}},
        {"method": "PATCH", "url": "/api/posts/p4", "body": {"title": "kiwi too"}},
        {"method": "DELETE", "url": "/api/posts/p1"}
    ]});
    let r = server
        .call("POST", "/api/batch", Some(batch), &x_auth(&ann))
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let (mut ids, _) = found(&server, "search=kiwi", &bob).await;
    ids.sort();
    assert_eq!(ids, ["b1", "p4"]);
    assert!(found(&server, "search=plum", &bob).await.0.is_empty());

    // An import beside the running server.
    let file = ws.path("posts.json");
    std::fs::write(
        &file,
        r#"[{"_id": "i1", "title": "Imported mango"}, {"_id": "i2", "body": "mango lassi"}]"#,
    )
    .expect("fixture");
    let out = ws.import("posts", "posts.json");
    assert!(out.status.success(), "{}", super::common::text(&out.stderr));
    let (mut ids, _) = found(&server, "search=mango", &bob).await;
    ids.sort();
    assert_eq!(ids, ["i1", "i2"]);

    // Under the owner scope; a search field hidden from the caller cannot be searched.
    post(
        &server,
        "/api/notes",
        json!({"title": "secret plan", "body": "mine"}),
        &ann,
    )
    .await;
    let r = server
        .call("GET", "/api/notes?search=mine", None, &x_auth(&ann))
        .await;
    assert_eq!(
        r.body["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.raw
    );
    let r = server
        .call("GET", "/api/notes?search=mine", None, &x_auth(&bob))
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert!(r.raw.contains("title"), "{}", r.raw);

    // Mistakes: sort with search, groups with search, a live list.
    for path in [
        "/api/posts?search=kiwi&sort=n",
        "/api/posts?search=kiwi&group=n&count=true",
    ] {
        let r = server.call("GET", path, None, &x_auth(&ann)).await;
        assert_eq!(r.status, 400, "{path}: {}", r.raw);
    }
    let r = server
        .call(
            "GET",
            "/api/posts?search=kiwi",
            None,
            &[
                ("X-Auth-Token", ann.as_str()),
                ("Accept", "text/event-stream"),
            ],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_on_sqlite() {
    search_follows_every_write(Workspace::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_on_postgres() {
    search_follows_every_write(Workspace::on_postgres()).await;
}

#[test]
fn search_fields_are_checked_with_the_config() {
    let stderr = Workspace::new().check_refuses("[[api]]\n[[api.collection]]\nname = \"posts\"\nsearch = [\"a.b\"]\n[[api.collection]]\nname = \"users\"\nsearch = [\"profile\"]\n");
    assert!(stderr.contains("\"a.b\" cannot be searched"), "{stderr}");
    assert!(stderr.contains("cannot be searched"), "{stderr}");
}
