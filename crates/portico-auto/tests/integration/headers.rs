//! Global response headers: the defaults, CORS through custom headers, preflights.

use portico_auto::{AutoApi, Error};
use portico_platform::{MethodError, Platform};
use serde_json::{Value, json};

use crate::common::{platform, serve};

fn echo(p: &Platform) {
    p.method("echo", |_inv, args| async move {
        Ok::<Value, MethodError>(Value::Array(args))
    })
    .unwrap();
}

#[tokio::test]
async fn defaults_are_no_store_and_no_cache_on_every_reply() {
    let p = platform().await;
    echo(&p);
    let s = serve(AutoApi::new(p.clone()).router().unwrap()).await;
    for r in [
        s.post("/methods/echo", json!([1])).await,
        s.post_empty("/methods/missing").await,
        s.get("/publications/api-routes").await,
    ] {
        assert_eq!(r.header("cache-control"), Some("no-store"));
        assert_eq!(r.header("pragma"), Some("no-cache"));
    }
}

#[tokio::test]
async fn cors_is_enabled_by_setting_headers() {
    let p = platform().await;
    echo(&p);
    let api = AutoApi::new(p.clone()).response_headers([
        ("Cache-Control", "no-store"),
        ("Pragma", "no-cache"),
        ("Access-Control-Allow-Origin", "*"),
        (
            "Access-Control-Allow-Methods",
            "GET, PUT, POST, DELETE, OPTIONS",
        ),
        (
            "Access-Control-Allow-Headers",
            "Content-Type, Authorization, X-Requested-With",
        ),
    ]);
    let s = serve(api.router().unwrap()).await;
    let r = s
        .send(
            s.client
                .request(reqwest::Method::OPTIONS, s.url("/methods/echo"))
                .header("origin", "https://app.example")
                .header("access-control-request-method", "POST"),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("Content-Type, Authorization, X-Requested-With")
    );
    let r = s.post("/methods/echo", json!([1])).await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    // Errors carry them too, so a browser can read the error.
    let r = s.post_raw("/methods/echo", "application/json", "{").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
}

#[tokio::test]
async fn replacing_headers_drops_the_defaults() {
    let p = platform().await;
    echo(&p);
    let s = serve(
        AutoApi::new(p.clone())
            .response_headers([("X-Api", "portico")])
            .router()
            .unwrap(),
    )
    .await;
    let r = s.post("/methods/echo", json!([])).await;
    assert_eq!(r.header("x-api"), Some("portico"));
    assert_eq!(r.header("cache-control"), None);
}

#[tokio::test]
async fn invalid_headers_are_a_setup_error() {
    let p = platform().await;
    let err = AutoApi::new(p)
        .response_headers([("Bad Name", "x")])
        .router()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidHeader { .. }), "{err}");
}
