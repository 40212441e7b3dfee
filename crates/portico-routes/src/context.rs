//! The endpoint context: everything an action knows about its request.

use std::collections::BTreeMap;
use std::net::IpAddr;

use bytes::Bytes;
use portico_platform::Platform;
use portico_store::Document;
use serde_json::{Map, Value};

/// What an endpoint's action receives.
#[derive(Clone)]
pub struct Context {
    /// The authenticated user's record; present only when the endpoint required authentication
    /// and it succeeded.
    pub user: Option<Document>,
    /// The authenticated user's id; same availability as `user`.
    pub user_id: Option<String>,
    /// Named path parameters (`articles/:id` gives `url_params["id"]`), percent-decoded strings.
    pub url_params: BTreeMap<String, String>,
    /// Query-string parameters (strings; bracketed names nest into objects and arrays).
    pub query_params: Map<String, Value>,
    /// The parsed body: JSON, or a form-encoded body as nested objects of strings; `{}` when
    /// empty or of another content type.
    pub body_params: Value,
    /// The raw body bytes.
    pub body: Bytes,
    /// The request line, headers and extensions.
    pub request: http::request::Parts,
    /// The endpoint's resolved options (`auth_required`, `role_required`).
    pub options: ResolvedOptions,
    /// The platform the API serves.
    pub platform: Platform,
    /// The client's address, when the server was run with connect info (`X-Forwarded-For` is
    /// believed only from [`crate::ApiOptions::trusted_proxies`]).
    pub client_addr: Option<IpAddr>,
    /// The hashed token the caller authenticated with (used by logout).
    pub(crate) hashed_token: Option<String>,
    /// Where the caller's hashed token is kept on the user record (`auth.token`), set for a
    /// request authenticated with a token that asks for an event stream: the stream re-checks
    /// the token there and ends when it is logged out.
    pub(crate) token_path: Option<String>,
    pub(crate) logins: portico_platform::LoginService,
    pub(crate) body_state: BodyState,
    /// The request body not read yet, on a route that streams it.
    pub(crate) body_stream: BodyStream,
}

/// A request body left unread for the action to stream (taken once).
#[derive(Clone, Default)]
pub(crate) struct BodyStream(pub(crate) std::sync::Arc<std::sync::Mutex<Option<axum::body::Body>>>);

/// The fully resolved options of an endpoint, as its action sees them on the [`Context`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedOptions {
    /// True when the caller had to be authenticated.
    pub auth_required: bool,
    /// True when a caller who sent credentials was authenticated, and one who sent none let in
    /// anonymous (`auth = "optional"`; never with `auth_required`).
    pub auth_optional: bool,
    /// Accepted roles: the route's plus the endpoint's.
    pub role_required: Vec<String>,
}

/// What the request body held, for endpoints that need data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyState {
    /// JSON or a form.
    Data,
    /// Nothing, or only white space.
    Empty,
    /// Another content type.
    Other,
}

impl Context {
    /// A url parameter by name.
    pub fn url_param(&self, name: &str) -> Option<&str> {
        self.url_params.get(name).map(String::as_str)
    }

    /// A query parameter by name, when it is a single string.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query_params.get(name).and_then(Value::as_str)
    }

    /// A top-level body field by name.
    pub fn body_param(&self, name: &str) -> Option<&Value> {
        self.body_params.get(name)
    }

    /// A request header as a string.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.request.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The request body, unread, on a route that streams its body (file uploads); `None` on
    /// other routes (their body is in [`Context::body`]) and once taken.
    pub fn take_body_stream(&self) -> Option<axum::body::Body> {
        self.body_stream
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// The resolved `auth_required` option.
    pub fn auth_required(&self) -> bool {
        self.options.auth_required
    }

    /// The resolved `role_required` option.
    pub fn role_required(&self) -> &[String] {
        &self.options.role_required
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("user_id", &self.user_id)
            .field("url_params", &self.url_params)
            .field("query_params", &self.query_params)
            .field("body_params", &self.body_params)
            .field("method", &self.request.method)
            .field("uri", &self.request.uri)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}
