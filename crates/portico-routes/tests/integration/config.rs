//! API configuration options: apiPath, version, prettyJson, defaultHeaders, CORS,
//! useDefaultAuth, defaultOptionsEndpoint.

use portico_routes::{Api, Context, CorsOptions, Endpoint, Endpoints, Error, Reply, RouteOptions};
use serde_json::json;

use super::common::{call, memory, opts, req, send};

fn hello() -> Endpoints {
    Endpoints::new().get(|_ctx: Context| async move { json!({"hello": "world"}) })
}

#[tokio::test]
async fn default_api_path_with_and_without_trailing_slash() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route("users", RouteOptions::default(), hello())
        .unwrap();
    assert_eq!(api.base_path(), "/api/");
    let r = api.router();
    assert_eq!(
        call(&r, "GET", "/api/users/", None).await.json(),
        json!({"hello": "world"})
    );
    assert_eq!(call(&r, "GET", "/api/users", None).await.status, 200);
    assert_eq!(call(&r, "GET", "/users", None).await.status, 404);
}

#[tokio::test]
async fn api_path_is_normalised_and_version_appended() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.api_path = "/my-api".into();
            o.version = Some("v1".into());
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("/things/", RouteOptions::default(), hello())
        .unwrap();
    assert_eq!(api.base_path(), "/my-api/v1/");
    let r = api.router();
    assert_eq!(call(&r, "GET", "/my-api/v1/things", None).await.status, 200);
    assert_eq!(call(&r, "GET", "/my-api/things", None).await.status, 404);
}

#[tokio::test]
async fn pretty_json_indents_replies() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.pretty_json = true;
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("x", RouteOptions::default(), hello())
        .unwrap();
    let resp = call(&api.router(), "GET", "/api/x", None).await;
    assert_eq!(resp.text, "{\n  \"hello\": \"world\"\n}");
    let mut plain = Api::new(opts(), memory().await).unwrap();
    plain
        .add_route("x", RouteOptions::default(), hello())
        .unwrap();
    assert_eq!(
        call(&plain.router(), "GET", "/api/x", None).await.text,
        r#"{"hello":"world"}"#
    );
}

#[tokio::test]
async fn default_headers_precedence_is_builtin_then_defaults_then_endpoint() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.default_headers = vec![
                ("Content-Type".into(), "text/plain".into()),
                ("X-Powered-By".into(), "portico".into()),
            ];
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route(
        "text",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move { "plain words" }),
    )
    .unwrap();
    api.add_route(
        "json",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move {
            Reply::new(json!({"a": 1}))
                .with_header("content-TYPE", "application/json")
                .with_header("x-powered-by", "me")
        }),
    )
    .unwrap();
    let r = api.router();
    let text = call(&r, "GET", "/api/text", None).await;
    assert_eq!(text.header("content-type"), Some("text/plain"));
    assert_eq!(text.text, "plain words", "a text/plain body is sent as is");
    assert_eq!(text.header("x-powered-by"), Some("portico"));
    let json = call(&r, "GET", "/api/json", None).await;
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert_eq!(json.header("x-powered-by"), Some("me"));
    assert_eq!(json.headers.get_all("content-type").iter().count(), 1);
    assert_eq!(json.json(), json!({"a": 1}));
}

#[tokio::test]
async fn cors_on_by_default_with_auth_headers_when_default_auth() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("x", RouteOptions::default(), hello())
        .unwrap();
    let resp = call(&api.router(), "GET", "/api/x", None).await;
    assert_eq!(resp.header("access-control-allow-origin"), Some("*"));
    let allow = resp.header("access-control-allow-headers").unwrap();
    for h in [
        "Origin",
        "X-Requested-With",
        "Content-Type",
        "Accept",
        "X-User-Id",
        "X-Auth-Token",
    ] {
        assert!(allow.contains(h), "{allow}");
    }
    let mut no_auth = Api::new(opts(), memory().await).unwrap();
    no_auth
        .add_route("x", RouteOptions::default(), hello())
        .unwrap();
    let resp = call(&no_auth.router(), "GET", "/api/x", None).await;
    assert!(
        !resp
            .header("access-control-allow-headers")
            .unwrap()
            .contains("X-Auth-Token")
    );
}

