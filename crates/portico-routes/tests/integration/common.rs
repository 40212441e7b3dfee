//! Helpers shared by the integration tests.

use axum::Router;
use axum::body::Body;
use http::{HeaderMap, Method, Request};
use http_body_util::BodyExt;
use portico_platform::{NewUser, Password, Platform};
use portico_routes::{ApiOptions, DelayRange};
use serde_json::Value;
use tower::ServiceExt;

/// A platform on `memory:`.
pub(crate) async fn memory() -> Platform {
    Platform::open("memory:").await.expect("memory platform")
}

/// API options for tests: no 401/403 delay.
pub(crate) fn opts() -> ApiOptions {
    {
        let mut o = ApiOptions::default();
        o.auth_failure_delay = DelayRange::none();
        o
    }
}

/// A reply, read whole.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) text: String,
}

impl Resp {
    /// The body as JSON (Null when it is not JSON).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// A header as a string.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Sends a request through the router.
pub(crate) async fn send(router: &Router, req: Request<Body>) -> Resp {
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Resp {
        status,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// A request builder with a method, uri and optional token.
pub(crate) fn req(method: &str, uri: &str, token: Option<&str>) -> http::request::Builder {
    let mut b = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).expect("method"))
        .uri(uri);
    if let Some(t) = token {
        b = b.header("x-auth-token", t);
    }
    b
}

/// Sends a request without body.
pub(crate) async fn call(router: &Router, method: &str, uri: &str, token: Option<&str>) -> Resp {
    send(
        router,
        req(method, uri, token)
            .body(Body::empty())
            .expect("request"),
    )
    .await
}

/// Sends a JSON body.
pub(crate) async fn call_json(
    router: &Router,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: &Value,
) -> Resp {
    send(
        router,
        req(method, uri, token)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("request"),
    )
    .await
}

/// Creates a user with a password and roles; returns its id.
pub(crate) async fn user(
    platform: &Platform,
    username: &str,
    password: &str,
    roles: &[&str],
) -> String {
    platform
        .accounts()
        .create_user(NewUser {
            username: Some(username.into()),
            email: Some(format!("{username}@example.com")),
            password: Some(Password::Plain(password.into())),
            profile: None,
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        })
        .await
        .expect("create user")
}

/// A login token for a user (without going through HTTP).
pub(crate) async fn token_for(platform: &Platform, user_id: &str) -> String {
    platform
        .accounts()
        .new_login_token(user_id)
        .await
        .expect("token")
        .token
}
