//! `POST {api}batch` on the real binary: all or nothing, as the caller, within the cap.

use serde_json::{Value, json};

use super::common::{Http, Workspace, x_auth};

const CONFIG: &str = "[[api]]\nversion = \"v1\"\nuse_default_auth = true\nbatch_limit = 5\n[[api.collection]]\nname = \"items\"\nauth_required = false\n[[api.collection]]\nname = \"drafts\"\nrole_required = \"editor\"\n[[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n";

async fn items(server: &Http) -> Vec<Value> {
    let list = server.call("GET", "/api/v1/items", None, &[]).await;
    assert_eq!(list.status, 200, "{}", list.raw);
    list.body["data"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_batch_writes_everything_and_answers_each_request() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    let seed = server
        .call(
            "POST",
            "/api/v1/items",
            Some(json!({"_id": "old", "n": 1})),
            &[],
        )
        .await;
    assert_eq!(seed.status, 201, "{}", seed.raw);
    let batch = json!({"requests": [
        {"method": "POST", "url": "/api/v1/items", "body": {"_id": "new", "n": 5}},
        {"method": "PATCH", "url": "items/new", "body": {"n": 6}},
        {"method": "PUT", "url": "/api/v1/items/old", "body": {"m": 2}},
        {"method": "DELETE", "url": "/api/v1/items/new"}
    ]});
    let reply = server.call("POST", "/api/v1/batch", Some(batch), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    assert_eq!(reply.body["status"], "success");
    let data = reply.body["data"].as_array().cloned().unwrap_or_default();
    let statuses: Vec<u64> = data.iter().filter_map(|d| d["status"].as_u64()).collect();
    assert_eq!(statuses, [201, 200, 200, 200]);
    assert_eq!(data[1]["body"]["n"], 6);
    assert!(
        data[0]["body"]["createdAt"].is_string(),
        "timestamps as a single POST: {data:?}"
    );
    assert_eq!(data[2]["body"]["m"], 2);
    assert_eq!(data[2]["body"]["createdAt"], seed.body["data"]["createdAt"]);
    assert_eq!(data[3]["body"]["message"], "Item removed");
    let now = items(&server).await;
    assert_eq!(now.len(), 1);
    assert_eq!(now[0]["_id"], "old");
    assert!(now[0].get("n").is_none());
}

#[tokio::test]
async fn a_batch_whose_third_request_fails_writes_nothing() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    let seed = server
        .call(
            "POST",
            "/api/v1/items",
            Some(json!({"_id": "keep", "n": 1})),
            &[],
        )
        .await;
    assert_eq!(seed.status, 201);
    let before = items(&server).await;
    let third_fails = |third: Value| {
        json!({"requests": [
            {"method": "POST", "url": "/api/v1/items", "body": {"n": 2}},
            {"method": "PATCH", "url": "/api/v1/items/keep", "body": {"n": 3}},
            third,
            {"method": "POST", "url": "/api/v1/items", "body": {"n": 4}}
        ]})
    };
    for (third, status) in [
        // Fails in the store, inside the transaction (no such document).
        (
            json!({"method": "DELETE", "url": "/api/v1/items/missing"}),
            404,
        ),
        // Fails in the store: the id exists already.
        (
            json!({"method": "POST", "url": "/api/v1/items", "body": {"_id": "keep"}}),
            409,
        ),
        // Refused before the transaction: a body that is not data.
        (
            json!({"method": "POST", "url": "/api/v1/items", "body": {"$set": {"n": 1}}}),
            400,
        ),
        // Not this API's collection, and not a method a batch takes.
        (
            json!({"method": "POST", "url": "/api/v1/nowhere", "body": {}}),
            404,
        ),
        (json!({"method": "GET", "url": "/api/v1/items/keep"}), 405),
        // Needs a role the (anonymous) caller does not have.
        (
            json!({"method": "POST", "url": "/api/v1/drafts", "body": {}}),
            401,
        ),
    ] {
        let reply = server
            .call(
                "POST",
                "/api/v1/batch",
                Some(third_fails(third.clone())),
                &[],
            )
            .await;
        assert_eq!(reply.status, status, "{third}: {}", reply.raw);
        assert_eq!(reply.body["status"], "error", "{}", reply.raw);
        assert_eq!(reply.body["data"]["index"], 2, "{}", reply.raw);
        assert!(
            reply.body["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("batch request 2"),
            "{}",
            reply.raw
        );
        assert_eq!(
            items(&server).await,
            before,
            "{third}: nothing may be written"
        );
    }
}

#[tokio::test]
async fn a_batch_runs_as_the_caller() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("ed", "ed-password-1", &["editor"]);
    ws.add_user("ann", "ann-password-1", &[]);
    let server = ws.serve();
    let (ed, ed_id) = server.rest_login("/api/v1/", "ed", "ed-password-1").await;
    let (ann, _) = server.rest_login("/api/v1/", "ann", "ann-password-1").await;
    let batch = json!({"requests": [
        {"method": "POST", "url": "/api/v1/drafts", "body": {"t": 1}},
        {"method": "POST", "url": "/api/v1/notes", "body": {"t": 2, "ownerId": "someone-else"}}
    ]});
    let refused = server
        .call("POST", "/api/v1/batch", Some(batch.clone()), &x_auth(&ann))
        .await;
    assert_eq!(refused.status, 403, "{}", refused.raw);
    assert_eq!(refused.body["data"]["index"], 0);
    let reply = server
        .call("POST", "/api/v1/batch", Some(batch), &x_auth(&ed))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    // The owner scope stamps the caller's id, as a single POST does.
    assert_eq!(reply.body["data"][1]["body"]["ownerId"], ed_id);
    let note_id = reply.body["data"][1]["body"]["_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Another user cannot touch ed's note in a batch either.
    let theirs = json!({"requests": [
        {"method": "DELETE", "url": format!("/api/v1/notes/{note_id}")}
    ]});
    let reply = server
        .call("POST", "/api/v1/batch", Some(theirs), &x_auth(&ann))
        .await;
    assert_eq!(reply.status, 404, "{}", reply.raw);
    let mine = server
        .call(
            "GET",
            &format!("/api/v1/notes/{note_id}"),
            None,
            &x_auth(&ed),
        )
        .await;
    assert_eq!(mine.status, 200, "{}", mine.raw);
}

#[tokio::test]
async fn the_limit_and_the_shape_are_checked_first() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    let six: Vec<Value> = (0..6)
        .map(|n| json!({"method": "POST", "url": "/api/v1/items", "body": {"n": n}}))
        .collect();
    let reply = server
        .call("POST", "/api/v1/batch", Some(json!({"requests": six})), &[])
        .await;
    assert_eq!(reply.status, 413, "{}", reply.raw);
    for body in [
        json!({}),
        json!({"requests": []}),
        json!({"requests": {}}),
        json!([1]),
    ] {
        let reply = server
            .call("POST", "/api/v1/batch", Some(body.clone()), &[])
            .await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.raw);
    }
    assert!(items(&server).await.is_empty());
}

#[tokio::test]
async fn a_reader_never_sees_half_a_batch() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = std::sync::Arc::new(ws.serve());
    for id in ["a", "b"] {
        let reply = server
            .call(
                "POST",
                "/api/v1/items",
                Some(json!({"_id": id, "v": 0})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 201);
    }
    let writer = {
        let server = server.clone();
        tokio::spawn(async move {
            for v in 1..=60 {
                let batch = json!({"requests": [
                    {"method": "PATCH", "url": "/api/v1/items/a", "body": {"v": v}},
                    {"method": "PATCH", "url": "/api/v1/items/b", "body": {"v": v}}
                ]});
                let reply = server.call("POST", "/api/v1/batch", Some(batch), &[]).await;
                assert_eq!(reply.status, 200, "{}", reply.raw);
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let now = items(&server).await;
        assert_eq!(now[0]["v"], now[1]["v"], "half a batch: {now:?}");
        reads += 1;
    }
    writer.await.expect("writer");
    let now = items(&server).await;
    assert_eq!(
        (now[0]["v"].clone(), now[1]["v"].clone()),
        (json!(60), json!(60))
    );
    assert!(reads > 0);
}
