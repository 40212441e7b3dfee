//! Reply values: string, JSON, array, `{statusCode, headers, body}`, raw responses, errors,
//! nothing, panics.

use axum::body::Body;
use portico_routes::{Api, Context, Endpoints, Reply, RouteOptions};
use serde_json::{Value, json};

use super::common::{call, memory, opts};

async fn api_with(path: &str, endpoints: Endpoints) -> axum::Router {
    let mut api = Api::new(opts(), memory().await).unwrap();
    api.add_route(path, RouteOptions::default(), endpoints)
        .unwrap();
    api.router()
}

#[tokio::test]
async fn a_string_is_json_encoded_by_default() {
    let r = api_with(
        "s",
        Endpoints::new().get(|_c: Context| async move { String::from("hi \"you\"") }),
    )
    .await;
    let resp = call(&r, "GET", "/api/s", None).await;
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.text, r#""hi \"you\"""#);
}

#[tokio::test]
async fn a_text_plain_body_is_sent_as_is() {
    let r = api_with(
        "t",
        Endpoints::new().get(|_c: Context| async move {
            json!({"statusCode": 200, "headers": {"Content-Type": "text/plain"}, "body": "just text"})
        }),
    )
    .await;
    let resp = call(&r, "GET", "/api/t", None).await;
    assert_eq!(resp.text, "just text");
    assert_eq!(resp.header("content-type"), Some("text/plain"));
}

#[tokio::test]
async fn objects_and_arrays() {
    let r = api_with(
        "o",
        Endpoints::new()
            .get(|_c: Context| async move { json!({"a": [1, 2]}) })
            .post(|_c: Context| async move { vec![json!(1), json!("two")] }),
    )
    .await;
    assert_eq!(
        call(&r, "GET", "/api/o", None).await.json(),
        json!({"a": [1, 2]})
    );
    assert_eq!(
        call(&r, "POST", "/api/o", None).await.json(),
        json!([1, "two"])
    );
}

#[tokio::test]
async fn status_code_headers_body_object() {
    let r = api_with(
        "full",
        Endpoints::new()
            .get(|_c: Context| async move {
                json!({"statusCode": 404, "body": {"status": "fail", "message": "Post not found"}})
            })
            .post(|_c: Context| async move {
                json!({"headers": {"X-Thing": "yes", "Access-Control-Allow-Origin": "https://only.example"}, "body": [1]})
            })
            .put(|_c: Context| async move { Reply::fail(418, "teapot").with_header("x-a", "b") }),
    )
    .await;
    let get = call(&r, "GET", "/api/full", None).await;
    assert_eq!(get.status, 404);
    assert_eq!(
        get.json(),
        json!({"status": "fail", "message": "Post not found"})
    );
    let post = call(&r, "POST", "/api/full", None).await;
    assert_eq!(post.status, 200);
    assert_eq!(post.header("x-thing"), Some("yes"));
    // The default allow-origin is replaced by the endpoint's own.
    assert_eq!(
        post.header("access-control-allow-origin"),
        Some("https://only.example")
    );
    assert_eq!(
        post.headers
            .get_all("access-control-allow-origin")
            .iter()
            .count(),
        1
    );
    assert_eq!(post.json(), json!([1]));
    let put = call(&r, "PUT", "/api/full", None).await;
    assert_eq!((put.status, put.header("x-a")), (418, Some("b")));
}

#[tokio::test]
async fn a_raw_response_is_sent_untouched() {
    let r = api_with(
        "raw",
        Endpoints::new().get(|_c: Context| async move {
            http::Response::builder()
                .status(202)
                .header("content-type", "application/octet-stream")
                .body(Body::from_stream(futures::stream::iter(vec![
                    Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"chunk1-")),
                    Ok(bytes::Bytes::from_static(b"chunk2")),
                ])))
                .unwrap()
        }),
    )
    .await;
    let resp = call(&r, "GET", "/api/raw", None).await;
    assert_eq!(resp.status, 202);
    assert_eq!(resp.text, "chunk1-chunk2");
    assert_eq!(
        resp.header("content-type"),
        Some("application/octet-stream")
    );
    assert!(resp.header("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn handler_errors_are_500_without_the_internal_text() {
    let r = api_with(
        "err",
        Endpoints::new()
            .get(|_c: Context| async move { Err::<Value, _>("db password is hunter2") }),
    )
    .await;
    let resp = call(&r, "GET", "/api/err", None).await;
    assert_eq!(resp.status, 500);
    assert_eq!(
        resp.json(),
        json!({"status": "error", "message": "Internal server error"})
    );
}

#[tokio::test]
async fn returning_nothing_is_500() {
    let r = api_with(
        "none",
        Endpoints::new()
            .get(|_c: Context| async move {})
            .post(|_c: Context| async move { None::<Value> }),
    )
    .await;
    for m in ["GET", "POST"] {
        let resp = call(&r, m, "/api/none", None).await;
        assert_eq!(resp.status, 500);
        assert_eq!(resp.json()["status"], "error");
    }
}

#[tokio::test]
async fn a_panicking_endpoint_is_500_and_the_server_keeps_serving() {
    let r = api_with(
        "boom",
        Endpoints::new().get(|ctx: Context| async move {
            if ctx.query_param("x").is_none() {
                panic!("endpoint bug");
            }
            "fine"
        }),
    )
    .await;
    let resp = call(&r, "GET", "/api/boom", None).await;
    assert_eq!(resp.status, 500);
    assert_eq!(resp.json()["status"], "error");
    assert_eq!(
        call(&r, "GET", "/api/boom?x=1", None).await.json(),
        json!("fine")
    );
}

#[tokio::test]
async fn an_invalid_returned_header_is_500() {
    let r = api_with(
        "badh",
        Endpoints::new()
            .get(|_c: Context| async move { Reply::new(1).with_header("bad header", "x") }),
    )
    .await;
    assert_eq!(call(&r, "GET", "/api/badh", None).await.status, 500);
}
