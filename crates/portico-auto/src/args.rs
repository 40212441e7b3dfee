//! Request bodies and the default rule that turns a request into positional arguments.
//!
//! The rule, for methods and publications without an `args_extractor`:
//!
//! 1. URL arguments come first: `:N` in the url is argument N (a string).
//! 2. Then the body: a JSON array gives one argument per element; one JSON object is one
//!    argument; an empty body adds nothing. A form-encoded body is one object whose fields are
//!    strings (bracketed names nest: `a[b]=1` is `{"a": {"b": "1"}}`, `a[]=1&a[]=2` is
//!    `{"a": ["1", "2"]}`).
//! 3. Any other JSON body (a number, a string, `null`) does not fit the rule: 400.
//!
//! Bodies are JSON when the content type says so (`application/json` or `*/*+json`), or when
//! there is no content type at all; form-encoded when it is `application/x-www-form-urlencoded`.
//! Other content types with a non-empty body are refused with 415.

use http::HeaderMap;
use http::StatusCode;
use serde_json::{Map, Value};

use crate::ApiError;

/// How deep bracketed form names nest before the rest of the name is taken literally.
const MAX_FORM_DEPTH: usize = 8;

/// The kind of body a content type announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Json,
    Form,
    Other,
}

fn body_kind(headers: &HeaderMap) -> BodyKind {
    let Some(value) = headers.get(http::header::CONTENT_TYPE) else {
        return BodyKind::Json;
    };
    let Ok(text) = value.to_str() else {
        return BodyKind::Other;
    };
    let essence = text
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        BodyKind::Json
    } else if essence == "application/x-www-form-urlencoded" {
        BodyKind::Form
    } else {
        BodyKind::Other
    }
}

/// Parses a request body: `None` when it is empty (or only white space), otherwise the JSON value
/// or the form-encoded object.
///
/// # Errors
/// 400 `invalid-json` for malformed JSON; 415 `unsupported-media-type` for a body of another
/// content type.
pub(crate) fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Option<Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match body_kind(headers) {
        BodyKind::Json => serde_json::from_slice(body).map(Some).map_err(|e| {
            ApiError::bad_request("invalid-json", format!("Malformed JSON body: {e}"))
        }),
        BodyKind::Form => Ok(Some(Value::Object(parse_form(body)))),
        BodyKind::Other => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Send application/json or application/x-www-form-urlencoded bodies",
        )),
    }
}

/// The default arguments rule (see the module docs).
///
/// # Errors
/// 400 `invalid-arguments` when the body is JSON but neither an array nor an object.
pub(crate) fn default_args(
    url_args: &[String],
    body: Option<Value>,
) -> Result<Vec<Value>, ApiError> {
    let mut args: Vec<Value> = url_args.iter().cloned().map(Value::String).collect();
    match body {
        None => {}
        Some(Value::Array(items)) => args.extend(items),
        Some(object @ Value::Object(_)) => args.push(object),
        Some(other) => {
            return Err(ApiError::bad_request(
                "invalid-arguments",
                format!(
                    "The body must be a JSON array of arguments or one JSON object, not {}",
                    json_type(&other)
                ),
            ));
        }
    }
    Ok(args)
}

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One step of a bracketed form name.
enum KeyPart {
    Name(String),
    Push,
}

/// Splits `a[b][]` into `a`, `b`, push. A name whose brackets do not close is taken literally.
fn split_key(key: &str) -> Vec<KeyPart> {
    let Some(open) = key.find('[') else {
        return vec![KeyPart::Name(key.to_owned())];
    };
    if open == 0 {
        return vec![KeyPart::Name(key.to_owned())];
    }
    let mut parts = vec![KeyPart::Name(key[..open].to_owned())];
    let mut rest = &key[open..];
    while let Some(inner) = rest.strip_prefix('[') {
        if parts.len() > MAX_FORM_DEPTH {
            break;
        }
        let Some(close) = inner.find(']') else {
            return vec![KeyPart::Name(key.to_owned())];
        };
        let name = &inner[..close];
        parts.push(if name.is_empty() {
            KeyPart::Push
        } else {
            KeyPart::Name(name.to_owned())
        });
        rest = &inner[close + 1..];
    }
    if !rest.is_empty() {
        // Trailing text after the brackets (or past the depth limit) stays part of the last name.
        match parts.last_mut() {
            Some(KeyPart::Name(last)) => last.push_str(rest),
            _ => parts.push(KeyPart::Name(rest.to_owned())),
        }
    }
    parts
}

