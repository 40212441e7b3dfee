//! Generated collection endpoints: statuses and bodies, options, body rules, hooks.

use axum::body::Body;
use portico_routes::{
    AfterHook, Api, BeforeHook, CollectionOptions, Context, Endpoint, Error, Op, Reply,
    RouteOptions,
};
use serde_json::{Value, json};

use super::common::{call, call_json, memory, opts, req, send, token_for, user};

async fn articles(options: CollectionOptions) -> (axum::Router, portico_platform::Platform) {
    let platform = memory().await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(platform.collection("articles"), options)
        .unwrap();
    (api.router(), platform)
}

fn not_found() -> Value {
    json!({"status": "fail", "message": "Item not found"})
}

#[tokio::test]
async fn the_six_endpoints_with_the_spec_statuses_and_bodies() {
    let (r, _p) = articles(CollectionOptions::new()).await;
    let empty = call(&r, "GET", "/api/articles", None).await;
    assert_eq!(
        (empty.status, empty.json()),
        (200, json!({"status": "success", "data": []}))
    );

    let created = call_json(
        &r,
        "POST",
        "/api/articles",
        None,
        &json!({"title": "One", "tags": ["a"], "n": 1}),
    )
    .await;
    assert_eq!(created.status, 201);
    let entity = created.json()["data"].clone();
    let id = entity["_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 17);
    assert_eq!(
        entity,
        json!({"_id": id, "title": "One", "tags": ["a"], "n": 1})
    );

    let got = call(&r, "GET", &format!("/api/articles/{id}"), None).await;
    assert_eq!(
        (got.status, got.json()),
        (200, json!({"status": "success", "data": entity}))
    );

    let all = call(&r, "GET", "/api/articles", None).await;
    assert_eq!(all.json()["data"], json!([entity]));

    let put = call_json(
        &r,
        "PUT",
        &format!("/api/articles/{id}"),
        None,
        &json!({"title": "Replaced"}),
    )
    .await;
    assert_eq!(put.status, 200);
    assert_eq!(
        put.json()["data"],
        json!({"_id": id, "title": "Replaced"}),
        "omitted fields are removed"
    );

    let patch = call_json(
        &r,
        "PATCH",
        &format!("/api/articles/{id}"),
        None,
        &json!({"n": 2}),
    )
    .await;
    assert_eq!(patch.status, 200);
    assert_eq!(
        patch.json()["data"],
        json!({"_id": id, "title": "Replaced", "n": 2}),
        "only given fields change"
    );

    let del = call(&r, "DELETE", &format!("/api/articles/{id}"), None).await;
    assert_eq!(del.status, 200);
    assert_eq!(del.json()["status"], "success");
    assert!(del.json()["data"]["message"].is_string());
    assert_eq!(
        call(&r, "GET", &format!("/api/articles/{id}"), None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn a_missing_id_is_404_item_not_found() {
    let (r, _p) = articles(CollectionOptions::new()).await;
    for (method, body) in [
        ("GET", None),
        ("PUT", Some(json!({"a": 1}))),
        ("PATCH", Some(json!({"a": 1}))),
        ("DELETE", None),
    ] {
        let resp = match body {
            Some(b) => call_json(&r, method, "/api/articles/nope", None, &b).await,
            None => call(&r, method, "/api/articles/nope", None).await,
        };
        assert_eq!((resp.status, resp.json()), (404, not_found()), "{method}");
    }
}

#[tokio::test]
async fn form_encoded_post_copies_fields() {
    let (r, _p) = articles(CollectionOptions::new()).await;
    let resp = send(
        &r,
        req("POST", "/api/articles", None)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from("title=Form&meta[lang]=en"))
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 201);
    assert_eq!(resp.json()["data"]["meta"], json!({"lang": "en"}));
}

#[tokio::test]
async fn path_option_and_route_options() {
    let platform = memory().await;
    let editor = user(&platform, "ed", "pw-123456", &["editor"]).await;
    let reader = user(&platform, "rd", "pw-123456", &[]).await;
    let (te, tr) = (
        token_for(&platform, &editor).await,
        token_for(&platform, &reader).await,
    );
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        platform.collection("articles"),
        CollectionOptions::new()
            .path("/posts/")
            .route_options(RouteOptions::new().role_required("editor")),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(
        call(&r, "GET", "/api/articles", Some(&te)).await.status,
        404
    );
    assert_eq!(call(&r, "GET", "/api/posts", None).await.status, 401);
    assert_eq!(call(&r, "GET", "/api/posts", Some(&tr)).await.status, 403);
    assert_eq!(call(&r, "GET", "/api/posts", Some(&te)).await.status, 200);
    assert_eq!(call(&r, "GET", "/api/posts/x", None).await.status, 401);
}

#[tokio::test]
async fn excluded_endpoints_and_false_are_not_generated() {
    let (r, _p) = articles(
        CollectionOptions::new()
            .excluded_endpoints(["delete", "put"])
            .unwrap()
            .endpoint(Op::Patch, false),
    )
    .await;
    let created = call_json(&r, "POST", "/api/articles", None, &json!({"a": 1})).await;
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    let item = format!("/api/articles/{id}");
    assert_eq!(call(&r, "GET", &item, None).await.status, 200);
    for m in ["DELETE", "PUT", "PATCH"] {
        let resp = call_json(&r, m, &item, None, &json!({"a": 2})).await;
        assert_eq!(resp.status, 405, "{m}");
        assert!(!resp.header("allow").unwrap().contains(m));
    }
    // With every item endpoint off, the item route does not exist.
    let (r2, _p) = articles(
        CollectionOptions::new()
            .excluded_endpoints(["get", "put", "patch", "delete"])
            .unwrap(),
    )
    .await;
    assert_eq!(call(&r2, "GET", "/api/articles/x", None).await.status, 404);
    assert_eq!(call(&r2, "GET", "/api/articles", None).await.status, 200);
}

#[tokio::test]
async fn endpoint_objects_set_options_or_replace_the_action() {
    let platform = memory().await;
    let admin = user(&platform, "adm", "pw-123456", &["admin"]).await;
    let ta = token_for(&platform, &admin).await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        platform.collection("articles"),
        CollectionOptions::new()
            .endpoint(Op::Post, Endpoint::options().role_required("admin"))
            .endpoint(
                Op::GetAll,
                Endpoint::new(|ctx: Context| async move {
                    json!({"status": "success", "data": "custom list", "user": ctx.user_id})
                }),
            )
            .endpoint(Op::Delete, Endpoint::options().auth_required(true)),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(
        call_json(&r, "POST", "/api/articles", None, &json!({"a": 1}))
            .await
            .status,
        401
    );
    let created = call_json(&r, "POST", "/api/articles", Some(&ta), &json!({"a": 1})).await;
    assert_eq!(created.status, 201);
    assert_eq!(
        call(&r, "GET", "/api/articles", None).await.json()["data"],
        "custom list"
    );
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        call(&r, "DELETE", &format!("/api/articles/{id}"), None)
            .await
            .status,
        401
    );
    assert_eq!(
        call(&r, "DELETE", &format!("/api/articles/{id}"), Some(&ta))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn client_bodies_are_data_never_modifiers() {
    let (r, _p) = articles(CollectionOptions::new()).await;
    let created = call_json(
        &r,
        "POST",
        "/api/articles",
        None,
        &json!({"a": {"b": 1}, "c": 1}),
    )
    .await;
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    let item = format!("/api/articles/{id}");
    for (method, body) in [
        ("POST", json!({"$set": {"a": 1}})),
        ("PUT", json!({"$set": {"a": 1}})),
        ("PATCH", json!({"$inc": {"c": 1}})),
        ("PATCH", json!({"a": {"$gt": 1}})),
        ("PUT", json!({"_id": "other", "a": 1})),
        ("PATCH", json!({"_id": "other"})),
        ("POST", json!({"a.b": 2})),
        ("PUT", json!({"a.b": 2})),
    ] {
        let uri = if method == "POST" {
            "/api/articles"
        } else {
            item.as_str()
        };
        let resp = call_json(&r, method, uri, None, &body).await;
        assert_eq!(resp.status, 400, "{method} {body}");
        assert_eq!(resp.json()["status"], "error");
    }
    // PATCH treats dotted keys as nested paths; repeating the same _id is fine.
    let patched = call_json(&r, "PATCH", &item, None, &json!({"a.b": 5, "_id": id})).await;
    assert_eq!(patched.status, 200);
    assert_eq!(
        patched.json()["data"],
        json!({"_id": id, "a": {"b": 5}, "c": 1})
    );
    // Non-object bodies are refused.
    assert_eq!(
        call_json(&r, "POST", "/api/articles", None, &json!([1, 2]))
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn client_chosen_ids_and_duplicates() {
    let (r, _p) = articles(CollectionOptions::new()).await;
    let a = call_json(
        &r,
        "POST",
        "/api/articles",
        None,
        &json!({"_id": "my-id", "t": 1}),
    )
    .await;
    assert_eq!(
        (a.status, a.json()["data"]["_id"].clone()),
        (201, json!("my-id"))
    );
    let dup = call_json(
        &r,
        "POST",
        "/api/articles",
        None,
        &json!({"_id": "my-id", "t": 2}),
    )
    .await;
    assert_eq!(dup.status, 409);
    assert_eq!(
        call(&r, "GET", "/api/articles/my-id", None).await.json()["data"]["t"],
        1
    );
}

#[tokio::test]
async fn before_and_after_hooks() {
    let (r, _p) = articles(
        CollectionOptions::new()
            .before(BeforeHook::new(
                |mut event: portico_routes::HookEvent| async move {
                    if let Some(body) = &mut event.body {
                        if body
                            .get("title")
                            .and_then(Value::as_str)
                            .is_some_and(str::is_empty)
                        {
                            return Err(Reply::error(422, "title must not be empty"));
                        }
                        body.insert("checked".into(), json!(true));
                    }
                    if event.op == Op::Delete {
                        return Err(Reply::error(403, "deleting is off today"));
                    }
                    Ok(event)
                },
            ))
            .after(AfterHook::new(
                |event: portico_routes::AfterEvent| async move {
                    match (event.op, event.data) {
                        (Op::Get, Value::Object(mut doc)) => {
                            doc.insert("viewedVia".into(), json!("hook"));
                            Value::Object(doc)
                        }
                        (_, data) => data,
                    }
                },
            )),
    )
    .await;
    let bad = call_json(&r, "POST", "/api/articles", None, &json!({"title": ""})).await;
    assert_eq!(
        (bad.status, bad.json()["message"].clone()),
        (422, json!("title must not be empty"))
    );
    let ok = call_json(&r, "POST", "/api/articles", None, &json!({"title": "T"})).await;
    assert_eq!(ok.json()["data"]["checked"], true);
    let id = ok.json()["data"]["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        call(&r, "GET", &format!("/api/articles/{id}"), None)
            .await
            .json()["data"]["viewedVia"],
        "hook"
    );
    assert_eq!(
        call(&r, "DELETE", &format!("/api/articles/{id}"), None)
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn collection_paths_conflict_with_routes() {
    let platform = memory().await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(platform.collection("articles"), CollectionOptions::new())
        .unwrap();
    let again = api.add_collection(platform.collection("articles"), CollectionOptions::new());
    assert!(matches!(again, Err(Error::DuplicatePath(p)) if p == "articles"));
    let route = api.add_route(
        "articles/:x",
        RouteOptions::default(),
        portico_routes::Endpoints::new().get(|_c: Context| async move { "x" }),
    );
    assert!(matches!(route, Err(Error::DuplicatePath(_))));
}

#[tokio::test]
async fn generated_routes_live_under_the_versioned_path() {
    let platform = memory().await;
    let mut api = Api::new(
        {
            let mut o = opts();
            o.api_path = "my-api".into();
            o.version = Some("v2".into());
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_collection(platform.collection("articles"), CollectionOptions::new())
        .unwrap();
    let r = api.router();
    let created = call_json(&r, "POST", "/my-api/v2/articles", None, &json!({"a": 1})).await;
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        call(&r, "GET", &format!("/my-api/v2/articles/{id}"), None)
            .await
            .status,
        200
    );
    assert_eq!(call(&r, "GET", "/api/articles", None).await.status, 404);
}

#[tokio::test]
async fn route_options_auth_required_covers_every_generated_endpoint() {
    let platform = memory().await;
    let ann = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &ann).await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        platform.collection("articles"),
        CollectionOptions::new().route_options(RouteOptions::new().auth_required(true)),
    )
    .unwrap();
    let r = api.router();
    for (method, uri) in [
        ("GET", "/api/articles"),
        ("POST", "/api/articles"),
        ("GET", "/api/articles/x"),
        ("PUT", "/api/articles/x"),
        ("PATCH", "/api/articles/x"),
        ("DELETE", "/api/articles/x"),
    ] {
        let resp = call_json(&r, method, uri, None, &json!({"a": 1})).await;
        assert_eq!(resp.status, 401, "{method} {uri}");
    }
    let created = call_json(&r, "POST", "/api/articles", Some(&token), &json!({"a": 1})).await;
    assert_eq!(created.status, 201);
    assert_eq!(
        call(&r, "GET", "/api/articles", Some(&token)).await.json()["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
