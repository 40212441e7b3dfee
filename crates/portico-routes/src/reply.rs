//! What an endpoint returns, and how it becomes an HTTP response.
//!
//! An endpoint returns anything that implements [`IntoReply`]: a `String` or `&str`, a
//! `serde_json::Value` (object, array...), a [`Reply`] with a status code and headers, a raw
//! `http::Response` the handler built itself (sent untouched, the spec's `done()`), or a
//! `Result`/`Option` of those. `()` and `None` mean the endpoint returned nothing: a 500.

use std::fmt::Display;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::{Value, json};

/// An endpoint's reply: a body, a status code (200 by default) and headers that override the
/// API's defaults (names compared case-insensitively).
#[derive(Debug)]
pub struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: ReplyBody,
}

#[derive(Debug)]
pub(crate) enum ReplyBody {
    /// Encoded by the content type: JSON for a JSON type, a string as is otherwise.
    Value(Value),
    /// Bytes sent as they are.
    Bytes(Bytes),
    /// A JSON value already encoded compactly: sent as it is, or re-indented for a pretty API.
    Json(Bytes),
    /// A response the handler built itself.
    Raw(Box<axum::response::Response>),
    /// A streaming response (server-sent events): sent with the API's default and CORS headers
    /// added where it has none of its own, its content type kept.
    Stream(Box<axum::response::Response>),
    /// The endpoint returned nothing.
    Nothing,
    /// The endpoint failed; the message is logged, never sent.
    Failed(String),
}

impl Reply {
    /// A 200 reply with `body`. A string body is JSON-encoded unless the content type says
    /// otherwise (set `Content-Type: text/plain` to send it as is).
    pub fn new(body: impl Into<Value>) -> Reply {
        Reply {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: ReplyBody::Value(body.into()),
        }
    }

    /// A 200 reply whose body is sent as these bytes (set a content type with
    /// [`Reply::with_header`]).
    pub fn bytes(body: impl Into<Bytes>) -> Reply {
        Reply {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: ReplyBody::Bytes(body.into()),
        }
    }

    /// A 200 `text/plain` reply sent as is.
    pub fn text(body: impl Into<String>) -> Reply {
        Reply::new(Value::String(body.into()))
            .with_header("content-type", "text/plain; charset=utf-8")
    }

    /// A streaming response (such as server-sent events) sent with the API's default and CORS
    /// headers, which a browser needs to read it from another origin; the response's own
    /// headers (its content type among them) win.
    pub(crate) fn stream(response: axum::response::Response) -> Reply {
        Reply {
            status: response.status(),
            headers: Vec::new(),
            body: ReplyBody::Stream(Box::new(response)),
        }
    }

    /// A response the handler built itself: sent untouched (no default headers, no encoding).
    pub fn raw(response: axum::response::Response) -> Reply {
        Reply {
            status: response.status(),
            headers: Vec::new(),
            body: ReplyBody::Raw(Box::new(response)),
        }
    }

