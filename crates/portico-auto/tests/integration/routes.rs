//! The `api-routes` listing, and setup errors for routes that cannot be built.

use portico_auto::{AutoApi, AutoConfig, Error};
use portico_platform::{MethodError, MethodOptions, PublicationOptions, Query};
use serde_json::{Value, json};

use crate::common::{platform, serve};

#[tokio::test]
async fn listing_has_the_1x_shape() {
    let p = platform().await;
    p.method("add", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!(0))
    })
    .unwrap();
    p.publish_with_options(
        "list-todos",
        {
            let mut o = PublicationOptions::default();
            o.url = Some("lists/:0/todos".into());
            o
        },
        |_sub, _args| async move { Ok(vec![]) },
    )
    .unwrap();
    p.collection("todos");
    let api = AutoApi::new(p.clone()).configure(AutoConfig::default());
    let s = serve(api.router().unwrap()).await;
    let r = s.get("/publications/api-routes").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json,
        json!({"api-routes": [
            {"_id": "/methods/add", "methods": ["options", "post"], "path": "/methods/add"},
            {"_id": "/lists/:0/todos", "methods": ["get"], "path": "/lists/:0/todos"},
            {"_id": "/publications/api-routes", "methods": ["get"], "path": "/publications/api-routes"},
            {"_id": "/todos", "methods": ["options", "post"], "path": "/todos"},
            {"_id": "/todos/:_id", "methods": ["options", "patch", "delete"], "path": "/todos/:_id"},
        ]})
    );
    // The same listing is available without HTTP (for tools).
    assert_eq!(api.route_listing().unwrap(), r.json);
}

#[tokio::test]
async fn a_host_publication_named_api_routes_wins() {
    let p = platform().await;
    p.publish("api-routes", |sub, _args| async move {
        Ok(vec![
            sub.platform().collection("mine").cursor(Query::default()),
        ])
    })
    .unwrap();
    let s = serve(AutoApi::new(p).router().unwrap()).await;
    let r = s.get("/publications/api-routes").await;
    assert_eq!(r.json, json!({"mine": []}));
}

#[tokio::test]
async fn bad_options_and_clashing_routes_are_setup_errors() {
    let p = platform().await;
    p.method_with_options(
        "gap",
        {
            let mut o = MethodOptions::default();
            o.url = Some("x/:1".into());
            o
        },
        |_inv, _args| async move { Ok::<Value, MethodError>(Value::Null) },
    )
    .unwrap();
    let err = AutoApi::new(p).router().unwrap_err();
    assert!(matches!(err, Error::InvalidUrl { .. }), "{err}");

    let p = platform().await;
    p.collection("todos");
    p.method_with_options(
        "shadow",
        {
            let mut o = MethodOptions::default();
            o.url = Some("todos".into());
            o
        },
        |_inv, _args| async move { Ok::<Value, MethodError>(Value::Null) },
    )
    .unwrap();
    let err = AutoApi::new(p.clone()).router().unwrap_err();
    assert!(matches!(err, Error::DuplicateRoute { .. }), "{err}");
    assert!(err.to_string().contains("/todos"), "{err}");
    // Without endpoints for the collection there is no clash.
    let ok = AutoApi::new(p)
        .configure({
            let mut o = AutoConfig::default();
            o.collections = Some(vec![]);
            o
        })
        .router();
    assert!(ok.is_ok());
}

#[tokio::test]
async fn mounted_inside_a_host_app() {
    let p = platform().await;
    p.method("add", |_inv, args| async move {
        Ok::<Value, MethodError>(json!(portico_platform::arg::<i64>(&args, 0)? + 1))
    })
    .unwrap();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest("/api", AutoApi::new(p).router().unwrap());
    let s = serve(app).await;
    assert_eq!(s.get("/health").await.text, "ok");
    let r = s.post("/api/methods/add", json!([41])).await;
    assert_eq!((r.status, r.json), (200, json!(42)));
    let r = s.post_empty("/api/methods/nope").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json["error"], "not-found");
}

#[tokio::test]
async fn routes_are_described_as_data_each_path_and_method_once() {
    use portico_auto::{Access, LoginOptions};
    let p = platform().await;
    p.method("add", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!(0))
    })
    .unwrap();
    p.collection("widgets");
    let api = AutoApi::new(p).with_login(LoginOptions::default());
    let docs = api.routes().unwrap();
    let find = |method: &str, path: &str| {
        docs.iter()
            .find(|d| d.method.as_str() == method && d.path == path)
            .unwrap_or_else(|| panic!("{method} {path} in {docs:#?}"))
    };
    assert_eq!(find("POST", "/methods/add").access, Access::OptionalUser);
    assert!(find("POST", "/methods/add").request_body.is_some());
    let patch = find("PATCH", "/widgets/:_id");
    assert_eq!(patch.rules, ["update rules: nobody (no allow rule)"]);
    assert_eq!(find("POST", "/users/login").access, Access::Public);
    assert_eq!(
        find("GET", "/publications/api-routes").door,
        portico_edge::Door::Auto
    );
    // Each (path, method) once, in the description and in the listing made from it.
    let mut seen = std::collections::HashSet::new();
    for d in &docs {
        assert!(seen.insert((d.path.clone(), d.method.clone())), "{d:?}");
    }
    let listing = api.route_listing().unwrap();
    let widgets = listing["api-routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "/widgets/:_id")
        .unwrap();
    assert_eq!(widgets["methods"], json!(["options", "patch", "delete"]));
}

#[tokio::test]
async fn an_extractor_made_for_another_door_is_a_setup_error() {
    let p = platform().await;
    p.method_with_options(
        "foreign",
        {
            let mut o = MethodOptions::default();
            o.args_extractor = Some(portico_platform::ArgsExtractor::new(7u8));
            o
        },
        |_inv, _args| async move { Ok::<Value, MethodError>(Value::Null) },
    )
    .unwrap();
    let err = AutoApi::new(p).router().unwrap_err();
    assert!(matches!(err, Error::ForeignArgsExtractor { .. }), "{err}");
}