fn insert_form_value(target: &mut Value, parts: &[KeyPart], value: String) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    match first {
        KeyPart::Push => {
            if !target.is_array() {
                *target = Value::Array(Vec::new());
            }
            if let Value::Array(items) = target {
                if rest.is_empty() {
                    items.push(Value::String(value));
                } else {
                    let mut child = Value::Null;
                    insert_form_value(&mut child, rest, value);
                    items.push(child);
                }
            }
        }
        KeyPart::Name(name) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(map) = target {
                if rest.is_empty() {
                    // A repeated plain name collects its values into an array.
                    match map.get_mut(name) {
                        Some(Value::Array(items)) => items.push(Value::String(value)),
                        Some(existing @ Value::String(_)) => {
                            let previous = existing.take();
                            *existing = Value::Array(vec![previous, Value::String(value)]);
                        }
                        _ => {
                            map.insert(name.clone(), Value::String(value));
                        }
                    }
                } else {
                    let child = map.entry(name.clone()).or_insert(Value::Null);
                    insert_form_value(child, rest, value);
                }
            }
        }
    }
}

/// Parses a form-encoded body (or query string) into an object of strings.
pub(crate) fn parse_form(body: &[u8]) -> Map<String, Value> {
    let mut root = Value::Object(Map::new());
    for (key, value) in form_urlencoded::parse(body) {
        if key.is_empty() {
            continue;
        }
        insert_form_value(&mut root, &split_key(&key), value.into_owned());
    }
    match root {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn headers(content_type: Option<&'static str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(ct) = content_type {
            h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        h
    }

    #[test]
    fn json_array_gives_positional_args() {
        let body = parse_body(&headers(Some("application/json")), b"[1, \"a\"]").unwrap();
        assert_eq!(default_args(&[], body).unwrap(), vec![json!(1), json!("a")]);
    }

    #[test]
    fn json_object_is_the_only_arg() {
        let body = parse_body(
            &headers(Some("application/json; charset=utf-8")),
            b"{\"a\":1}",
        )
        .unwrap();
        assert_eq!(default_args(&[], body).unwrap(), vec![json!({"a": 1})]);
    }

    #[test]
    fn empty_body_gives_no_args() {
        let body = parse_body(&headers(Some("application/json")), b"  \n").unwrap();
        assert!(default_args(&[], body).unwrap().is_empty());
    }

    #[test]
    fn url_args_come_first() {
        let body = parse_body(&headers(None), b"[true]").unwrap();
        assert_eq!(
            default_args(&["x".to_owned()], body).unwrap(),
            vec![json!("x"), json!(true)]
        );
    }

    #[test]
    fn scalars_are_the_wrong_shape() {
        for raw in [&b"5"[..], b"\"text\"", b"null"] {
            let body = parse_body(&headers(Some("application/json")), raw).unwrap();
            let err = default_args(&[], body).unwrap_err();
            assert_eq!(err.status_code(), StatusCode::BAD_REQUEST);
            assert_eq!(err.error(), "invalid-arguments");
        }
    }

    #[test]
    fn malformed_json_is_400() {
        let err = parse_body(&headers(Some("application/json")), b"{\"a\":").unwrap_err();
        assert_eq!(err.status_code(), StatusCode::BAD_REQUEST);
        assert_eq!(err.error(), "invalid-json");
    }

    #[test]
    fn other_content_types_are_415() {
        let err = parse_body(&headers(Some("text/plain")), b"hello").unwrap_err();
        assert_eq!(err.status_code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[test]
    fn form_bodies_are_one_object_of_strings() {
        let body = parse_body(
            &headers(Some("application/x-www-form-urlencoded")),
            b"title=Buy+milk&count=3&tags[]=a&tags[]=b&owner[name]=ann&x=1&x=2",
        )
        .unwrap();
        assert_eq!(
            body,
            Some(json!({
                "title": "Buy milk", "count": "3", "tags": ["a", "b"],
                "owner": {"name": "ann"}, "x": ["1", "2"]
            }))
        );
    }

    #[test]
    fn odd_form_names_never_panic() {
        let map = parse_form(b"[a]=1&a[=2&b]=3&c[d]e=4&=5&f[][g]=6&f[]=7&h=1&h[i]=2");
        assert_eq!(map["[a]"], json!("1"));
        assert_eq!(map["a["], json!("2"));
        assert_eq!(map["b]"], json!("3"));
        assert_eq!(map["c"], json!({"de": "4"}));
        assert_eq!(map["f"], json!([{"g": "6"}, "7"]));
        assert_eq!(map["h"], json!({"i": "2"}));
        let deep = "k".to_owned() + &"[x]".repeat(100) + "=1";
        let map = parse_form(deep.as_bytes());
        assert!(map.contains_key("k"));
    }
}
