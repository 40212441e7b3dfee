//! [`MethodError`]: the error a method or publication hands back to its caller.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The error of a method or publication, shaped as the auto API's error body
/// `{"error": code, "reason": text, "details"?, "data"?}`.
///
/// A handler builds one with [`MethodError::new`] (shown to the client as is) or
/// [`MethodError::internal`] (logged; the client sees only "Internal server error").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}{}", reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
pub struct MethodError {
    /// A short machine-readable code, such as `"not-authorized"`.
    pub error: String,
    /// A human-readable explanation that may be shown to the client.
    pub reason: Option<String>,
    /// Further details (for example the list of validation failures). Boxed to keep
    /// `Result<T, MethodError>` small.
    pub details: Option<Box<Value>>,
    /// Extra data for the client. Boxed to keep `Result<T, MethodError>` small.
    pub data: Option<Box<Value>>,
    /// The HTTP status to answer with; `None` means the front door's default (400).
    pub status: Option<u16>,
    /// True for an internal error whose real message was logged, not kept here.
    pub internal: bool,
}

impl MethodError {
    /// A client error with a code and a reason.
    pub fn new(error: impl Into<String>, reason: impl Into<String>) -> MethodError {
        MethodError {
            error: error.into(),
            reason: Some(reason.into()),
            details: None,
            data: None,
            status: None,
            internal: false,
        }
    }

    /// An internal error: `message` is logged (with the request's `request_id` inside a
    /// request, see [`crate::request_scope`]), the client sees `internal-server-error` /
    /// "Internal server error" with status 500.
    pub fn internal(message: impl std::fmt::Display) -> MethodError {
        crate::error_in_request!(error = %message, "internal error in a method or publication");
        MethodError {
            error: "internal-server-error".into(),
            reason: Some("Internal server error".into()),
            details: None,
            data: None,
            status: Some(500),
            internal: true,
        }
    }

    /// The error `invalid-arguments` (status 400) with `reason`, for arguments of the wrong shape.
    pub fn invalid_arguments(reason: impl Into<String>) -> MethodError {
        MethodError::new("invalid-arguments", reason).with_status(400)
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> MethodError {
        self.status = Some(status);
        self
    }

    /// Sets `details`.
    pub fn with_details(mut self, details: Value) -> MethodError {
        self.details = Some(Box::new(details));
        self
    }

    /// Sets `data`.
    pub fn with_data(mut self, data: Value) -> MethodError {
        self.data = Some(Box::new(data));
        self
    }

    /// The status to answer with: the one set, else 400.
    pub fn status_or_default(&self) -> u16 {
        self.status.unwrap_or(400)
    }

    /// The JSON error body `{"error", "reason"?, "details"?, "data"?}`.
    pub fn to_body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(self.error.clone()));
        if let Some(reason) = &self.reason {
            body.insert("reason".into(), Value::String(reason.clone()));
        }
        if let Some(details) = &self.details {
            body.insert("details".into(), (**details).clone());
        }
        if let Some(data) = &self.data {
            body.insert("data".into(), (**data).clone());
        }
        Value::Object(body)
    }
}

/// Reads positional argument `index` as a `T`; a missing or ill-shaped argument is
/// [`MethodError::invalid_arguments`] naming the position and what was expected.
///
/// ```
/// # use portico_platform::{arg, MethodError};
/// # use serde_json::json;
/// let args = vec![json!("Ada"), json!(36)];
/// let name: String = arg(&args, 0)?;
/// let age: u32 = arg(&args, 1)?;
/// assert_eq!((name.as_str(), age), ("Ada", 36));
/// assert!(arg::<u32>(&args, 0).is_err());
/// # Ok::<(), MethodError>(())
/// ```
///
/// # Errors
/// [`MethodError::invalid_arguments`] when the argument is missing or of the wrong shape.
pub fn arg<T: DeserializeOwned>(args: &[Value], index: usize) -> Result<T, MethodError> {
    let value = args.get(index).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| {
        MethodError::invalid_arguments(format!("argument {index} has the wrong shape: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn body_holds_only_what_is_set() {
        let e = MethodError::new("nope", "Not allowed").with_data(json!({"x": 1}));
        assert_eq!(
            e.to_body(),
            json!({"error": "nope", "reason": "Not allowed", "data": {"x": 1}})
        );
        assert_eq!(e.status_or_default(), 400);
        assert_eq!(e.to_string(), "nope: Not allowed");
    }

    #[test]
    fn internal_errors_hide_their_message() {
        let e = MethodError::internal("database on fire");
        assert!(e.internal);
        assert_eq!(e.status, Some(500));
        assert!(!e.to_body().to_string().contains("fire"));
    }

    #[test]
    fn arg_reports_position_and_shape() {
        let args = vec![json!({"a": 1})];
        let e = arg::<String>(&args, 0).unwrap_err();
        assert_eq!(e.error, "invalid-arguments");
        assert!(e.reason.unwrap_or_default().contains("argument 0"));
        assert!(arg::<String>(&args, 3).is_err());
        assert_eq!(arg::<Option<String>>(&args, 3), Ok(None));
    }
}
