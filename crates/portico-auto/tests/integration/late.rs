//! Methods, publications and collections defined after the router was built are reachable.

use portico_auto::AutoApi;
use portico_platform::{MethodError, MethodOptions, Query, Rules};
use serde_json::{Value, json};

use crate::common::{platform, serve};

#[tokio::test]
async fn late_definitions_are_served_and_listed() {
    let p = platform().await;
    let s = serve(AutoApi::new(p.clone()).router().unwrap()).await;

    assert_eq!(s.post_empty("/methods/late").await.status, 404);

    p.method("late", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!("here"))
    })
    .unwrap();
    let r = s.post_empty("/methods/late").await;
    assert_eq!((r.status, r.json), (200, json!("here")));
    assert_eq!(s.options("/methods/late").await.status, 200);

    p.method_with_options(
        "late-get",
        {
            let mut o = MethodOptions::default();
            o.url = Some("methods/late".into());
            o.http_method = Some(portico_platform::HttpMethod::Get);
            o
        },
        |_inv, _args| async move { Ok::<Value, MethodError>(json!("got")) },
    )
    .unwrap();
    // A path that existed with POST only now answers GET too.
    let r = s.get("/methods/late").await;
    assert_eq!((r.status, r.json), (200, json!("got")));

    let items = p.collection("items");
    items.allow(Rules::new().insert(|_u, _d| async { true }));
    items
        .insert(portico_platform::Document::from_iter([(
            "_id".into(),
            json!("i1"),
        )]))
        .await
        .unwrap();
    p.publish("items", |sub, _args| async move {
        Ok(vec![
            sub.platform().collection("items").cursor(Query::default()),
        ])
    })
    .unwrap();
    let r = s.get("/publications/items").await;
    assert_eq!((r.status, r.json), (200, json!({"items": [{"_id": "i1"}]})));
    let r = s.post("/items", json!({"n": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let r = s.get("/publications/api-routes").await;
    let paths: Vec<&str> = r.json["api-routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    for path in [
        "/methods/late",
        "/publications/items",
        "/items",
        "/items/:_id",
    ] {
        assert!(paths.contains(&path), "{path} missing from {paths:?}");
    }
}

#[tokio::test]
async fn a_late_method_with_a_bad_url_is_skipped_not_fatal() {
    let p = platform().await;
    let s = serve(AutoApi::new(p.clone()).router().unwrap()).await;
    p.method_with_options(
        "bad",
        {
            let mut o = MethodOptions::default();
            o.url = Some("a//b".into());
            o
        },
        |_inv, _args| async move { Ok::<Value, MethodError>(Value::Null) },
    )
    .unwrap();
    p.method("good", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!(1))
    })
    .unwrap();
    assert_eq!(s.post_empty("/methods/good").await.status, 200);
    assert_eq!(s.post_empty("/a//b").await.status, 404);
}

#[tokio::test]
async fn a_late_definition_never_takes_a_route_that_is_served() {
    let p = platform().await;
    p.method("zeta", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!("zeta"))
    })
    .unwrap();
    p.collection("todos")
        .allow(Rules::new().insert(|_u, _d| async { true }));
    let s = serve(AutoApi::new(p.clone()).router().unwrap()).await;
    assert_eq!(s.post_empty("/methods/zeta").await.json, json!("zeta"));

    // Sorted by name, "alpha" would come first; it still may not take zeta's or a collection's route.
    for (name, url) in [("alpha", "methods/zeta"), ("beta", "todos")] {
        p.method_with_options(
            name,
            {
                let mut o = MethodOptions::default();
                o.url = Some(url.into());
                o
            },
            |_inv, _args| async move { Ok::<Value, MethodError>(json!("thief")) },
        )
        .unwrap();
    }
    // Something new makes the router rebuild its table.
    p.method("new", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!("new"))
    })
    .unwrap();
    assert_eq!(s.post_empty("/methods/new").await.json, json!("new"));
    assert_eq!(s.post_empty("/methods/zeta").await.json, json!("zeta"));
    let r = s.post("/todos", json!({"x": 1})).await;
    assert_eq!(r.status, 200);
    assert_ne!(r.json, json!("thief"));
}

#[tokio::test]
async fn concurrent_requests_while_methods_are_being_defined() {
    let p = platform().await;
    p.method("steady", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!("ok"))
    })
    .unwrap();
    let s = std::sync::Arc::new(serve(AutoApi::new(p.clone()).router().unwrap()).await);
    let mut calls = Vec::new();
    for i in 0..40 {
        let s = s.clone();
        calls.push(tokio::spawn(async move {
            // Unknown paths make the router look at the registries while they change.
            let miss = s.post_empty(&format!("/methods/not-yet-{i}")).await.status;
            let hit = s.post_empty("/methods/steady").await;
            (miss, hit.status, hit.json)
        }));
    }
    for i in 0..40 {
        p.method(&format!("defined-{i}"), move |_inv, _args| async move {
            Ok::<Value, MethodError>(json!(i))
        })
        .unwrap();
        tokio::task::yield_now().await;
    }
    for call in calls {
        let (miss, status, body) = call.await.unwrap();
        assert_eq!(miss, 404);
        assert_eq!((status, body), (200, json!("ok")));
    }
    for i in [0, 17, 39] {
        let r = s.post_empty(&format!("/methods/defined-{i}")).await;
        assert_eq!((r.status, r.json), (200, json!(i)));
    }
}