    /// A JSend success whose `data` is a JSON array given as the compact JSON texts of its
    /// elements (documents as stored), so they are sent without being decoded and encoded again.
    pub(crate) fn success_json_array(items: &[String]) -> Reply {
        let len = items.iter().map(|i| i.len() + 1).sum::<usize>();
        let mut body = Vec::with_capacity(len + 32);
        body.extend_from_slice(br#"{"status":"success","data":["#);
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item.as_bytes());
        }
        body.extend_from_slice(b"]}");
        Reply {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: ReplyBody::Json(Bytes::from(body)),
        }
    }

    /// A JSend success whose data is `item`, the compact JSON text of one value, embedded as
    /// it is (a stored document sent without decoding it).
    pub(crate) fn success_json(item: &str) -> Reply {
        let mut body = Vec::with_capacity(item.len() + 30);
        body.extend_from_slice(br#"{"status":"success","data":"#);
        body.extend_from_slice(item.as_bytes());
        body.push(b'}');
        Reply {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: ReplyBody::Json(Bytes::from(body)),
        }
    }

    /// A JSend success: `{"status": "success", "data": data}`.
    pub fn success(data: impl Into<Value>) -> Reply {
        Reply::new(json!({"status": "success", "data": data.into()}))
    }

    /// A JSend failure: `{"status": "fail", "message": message}` with `status`.
    pub fn fail(status: u16, message: impl Into<String>) -> Reply {
        Reply::new(json!({"status": "fail", "message": message.into()})).with_status(status)
    }

    /// A JSend error: `{"status": "error", "message": message}` with `status`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        Reply::new(json!({"status": "error", "message": message.into()})).with_status(status)
    }

    /// A 500 JSend error for an internal failure: `message` is logged, the client gets
    /// "Internal server error".
    pub fn internal(message: impl Display) -> Reply {
        Reply {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            headers: Vec::new(),
            body: ReplyBody::Failed(message.to_string()),
        }
    }

    /// Sets the status code. A code outside 100-999 becomes 500.
    pub fn with_status(mut self, status: u16) -> Reply {
        self.status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        self
    }

    /// Adds a header; it replaces a default header of the same name (case-insensitive).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// The JSON body, when the body is a JSON value.
    pub fn body(&self) -> Option<&Value> {
        match &self.body {
            ReplyBody::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Reads the spec's `{statusCode, headers, body}` object form: an object with `body` plus at
    /// least one of `statusCode` and `headers`. Any other value is a plain body.
    fn from_value(value: Value) -> Reply {
        let is_full = matches!(&value, Value::Object(m)
            if m.contains_key("body") && (m.contains_key("statusCode") || m.contains_key("headers")));
        if !is_full {
            return Reply::new(value);
        }
        let Value::Object(mut map) = value else {
            return Reply::internal("unreachable reply shape");
        };
        let body = map.remove("body").unwrap_or(Value::Null);
        let mut reply = Reply::new(body);
        match map.get("statusCode") {
            Some(Value::Number(n)) => match n.as_u64().and_then(|n| u16::try_from(n).ok()) {
                Some(code) => reply = reply.with_status(code),
                None => return Reply::internal(format!("endpoint returned statusCode {n}")),
            },
            Some(Value::Null) | None => {}
            Some(other) => return Reply::internal(format!("endpoint returned statusCode {other}")),
        }
        if let Some(Value::Object(headers)) = map.get("headers") {
            for (name, value) in headers {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                reply = reply.with_header(name.clone(), value);
            }
        }
        reply
    }
}

/// Anything an endpoint may return.
pub trait IntoReply {
    /// Converts into a [`Reply`].
    fn into_reply(self) -> Reply;
}

impl IntoReply for Reply {
    fn into_reply(self) -> Reply {
        self
    }
}

/// JSON `null` is no reply at all: like `()`, a 500 (an endpoint that means "nothing" returns
/// an explicit body such as `{}` or `{"statusCode": 204, "body": null}`).
impl IntoReply for Value {
    fn into_reply(self) -> Reply {
        if self.is_null() {
            return ().into_reply();
        }
        Reply::from_value(self)
    }
}

impl IntoReply for String {
    fn into_reply(self) -> Reply {
        Reply::new(self)
    }
}

impl IntoReply for &'static str {
    fn into_reply(self) -> Reply {
        Reply::new(self)
    }
}

impl IntoReply for Vec<Value> {
    fn into_reply(self) -> Reply {
        Reply::new(Value::Array(self))
    }
}

impl IntoReply for serde_json::Map<String, Value> {
    fn into_reply(self) -> Reply {
        Reply::from_value(Value::Object(self))
    }
}

impl IntoReply for axum::response::Response {
    fn into_reply(self) -> Reply {
        Reply::raw(self)
    }
}

impl IntoReply for () {
    fn into_reply(self) -> Reply {
        Reply {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            headers: Vec::new(),
            body: ReplyBody::Nothing,
        }
    }
}

impl<T: IntoReply> IntoReply for Option<T> {
    fn into_reply(self) -> Reply {
        match self {
            Some(t) => t.into_reply(),
            None => ().into_reply(),
        }
    }
}

/// `Err(reply)` is sent as it is, so handlers can return `Result<T, Reply>` and use `?` on
/// platform and store errors (see the `From` impls of [`Reply`]).
impl<T: IntoReply> IntoReply for Result<T, Reply> {
    fn into_reply(self) -> Reply {
        match self {
            Ok(t) => t.into_reply(),
            Err(reply) => reply,
        }
    }
}

/// The platform's one mapping of errors to statuses ([`portico_platform::Error::status_code`]):
/// a client error keeps its message (400, 403, 404, 409 for a duplicate `_id`...); any other
/// error is a 500 whose text is logged, not sent.
impl From<portico_platform::Error> for Reply {
    fn from(e: portico_platform::Error) -> Reply {
        if e.is_unavailable() {
            return unavailable(e);
        }
        let status = e.status_code();
        if status >= 500 {
            return Reply::internal(e);
        }
        let message = match &e {
            portico_platform::Error::Store(s) if s.kind() == portico_store::ErrorKind::Conflict => {
                "An item with this _id exists already".to_owned()
            }
            _ => e.to_string(),
        };
        Reply::error(status, message)
    }
}

