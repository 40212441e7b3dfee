//! Over a real socket: a server on 127.0.0.1:0 with connect info, driven by reqwest.

use std::net::SocketAddr;
use std::time::Duration;

use portico_routes::{Api, CollectionOptions, LoginRateLimit, RateLimit, RouteOptions};
use serde_json::{Value, json};

use super::common::{memory, opts, user};

async fn serve(app: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    (format!("http://{addr}"), handle)
}

#[tokio::test]
async fn a_real_server_with_login_rate_limits_per_address_and_crud() {
    let platform = memory().await;
    user(&platform, "ann", "pw-123456", &["editor"]).await;
    let mut limits = LoginRateLimit::default();
    limits.per_identity = None;
    limits.per_address = Some(RateLimit::new(3, Duration::from_secs(60)));
    let mut api = Api::new(
        {
            let mut o = opts();
            o.use_default_auth = true;
            o.login_rate_limit = limits;
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_collection(
        platform.collection("articles"),
        CollectionOptions::new().route_options(RouteOptions::new().role_required("editor")),
    )
    .unwrap();
    let (base, handle) = serve(api.router()).await;
    let client = reqwest::Client::new();

    let login = client
        .post(format!("{base}/api/login"))
        .json(&json!({"username": "ann", "password": "pw-123456"}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    let body: Value = login.json().await.unwrap();
    let token = body["data"]["authToken"].as_str().unwrap().to_owned();

    let created = client
        .post(format!("{base}/api/articles"))
        .header("x-auth-token", &token)
        .form(&[("title", "Over HTTP"), ("meta[lang]", "en")])
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["data"]["meta"], json!({"lang": "en"}));

    let too_big = client
        .post(format!("{base}/api/articles"))
        .header("x-auth-token", &token)
        .header("content-type", "application/json")
        .body(vec![b' '; 50 * 1024 * 1024 + 10])
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);

    // Failed logins from this address, under different names, hit the per-address limit.
    for name in ["x", "y", "z"] {
        let r = client
            .post(format!("{base}/api/login"))
            .json(&json!({"username": name, "password": "no"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let limited = client
        .post(format!("{base}/api/login"))
        .json(&json!({"username": "ann", "password": "pw-123456"}))
        .send()
        .await
        .unwrap();
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().get("retry-after").is_some());
    handle.abort();
}
