//! Several API objects side by side: versions with different options, merged routers, layers.

use portico_routes::{Api, CollectionOptions, Context, Endpoints, RouteOptions};
use serde_json::json;

use super::common::{call, call_json, memory, opts, user};

#[tokio::test]
async fn v1_and_v2_with_different_options_and_the_same_path() {
    let platform = memory().await;
    user(&platform, "ann", "pw-123456", &[]).await;
    let mut v1 = Api::new(
        {
            let mut o = opts();
            o.api_path = "my-api/".into();
            o.version = Some("v1".into());
            o.use_default_auth = true;
            o.pretty_json = true;
            o
        },
        platform.clone(),
    )
    .unwrap();
    let mut v2 = Api::new(
        {
            let mut o = opts();
            o.api_path = "my-api/".into();
            o.version = Some("v2".into());
            o.enable_cors = false;
            o
        },
        platform.clone(),
    )
    .unwrap();
    v1.add_route(
        "articles/:id",
        RouteOptions::new().auth_required(true),
        Endpoints::new().get(|ctx: Context| async move {
            json!({"v": 1, "id": ctx.url_param("id"), "user": ctx.user_id})
        }),
    )
    .unwrap();
    v2.add_route(
        "articles/:id",
        RouteOptions::default(),
        Endpoints::new()
            .get(|ctx: Context| async move { json!({"v": 2, "id": ctx.url_param("id")}) }),
    )
    .unwrap();
    v2.add_collection(
        platform.collection("articles"),
        CollectionOptions::new().path("docs"),
    )
    .unwrap();
    let app = axum::Router::new().merge(v1.router()).merge(v2.router());

    assert_eq!(
        call(&app, "GET", "/my-api/v1/articles/7", None)
            .await
            .status,
        401
    );
    let login = call_json(
        &app,
        "POST",
        "/my-api/v1/login",
        None,
        &json!({"username": "ann", "password": "pw-123456"}),
    )
    .await;
    assert!(login.text.contains("\n  "), "v1 is pretty");
    let token = login.json()["data"]["authToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let one = call(&app, "GET", "/my-api/v1/articles/7", Some(&token)).await;
    assert_eq!(one.json()["v"], 1);
    assert_eq!(one.header("access-control-allow-origin"), Some("*"));

    let two = call(&app, "GET", "/my-api/v2/articles/7", None).await;
    assert_eq!(two.text, r#"{"v":2,"id":"7"}"#);
    assert!(
        two.header("access-control-allow-origin").is_none(),
        "v2 has CORS off"
    );
    assert_eq!(
        call(&app, "POST", "/my-api/v2/login", None).await.status,
        404,
        "no default auth on v2"
    );
    assert_eq!(call(&app, "GET", "/my-api/v2/docs", None).await.status, 200);
    assert_eq!(call(&app, "GET", "/my-api/v1/docs", None).await.status, 404);
}

#[tokio::test]
async fn an_unversioned_and_a_versioned_api_merge() {
    let platform = memory().await;
    let mut base = Api::new(opts(), platform.clone()).unwrap();
    let mut v1 = Api::new(
        {
            let mut o = opts();
            o.version = Some("v1".into());
            o
        },
        platform,
    )
    .unwrap();
    base.add_route(
        "ping",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move { "base" }),
    )
    .unwrap();
    v1.add_route(
        "ping",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move { "v1" }),
    )
    .unwrap();
    let app = axum::Router::new()
        .merge(base.router())
        .merge(v1.router())
        .route("/health", axum::routing::get(|| async { "ok" }));
    assert_eq!(
        call(&app, "GET", "/api/ping", None).await.json(),
        json!("base")
    );
    assert_eq!(
        call(&app, "GET", "/api/v1/ping", None).await.json(),
        json!("v1")
    );
    assert_eq!(call(&app, "GET", "/health", None).await.text, "ok");
}

#[tokio::test]
async fn any_tower_layer_wraps_an_api_router() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(
        "x",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move { "x" }),
    )
    .unwrap();
    let layered = api.router().layer(tower::util::MapResponseLayer::new(
        |mut resp: axum::response::Response| {
            resp.headers_mut()
                .insert("x-layer", http::HeaderValue::from_static("on"));
            resp
        },
    ));
    let resp = call(&layered, "GET", "/api/x", None).await;
    assert_eq!(resp.header("x-layer"), Some("on"));
    // Nesting under a prefix works too.
    let nested = axum::Router::new().nest("/outer", api.router());
    assert_eq!(
        call(&nested, "GET", "/outer/api/x", None).await.json(),
        json!("x")
    );
}
