//! Authentication: authRequired (401), roleRequired (403), the `auth.user` hook's outcomes,
//! a custom token path, token expiry, the 401/403 delay, query tokens.

use std::time::{Duration, Instant};

use portico_platform::hash_token;
use portico_routes::{
    Api, AuthOptions, AuthOutcome, AuthUserHook, Context, DelayRange, Endpoint, Endpoints, Reply,
    RouteOptions,
};
use serde_json::{Value, json};

use super::common::{call, memory, opts, req, send, token_for, user};

fn whoami() -> Endpoints {
    Endpoints::new().get(|ctx: Context| async move {
        json!({"userId": ctx.user_id, "username": ctx.user.as_ref().and_then(|u| u.get("username").cloned())})
    })
}

#[tokio::test]
async fn auth_required_gives_401_without_a_valid_token_and_the_user_with_one() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &id).await;
    let mut api = Api::new(opts(), platform).unwrap();
    api.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    api.add_route("public", RouteOptions::default(), whoami())
        .unwrap();
    let r = api.router();
    let anon = call(&r, "GET", "/api/me", None).await;
    assert_eq!(anon.status, 401);
    assert_eq!(
        anon.json(),
        json!({"status": "error", "message": "You must be logged in to do this."})
    );
    assert_eq!(
        call(&r, "GET", "/api/me", Some("not-a-token")).await.status,
        401
    );
    let me = call(&r, "GET", "/api/me", Some(&token)).await;
    assert_eq!(me.json(), json!({"userId": id, "username": "ann"}));
    // The user is attached only where authentication is required.
    let public = call(&r, "GET", "/api/public", Some(&token)).await;
    assert_eq!(public.json(), json!({"userId": null, "username": null}));
}

#[tokio::test]
async fn x_user_id_must_match_the_token_when_sent() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &id).await;
    let mut api = Api::new(opts(), platform).unwrap();
    api.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let r = api.router();
    let ok = send(
        &r,
        req("GET", "/api/me", Some(&token))
            .header("x-user-id", &id)
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(ok.status, 200);
    let bad = send(
        &r,
        req("GET", "/api/me", Some(&token))
            .header("x-user-id", "someone-else")
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(bad.status, 401);
}

#[tokio::test]
async fn roles_401_vs_403_and_endpoint_roles_add_to_the_route() {
    let platform = memory().await;
    let admin = user(&platform, "admin", "pw-123456", &["admin"]).await;
    let author = user(&platform, "author", "pw-123456", &["author"]).await;
    let nobody = user(&platform, "nobody", "pw-123456", &[]).await;
    let (ta, tu, tn) = (
        token_for(&platform, &admin).await,
        token_for(&platform, &author).await,
        token_for(&platform, &nobody).await,
    );
    let mut api = Api::new(opts(), platform).unwrap();
    api.add_route(
        "posts",
        RouteOptions::new().role_required("admin"),
        Endpoints::new()
            .get(|_c: Context| async move { "list" })
            .post(Endpoint::new(|_c: Context| async move { "created" }).role_required(["author"])),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(call(&r, "GET", "/api/posts", None).await.status, 401);
    let forbidden = call(&r, "GET", "/api/posts", Some(&tn)).await;
    assert_eq!(forbidden.status, 403);
    assert_eq!(
        forbidden.json(),
        json!({"status": "error", "message": "You do not have permission to do this."})
    );
    assert_eq!(call(&r, "GET", "/api/posts", Some(&tu)).await.status, 403);
    assert_eq!(call(&r, "GET", "/api/posts", Some(&ta)).await.status, 200);
    // POST accepts the route's role and its own.
    assert_eq!(call(&r, "POST", "/api/posts", Some(&tu)).await.status, 200);
    assert_eq!(call(&r, "POST", "/api/posts", Some(&ta)).await.status, 200);
    assert_eq!(call(&r, "POST", "/api/posts", Some(&tn)).await.status, 403);
}

#[tokio::test]
async fn custom_auth_user_three_outcomes() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &id).await;
    let hook = AuthUserHook::new(|ctx: Context| {
        let mode = ctx.header("x-mode").map(str::to_owned);
        let key = ctx.header("x-key").map(str::to_owned);
        let uid = ctx.header("x-uid").map(str::to_owned);
        async move {
            match mode.as_deref() {
                Some("user") => {
                    let mut doc = portico_store::Document::new();
                    doc.insert("_id".into(), json!("trusted-1"));
                    doc.insert("username".into(), json!("trusted"));
                    AuthOutcome::User(doc)
                }
                Some("token") => AuthOutcome::Token {
                    hashed_token: hash_token(key.as_deref().unwrap_or("")),
                    user_id: uid,
                },
                Some("error") => AuthOutcome::Error(Reply::fail(418, "no tea for you")),
                _ => AuthOutcome::Anonymous,
            }
        }
    });
    let mut api = Api::new(
        {
            let mut o = opts();
            o.auth = {
                let mut o = AuthOptions::default();
                o.user = Some(hook);
                o
            };
            o
        },
        platform,
    )
    .unwrap();
    api.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let r = api.router();
    let with = |mode: &str| req("GET", "/api/me", None).header("x-mode", mode.to_owned());
    let trusted = send(&r, with("user").body(Default::default()).unwrap()).await;
    assert_eq!(
        trusted.json(),
        json!({"userId": "trusted-1", "username": "trusted"})
    );
    let by_token = send(
        &r,
        with("token")
            .header("x-key", &token)
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(by_token.json(), json!({"userId": id, "username": "ann"}));
    let with_id = send(
        &r,
        with("token")
            .header("x-key", &token)
            .header("x-uid", &id)
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(with_id.status, 200);
    let wrong_id = send(
        &r,
        with("token")
            .header("x-key", &token)
            .header("x-uid", "other")
            .body(Default::default())
            .unwrap(),
    )
    .await;
    assert_eq!(wrong_id.status, 401);
    let error = send(&r, with("error").body(Default::default()).unwrap()).await;
    assert_eq!(
        (error.status, error.json()),
        (418, json!({"status": "fail", "message": "no tea for you"}))
    );
    // The default header is ignored by a custom hook.
    assert_eq!(call(&r, "GET", "/api/me", Some(&token)).await.status, 401);
}

#[tokio::test]
async fn custom_token_path_is_where_tokens_are_looked_up() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let users = platform.collection("users");
    let update = portico_store::Update::parse(
        &json!({"$set": {"apiKeys": [{"hashed": hash_token("key-1")}]}}),
    )
    .unwrap();
    users.update_by_id(&id, &update).await.unwrap();
    let mut api = Api::new(
        {
            let mut o = opts();
            o.auth = {
                let mut o = AuthOptions::default();
                o.token_path = "apiKeys.hashed".into();
                o
            };
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let r = api.router();
    assert_eq!(
        call(&r, "GET", "/api/me", Some("key-1")).await.json()["userId"],
        json!(id)
    );
    // A normal login token is not at that path.
    let token = token_for(&platform, &id).await;
    assert_eq!(call(&r, "GET", "/api/me", Some(&token)).await.status, 401);
}

#[tokio::test]
async fn expired_tokens_are_rejected() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &id).await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let r = api.router();
    assert_eq!(call(&r, "GET", "/api/me", Some(&token)).await.status, 200);
    // Age the token past the 90-day lifetime.
    let users = platform.collection("users");
    let old = portico_store::Update::parse(
        &json!({"$set": {"services.resume.loginTokens.0.when": "2001-01-01T00:00:00.000Z"}}),
    )
    .unwrap();
    users.update_by_id(&id, &old).await.unwrap();
    assert_eq!(call(&r, "GET", "/api/me", Some(&token)).await.status, 401);
}

#[tokio::test]
async fn failures_401_and_403_wait_the_configured_delay() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &id).await;
    let delay = DelayRange {
        min: Duration::from_millis(40),
        max: Duration::from_millis(60),
    };
    let mut api = Api::new(
        {
            let mut o = opts();
            o.auth_failure_delay = delay;
            o
        },
        platform,
    )
    .unwrap();
    api.add_route(
        "admin",
        RouteOptions::new().role_required("admin"),
        whoami(),
    )
    .unwrap();
    let r = api.router();
    let start = Instant::now();
    assert_eq!(call(&r, "GET", "/api/admin", None).await.status, 401);
    assert!(start.elapsed() >= delay.min);
    let start = Instant::now();
    assert_eq!(
        call(&r, "GET", "/api/admin", Some(&token)).await.status,
        403
    );
    assert!(start.elapsed() >= delay.min);
}

