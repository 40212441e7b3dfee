//! The same flows on a real SQLite file.

use portico_platform::Platform;
use portico_routes::{AccessScope, Api, CollectionOptions, Context, Endpoints, RouteOptions};
use serde_json::json;

use super::common::{call, call_json, opts, req, send, user};

async fn sqlite_platform(dir: &tempfile::TempDir) -> Platform {
    let path = dir.path().join("portico.db");
    Platform::open(&format!("sqlite:{}", path.display()))
        .await
        .expect("sqlite platform")
}

#[tokio::test]
async fn login_collection_logout_cycle_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let platform = sqlite_platform(&dir).await;
    let ann = user(&platform, "ann", "pw-123456", &["author"]).await;
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o.version = Some("v1".into());
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_collection(
        platform.collection("posts"),
        CollectionOptions::new()
            .scope(AccessScope::owner_field("ownerId"))
            .route_options(RouteOptions::new().role_required("author")),
    )
    .unwrap();
    api.add_route(
        "whoami",
        RouteOptions::new().auth_required(true),
        Endpoints::new().get(|ctx: Context| async move { json!({"id": ctx.user_id}) }),
    )
    .unwrap();
    let r = api.router();

    let login = call_json(
        &r,
        "POST",
        "/api/v1/login",
        None,
        &json!({"email": "ann@example.com", "password": "pw-123456"}),
    )
    .await;
    assert_eq!(login.status, 200);
    let token = login.json()["data"]["authToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        call(&r, "GET", "/api/v1/whoami", Some(&token)).await.json(),
        json!({"id": ann})
    );

    let mut ids = Vec::new();
    for i in 0..5 {
        let resp = call_json(
            &r,
            "POST",
            "/api/v1/posts",
            Some(&token),
            &json!({"title": format!("p{i}"), "rank": i}),
        )
        .await;
        assert_eq!(resp.status, 201);
        ids.push(resp.json()["data"]["_id"].as_str().unwrap().to_owned());
    }
    let page = call(&r, "GET", "/api/v1/posts?sort=-rank&limit=2", Some(&token)).await;
    assert_eq!(page.header("x-total-count"), Some("5"));
    let titles: Vec<_> = page.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["title"].clone())
        .collect();
    assert_eq!(titles, vec![json!("p4"), json!("p3")]);
    let patched = call_json(
        &r,
        "PATCH",
        &format!("/api/v1/posts/{}", ids[0]),
        Some(&token),
        &json!({"meta.views": 3}),
    )
    .await;
    assert_eq!(patched.json()["data"]["meta"], json!({"views": 3}));
    assert_eq!(
        call(
            &r,
            "DELETE",
            &format!("/api/v1/posts/{}", ids[1]),
            Some(&token)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        call(
            &r,
            "GET",
            &format!("/api/v1/posts/{}", ids[1]),
            Some(&token)
        )
        .await
        .status,
        404
    );

    assert_eq!(
        call(&r, "POST", "/api/v1/logout", Some(&token))
            .await
            .status,
        200
    );
    assert_eq!(
        call(&r, "GET", "/api/v1/whoami", Some(&token)).await.status,
        401
    );

    // The data is in the file: a second platform on it sees the posts.
    drop(r);
    drop(api);
    let reopened = sqlite_platform(&dir).await;
    let count = reopened
        .collection("posts")
        .count(&portico_store::Selector::all())
        .await
        .unwrap();
    assert_eq!(count, 4);
}

/// A page of a whole collection on SQLite is sent from the stored JSON text: the reply (body,
/// total, links, entity tag) is byte for byte what decoding and encoding each document gives
/// (the memory backend's path), also for a pretty API and with `fields`.
#[tokio::test]
async fn stored_text_pages_match_decoded_pages() {
    let dir = tempfile::tempdir().unwrap();
    let on_sqlite = sqlite_platform(&dir).await;
    let in_memory = super::common::memory().await;
    let docs: Vec<_> = (0..30)
        .map(|n| {
            json!({"_id": format!("doc-{n:03}"), "name": format!("Ünï \"{n}\""),
                   "price": 1.5 + f64::from(n), "big": 12345678901234567890u64,
                   "tags": ["a", {"deep": [n, null, true]}]})
            .as_object()
            .cloned()
            .unwrap()
        })
        .collect();
    for platform in [&on_sqlite, &in_memory] {
        platform
            .collection("items")
            .insert_many(docs.clone())
            .await
            .unwrap();
    }
    for pretty in [false, true] {
        let router = |platform: &Platform| {
            let mut api = Api::new(
                {
                    let mut o = opts();
                    o.pretty_json = pretty;
                    o
                },
                platform.clone(),
            )
            .unwrap();
            api.add_collection(platform.collection("items"), CollectionOptions::new())
                .unwrap();
            api.router()
        };
        let (s, m) = (router(&on_sqlite), router(&in_memory));
        for uri in [
            "/api/items",
            "/api/items?limit=7&skip=3",
            "/api/items?limit=5&skip=28",
            "/api/items?fields=name",
            "/api/items?sort=-price&limit=4",
        ] {
            let (a, b) = (
                call(&s, "GET", uri, None).await,
                call(&m, "GET", uri, None).await,
            );
            assert_eq!(a.status, 200, "{uri}: {}", a.text);
            assert_eq!(a.text, b.text, "{uri} pretty={pretty}");
            for h in ["x-total-count", "link", "etag", "content-type"] {
                assert_eq!(a.header(h), b.header(h), "{uri} {h}");
            }
        }
        let page = call(&s, "GET", "/api/items?limit=2", None).await;
        assert_eq!(page.json()["data"][1]["_id"], "doc-001");
        assert_eq!(page.header("x-total-count"), Some("30"));
        let tag = page.header("etag").unwrap().to_owned();
        let again = send(
            &s,
            req("GET", "/api/items?limit=2", None)
                .header("if-none-match", &tag)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(again.status, 304);
    }
}
