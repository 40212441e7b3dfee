//! Request bodies: reading them under a size limit, and parsing them by content type.
//!
//! The rule both doors follow:
//!
//! | body | result |
//! |---|---|
//! | empty, or only white space | [`ParsedBody::Empty`] |
//! | `application/json`, `*/*+json`, or no `Content-Type` at all | [`ParsedBody::Json`]; malformed JSON is a 400 |
//! | `application/x-www-form-urlencoded` | [`ParsedBody::Form`] (see [`crate::parse_form`]); a form that is really JSON sent without a JSON content type is a 400 saying so |
//! | any other content type | [`ParsedBody::Other`]: a door that needs data answers 415 ([`BodyError::UnsupportedMediaType`]) |

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Map, Value};

use portico_store::json::{JsonError, JsonLimits, parse_bounded};

use crate::form::parse_form;

/// The default largest request body: 50 MB.
pub const DEFAULT_BODY_LIMIT: usize = 50 * 1024 * 1024;

/// Why a body could not be read or parsed. [`BodyError::status`] is its HTTP status; its
/// `Display` text is safe to send to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body is larger than the limit (413).
    #[error("Request body too large")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The body stream failed before it was complete (400).
    #[error("The request body could not be read")]
    Unreadable,
    /// The body is not valid JSON (400).
    #[error("Malformed JSON body: {0}")]
    MalformedJson(String),
    /// The JSON body nests deeper than the limit (400).
    #[error("JSON body nested deeper than {0} levels")]
    TooDeep(usize),
    /// The JSON body holds more values than its length allows: it would cost far more memory
    /// parsed than it took to send (413).
    #[error("JSON body holds too many values for its size")]
    TooManyValues,
    /// The form body has conflicting names (400).
    #[error("Malformed form body: {0}")]
    MalformedForm(String),
    /// A form-encoded body that is one JSON-looking name with no value: JSON sent without its
    /// content type, as `curl -d '{...}'` does (400).
    #[error(
        "The body looks like JSON but was sent as a form; send it with Content-Type: application/json"
    )]
    JsonSentAsForm,
    /// The content type is neither JSON nor a form (415).
    #[error("Unsupported content type; send application/json or application/x-www-form-urlencoded")]
    UnsupportedMediaType,
    /// The body is empty where data is required (400).
    #[error("The request body is empty; send a JSON object")]
    Empty,
    /// The server's budget for request bodies in flight ran out while this body was read
    /// (503; see [`BodyBudgetExceeded`]).
    #[error("The server is busy reading other requests' bodies; retry shortly")]
    Busy,
}

/// The error a request body fails with when the server's budget for bodies in flight runs out
/// while it is read (the `portico` binary's `[server] max_inflight_body_mb`):
/// [`read_body`] turns it into [`BodyError::Busy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the budget for request bodies in flight is used up")]
pub struct BodyBudgetExceeded;

impl BodyError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } | BodyError::TooManyValues => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BodyError::Busy => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// Reads a whole body, refusing more than `limit` bytes.
///
/// A `Content-Length` over the limit is refused before anything is read; a body without a length
/// (chunked) is cut off as soon as it passes the limit, so an oversized body never sits in memory
/// whole. The body is gathered into one buffer sized by its `Content-Length` (a body that
/// arrives as one chunk is kept as it came), so reading it costs its length once.
///
/// # Errors
/// [`BodyError::TooLarge`] over the limit; [`BodyError::Busy`] when the server's budget for
/// bodies in flight ran out ([`BodyBudgetExceeded`]); [`BodyError::Unreadable`] when the stream
/// fails.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, BodyError> {
    let declared = declared_length(headers);
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let mut body = body;
    // The first chunk, kept as it is until a second one comes.
    let mut first: Option<Bytes> = None;
    let mut gathered: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            if caused_by::<BodyBudgetExceeded>(&e) {
                BodyError::Busy
            } else {
                BodyError::Unreadable
            }
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        len = len.saturating_add(data.len());
        if len > limit {
            return Err(BodyError::TooLarge { limit });
        }
        if let Some(buf) = &mut gathered {
            buf.extend_from_slice(&data);
        } else if let Some(head) = first.take() {
            // Sized by the length announced, never past the limit: one allocation.
            let capacity = declared.map_or(len, |d| usize::try_from(d).unwrap_or(len).max(len));
            let mut buf = BytesMut::with_capacity(capacity.min(limit));
            buf.extend_from_slice(&head);
            buf.extend_from_slice(&data);
            gathered = Some(buf);
        } else {
            first = Some(data);
        }
    }
    Ok(match (gathered, first) {
        (Some(buf), _) => buf.freeze(),
        (None, Some(head)) => head,
        (None, None) => Bytes::new(),
    })
}

