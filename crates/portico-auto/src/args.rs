//! How a request becomes a method's or publication's positional arguments: the default rule,
//! and custom extractors.
//!
//! The default rule, for methods and publications without an `args_extractor`:
//!
//! 1. URL arguments come first: `:N` in the url is argument N (a string).
//! 2. Then the body, parsed by the edge ([`portico_edge::parse_body`]): a JSON array gives one
//!    argument per element; one JSON object is one argument; an empty body adds nothing. A
//!    form-encoded body is one object whose fields are strings (bracketed names nest).
//! 3. Any other JSON body (a number, a string, `null`) does not fit the rule: 400. A body of
//!    another content type is 415.
//!
//! A custom extractor ([`args_extractor`]) is async and receives the request already parsed:
//! named and numbered url parameters, the query string, the body and the headers
//! ([`ArgsRequest`]).

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use http::{HeaderMap, Method, Uri};
use portico_edge::ParsedBody;
use portico_platform::{ArgsExtractor, MethodError};
use serde_json::{Map, Value};

use crate::ApiError;

/// A request as an argument extractor sees it: parsed once by the auto API.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ArgsRequest {
    /// The request's HTTP method.
    pub method: Method,
    /// The request's URI (path and query string, as sent).
    pub uri: Uri,
    /// The request's headers.
    pub headers: HeaderMap,
    /// Every url parameter by name (`:0` is named `"0"`), percent-decoded, in path order.
    pub params: Vec<(String, String)>,
    /// The values of the url's `:0`, `:1`... segments, in number order.
    pub url_args: Vec<String>,
    /// The query string, parsed as a form (`a[b]=1` nests; values are strings).
    pub query: Map<String, Value>,
    /// The body, parsed by its content type; [`ParsedBody::Other`] for another content type
    /// (then [`ArgsRequest::raw_body`] holds the bytes).
    pub body: ParsedBody,
    /// The body's bytes as received.
    pub raw_body: Bytes,
}

impl ArgsRequest {
    /// The url parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The header `name` as text, when present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The auto API's extractor, as stored in [`portico_platform::EndpointOptions`].
pub(crate) type ExtractFn =
    Arc<dyn Fn(ArgsRequest) -> BoxFuture<'static, Result<Vec<Value>, MethodError>> + Send + Sync>;

/// The type the auto API looks for behind a [`portico_platform::ArgsExtractor`].
#[derive(Clone)]
pub(crate) struct AutoExtractor(pub(crate) ExtractFn);

/// A custom argument extractor for a method's or publication's `args_extractor` option: an
/// async function from the parsed [`ArgsRequest`] to the positional arguments. An error is sent
/// to the client as a method's error is (400 unless it names another status).
///
/// ```
/// use portico_auto::{ArgsRequest, args_extractor};
/// use portico_platform::{MethodError, MethodOptions};
/// use serde_json::{Value, json};
///
/// // GET /search?q=milk&limit=5 calls the method with ["milk", "5"].
/// let options = MethodOptions::default()
///     .url("search")
///     .http_method(portico_platform::HttpMethod::Get)
///     .args_extractor(args_extractor(|req: ArgsRequest| async move {
///         let field = |name: &str| req.query.get(name).cloned().unwrap_or(Value::Null);
///         Ok::<_, MethodError>(vec![field("q"), field("limit")])
///     }));
/// # let _ = options;
/// ```
pub fn args_extractor<F, Fut>(extract: F) -> ArgsExtractor
where
    F: Fn(ArgsRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Value>, MethodError>> + Send + 'static,
{
    let f: ExtractFn = Arc::new(move |req| extract(req).boxed());
    ArgsExtractor::new(AutoExtractor(f))
}

/// The default arguments rule (see the module docs).
///
/// # Errors
/// 400 `invalid-arguments` when the body is JSON but neither an array nor an object; 415 for a
/// body of another content type.
pub(crate) fn default_args(url_args: &[String], body: ParsedBody) -> Result<Vec<Value>, ApiError> {
    let mut args: Vec<Value> = url_args.iter().cloned().map(Value::String).collect();
    match body.into_value()? {
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

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;
    use serde_json::json;

    #[test]
    fn json_array_gives_positional_args() {
        let body = ParsedBody::Json(json!([1, "a"]));
        assert_eq!(default_args(&[], body).unwrap(), vec![json!(1), json!("a")]);
    }

    #[test]
    fn json_object_is_the_only_arg() {
        let body = ParsedBody::Json(json!({"a": 1}));
        assert_eq!(default_args(&[], body).unwrap(), vec![json!({"a": 1})]);
    }

    #[test]
    fn empty_body_gives_no_args_and_url_args_come_first() {
        assert!(default_args(&[], ParsedBody::Empty).unwrap().is_empty());
        assert_eq!(
            default_args(&["x".to_owned()], ParsedBody::Json(json!([true]))).unwrap(),
            vec![json!("x"), json!(true)]
        );
    }

    #[test]
    fn scalars_are_the_wrong_shape_and_other_types_415() {
        for value in [json!(5), json!("text"), Value::Null] {
            let err = default_args(&[], ParsedBody::Json(value)).unwrap_err();
            assert_eq!(err.status_code(), StatusCode::BAD_REQUEST);
            assert_eq!(err.error(), "invalid-arguments");
        }
        let err = default_args(&[], ParsedBody::Other).unwrap_err();
        assert_eq!(err.status_code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[test]
    fn form_bodies_are_one_object() {
        let form = json!({"title": "Buy milk"}).as_object().cloned().unwrap();
        assert_eq!(
            default_args(&[], ParsedBody::Form(form)).unwrap(),
            vec![json!({"title": "Buy milk"})]
        );
    }
}
