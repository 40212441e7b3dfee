//! The bearer-token parser (RFC 6750).

use std::task::{Context, Poll};

use http::Request;
use portico_edge::{is_b64token, request_token};
use tower::{Layer, Service};

/// The query parameter RFC 6750 names for a token in the URL.
const QUERY_PARAMETER: &str = "access_token";

/// A request's bearer token, as found by [`BearerTokenLayer`] (in the request extensions).
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token, for middleware that finds tokens elsewhere.
    pub fn new(token: impl Into<String>) -> Self {
        BearerToken(token.into())
    }

    /// The token text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BearerToken {
    /// Tokens are secrets: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// The `access_token` query parameter, when present and well formed.
fn query_token(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == QUERY_PARAMETER)
        .map(|(_, value)| value.into_owned())
        .filter(|token| is_b64token(token))
}

/// Finds the login token of a request (see [`BearerTokenLayer`]): in its headers as both doors
/// read them ([`portico_edge::request_token`]: `X-Auth-Token`, else `Authorization: Bearer`),
/// else in the query when allowed.
fn find_token<B>(req: &Request<B>, query_parameter: bool) -> Option<String> {
    if let Some(token) = request_token(req.headers()) {
        return Some(token.to_owned());
    }
    let query = req.uri().query()?;
    let token = query_token(query)?;
    if query_parameter {
        Some(token)
    } else {
        tracing::debug!("ignoring an access_token query parameter: not enabled");
        None
    }
}

/// A layer that parses login tokens into [`BearerToken`] request extensions.
///
/// By default only the headers are read: `Authorization: Bearer <token>`, and `X-Auth-Token:
/// <token>` (the routes door's style; both doors take both, and `X-Auth-Token` wins when a
/// request has both). Tokens in URLs end up in
/// logs and browser histories, so the `access_token` query parameter is read only after
/// [`BearerTokenLayer::allow_query_parameter`]`(true)`; otherwise it is ignored (the request runs
/// with no user). The header wins when both are present.
///
/// ```
/// use axum::{Extension, Router, routing::get};
/// use portico_auto::{BearerToken, BearerTokenLayer};
///
/// let app: Router = Router::new()
///     .route("/", get(|token: Option<Extension<BearerToken>>| async move {
///         token.map(|Extension(t)| t.as_str().len()).unwrap_or(0).to_string()
///     }))
///     .layer(BearerTokenLayer::new().allow_query_parameter(true));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct BearerTokenLayer {
    query_parameter: bool,
}

impl BearerTokenLayer {
    /// A parser reading the `Authorization` header only.
    pub fn new() -> Self {
        BearerTokenLayer::default()
    }

    /// Also accept the token in the `access_token` query parameter.
    #[must_use]
    pub fn allow_query_parameter(mut self, allow: bool) -> Self {
        self.query_parameter = allow;
        self
    }
}

impl<S> Layer<S> for BearerTokenLayer {
    type Service = BearerTokenService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BearerTokenService {
            inner,
            query_parameter: self.query_parameter,
        }
    }
}

/// The service [`BearerTokenLayer`] wraps around an inner service.
#[derive(Debug, Clone)]
pub struct BearerTokenService<S> {
    inner: S,
    query_parameter: bool,
}

impl<S, B> Service<Request<B>> for BearerTokenService<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if let Some(token) = find_token(&req, self.query_parameter) {
            req.extensions_mut().insert(BearerToken(token));
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_scheme_is_case_insensitive() {
        use portico_edge::bearer_token;
        assert_eq!(bearer_token("Bearer abc-_.~+/=="), Some("abc-_.~+/=="));
        assert_eq!(bearer_token("bearer  xyz"), Some("xyz"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer a b"), None);
        assert_eq!(bearer_token("Bearer ==="), None);
    }

    fn request(uri: &str, header: Option<&str>) -> Request<()> {
        let mut b = Request::builder().uri(uri);
        if let Some(h) = header {
            b = b.header(http::header::AUTHORIZATION, h);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn query_parameter_only_when_allowed() {
        let req = request("/x?a=1&access_token=tok123", None);
        assert_eq!(find_token(&req, false), None);
        assert_eq!(find_token(&req, true).as_deref(), Some("tok123"));
    }

    #[test]
    fn x_auth_token_is_read_too() {
        let mut req = request("/x", None);
        req.headers_mut()
            .insert("x-auth-token", "tok456".parse().unwrap());
        assert_eq!(find_token(&req, false).as_deref(), Some("tok456"));
    }

    #[test]
    fn header_wins_over_query() {
        let req = request("/x?access_token=fromquery", Some("Bearer fromheader"));
        assert_eq!(find_token(&req, true).as_deref(), Some("fromheader"));
    }

    #[test]
    fn debug_never_shows_the_token() {
        assert!(!format!("{:?}", BearerToken::new("secret")).contains("secret"));
    }
}
