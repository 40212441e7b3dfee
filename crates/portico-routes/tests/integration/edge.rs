//! Behaviour that comes from the shared HTTP edge and the one error mapping: each of these was
//! a bug before the edge (the test failed), see the commit that added it.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use portico_platform::Platform;
use portico_routes::{Api, AuthenticatedUser, CollectionOptions, Context, Endpoints, Reply};
use serde_json::{Value, json};

use super::common::{call, call_json, memory, opts, req, send, token_for, user};

async fn articles() -> (Api, Platform) {
    let platform = memory().await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(platform.collection("articles"), CollectionOptions::new())
        .unwrap();
    (api, platform)
}

fn raw(
    method: &str,
    uri: &str,
    content_type: Option<&str>,
    body: &'static str,
) -> http::Request<Body> {
    let mut b = req(method, uri, None);
    if let Some(ct) = content_type {
        b = b.header("content-type", ct);
    }
    b.body(Body::from(body)).unwrap()
}

#[tokio::test]
async fn a_duplicate_id_is_409_on_generated_and_hand_written_routes() {
    let (mut api, platform) = articles().await;
    let articles = platform.collection("articles");
    api.route(
        "copy",
        Endpoints::new().post(move |_ctx: Context| {
            let articles = articles.clone();
            async move {
                let doc = json!({"_id": "a1"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                articles
                    .insert(doc)
                    .await
                    .map(Value::from)
                    .map_err(Reply::from)
            }
        }),
    )
    .unwrap();
    let r = api.router();
    let body = json!({"_id": "a1", "title": "x"});
    assert_eq!(
        call_json(&r, "POST", "/api/articles", None, &body)
            .await
            .status,
        201
    );
    let again = call_json(&r, "POST", "/api/articles", None, &body).await;
    assert_eq!(again.status, 409);
    let hand = call(&r, "POST", "/api/copy", None).await;
    assert_eq!(hand.status, 409, "{}", hand.text);
    assert_eq!(hand.json()["status"], "error");
}

#[tokio::test]
async fn writes_need_a_body_of_a_known_type() {
    let (api, _p) = articles().await;
    let r = api.router();
    let created = call_json(
        &r,
        "POST",
        "/api/articles",
        None,
        &json!({"title": "keep me"}),
    )
    .await;
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    let item = format!("/api/articles/{id}");
    // An empty body is 400, never an empty document; the stored document is untouched.
    for method in ["POST", "PUT", "PATCH"] {
        let uri = if method == "POST" {
            "/api/articles"
        } else {
            item.as_str()
        };
        let empty = send(&r, raw(method, uri, Some("application/json"), "")).await;
        assert_eq!(empty.status, 400, "{method}: {}", empty.text);
        let text = send(&r, raw(method, uri, Some("text/plain"), "hello")).await;
        assert_eq!(text.status, 415, "{method}: {}", text.text);
    }
    let as_form = send(
        &r,
        raw(
            "POST",
            "/api/articles",
            Some("application/x-www-form-urlencoded"),
            r#"{"title":"x"}"#,
        ),
    )
    .await;
    assert_eq!(as_form.status, 400);
    assert!(
        as_form.json()["message"]
            .as_str()
            .unwrap()
            .contains("application/json")
    );
    let stored = call(&r, "GET", &item, None).await;
    assert_eq!(stored.json()["data"]["title"], "keep me");
    let listed = call(&r, "GET", "/api/articles", None).await;
    assert_eq!(listed.header("x-total-count"), Some("1"));
}

#[tokio::test]
async fn fields_take_json_projections_too() {
    let (api, _p) = articles().await;
    let r = api.router();
    call_json(
        &r,
        "POST",
        "/api/articles",
        None,
        &json!({"title": "t", "body": "b"}),
    )
    .await;
    let excluded = call(&r, "GET", "/api/articles?fields=%7B%22body%22%3A0%7D", None).await;
    let doc = &excluded.json()["data"][0];
    assert_eq!(doc["title"], "t");
    assert!(doc.get("body").is_none());
    let included = call(&r, "GET", "/api/articles?fields=%7B%22body%22%3A1%7D", None).await;
    let doc = &included.json()["data"][0];
    assert_eq!(doc["body"], "b");
    assert!(doc.get("title").is_none());
    let bad = call(
        &r,
        "GET",
        "/api/articles?fields=%7B%22a%22%3A1%2C%22b%22%3A0%7D",
        None,
    )
    .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn the_routes_door_reads_bearer_tokens() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw", &[]).await;
    let token = token_for(&platform, &id).await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_route(
        "me",
        portico_routes::RouteOptions::new().auth_required(true),
        Endpoints::new().get(|ctx: Context| async move { json!({"id": ctx.user_id}) }),
    )
    .unwrap();
    let r = api.router();
    let resp = send(
        &r,
        req("GET", "/api/me", None)
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.json()["id"], id);
}

#[tokio::test]
async fn an_endpoint_returning_null_is_a_500() {
    let (mut api, _p) = articles().await;
    api.route(
        "nothing",
        Endpoints::new().get(|_c: Context| async move { Value::Null }),
    )
    .unwrap();
    let resp = call(&api.router(), "GET", "/api/nothing", None).await;
    assert_eq!(resp.status, 500);
    assert_eq!(resp.json()["status"], "error");
}

#[tokio::test]
async fn routes_added_after_router_are_served() {
    let (mut api, _p) = articles().await;
    let r = api.router();
    assert_eq!(call(&r, "GET", "/api/late", None).await.status, 404);
    api.route(
        "late",
        Endpoints::new().get(|_c: Context| async move { "here" }),
    )
    .unwrap();
    let resp = call(&r, "GET", "/api/late", None).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json(), json!("here"));
}

#[tokio::test]
async fn login_bodies_are_small() {
    let platform = memory().await;
    let api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o
        },
        platform,
    )
    .unwrap();
    let big = format!(
        r#"{{"username":"x","password":"x","pad":"{}"}}"#,
        "a".repeat(70_000)
    );
    let resp = send(
        &api.router(),
        req("POST", "/api/login", None)
            .header("content-type", "application/json")
            .body(Body::from(big))
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 413);
}

