//! What every host operation shares: reading its JSON payload and writing its JSON answer.

use portico_platform::MethodError;
use serde_json::Value;

/// A host operation's answer: JSON text, or the error a script's `PorticoError` carries.
pub(crate) type Answer = Result<String, MethodError>;

/// A 400 `bad-request` saying what is wrong with a payload.
pub(crate) fn bad(reason: impl Into<String>) -> MethodError {
    MethodError::new("bad-request", reason.into()).with_status(400)
}

/// The string `key` of the payload, or a 400 naming it.
pub(crate) fn text(payload: &Value, key: &str) -> Result<String, MethodError> {
    payload
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| bad(format!("{key} must be a string")))
}

/// The serialized `value`.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Answer {
    serde_json::to_string(value).map_err(|e| MethodError::internal(e.to_string()))
}