/// As a platform error (see above): a duplicate `_id` is 409, bad input 400, the rest 500.
impl From<portico_store::Error> for Reply {
    fn from(e: portico_store::Error) -> Reply {
        Reply::from(portico_platform::Error::from(e))
    }
}

/// A files error: the platform's own errors as above, a store failure 500 (logged, not sent),
/// an unsatisfiable range 416 with the size in `Content-Range`, the rest their own status.
impl From<portico_platform::FileError> for Reply {
    fn from(e: portico_platform::FileError) -> Reply {
        match e {
            portico_platform::FileError::Platform(p) => Reply::from(p),
            portico_platform::FileError::Unavailable(e) => {
                tracing::warn!(error = %e, "file store unavailable");
                Reply::error(503, "The file store is unavailable; try again shortly")
                    .with_header("Retry-After", RETRY_AFTER_SECS.to_string())
            }
            portico_platform::FileError::Busy(message) => {
                Reply::error(503, message).with_header("Retry-After", RETRY_AFTER_SECS.to_string())
            }
            e if e.status() >= 500 => Reply::internal(e),
            portico_platform::FileError::RangeNotSatisfiable(size) => {
                Reply::error(416, e.to_string())
                    .with_header("Content-Range", format!("bytes */{size}"))
            }
            e => Reply::error(e.status(), e.to_string()),
        }
    }
}

/// The `Retry-After` of a 503 for a database or files store that cannot be reached, in
/// seconds.
const RETRY_AFTER_SECS: u32 = 1;

/// The database cannot be reached: 503 with `Retry-After`, the details logged, not sent.
fn unavailable(e: impl Display) -> Reply {
    tracing::warn!(error = %e, "database unavailable");
    Reply::error(503, "Service unavailable, try again shortly")
        .with_header("Retry-After", RETRY_AFTER_SECS.to_string())
}

/// Any other error is a 500 whose text is logged, not sent.
impl<T: IntoReply, E: Display> IntoReply for Result<T, E> {
    fn into_reply(self) -> Reply {
        match self {
            Ok(t) => t.into_reply(),
            Err(e) => Reply::internal(e),
        }
    }
}

impl<T: IntoReply> IntoReply for (StatusCode, T) {
    fn into_reply(self) -> Reply {
        let mut reply = self.1.into_reply();
        reply.status = self.0;
        reply
    }
}

/// A reply used outside an API (in a host's own axum handler): rendered compactly with a JSON
/// content type, without the API's default or CORS headers.
impl axum::response::IntoResponse for Reply {
    fn into_response(self) -> axum::response::Response {
        let mut base = HeaderMap::new();
        base.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        Renderer { pretty: false }.render(self, base)
    }
}

/// How replies are encoded: the API's pretty-JSON flag and its base headers.
#[derive(Clone, Copy)]
pub(crate) struct Renderer {
    pub(crate) pretty: bool,
}