#[tokio::test]
async fn query_tokens_only_when_turned_on() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let token = token_for(&platform, &id).await;
    let mut off = Api::new(opts(), platform.clone()).unwrap();
    off.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let uri = format!("/api/me?access_token={token}");
    assert_eq!(call(&off.router(), "GET", &uri, None).await.status, 401);
    let mut on = Api::new(
        {
            let mut o = opts();
            o.auth = {
                let mut o = AuthOptions::default();
                o.allow_query_token = true;
                o
            };
            o
        },
        platform,
    )
    .unwrap();
    on.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let resp = call(&on.router(), "GET", &uri, None).await;
    assert_eq!(resp.json()["userId"], Value::String(id));
}

#[tokio::test]
async fn logout_removes_a_token_at_a_custom_path() {
    let platform = memory().await;
    let id = user(&platform, "ann", "pw-123456", &[]).await;
    let users = platform.collection("users");
    let keys = json!({"$set": {"apiKeys": [{"hashed": hash_token("key-1")}, {"hashed": hash_token("key-2")}]}});
    users
        .update_by_id(&id, &portico_store::Update::parse(&keys).unwrap())
        .await
        .unwrap();
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o.auth = {
                let mut o = AuthOptions::default();
                o.token_path = "apiKeys.hashed".into();
                o
            };
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_route("me", RouteOptions::new().auth_required(true), whoami())
        .unwrap();
    let r = api.router();
    assert_eq!(
        call(&r, "POST", "/api/logout", Some("key-1")).await.status,
        200
    );
    assert_eq!(call(&r, "GET", "/api/me", Some("key-1")).await.status, 401);
    assert_eq!(call(&r, "GET", "/api/me", Some("key-2")).await.status, 200);
    let stored = users.get(&id).await.unwrap().unwrap();
    assert_eq!(stored["apiKeys"], json!([{"hashed": hash_token("key-2")}]));
}
