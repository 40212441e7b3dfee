//! Route definition rules: `:name` params, query params, regex paths, every method, 405 + Allow,
//! duplicate paths, endpoint objects, resolved options on the context.

use axum::body::Body;
use portico_routes::{Api, Context, Endpoint, Endpoints, Error, RouteOptions};
use regex::Regex;
use serde_json::{Value, json};

use super::common::{call, memory, opts, req, send};

fn echo_params() -> Endpoints {
    Endpoints::new().get(|ctx: Context| async move {
        json!({"url": ctx.url_params, "query": ctx.query_params})
    })
}

#[tokio::test]
async fn named_params_several_per_path() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(
        "articles/:id/comments/:commentId",
        RouteOptions::default(),
        echo_params(),
    )
    .unwrap();
    let r = api.router();
    let resp = call(
        &r,
        "GET",
        "/api/articles/a%20b/comments/7?x=1&f[a]=2&t[]=p&t[]=q",
        None,
    )
    .await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json(),
        json!({"url": {"commentId": "7", "id": "a b"}, "query": {"x": "1", "f": {"a": "2"}, "t": ["p", "q"]}})
    );
    assert_eq!(
        call(&r, "GET", "/api/articles/1/comments", None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn regex_paths_give_named_and_positional_params() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(
        Regex::new(r"files/(?P<name>[a-z]+)\.(json|txt)").unwrap(),
        RouteOptions::default(),
        echo_params(),
    )
    .unwrap();
    let r = api.router();
    let resp = call(&r, "GET", "/api/files/report.txt", None).await;
    assert_eq!(resp.json()["url"], json!({"name": "report", "0": "txt"}));
    assert_eq!(
        call(&r, "GET", "/api/files/report.pdf", None).await.status,
        404
    );
    assert_eq!(
        call(&r, "GET", "/api/x/files/report.txt", None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn static_segments_win_over_params_whatever_the_order() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(
        "items/:id",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move { "param" }),
    )
    .unwrap();
    api.add_route(
        "items/new",
        RouteOptions::default(),
        Endpoints::new().get(|_c: Context| async move { "static" }),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(
        call(&r, "GET", "/api/items/new", None).await.json(),
        json!("static")
    );
    assert_eq!(
        call(&r, "GET", "/api/items/42", None).await.json(),
        json!("param")
    );
}

#[tokio::test]
async fn every_method_has_its_endpoint_and_others_get_405_with_allow() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    let m = |name: &'static str| {
        move |ctx: Context| async move { json!({"method": name, "seen": ctx.request.method.as_str()}) }
    };
    api.add_route(
        "all",
        RouteOptions::default(),
        Endpoints::new()
            .get(m("get"))
            .post(m("post"))
            .put(m("put"))
            .patch(m("patch"))
            .delete(m("delete"))
            .options(m("options")),
    )
    .unwrap();
    api.add_route(
        "only-get",
        RouteOptions::default(),
        Endpoints::new().get(m("get")),
    )
    .unwrap();
    let r = api.router();
    for (method, name) in [
        ("GET", "get"),
        ("POST", "post"),
        ("PUT", "put"),
        ("PATCH", "patch"),
        ("DELETE", "delete"),
        ("OPTIONS", "options"),
    ] {
        let resp = call(&r, method, "/api/all", None).await;
        assert_eq!(resp.status, 200, "{method}");
        assert_eq!(resp.json(), json!({"method": name, "seen": method}));
    }
    let head = call(&r, "HEAD", "/api/only-get", None).await;
    assert_eq!(head.status, 200);
    let resp = call(&r, "DELETE", "/api/only-get", None).await;
    assert_eq!(resp.status, 405);
    assert_eq!(
        resp.json(),
        json!({"status": "error", "message": "API endpoint does not exist"})
    );
    let allow = resp.header("allow").unwrap();
    assert!(
        allow.contains("GET") && allow.contains("HEAD") && !allow.contains("DELETE"),
        "{allow}"
    );
}

#[tokio::test]
async fn unknown_paths_are_404_jsend() {
    let api = Api::new(opts(), memory().await).unwrap();
    let resp = call(&api.router(), "GET", "/api/nothing/here", None).await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json()["status"], "error");
}

