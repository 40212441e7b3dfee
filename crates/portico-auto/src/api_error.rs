//! The JSON error handler: the one place where errors become HTTP replies.
//!
//! Every failure the auto API reports — a method's own error, an internal failure, a malformed
//! body, an unknown route — is an [`ApiError`] and leaves as
//! `{"error": code, "reason": text, "details"?: ..., "data"?: ...}` with a status chosen by the
//! spec's rules: a method's own error is 400 unless it names another status; an internal error is
//! 500 (or the status it carries) and its message is logged, never sent.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};
use portico_edge::BodyError;
use portico_platform::MethodError;
use serde_json::{Map, Value};

/// The code and reason every internal error is reduced to.
const INTERNAL_CODE: &str = "internal-server-error";
const INTERNAL_REASON: &str = "Internal server error";

/// An error on its way to the client as a JSON body.
///
/// Build one with the constructors below, or convert a platform [`MethodError`] or
/// [`portico_platform::Error`] with `From`. It implements [`IntoResponse`].
#[derive(Debug, Clone)]
pub struct ApiError(Box<Repr>);

/// The fields of an [`ApiError`], boxed so that `Result<T, ApiError>` stays small.
#[derive(Debug, Clone)]
struct Repr {
    status: StatusCode,
    error: String,
    reason: String,
    details: Option<Value>,
    data: Option<Value>,
    headers: HeaderMap,
}

impl ApiError {
    /// An error with this status, error code and human-readable reason.
    pub fn new(status: StatusCode, error: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError(Box::new(Repr {
            status,
            error: error.into(),
            reason: reason.into(),
            details: None,
            data: None,
            headers: HeaderMap::new(),
        }))
    }

    /// An internal error: `message` is logged; the client sees only
    /// `{"error":"internal-server-error","reason":"Internal server error"}` with status 500.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        tracing::error!(error = %message, "internal error in auto API request");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            INTERNAL_CODE,
            INTERNAL_REASON,
        )
    }

    /// 400 with the given code and reason.
    pub fn bad_request(error: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, error, reason)
    }

    /// 404 for a request no route answers.
    pub fn route_not_found(method: &http::Method, path: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not-found",
            format!("No route for {method} {path}"),
        )
    }

    /// 405 for a path that exists but not with this HTTP method; `allow` lists the methods it has.
    pub fn method_not_allowed(method: &http::Method, path: &str, allow: &[http::Method]) -> Self {
        let list = allow
            .iter()
            .map(http::Method::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        let mut err = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            format!("{method} is not allowed on {path}"),
        );
        if let Ok(value) = HeaderValue::from_str(&list) {
            err.0.headers.insert(http::header::ALLOW, value);
        }
        err
    }

    /// 403 `{"error":"access-denied","reason":"Access denied"}`: an allow/deny rule refused a write.
    pub fn access_denied() -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "access-denied", "Access denied")
    }

    /// 413 for a body over `limit` bytes.
    pub fn payload_too_large(limit: usize) -> Self {
        ApiError::from(BodyError::TooLarge { limit })
    }

    /// 401 `{"error":"unauthorized","reason":"Incorrect credentials"}`, the one reply for every
    /// failed login.
    pub fn incorrect_credentials() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Incorrect credentials",
        )
    }

    /// 429 with a `Retry-After` header of `retry_after` (rounded up to whole seconds).
    pub fn too_many_requests(retry_after: std::time::Duration) -> Self {
        let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let seconds = seconds.max(1);
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too-many-requests",
            format!("Too many attempts; retry in {seconds} s"),
        )
        .with_header(http::header::RETRY_AFTER, HeaderValue::from(seconds))
    }

    /// Adds `details` to the body.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.0.details = Some(details);
        self
    }

    /// Adds `data` to the body.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.0.data = Some(data);
        self
    }

    /// Adds a response header (such as `Allow` or `Retry-After`).
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.0.headers.insert(name, value);
        self
    }

    /// The HTTP status of the reply.
    pub fn status_code(&self) -> StatusCode {
        self.0.status
    }

    /// The error code (the body's `error`).
    pub fn error(&self) -> &str {
        &self.0.error
    }

    /// The human-readable reason (the body's `reason`).
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(self.0.error.clone()));
        body.insert("reason".into(), Value::String(self.0.reason.clone()));
        if let Some(details) = &self.0.details {
            body.insert("details".into(), details.clone());
        }
        if let Some(data) = &self.0.data {
            body.insert("data".into(), data.clone());
        }
        Value::Object(body)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.0.status.as_u16(),
            self.0.error,
            self.0.reason
        )
    }
}

impl std::error::Error for ApiError {}