#[tokio::test]
async fn host_handlers_get_the_user_and_send_replies() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw", &[]).await;
    let token = token_for(&platform, &id).await;
    let app: Router =
        Router::new()
            .route(
                "/me",
                get(|user: AuthenticatedUser| async move {
                    Reply::success(json!({"id": user.user_id()}))
                }),
            )
            .route(
                "/hello",
                get(|user: Option<AuthenticatedUser>| async move {
                    Reply::success(json!(user.is_some()))
                }),
            )
            .with_state(platform);
    let me = send(
        &app,
        req("GET", "/me", Some(&token)).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(me.status, 200);
    assert_eq!(me.json(), json!({"status": "success", "data": {"id": id}}));
    assert_eq!(me.header("content-type"), Some("application/json"));
    assert_eq!(call(&app, "GET", "/me", None).await.status, 401);
    assert_eq!(
        call(&app, "GET", "/me", Some("not-a-token")).await.status,
        401
    );
    let hello = call(&app, "GET", "/hello", None).await;
    assert_eq!(hello.json()["data"], json!(false));
}

#[tokio::test]
async fn the_api_describes_what_it_serves() {
    let platform = memory().await;
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
        platform.collection("notes"),
        CollectionOptions::new().scope(portico_routes::AccessScope::owner_field("ownerId")),
    )
    .unwrap();
    let routes = api.describe();
    let find = |method: &str, path: &str| {
        routes
            .iter()
            .find(|r| r.method.as_str() == method && r.path == path)
            .cloned()
    };
    let list = find("GET", "/api/v1/notes").unwrap();
    assert_eq!(list.access, portico_edge::Access::LoggedIn);
    assert!(list.query.contains(&"where".to_owned()));
    assert!(list.rules.iter().any(|r| r.contains("ownerId")));
    assert!(find("DELETE", "/api/v1/notes/:id").is_some());
    let login = find("POST", "/api/v1/login").unwrap();
    assert_eq!(login.access, portico_edge::Access::Public);
    assert!(login.request_body.is_some());
    // Every described route is served: the description is read from the table itself.
    let r = api.router();
    for route in &routes {
        let uri = route.path.replace(":id", "x");
        let resp = call(&r, route.method.as_str(), &uri, None).await;
        assert_ne!(resp.status, 404, "{} {}", route.method, route.path);
        assert_ne!(resp.status, 405, "{} {}", route.method, route.path);
    }
}

#[tokio::test]
async fn a_panic_outside_the_endpoint_is_a_jsend_500() {
    let platform = memory().await;
    let mut options = opts();
    options.auth.user = Some(portico_routes::AuthUserHook::new(|_ctx: Context| async {
        panic!("auth hook bug")
    }));
    let mut api = Api::new(options, platform).unwrap();
    api.add_route(
        "me",
        portico_routes::RouteOptions::new().auth_required(true),
        Endpoints::new().get(|_c: Context| async move { "never" }),
    )
    .unwrap();
    let r = api.router();
    let resp = call(&r, "GET", "/api/me", Some("t")).await;
    assert_eq!(resp.status, 500);
    assert_eq!(
        resp.json(),
        json!({"status": "error", "message": "Internal server error"})
    );
    // The server keeps serving.
    assert_eq!(call(&r, "GET", "/api/me", Some("t")).await.status, 500);
}

#[tokio::test]
async fn a_page_of_large_documents_stops_at_the_byte_cap() {
    let platform = memory().await;
    let mut api = Api::new(
        {
            let mut o = opts();
            o.max_reply_bytes = 250_000;
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_collection(platform.collection("big"), CollectionOptions::new())
        .unwrap();
    let r = api.router();
    for n in 0..5 {
        let doc = json!({"_id": format!("d{n}"), "blob": "x".repeat(100_000)});
        assert_eq!(
            call_json(&r, "POST", "/api/big", None, &doc).await.status,
            201
        );
    }
    let page = call(&r, "GET", "/api/big?limit=5", None).await;
    assert_eq!(page.status, 200);
    let items = page.json()["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2, "two 100 KB documents fit in 250 KB");
    assert_eq!(page.header("x-total-count"), Some("5"));
    let link = page.header("link").unwrap_or_default().to_owned();
    assert!(link.contains("skip=2"), "{link}");
    // Following the link reads the rest, nothing lost or repeated.
    let next = call(&r, "GET", "/api/big?skip=2&limit=5", None).await;
    let more = next.json()["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(more.len(), 2);
    assert_eq!(more[0]["_id"], "d2");
    // One document larger than the cap is still sent alone.
    let mut small = Api::new(
        {
            let mut o = opts();
            o.max_reply_bytes = 10;
            o
        },
        platform.clone(),
    )
    .unwrap();
    small
        .add_collection(
            platform.collection("big"),
            CollectionOptions::new().path("tiny"),
        )
        .unwrap();
    let one = call(&small.router(), "GET", "/api/tiny", None).await;
    assert_eq!(one.json()["data"].as_array().map(Vec::len), Some(1));
}