/// The `Content-Length` a request announces, when it is a number.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// True when `err` (or an error it wraps) is an `E`.
fn caused_by<E: std::error::Error + 'static>(err: &axum::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if e.is::<E>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// A body parsed by its content type (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedBody {
    /// Nothing, or only white space.
    Empty,
    /// A JSON value.
    Json(Value),
    /// A form: an object whose leaves are strings.
    Form(Map<String, Value>),
    /// Another content type; the raw bytes are the caller's to interpret.
    Other,
}

impl ParsedBody {
    /// The body as a JSON value: `None` when empty.
    ///
    /// # Errors
    /// [`BodyError::UnsupportedMediaType`] for [`ParsedBody::Other`].
    pub fn into_value(self) -> Result<Option<Value>, BodyError> {
        match self {
            ParsedBody::Empty => Ok(None),
            ParsedBody::Json(value) => Ok(Some(value)),
            ParsedBody::Form(map) => Ok(Some(Value::Object(map))),
            ParsedBody::Other => Err(BodyError::UnsupportedMediaType),
        }
    }

    /// The body as data for a write: a value is required.
    ///
    /// # Errors
    /// [`BodyError::Empty`] for an empty body, [`BodyError::UnsupportedMediaType`] for another
    /// content type.
    pub fn into_required(self) -> Result<Value, BodyError> {
        self.into_value()?.ok_or(BodyError::Empty)
    }
}

/// What a `Content-Type` announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Json,
    Form,
    Other,
}

fn kind(headers: &HeaderMap) -> Kind {
    let Some(value) = headers.get(http::header::CONTENT_TYPE) else {
        return Kind::Json;
    };
    let Ok(text) = value.to_str() else {
        return Kind::Other;
    };
    let essence = text
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        Kind::Json
    } else if essence == "application/x-www-form-urlencoded" {
        Kind::Form
    } else {
        Kind::Other
    }
}

/// Parses a body by its content type (see the module docs).
///
/// ```
/// use http::HeaderMap;
/// use portico_edge::{ParsedBody, parse_body};
/// let json = parse_body(&HeaderMap::new(), br#"{"a": 1}"#)?;
/// assert_eq!(json, ParsedBody::Json(serde_json::json!({"a": 1})));
/// assert_eq!(parse_body(&HeaderMap::new(), b"  ")?, ParsedBody::Empty);
/// # Ok::<(), portico_edge::BodyError>(())
/// ```
///
/// # Errors
/// [`BodyError::MalformedJson`], [`BodyError::MalformedForm`], [`BodyError::JsonSentAsForm`].
pub fn parse_body(headers: &HeaderMap, bytes: &[u8]) -> Result<ParsedBody, BodyError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(ParsedBody::Empty);
    }
    match kind(headers) {
        // Counted before it is parsed, so the parsed form costs memory in proportion to the
        // bytes sent (see `portico_store::json`).
        Kind::Json => match parse_bounded(bytes, &JsonLimits::default()) {
            Ok(value) => Ok(ParsedBody::Json(value)),
            Err(JsonError::TooDeep { limit }) => Err(BodyError::TooDeep(limit)),
            Err(JsonError::TooManyValues { .. }) => Err(BodyError::TooManyValues),
            Err(e) => Err(BodyError::MalformedJson(e.to_string())),
        },
        Kind::Form => {
            let form = parse_form(bytes).map_err(|e| BodyError::MalformedForm(e.0))?;
            if looks_like_json(&form) {
                return Err(BodyError::JsonSentAsForm);
            }
            Ok(ParsedBody::Form(form))
        }
        Kind::Other => Ok(ParsedBody::Other),
    }
}

