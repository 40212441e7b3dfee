//! Methods as endpoints: the args rule, custom urls and HTTP methods, extractors, status codes.

use portico_auto::{ArgsRequest, AutoApi, args_extractor};
use portico_edge::ParsedBody;
use portico_platform::{HttpMethod, MethodError, MethodOptions, Platform, arg};
use serde_json::{Value, json};

use crate::common::{Server, platform, serve};

async fn app(platform: &Platform) -> Server {
    serve(AutoApi::new(platform.clone()).router().expect("router")).await
}

/// A method that answers its own arguments.
fn echo(platform: &Platform) {
    platform
        .method("echo", |_inv, args| async move {
            Ok::<Value, MethodError>(Value::Array(args))
        })
        .expect("echo");
}

#[tokio::test]
async fn json_array_body_gives_positional_args() {
    let p = platform().await;
    p.method("add", |_inv, args| async move {
        Ok::<Value, MethodError>(json!(arg::<i64>(&args, 0)? + arg::<i64>(&args, 1)?))
    })
    .unwrap();
    let s = app(&p).await;
    let r = s.post("/methods/add", json!([2, 3])).await;
    assert_eq!((r.status, r.json), (200, json!(5)));
}

#[tokio::test]
async fn one_object_is_the_only_arg_and_empty_body_gives_none() {
    let p = platform().await;
    echo(&p);
    let s = app(&p).await;
    let r = s.post("/methods/echo", json!({"a": 1})).await;
    assert_eq!((r.status, r.json), (200, json!([{"a": 1}])));
    let r = s.post_empty("/methods/echo").await;
    assert_eq!((r.status, r.json), (200, json!([])));
}

#[tokio::test]
async fn form_body_is_one_object_of_strings() {
    let p = platform().await;
    echo(&p);
    let s = app(&p).await;
    let r = s
        .post_raw(
            "/methods/echo",
            "application/x-www-form-urlencoded",
            "title=Buy+milk&count=3&tags[]=a&tags[]=b",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json,
        json!([{"title": "Buy milk", "count": "3", "tags": ["a", "b"]}])
    );
}

#[tokio::test]
async fn custom_url_and_http_method_with_url_args() {
    let p = platform().await;
    p.method_with_options(
        "rename",
        {
            let mut o = MethodOptions::default();
            o.url = Some("lists/:0/rename".into());
            o.http_method = Some(HttpMethod::Put);
            o
        },
        |_inv, args| async move { Ok::<Value, MethodError>(Value::Array(args)) },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s
        .send(
            s.client
                .put(s.url("/lists/l%201/rename"))
                .json(&json!({"name": "x"})),
        )
        .await;
    assert_eq!((r.status, r.json), (200, json!(["l 1", {"name": "x"}])));
    // The default url is not there; POST on the custom url is not allowed.
    assert_eq!(s.post("/methods/rename", json!([])).await.status, 404);
    let r = s.post("/lists/a/rename", json!([])).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.json["error"], "method-not-allowed");
}

#[tokio::test]
async fn args_extractor_reads_the_parsed_request() {
    let p = platform().await;
    p.method_with_options(
        "sum-form",
        {
            let mut o = MethodOptions::default();
            o.args_extractor = Some(args_extractor(|req: ArgsRequest| async move {
                // Form fields are strings: parse them here, as the spec says.
                let ParsedBody::Form(fields) = &req.body else {
                    return Err(MethodError::invalid_arguments("send a form"));
                };
                let mut total = 0i64;
                for v in fields.values() {
                    total += v
                        .as_str()
                        .and_then(|v| v.parse::<i64>().ok())
                        .ok_or_else(|| MethodError::invalid_arguments("numbers only"))?;
                }
                Ok(vec![json!(total), json!(req.header("x-tag"))])
            }));
            o
        },
        |_inv, args| async move { Ok::<Value, MethodError>(Value::Array(args)) },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s
        .send(
            s.client
                .post(s.url("/methods/sum-form"))
                .header("content-type", "application/x-www-form-urlencoded")
                .header("x-tag", "t1")
                .body("a=1&b=2&c=39"),
        )
        .await;
    assert_eq!((r.status, r.json), (200, json!([42, "t1"])));
    let r = s
        .post_raw(
            "/methods/sum-form",
            "application/x-www-form-urlencoded",
            "a=x",
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-arguments");
}

#[tokio::test]
async fn set_http_status_code_sets_the_success_status() {
    let p = platform().await;
    p.method("create", |inv, _args| async move {
        inv.set_http_status_code(201);
        Ok::<Value, MethodError>(json!({"created": true}))
    })
    .unwrap();
    p.method("nothing", |inv, _args| async move {
        inv.set_http_status_code(204);
        Ok::<Value, MethodError>(Value::Null)
    })
    .unwrap();
    let s = app(&p).await;
    let r = s.post_empty("/methods/create").await;
    assert_eq!((r.status, r.json), (201, json!({"created": true})));
    let r = s.post_empty("/methods/nothing").await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
}

#[tokio::test]
async fn method_options_set_before_definition_through_the_api() {
    let p = platform().await;
    let api = AutoApi::new(p.clone());
    api.set_method_options("ping", {
        let mut o = MethodOptions::default();
        o.url = Some("ping".into());
        o.http_method = Some(HttpMethod::Get);
        o
    })
    .unwrap();
    p.method("ping", |_inv, _args| async move {
        Ok::<Value, MethodError>(json!("pong"))
    })
    .unwrap();
    // Too late now that it is defined.
    assert!(
        api.set_method_options("ping", MethodOptions::default())
            .is_err()
    );
    let s = serve(api.router().unwrap()).await;
    let r = s.get("/ping").await;
    assert_eq!((r.status, r.json), (200, json!("pong")));
    // HEAD is answered by GET routes, without a body.
    let r = s.send(s.client.head(s.url("/ping"))).await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
}

#[tokio::test]
async fn options_endpoint_for_method_urls() {
    let p = platform().await;
    echo(&p);
    let s = app(&p).await;
    let r = s.options("/methods/echo").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text, "");
    assert_eq!(r.header("allow"), Some("OPTIONS, POST"));
}

/// An extractor gets url parameters by name and number, the parsed query, headers and body,
/// and may await.
#[tokio::test]
async fn args_extractor_gets_params_query_headers_and_body() {
    let p = platform().await;
    p.method_with_options(
        "everything",
        {
            let mut o = MethodOptions::default();
            o.url = Some("lists/:0/items/:item".into());
            o.http_method = Some(HttpMethod::Put);
            o.args_extractor = Some(args_extractor(|req: ArgsRequest| async move {
                tokio::task::yield_now().await;
                let body = match &req.body {
                    ParsedBody::Json(value) => value.clone(),
                    other => json!(format!("{other:?}")),
                };
                Ok(vec![
                    json!(req.url_args),
                    json!(req.param("item")),
                    Value::Object(req.query.clone()),
                    json!(req.header("x-tag")),
                    body,
                    json!(req.method.as_str()),
                ])
            }));
            o
        },
        |_inv, args| async move { Ok::<Value, MethodError>(Value::Array(args)) },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s
        .send(
            s.client
                .put(s.url("/lists/l%201/items/i7?sort=asc&tags[]=a&tags[]=b"))
                .header("x-tag", "t")
                .json(&json!({"n": 1})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json,
        json!([["l 1"], "i7", {"sort": "asc", "tags": ["a", "b"]}, "t", {"n": 1}, "PUT"])
    );
    // A query whose names conflict is a 400 before the extractor runs.
    let r = s
        .send(s.client.put(s.url("/lists/x/items/y?a=1&a[b]=2")))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-query");
}
