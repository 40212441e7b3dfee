//! The generated `users` collection.

use portico_routes::{Api, CollectionOptions, RouteOptions};
use serde_json::{Value, json};

use super::common::{call, call_json, memory, opts, token_for, user};

#[tokio::test]
async fn users_collection_exposes_only_id_and_profile_and_creates_accounts() {
    let platform = memory().await;
    let admin = user(&platform, "admin", "pw-123456", &["admin"]).await;
    let ta = token_for(&platform, &admin).await;
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_collection(platform.collection("users"), CollectionOptions::new())
        .unwrap();
    let r = api.router();

    let created = call_json(
        &r,
        "POST",
        "/api/users",
        None,
        &json!({"username": "zoe", "email": "zoe@example.com", "password": "zoe-pass-1", "profile": {"name": "Zoe"}, "roles": ["admin"]}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json()["data"]["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        created.json()["data"],
        json!({"_id": id, "profile": {"name": "Zoe"}})
    );
    // The password is stored hashed and works for login; client-sent roles are ignored.
    let stored = platform
        .accounts()
        .find_user_by_id(&id)
        .await
        .unwrap()
        .unwrap();
    assert!(!stored.to_string_lossy().contains("zoe-pass-1"));
    assert_eq!(stored.get("roles").cloned().unwrap_or(json!([])), json!([]));
    let login = call_json(
        &r,
        "POST",
        "/api/login",
        None,
        &json!({"username": "zoe", "password": "zoe-pass-1"}),
    )
    .await;
    assert_eq!(login.status, 200);

    let got = call(&r, "GET", &format!("/api/users/{id}"), None).await;
    assert_eq!(
        got.json()["data"],
        json!({"_id": id, "profile": {"name": "Zoe"}})
    );
    let all = call(&r, "GET", "/api/users", Some(&ta)).await;
    for u in all.json()["data"].as_array().unwrap() {
        assert!(
            u.as_object()
                .unwrap()
                .keys()
                .all(|k| k == "_id" || k == "profile"),
            "{u}"
        );
    }
    assert_eq!(all.header("x-total-count"), Some("2"));

    let put = call_json(
        &r,
        "PUT",
        &format!("/api/users/{id}"),
        None,
        &json!({"name": "Zoë", "city": "Oslo"}),
    )
    .await;
    assert_eq!(
        put.json()["data"],
        json!({"_id": id, "profile": {"name": "Zoë", "city": "Oslo"}})
    );
    let patch = call_json(
        &r,
        "PATCH",
        &format!("/api/users/{id}"),
        None,
        &json!({"city": "Bergen"}),
    )
    .await;
    assert_eq!(
        patch.json()["data"]["profile"],
        json!({"name": "Zoë", "city": "Bergen"})
    );
    assert_eq!(
        platform
            .accounts()
            .find_user_by_id(&id)
            .await
            .unwrap()
            .unwrap()["username"],
        "zoe",
        "put only sets the profile"
    );

    // Hidden fields cannot be probed through where or sort.
    for q in [
        "where=%7B%22services.password%22%3A%7B%22%24exists%22%3Atrue%7D%7D",
        "sort=username",
    ] {
        assert_eq!(
            call(&r, "GET", &format!("/api/users?{q}"), None)
                .await
                .status,
            400,
            "{q}"
        );
    }
    let dup = call_json(
        &r,
        "POST",
        "/api/users",
        None,
        &json!({"username": "ZOE", "password": "x"}),
    )
    .await;
    assert_eq!(dup.status, 400);

    assert_eq!(
        call(&r, "DELETE", &format!("/api/users/{id}"), None)
            .await
            .status,
        200
    );
    assert_eq!(
        call(&r, "GET", &format!("/api/users/{id}"), None)
            .await
            .status,
        404
    );
    assert!(
        platform
            .accounts()
            .find_user_by_id(&id)
            .await
            .unwrap()
            .is_none()
    );
}

trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for portico_store::Document {
    fn to_string_lossy(&self) -> String {
        Value::Object(self.clone()).to_string()
    }
}

#[tokio::test]
async fn users_collection_with_roles() {
    let platform = memory().await;
    let admin = user(&platform, "admin", "pw-123456", &["admin"]).await;
    let ta = token_for(&platform, &admin).await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        platform.collection("users"),
        CollectionOptions::new().route_options(RouteOptions::new().role_required("admin")),
    )
    .unwrap();
    let r = api.router();
    assert_eq!(call(&r, "GET", "/api/users", None).await.status, 401);
    assert_eq!(call(&r, "GET", "/api/users", Some(&ta)).await.status, 200);
}

#[tokio::test]
async fn anonymous_signups_refused_when_the_platform_forbids_them() {
    let mut config = portico_platform::PlatformConfig::default();
    config.accounts = {
        let mut o = portico_platform::AccountsConfig::default();
        o.forbid_client_account_creation = true;
        o
    };
    let platform = portico_platform::Platform::open_with("memory:", config)
        .await
        .unwrap();
    let admin = user(&platform, "admin", "pw-123456", &["admin"]).await;
    let ta = token_for(&platform, &admin).await;
    let mut api = Api::new(opts(), platform.clone()).unwrap();
    api.add_collection(
        platform.collection("users"),
        CollectionOptions::new().endpoint(
            portico_routes::Op::Post,
            portico_routes::Endpoint::options().auth_required(true),
        ),
    )
    .unwrap();
    let mut open = Api::new(
        {
            let mut o = opts();
            o.version = Some("open".into());
            o
        },
        platform.clone(),
    )
    .unwrap();
    open.add_collection(platform.collection("users"), CollectionOptions::new())
        .unwrap();
    let r = axum::Router::new().merge(api.router()).merge(open.router());
    let body = json!({"username": "new", "password": "new-pass-1"});
    let anon = call_json(&r, "POST", "/api/open/users", None, &body).await;
    assert_eq!(
        (anon.status, anon.json()["message"].clone()),
        (403, json!("Signups forbidden"))
    );
    assert_eq!(
        call_json(&r, "POST", "/api/users", Some(&ta), &body)
            .await
            .status,
        201
    );
}

/// The token cache (on SQLite) never outlives a write through the users collection's own CRUD:
/// a token used (and so cached) just before its user is removed, or has its tokens cleared by
/// an update through the routes door, is refused on the very next request.
#[tokio::test]
async fn users_crud_writes_end_cached_tokens_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("cache.db").display());
    let platform = portico_platform::Platform::open(&url).await.unwrap();
    let admin = user(&platform, "admin", "pw-123456", &["admin"]).await;
    let admin_token = token_for(&platform, &admin).await;
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_collection(
        platform.collection("users"),
        CollectionOptions::new().route_options(RouteOptions::new().role_required("admin")),
    )
    .unwrap();
    api.add_collection(
        platform.collection("notes"),
        CollectionOptions::new().route_options(RouteOptions::new().auth_required(true)),
    )
    .unwrap();
    let r = api.router();

    // Removal through DELETE /api/users/:id.
    let ann = user(&platform, "ann", "pw-123456", &[]).await;
    let ann_token = token_for(&platform, &ann).await;
    for _ in 0..3 {
        assert_eq!(
            call(&r, "GET", "/api/notes", Some(&ann_token)).await.status,
            200
        );
    }
    let removed = call(
        &r,
        "DELETE",
        &format!("/api/users/{ann}"),
        Some(&admin_token),
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.text);
    assert_eq!(
        call(&r, "GET", "/api/notes", Some(&ann_token)).await.status,
        401
    );

    // A change through PATCH /api/users/:id (the profile) leaves the token valid; a logout
    // through the API then ends it on the next request.
    let bob = user(&platform, "bob", "pw-123456", &[]).await;
    let bob_token = token_for(&platform, &bob).await;
    assert_eq!(
        call(&r, "GET", "/api/notes", Some(&bob_token)).await.status,
        200
    );
    let patched = call_json(
        &r,
        "PATCH",
        &format!("/api/users/{bob}"),
        Some(&admin_token),
        &json!({"profile": {"name": "Bob"}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(
        call(&r, "GET", "/api/notes", Some(&bob_token)).await.status,
        200
    );
    let out = call(&r, "POST", "/api/logout", Some(&bob_token)).await;
    assert_eq!(out.status, 200, "{}", out.text);
    assert_eq!(
        call(&r, "GET", "/api/notes", Some(&bob_token)).await.status,
        401
    );
}