/// One field whose name opens like a JSON object or array and whose value is empty: the shape
/// `curl -d '{"a":1}'` produces (it sends form encoding by default).
fn looks_like_json(form: &Map<String, Value>) -> bool {
    if form.len() != 1 {
        return false;
    }
    form.iter().any(|(name, value)| {
        let name = name.trim_start();
        (name.starts_with('{') || name.starts_with('['))
            && matches!(value, Value::String(s) if s.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_type(content_type: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_str(content_type).unwrap(),
        );
        h
    }

    #[test]
    fn bodies_by_content_type() {
        let json = with_type("application/json; charset=utf-8");
        assert_eq!(
            parse_body(&json, br#"{"a":1}"#).unwrap(),
            ParsedBody::Json(json!({"a": 1}))
        );
        assert!(matches!(
            parse_body(&json, b"{oops"),
            Err(BodyError::MalformedJson(_))
        ));
        assert_eq!(parse_body(&json, b"").unwrap(), ParsedBody::Empty);
        assert_eq!(
            parse_body(&HeaderMap::new(), b"[1]").unwrap(),
            ParsedBody::Json(json!([1]))
        );
        let form = with_type("application/x-www-form-urlencoded");
        assert_eq!(
            parse_body(&form, b"a[b]=c").unwrap().into_value().unwrap(),
            Some(json!({"a": {"b": "c"}}))
        );
        let text = with_type("text/plain");
        assert_eq!(parse_body(&text, b"hello").unwrap(), ParsedBody::Other);
        assert_eq!(
            ParsedBody::Other.into_value(),
            Err(BodyError::UnsupportedMediaType)
        );
        assert_eq!(ParsedBody::Empty.into_required(), Err(BodyError::Empty));
    }

    #[test]
    fn json_sent_as_a_form_is_named() {
        let form = with_type("application/x-www-form-urlencoded");
        let err = parse_body(&form, br#"{"title":"x"}"#).unwrap_err();
        assert_eq!(err, BodyError::JsonSentAsForm);
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        assert!(err.to_string().contains("Content-Type: application/json"));
        // A real form with a brace in a value is fine.
        assert!(parse_body(&form, b"a={").is_ok());
    }

    #[test]
    fn json_bodies_cost_memory_in_proportion_to_their_bytes() {
        let json = with_type("application/json");
        // A megabyte of tiny values: over its budget, refused before it is parsed.
        let tiny = format!("[{}0]", "0,".repeat(500_000));
        assert_eq!(
            parse_body(&json, tiny.as_bytes()),
            Err(BodyError::TooManyValues)
        );
        assert_eq!(
            BodyError::TooManyValues.status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(matches!(
            parse_body(&json, deep.as_bytes()),
            Err(BodyError::TooDeep(_))
        ));
        // Numbers come back exactly as sent.
        let exact = parse_body(&json, b"[2.8535563002202693e-175, 18446744073709551617]").unwrap();
        let ParsedBody::Json(value) = exact else {
            panic!("json")
        };
        assert_eq!(
            value.to_string(),
            "[2.8535563002202693e-175,18446744073709551617]"
        );
    }

    #[test]
    fn statuses() {
        assert_eq!(BodyError::TooLarge { limit: 1 }.status(), 413);
        assert_eq!(BodyError::UnsupportedMediaType.status(), 415);
        assert_eq!(BodyError::Empty.status(), 400);
    }

    #[tokio::test]
    async fn limits_hold_with_and_without_a_length() {
        let bytes = read_body(&HeaderMap::new(), Body::from("hello"), 5)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"hello");
        let err = read_body(&HeaderMap::new(), Body::from("hello!"), 5)
            .await
            .unwrap_err();
        assert_eq!(err, BodyError::TooLarge { limit: 5 });
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_LENGTH,
            http::HeaderValue::from(100u64),
        );
        let err = read_body(&headers, Body::from("tiny"), 5)
            .await
            .unwrap_err();
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
