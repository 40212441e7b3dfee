//! Per-collection access scopes: one user never reads or changes another's documents.

use portico_routes::{AccessScope, Api, CollectionOptions};
use serde_json::json;

use super::common::{call, call_json, memory, opts, token_for, user};

#[tokio::test]
async fn owner_scope_isolates_users() {
    let platform = memory().await;
    let ann = user(&platform, "ann", "pw-123456", &[]).await;
    let bob = user(&platform, "bob", "pw-123456", &[]).await;
    let (ta, tb) = (
        token_for(&platform, &ann).await,
        token_for(&platform, &bob).await,
    );
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        platform.collection("notes"),
        CollectionOptions::new().scope(AccessScope::owner_field("ownerId")),
    )
    .unwrap();
    let r = api.router();

    assert_eq!(call(&r, "GET", "/api/notes", None).await.status, 401);
    // Post stamps the owner, whatever the body says.
    let a = call_json(
        &r,
        "POST",
        "/api/notes",
        Some(&ta),
        &json!({"text": "ann's", "ownerId": bob}),
    )
    .await;
    assert_eq!(a.status, 201);
    assert_eq!(a.json()["data"]["ownerId"], json!(ann));
    let a_id = a.json()["data"]["_id"].as_str().unwrap().to_owned();
    call_json(
        &r,
        "POST",
        "/api/notes",
        Some(&tb),
        &json!({"text": "bob's"}),
    )
    .await;

    let mine = call(&r, "GET", "/api/notes", Some(&ta)).await;
    assert_eq!(mine.json()["data"].as_array().unwrap().len(), 1);
    assert_eq!(mine.header("x-total-count"), Some("1"));
    // A where cannot widen the scope.
    let widened = call(
        &r,
        "GET",
        &format!("/api/notes?where=%7B%22ownerId%22%3A%22{bob}%22%7D"),
        Some(&ta),
    )
    .await;
    assert_eq!(widened.json()["data"], json!([]));

    let item = format!("/api/notes/{a_id}");
    assert_eq!(call(&r, "GET", &item, Some(&ta)).await.status, 200);
    for (method, body) in [
        ("GET", None),
        ("PUT", Some(json!({"text": "x"}))),
        ("PATCH", Some(json!({"text": "x"}))),
        ("DELETE", None),
    ] {
        let resp = match body {
            Some(b) => call_json(&r, method, &item, Some(&tb), &b).await,
            None => call(&r, method, &item, Some(&tb)).await,
        };
        assert_eq!(resp.status, 404, "bob {method}");
    }
    // The owner cannot give a document away.
    let give = call_json(&r, "PATCH", &item, Some(&ta), &json!({"ownerId": bob})).await;
    assert_eq!(give.status, 400);
    let put = call_json(
        &r,
        "PUT",
        &item,
        Some(&ta),
        &json!({"text": "new", "ownerId": bob}),
    )
    .await;
    assert_eq!(
        put.json()["data"],
        json!({"_id": a_id, "text": "new", "ownerId": ann})
    );
    assert_eq!(call(&r, "DELETE", &item, Some(&ta)).await.status, 200);
}

#[tokio::test]
async fn custom_scope_from_the_context() {
    let platform = memory().await;
    let docs = platform.collection("docs");
    for (t, public) in [("a", true), ("b", false)] {
        let serde_json::Value::Object(d) = json!({"t": t, "public": public}) else {
            unreachable!()
        };
        docs.insert(d).await.unwrap();
    }
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        docs,
        CollectionOptions::new().scope(AccessScope::new(|ctx| {
            if ctx.header("x-staff").is_some() {
                json!({})
            } else {
                json!({"public": true})
            }
        })),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(
        call(&r, "GET", "/api/docs", None).await.json()["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let staff = super::common::send(
        &r,
        super::common::req("GET", "/api/docs", None)
            .header("x-staff", "1")
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(staff.json()["data"].as_array().unwrap().len(), 2);
}
