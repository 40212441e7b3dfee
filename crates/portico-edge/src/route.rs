//! Route descriptions: what each front door serves, as data.
//!
//! Each door lists its routes as [`RouteDoc`]s; `portico routes`, the auto API's `api-routes`
//! listing and generated API documents all read this one description, so no listing can drift
//! from what is served.

use http::Method;
use serde::Serialize;
use serde_json::Value;

/// Which front door serves a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Door {
    /// The routes door (hand-written and generated collection routes, JSend replies).
    Routes,
    /// The auto API (methods, publications, collection writes).
    Auto,
    /// The server around the doors (health probes, the OpenAPI document, metrics): plain JSON
    /// or text, no envelope.
    Server,
    /// The account lifecycle under `/auth/` (verification, password reset, email change): plain
    /// JSON, errors as `{"error", "reason"}`.
    Accounts,
}

/// Who may call a route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Access {
    /// Anyone; a token, when sent, is not looked at.
    Public,
    /// Anyone; a valid token makes the call run as that user.
    OptionalUser,
    /// A logged-in user.
    LoggedIn,
    /// A logged-in user holding any of these roles.
    Roles {
        /// The roles, any of which will do.
        roles: Vec<String>,
    },
}

impl Access {
    /// A short human form: `public`, `optional user`, `logged in`, `roles: a, b`.
    pub fn describe(&self) -> String {
        match self {
            Access::Public => "public".into(),
            Access::OptionalUser => "optional user".into(),
            Access::LoggedIn => "logged in".into(),
            Access::Roles { roles } => format!("roles: {}", roles.join(", ")),
        }
    }
}

/// One route: an HTTP method at a path, who may call it, and what goes in and out. Built with
/// [`RouteDoc::new`] and its fields set, so a new field does not break callers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RouteDoc {
    /// The door serving it.
    pub door: Door,
    /// The HTTP method.
    #[serde(serialize_with = "method_name")]
    pub method: Method,
    /// The full path from the server root, parameters as `:name` (`/api/v1/articles/:id`), or a
    /// regular expression after the base path for regex routes.
    pub path: String,
    /// What the route does, in a few words (`list articles`, `method add`).
    pub summary: String,
    /// Who may call it.
    pub access: Access,
    /// Further checks, in words (`allow/deny rules of todos`, `own documents (ownerId)`).
    pub rules: Vec<String>,
    /// The query parameters it reads.
    pub query: Vec<String>,
    /// JSON Schema of the request body, when it takes one.
    pub request_body: Option<Value>,
    /// JSON Schema of the successful reply body (before the door's envelope).
    pub reply_body: Option<Value>,
    /// True when it answers with a redirect (302 and `Location`) rather than a body.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redirects: bool,
}

fn method_name<S: serde::Serializer>(method: &Method, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(method.as_str())
}

impl RouteDoc {
    /// A route with no rules, query parameters or bodies.
    pub fn new(door: Door, method: Method, path: impl Into<String>, access: Access) -> Self {
        RouteDoc {
            door,
            method,
            path: path.into(),
            summary: String::new(),
            access,
            rules: Vec::new(),
            query: Vec::new(),
            request_body: None,
            reply_body: None,
            redirects: false,
        }
    }

    /// Sets the summary.
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }

    /// Adds a rule.
    pub fn rule(mut self, rule: impl Into<String>) -> Self {
        self.rules.push(rule.into());
        self
    }

    /// Sets the query parameters.
    pub fn query<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.query = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the request body schema.
    pub fn request_body(mut self, schema: Value) -> Self {
        self.request_body = Some(schema);
        self
    }

    /// Sets the reply body schema.
    pub fn reply_body(mut self, schema: Value) -> Self {
        self.reply_body = Some(schema);
        self
    }

    /// Marks it as answering with a redirect (302, `Location`).
    pub fn redirects(mut self) -> Self {
        self.redirects = true;
        self
    }
}

/// A response extension a door sets on the 404 it gives for a path it has no route for. A server
/// mounting several doors can find it and answer every unknown path with one body (the
/// `portico` binary does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoRoute;