#[tokio::test]
async fn duplicate_paths_are_setup_errors() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route("a/:id", RouteOptions::default(), echo_params())
        .unwrap();
    let err = api
        .add_route("/a/:other/", RouteOptions::default(), echo_params())
        .unwrap_err();
    assert!(
        matches!(&err, Error::DuplicatePath(p) if p == "a/:other"),
        "{err}"
    );
    assert!(err.to_string().contains("a/:other"));
    assert!(matches!(
        api.add_route("login", RouteOptions::default(), echo_params()),
        Err(Error::DuplicatePath(_))
    ));
    let re = || Regex::new("r/.*").unwrap();
    api.add_route(re(), RouteOptions::default(), echo_params())
        .unwrap();
    assert!(matches!(
        api.add_route(re(), RouteOptions::default(), echo_params()),
        Err(Error::DuplicatePath(_))
    ));
}

#[tokio::test]
async fn routes_need_endpoints_and_endpoint_objects_need_actions() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    assert!(matches!(
        api.add_route("x", RouteOptions::default(), Endpoints::new()),
        Err(Error::NoEndpoints(_))
    ));
    let r = api.add_route(
        "x",
        RouteOptions::default(),
        Endpoints::new().post(Endpoint::options().auth_required(true)),
    );
    assert!(matches!(r, Err(Error::MissingAction { method, .. }) if method == "POST"));
    assert!(matches!(
        api.add_route("a/:", RouteOptions::default(), echo_params()),
        Err(Error::InvalidPath { .. })
    ));
}

#[tokio::test]
async fn endpoint_objects_and_resolved_options_on_the_context() {
    let platform = memory().await;
    let id = super::common::user(&platform, "ann", "pw-ann-123", &["editor", "author"]).await;
    let token = super::common::token_for(&platform, &id).await;
    let mut api = Api::new(opts(), platform).unwrap();
    let show = |ctx: Context| async move {
        json!({"auth": ctx.auth_required(), "roles": ctx.role_required(), "user": ctx.user_id})
    };
    api.add_route(
        "opts",
        RouteOptions::new().role_required("editor"),
        Endpoints::new()
            .get(show)
            .post(Endpoint::new(show).role_required("author"))
            .put(Endpoint::new(show).auth_required(true)),
    )
    .unwrap();
    api.add_route(
        "open",
        RouteOptions::new().auth_required(true),
        Endpoints::new().get(Endpoint::new(show).auth_required(false)),
    )
    .unwrap();
    let r = api.router();
    let get = call(&r, "GET", "/api/opts", Some(&token)).await;
    assert_eq!(
        get.json(),
        json!({"auth": true, "roles": ["editor"], "user": id})
    );
    let post = call(&r, "POST", "/api/opts", Some(&token)).await;
    assert_eq!(
        post.json(),
        json!({"auth": true, "roles": ["editor", "author"], "user": id})
    );
    // The endpoint's authRequired overrides the route's: no user needed, and none attached.
    let open = call(&r, "GET", "/api/open", Some(&token)).await;
    assert_eq!(
        open.json(),
        json!({"auth": false, "roles": [], "user": Value::Null})
    );
}

#[tokio::test]
async fn context_exposes_the_request() {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(
        "req",
        RouteOptions::default(),
        Endpoints::new().post(|ctx: Context| async move {
            json!({"path": ctx.request.uri.path(), "h": ctx.header("x-custom"), "raw": String::from_utf8_lossy(&ctx.body)})
        }),
    )
    .unwrap();
    let resp = send(
        &api.router(),
        req("POST", "/api/req", None)
            .header("x-custom", "yes")
            .body(Body::from("raw text"))
            .unwrap(),
    )
    .await;
    assert_eq!(
        resp.json(),
        json!({"path": "/api/req", "h": "yes", "raw": "raw text"})
    );
}

#[tokio::test]
async fn the_route_table_lists_paths_and_methods() {
    let mut api = Api::new(
        {
            let mut o = opts();
            o.version = Some("v1".into());
            o.use_default_auth = true;
            o
        },
        memory().await,
    )
    .unwrap();
    api.add_route(
        "items/:id",
        RouteOptions::default(),
        Endpoints::new()
            .get(|_c: Context| async move { "x" })
            .delete(|_c: Context| async move { "y" }),
    )
    .unwrap();
    let table = api.routes();
    let items = table
        .iter()
        .find(|r| r.path == "/api/v1/items/:id")
        .unwrap();
    assert_eq!(items.methods, vec!["GET", "HEAD", "DELETE", "OPTIONS"]);
    assert!(
        table
            .iter()
            .any(|r| r.path == "/api/v1/login" && r.methods.contains(&"POST".to_owned()))
    );
    assert!(
        table
            .iter()
            .any(|r| r.path == "/api/v1/logout" && r.methods.contains(&"GET".to_owned()))
    );
}