#[tokio::test]
async fn cors_off_sends_no_allow_origin() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.enable_cors = false;
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("x", RouteOptions::default(), hello())
        .unwrap();
    let r = api.router();
    let resp = call(&r, "GET", "/api/x", None).await;
    assert_eq!(resp.status, 200);
    assert!(resp.header("access-control-allow-origin").is_none());
    // No preflight either: OPTIONS is not a method of this route.
    let resp = call(&r, "OPTIONS", "/api/x", None).await;
    assert_eq!(resp.status, 405);
}

#[tokio::test]
async fn cors_allow_list_and_custom_allow_headers() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.cors = {
                let mut o = CorsOptions::default();
                o.allow_origins = Some(vec!["https://app.example".into()]);
                o.allow_headers = Some(vec!["Content-Type".into(), "X-Api-Key".into()]);
                o
            };
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("x", RouteOptions::default(), hello())
        .unwrap();
    let r = api.router();
    let ok = send(
        &r,
        req("GET", "/api/x", None)
            .header("origin", "https://app.example")
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(ok.header("vary"), Some("Origin"));
    assert_eq!(
        ok.header("access-control-allow-headers"),
        Some("Content-Type, X-Api-Key")
    );
    let other = send(
        &r,
        req("GET", "/api/x", None)
            .header("origin", "https://evil.example")
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert!(other.header("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn built_in_preflight_when_cors_is_on() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(
        "x",
        RouteOptions::default(),
        Endpoints::new()
            .get(|_c: Context| async move { "g" })
            .put(|_c: Context| async move { "p" }),
    )
    .unwrap();
    let resp = call(&api.router(), "OPTIONS", "/api/x", None).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("access-control-allow-origin"), Some("*"));
    let methods = resp.header("access-control-allow-methods").unwrap();
    assert!(
        methods.contains("PUT") && methods.contains("GET"),
        "{methods}"
    );
}

#[tokio::test]
async fn default_options_endpoint_serves_routes_without_their_own() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.default_options_endpoint = Some(Endpoint::new(|_c: Context| async move {
                Reply::new(json!({"options": "default"})).with_header("x-opt", "1")
            }));
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("a", RouteOptions::default(), hello())
        .unwrap();
    api.add_route(
        "b",
        RouteOptions::default(),
        hello().options(|_c: Context| async move { json!({"options": "own"}) }),
    )
    .unwrap();
    let r = api.router();
    let a = call(&r, "OPTIONS", "/api/a", None).await;
    assert_eq!(a.json(), json!({"options": "default"}));
    assert_eq!(a.header("x-opt"), Some("1"));
    assert_eq!(
        call(&r, "OPTIONS", "/api/b", None).await.json(),
        json!({"options": "own"})
    );
}

#[tokio::test]
async fn use_default_auth_adds_login_and_logout_only_when_on() {
    let off = Api::new(opts(), memory().await).unwrap().router();
    assert_eq!(call(&off, "POST", "/api/login", None).await.status, 404);
    assert_eq!(call(&off, "POST", "/api/logout", None).await.status, 404);
    let on = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o
        },
        memory().await,
    )
    .unwrap()
    .router();
    assert_eq!(call(&on, "POST", "/api/login", None).await.status, 401);
    assert_eq!(call(&on, "POST", "/api/logout", None).await.status, 401);
}

#[tokio::test]
async fn invalid_default_header_is_a_setup_error() {
    let r = Api::new(
        {
            let mut o = opts();
            o.default_headers = vec![("X-Bad".into(), "line\nbreak".into())];
            o
        },
        memory().await,
    );
    assert!(matches!(r, Err(Error::InvalidOption(_))));
}

#[tokio::test]
async fn options_endpoints_do_not_inherit_route_auth() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.default_options_endpoint =
                Some(Endpoint::new(|_c: Context| async move { "preflight ok" }));
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route(
        "secret",
        RouteOptions::new().role_required("admin"),
        hello(),
    )
    .unwrap();
    api.add_route(
        "own",
        RouteOptions::new().auth_required(true),
        hello().options(Endpoint::new(|_c: Context| async move { "own" }).auth_required(true)),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(call(&r, "GET", "/api/secret", None).await.status, 401);
    assert_eq!(
        call(&r, "OPTIONS", "/api/secret", None).await.json(),
        json!("preflight ok")
    );
    // An OPTIONS endpoint that asks for auth itself still gets it.
    assert_eq!(call(&r, "OPTIONS", "/api/own", None).await.status, 401);
}
