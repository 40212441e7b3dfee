//! Request bodies: JSON, form-encoded with bracketed names, malformed (400), too large (413).

use axum::body::Body;
use bytes::Bytes;
use portico_routes::{Api, ApiOptions, Context, Endpoints, RouteOptions};
use serde_json::json;

use super::common::{call_json, memory, opts, req, send};

async fn echo_api(options: ApiOptions) -> axum::Router {
    let mut api = Api::new(options, memory().await).unwrap();
    api.add_route(
        "echo",
        RouteOptions::default(),
        Endpoints::new().post(|ctx: Context| async move {
            json!({"body": ctx.body_params, "nested": ctx.body_params.pointer("/author/name")})
        }),
    )
    .unwrap();
    api.router()
}

#[tokio::test]
async fn json_bodies_are_parsed_and_nested_fields_reachable() {
    let r = echo_api(opts()).await;
    let resp = call_json(
        &r,
        "POST",
        "/api/echo",
        None,
        &json!({"title": "t", "author": {"name": "Ann"}}),
    )
    .await;
    assert_eq!(resp.json()["nested"], "Ann");
}

#[tokio::test]
async fn form_bodies_nest_bracketed_names() {
    let r = echo_api(opts()).await;
    let resp = send(
        &r,
        req("POST", "/api/echo", None)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(
                "title=Hello+there&author[name]=Ann&tags[]=a&tags[]=b",
            ))
            .unwrap(),
    )
    .await;
    assert_eq!(
        resp.json()["body"],
        json!({"title": "Hello there", "author": {"name": "Ann"}, "tags": ["a", "b"]})
    );
    assert_eq!(resp.json()["nested"], "Ann");
}

#[tokio::test]
async fn malformed_bodies_are_400_jsend() {
    let r = echo_api(opts()).await;
    let resp = send(
        &r,
        req("POST", "/api/echo", None)
            .header("content-type", "application/json")
            .body(Body::from("{\"title\": "))
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json()["status"], "error");
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("Malformed JSON")
    );
    let conflict = send(
        &r,
        req("POST", "/api/echo", None)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from("a=1&a[b]=2"))
            .unwrap(),
    )
    .await;
    assert_eq!(conflict.status, 400);
}

#[tokio::test]
async fn bodies_over_50_mb_are_413() {
    let r = echo_api(opts()).await;
    let big = vec![b' '; 50 * 1024 * 1024 + 1];
    let resp = send(
        &r,
        req("POST", "/api/echo", None)
            .header("content-type", "application/json")
            .body(Body::from(big))
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 413);
    assert_eq!(
        resp.json(),
        json!({"status": "error", "message": "Request body too large"})
    );
}

#[tokio::test]
async fn streamed_bodies_over_the_limit_are_413_and_at_the_limit_accepted() {
    let r = echo_api({
        let mut o = opts();
        o.body_limit = 64;
        o
    })
    .await;
    // No content-length: the limit is enforced while reading.
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from(vec![b' '; 40])),
        Ok(Bytes::from(vec![b' '; 40])),
    ];
    let resp = send(
        &r,
        req("POST", "/api/echo", None)
            .header("content-type", "application/json")
            .body(Body::from_stream(futures::stream::iter(chunks)))
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 413);
    let exact = format!("{{\"a\":\"{}\"}}", "x".repeat(56));
    assert_eq!(exact.len(), 64);
    let resp = send(
        &r,
        req("POST", "/api/echo", None)
            .header("content-type", "application/json")
            .body(Body::from(exact))
            .unwrap(),
    )
    .await;
    assert_eq!(resp.status, 200);
}
