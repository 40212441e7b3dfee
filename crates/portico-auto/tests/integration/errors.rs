//! The JSON error handler: method errors of each kind, framework errors, bad bodies, panics.

use portico_auto::AutoApi;
use portico_platform::{MethodError, Platform};
use serde_json::{Value, json};

use crate::common::{Server, platform, serve};

async fn app(p: &Platform) -> Server {
    serve(AutoApi::new(p.clone()).body_limit(1024).router().unwrap()).await
}

fn methods(p: &Platform) {
    p.method("own-error", |_inv, _args| async move {
        Err::<Value, _>(
            MethodError::new("title-required", "A todo needs a title")
                .with_details(json!({"field": "title"}))
                .with_data(json!({"max": 80})),
        )
    })
    .unwrap();
    p.method("custom-status", |_inv, _args| async move {
        Err::<Value, _>(MethodError::new("conflict", "Already done").with_status(409))
    })
    .unwrap();
    p.method("internal", |_inv, _args| async move {
        Err::<Value, _>(MethodError::internal(
            "connection string postgres://secret@db",
        ))
    })
    .unwrap();
    p.method("panics", |_inv, args| async move {
        if args.is_empty() {
            panic!("handler bug with secret detail");
        }
        Ok::<Value, MethodError>(Value::Null)
    })
    .unwrap();
    p.method("echo", |_inv, args| async move {
        Ok::<Value, MethodError>(Value::Array(args))
    })
    .unwrap();
}

#[tokio::test]
async fn a_methods_own_error_is_400_with_its_fields() {
    let p = platform().await;
    methods(&p);
    let s = app(&p).await;
    let r = s.post_empty("/methods/own-error").await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json,
        json!({"error": "title-required", "reason": "A todo needs a title",
               "details": {"field": "title"}, "data": {"max": 80}})
    );
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
}

#[tokio::test]
async fn an_errors_own_status_is_used() {
    let p = platform().await;
    methods(&p);
    let s = app(&p).await;
    let r = s.post_empty("/methods/custom-status").await;
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json,
        json!({"error": "conflict", "reason": "Already done"})
    );
}

#[tokio::test]
async fn internal_errors_and_panics_are_500_with_a_hidden_message() {
    let p = platform().await;
    methods(&p);
    let s = app(&p).await;
    let hidden = json!({"error": "internal-server-error", "reason": "Internal server error"});
    let r = s.post_empty("/methods/internal").await;
    assert_eq!((r.status, &r.json), (500, &hidden));
    assert!(!r.text.contains("secret"));
    let r = s.post_empty("/methods/panics").await;
    assert_eq!((r.status, &r.json), (500, &hidden));
    assert!(!r.text.contains("secret"));
    // The server is still up.
    let r = s.post("/methods/panics", json!([1])).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn unknown_routes_and_methods_are_json() {
    let p = platform().await;
    methods(&p);
    let s = app(&p).await;
    let r = s.post_empty("/methods/nope").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json["error"], "not-found");
    let r = s.get("/").await;
    assert_eq!(r.status, 404);
    assert!(r.json["reason"].is_string());
    let r = s.get("/methods/echo").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.json["error"], "method-not-allowed");
    assert_eq!(r.header("allow"), Some("OPTIONS, POST"));
}

#[tokio::test]
async fn bad_bodies_are_400_class_json() {
    let p = platform().await;
    methods(&p);
    let s = app(&p).await;
    let r = s
        .post_raw("/methods/echo", "application/json", "{\"a\": ")
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-json");
    for body in ["5", "\"text\"", "null", "true"] {
        let r = s.post_raw("/methods/echo", "application/json", body).await;
        assert_eq!(r.status, 400, "{body}");
        assert_eq!(r.json["error"], "invalid-arguments");
    }
    let r = s.post_raw("/methods/echo", "text/plain", "hello").await;
    assert_eq!(r.status, 415);
    assert_eq!(r.json["error"], "unsupported-media-type");
    let r = s
        .post_raw("/methods/echo", "application/json", "[\u{0}]")
        .await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let p = platform().await;
    methods(&p);
    let s = app(&p).await; // body limit 1024 bytes
    let big = json!(["x".repeat(2000)]);
    let r = s.post("/methods/echo", big).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.json["error"], "payload-too-large");
    // Without a Content-Length (a chunked body) the limit holds as well.
    let (status, body) =
        chunked_post(&s.base, "/methods/echo", &["[\"", &"y".repeat(1500), "\"]"]).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("payload-too-large"));
    // Just under the limit is fine.
    let r = s.post("/methods/echo", json!(["z".repeat(900)])).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn the_default_limit_is_50_mb_and_refused_before_reading() {
    let p = platform().await;
    methods(&p);
    let s = serve(AutoApi::new(p.clone()).router().unwrap()).await;
    // Announce 50 MB + 1 byte and send none of it: the reply comes from the header alone.
    let over = portico_auto::DEFAULT_BODY_LIMIT + 1;
    let (status, body) = raw_request(
        &s.base,
        &format!(
            "POST /methods/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {over}\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("payload-too-large"));
}

/// Sends raw bytes and returns (status, raw reply).
async fn raw_request(base: &str, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The server may answer and close before reading everything; a write error is fine then.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let status = reply
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, reply)
}

/// Sends a chunked POST over a raw socket (no Content-Length) and returns (status, raw reply).
async fn chunked_post(base: &str, path: &str, chunks: &[&str]) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for chunk in chunks {
        request.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
    }
    request.push_str("0\r\n\r\n");
    raw_request(base, &request).await
}

#[tokio::test]
async fn panics_in_rules_and_extractors_are_500_and_the_server_lives_on() {
    let p = platform().await;
    methods(&p);
    p.collection("fragile")
        .allow(portico_platform::Rules::new().insert(|_u, doc| async move {
            if doc.contains_key("boom") {
                panic!("rule bug");
            }
            true
        }));
    p.method_with_options(
        "bad-extractor",
        {
            let mut o = portico_platform::MethodOptions::default();
            o.args_extractor = Some(portico_auto::args_extractor(
                |_req| -> std::future::Ready<Result<Vec<Value>, MethodError>> {
                    panic!("extractor bug")
                },
            ));
            o
        },
        |_inv, _args| async move { Ok::<Value, MethodError>(Value::Null) },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s.post("/fragile", json!({"boom": 1})).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json["reason"], "Internal server error");
    let r = s.post_empty("/methods/bad-extractor").await;
    assert_eq!(r.status, 500);
    assert!(!r.text.contains("extractor bug"));
    let r = s.post("/fragile", json!({"fine": 1})).await;
    assert_eq!(r.status, 200);
}