impl From<MethodError> for ApiError {
    /// A method's own error keeps its code, reason, details and data, with its status or 400.
    /// An internal one keeps only its status (500 unless it set another); its text is hidden.
    fn from(err: MethodError) -> Self {
        let status = err.status.and_then(|s| StatusCode::from_u16(s).ok());
        if err.internal {
            // `MethodError::internal` logged the message when it was made.
            return ApiError::new(
                status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                INTERNAL_CODE,
                INTERNAL_REASON,
            );
        }
        let reason = err.reason.unwrap_or_else(|| err.error.clone());
        let mut headers = HeaderMap::new();
        // A database or files store that cannot be reached now: say when to try again.
        if status == Some(StatusCode::SERVICE_UNAVAILABLE) && err.error == "service-unavailable" {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(1u32));
        }
        ApiError(Box::new(Repr {
            status: status.unwrap_or(StatusCode::BAD_REQUEST),
            error: err.error,
            reason,
            details: err.details.map(|d| *d),
            data: err.data.map(|d| *d),
            headers,
        }))
    }
}

impl From<BodyError> for ApiError {
    /// The one place a body the edge could not read or parse becomes a reply: the status is
    /// [`BodyError::status`], the reason its text.
    fn from(err: BodyError) -> Self {
        let code = match &err {
            BodyError::TooLarge { .. } => "payload-too-large",
            BodyError::MalformedJson(_) | BodyError::JsonSentAsForm => "invalid-json",
            BodyError::MalformedForm(_) => "invalid-form",
            BodyError::UnsupportedMediaType => "unsupported-media-type",
            _ => "invalid-body",
        };
        ApiError::new(err.status(), code, err.to_string())
    }
}

impl From<portico_platform::Error> for ApiError {
    /// Through the platform's own conversion, whose statuses come from
    /// [`portico_platform::Error::status_code`]: access denied is 403 "Access denied", a
    /// duplicate `_id` 409, other client errors keep their message and status, anything else is
    /// internal (logged, hidden).
    fn from(err: portico_platform::Error) -> Self {
        ApiError::from(MethodError::from(err))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        let mut response = (self.0.status, Json(body)).into_response();
        response.headers_mut().extend(self.0.headers);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn own_error_defaults_to_400_and_keeps_fields() {
        let err = MethodError::new("bad-title", "Title is required")
            .with_details(json!({"field": "title"}))
            .with_data(json!([1]));
        let api = ApiError::from(err);
        assert_eq!(api.status_code(), StatusCode::BAD_REQUEST);
        assert_eq!(
            api.body(),
            json!({"error": "bad-title", "reason": "Title is required",
                   "details": {"field": "title"}, "data": [1]})
        );
    }

    #[test]
    fn an_unreachable_store_says_when_to_retry() {
        let api = ApiError::from(
            MethodError::new("service-unavailable", "The database is unavailable").with_status(503),
        );
        let response = api.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[http::header::RETRY_AFTER], "1");
    }

    #[test]
    fn own_status_is_kept() {
        let api = ApiError::from(MethodError::new("teapot", "short and stout").with_status(418));
        assert_eq!(api.status_code().as_u16(), 418);
    }

    #[test]
    fn internal_error_hides_its_message() {
        let api = ApiError::from(MethodError::internal("database password is hunter2"));
        assert_eq!(api.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            api.body(),
            json!({"error": "internal-server-error", "reason": "Internal server error"})
        );
        let api = ApiError::internal("secret detail");
        assert!(!api.body().to_string().contains("secret"));
    }

    #[test]
    fn access_denied_shape() {
        let api = ApiError::from(portico_platform::Error::AccessDenied);
        assert_eq!(api.status_code(), StatusCode::FORBIDDEN);
        assert_eq!(api.body()["reason"], "Access denied");
        assert_eq!(api.body()["error"], "access-denied");
    }

    #[test]
    fn duplicate_ids_are_409_and_body_errors_keep_their_status() {
        let duplicate = portico_platform::Error::from(portico_store::Error::DuplicateId {
            collection: "c".into(),
            id: "x".into(),
        });
        assert_eq!(
            ApiError::from(duplicate).status_code(),
            StatusCode::CONFLICT
        );
        let api = ApiError::from(BodyError::UnsupportedMediaType);
        assert_eq!(api.status_code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(api.error(), "unsupported-media-type");
        let api = ApiError::from(BodyError::TooLarge { limit: 3 });
        assert_eq!(api.status_code(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(api.error(), "payload-too-large");
    }

    #[test]
    fn retry_after_rounds_up() {
        let api = ApiError::too_many_requests(std::time::Duration::from_millis(1500));
        let response = api.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[http::header::RETRY_AFTER], "2");
    }

    #[test]
    fn method_not_allowed_lists_allow() {
        let api = ApiError::method_not_allowed(
            &http::Method::GET,
            "/methods/add",
            &[http::Method::OPTIONS, http::Method::POST],
        );
        let response = api.into_response();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[http::header::ALLOW], "OPTIONS, POST");
    }
}
