//! How an HTTP request becomes a method's or publication's positional arguments.

use std::sync::Arc;

use serde_json::Value;

use crate::MethodError;

/// The raw request an [`ArgsExtractor`] reads.
#[derive(Debug, Clone, Copy)]
pub struct ArgsRequest<'a> {
    /// The request's HTTP method.
    pub method: &'a http::Method,
    /// The request's URI (path and query string).
    pub uri: &'a http::Uri,
    /// The request's headers.
    pub headers: &'a http::HeaderMap,
    /// The raw body.
    pub body: &'a [u8],
    /// Values of the url's `:0`, `:1`... segments, in order (strings).
    pub url_args: &'a [String],
}

/// A custom argument extractor (the spec's `getArgsFromRequest`): takes the raw request and returns
/// the positional arguments, or an error sent to the client.
pub type ArgsExtractor =
    Arc<dyn Fn(&ArgsRequest<'_>) -> Result<Vec<Value>, MethodError> + Send + Sync>;

/// The `Debug` form shared by method and publication options (an extractor shows as `<fn>`).
pub(crate) fn debug_options(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    url: &Option<String>,
    http_method: &Option<String>,
    args_extractor: &Option<ArgsExtractor>,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("url", url)
        .field("http_method", http_method)
        .field("args_extractor", &args_extractor.as_ref().map(|_| "<fn>"))
        .finish()
}

/// Known HTTP method names, lowercase, accepted in `http_method` options.
pub(crate) const HTTP_METHODS: &[&str] =
    &["get", "post", "put", "patch", "delete", "head", "options"];

/// Checks an `http_method` option: one of [`HTTP_METHODS`], any case.
pub(crate) fn check_http_method(what: &str, method: Option<&str>) -> crate::Result<()> {
    match method {
        Some(m) if !HTTP_METHODS.contains(&m.to_ascii_lowercase().as_str()) => Err(
            crate::Error::MethodOptions(format!("{what}: unknown http method {m:?}")),
        ),
        _ => Ok(()),
    }
}