impl Renderer {
    /// Turns a reply into a response. `base` holds the built-in and default headers, already
    /// merged; the reply's own headers override them by name.
    pub(crate) fn render(&self, reply: Reply, base: HeaderMap) -> axum::response::Response {
        let Reply {
            mut status,
            headers,
            body,
        } = reply;
        let body = match body {
            ReplyBody::Raw(response) => return *response,
            ReplyBody::Stream(response) => {
                let mut response = *response;
                for (name, value) in &base {
                    if !response.headers().contains_key(name) {
                        response.headers_mut().insert(name, value.clone());
                    }
                }
                return response;
            }
            ReplyBody::Nothing => {
                portico_platform::error_in_request!("endpoint returned nothing");
                status = StatusCode::INTERNAL_SERVER_ERROR;
                ReplyBody::Value(
                    json!({"status": "error", "message": "Endpoint returned no response"}),
                )
            }
            ReplyBody::Failed(message) => {
                portico_platform::error_in_request!(error = %message, "endpoint failed");
                status = StatusCode::INTERNAL_SERVER_ERROR;
                ReplyBody::Value(json!({"status": "error", "message": "Internal server error"}))
            }
            other => other,
        };
        let mut map = base;
        for (name, value) in headers {
            match (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                (Ok(n), Ok(v)) => {
                    map.insert(n, v);
                }
                _ => {
                    tracing::error!(header = %name, "endpoint returned an invalid header");
                    return self
                        .render(Reply::error(500, "Internal server error"), HeaderMap::new());
                }
            }
        }
        let is_json = map
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|ct| {
                let ct = ct.to_ascii_lowercase();
                ct.contains("json") || ct.contains("javascript")
            })
            .unwrap_or(false);
        let bytes = match body {
            ReplyBody::Bytes(b) => b,
            ReplyBody::Json(b) if !self.pretty => b,
            // Pretty APIs are for reading, not speed: decode and indent (the text is JSON we
            // encoded, so decoding succeeds; if not, it is sent as it is).
            ReplyBody::Json(b) => match serde_json::from_slice::<Value>(&b) {
                Ok(v) => Bytes::from(self.encode_json(&v)),
                Err(_) => b,
            },
            ReplyBody::Value(Value::String(s)) if !is_json => Bytes::from(s),
            ReplyBody::Value(v) => Bytes::from(self.encode_json(&v)),
            ReplyBody::Raw(_)
            | ReplyBody::Stream(_)
            | ReplyBody::Nothing
            | ReplyBody::Failed(_) => Bytes::new(),
        };
        let mut response = axum::response::Response::new(Body::from(bytes));
        *response.status_mut() = status;
        *response.headers_mut() = map;
        response
    }

    pub(crate) fn encode_json(&self, value: &Value) -> Vec<u8> {
        let encoded = if self.pretty {
            serde_json::to_vec_pretty(value)
        } else {
            serde_json::to_vec(value)
        };
        // Serialising a Value cannot fail (keys are strings); fall back to null to be safe.
        encoded.unwrap_or_else(|_| b"null".to_vec())
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    async fn body_of(r: axum::response::Response) -> String {
        let b = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(b.to_vec()).unwrap()
    }

    fn json_base() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/json"));
        h
    }

    #[tokio::test]
    async fn strings_are_json_unless_text() {
        let r = Renderer { pretty: false };
        let resp = r.render("hi".into_reply(), json_base());
        assert_eq!(body_of(resp).await, "\"hi\"");
        let resp = r.render(Reply::text("hi"), json_base());
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(body_of(resp).await, "hi");
    }

    #[tokio::test]
    async fn full_object_form() {
        let r = Renderer { pretty: false };
        let v = json!({"statusCode": 404, "headers": {"X-A": "1"}, "body": {"status": "fail"}});
        let resp = r.render(v.into_reply(), json_base());
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.headers()["x-a"], "1");
        assert_eq!(body_of(resp).await, r#"{"status":"fail"}"#);
    }

    #[tokio::test]
    async fn body_without_status_or_headers_is_plain() {
        let r = Renderer { pretty: false };
        let resp = r.render(json!({"body": 1}).into_reply(), json_base());
        assert_eq!(resp.status(), 200);
        assert_eq!(body_of(resp).await, r#"{"body":1}"#);
    }

    #[tokio::test]
    async fn reply_errors_are_sent_as_they_are() {
        let r = Renderer { pretty: false };
        let res: Result<Value, Reply> = Err(Reply::fail(404, "nope"));
        let resp = r.render(res.into_reply(), json_base());
        assert_eq!(resp.status(), 404);
        assert_eq!(body_of(resp).await, r#"{"status":"fail","message":"nope"}"#);
        let denied: Reply = portico_platform::Error::AccessDenied.into();
        assert_eq!(denied.status(), 403);
        let internal: Reply = portico_platform::Error::Internal("disk on fire".into()).into();
        assert_eq!(internal.status(), 500);
        assert!(
            !body_of(r.render(internal, json_base()))
                .await
                .contains("fire")
        );
    }

    #[tokio::test]
    async fn pretty_json_is_indented() {
        let r = Renderer { pretty: true };
        let resp = r.render(json!({"a": 1}).into_reply(), json_base());
        assert_eq!(body_of(resp).await, "{\n  \"a\": 1\n}");
    }

    #[tokio::test]
    async fn nothing_and_errors_are_500() {
        let r = Renderer { pretty: false };
        let resp = r.render(().into_reply(), json_base());
        assert_eq!(resp.status(), 500);
        let err: Result<Value, String> = Err("secret db text".into());
        let resp = r.render(err.into_reply(), json_base());
        assert_eq!(resp.status(), 500);
        let text = body_of(resp).await;
        assert!(!text.contains("secret"));
        assert!(text.contains("\"status\":\"error\""));
    }
}
