//! [`AdminError`]: the one place the admin API turns errors into replies.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

/// An error reply: `{"error": message}` with its status. Internal causes are logged, never sent.
#[derive(Debug)]
pub(crate) struct AdminError {
    status: StatusCode,
    message: String,
}

/// `Result` of an admin API handler.
pub(crate) type AdminResult<T> = Result<T, AdminError>;

impl AdminError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        AdminError {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        AdminError::new(StatusCode::BAD_REQUEST, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        AdminError::new(StatusCode::NOT_FOUND, message)
    }

    pub(crate) fn internal() -> Self {
        AdminError::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
    }
}

impl From<portico_platform::Error> for AdminError {
    fn from(err: portico_platform::Error) -> Self {
        if err.is_client_error() {
            let status = StatusCode::from_u16(err.status_code()).unwrap_or(StatusCode::BAD_REQUEST);
            AdminError::new(status, err.to_string())
        } else {
            tracing::error!(error = %err, "admin API call failed");
            AdminError::internal()
        }
    }
}

impl From<portico_store::Error> for AdminError {
    fn from(err: portico_store::Error) -> Self {
        AdminError::from(portico_platform::Error::from(err))
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

/// The JSON body of a request, or a 400 saying why it is not one.
pub(crate) fn json_body(body: &[u8]) -> AdminResult<serde_json::Value> {
    serde_json::from_slice(body)
        .map_err(|e| AdminError::bad_request(format!("The body is not JSON: {e}")))
}

/// The JSON object body of a request, or a 400.
pub(crate) fn object_body(body: &[u8]) -> AdminResult<serde_json::Map<String, serde_json::Value>> {
    match json_body(body)? {
        serde_json::Value::Object(map) => Ok(map),
        _ => Err(AdminError::bad_request("The body must be a JSON object")),
    }
}
