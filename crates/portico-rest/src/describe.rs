//! What an [`Api`] serves, as data ([`portico_edge::RouteDoc`]): read by `Api::describe`,
//! `portico routes` and API documents, so no listing is written a second time.

use http::Method;
use portico_edge::{Access, Door, RouteDoc};
use serde_json::Value;

use crate::api::Route;
use crate::{Api, ResolvedOptions};

/// What one endpoint of a route does, beyond its access: set by the generated routes.
#[derive(Debug, Clone, Default)]
pub(crate) struct EndpointDoc {
    pub(crate) summary: String,
    pub(crate) rules: Vec<String>,
    pub(crate) query: Vec<String>,
    pub(crate) request_body: Option<Value>,
    pub(crate) reply_body: Option<Value>,
}

impl EndpointDoc {
    pub(crate) fn new(summary: impl Into<String>) -> Self {
        EndpointDoc {
            summary: summary.into(),
            ..EndpointDoc::default()
        }
    }

    pub(crate) fn rules(mut self, rules: Vec<String>) -> Self {
        self.rules = rules;
        self
    }

    pub(crate) fn query(mut self, names: &[&str]) -> Self {
        self.query = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    pub(crate) fn request(mut self, schema: Value) -> Self {
        self.request_body = Some(schema);
        self
    }

    pub(crate) fn reply(mut self, schema: Value) -> Self {
        self.reply_body = Some(schema);
        self
    }
}

fn access(options: &ResolvedOptions) -> Access {
    if !options.role_required.is_empty() {
        Access::Roles {
            roles: options.role_required.clone(),
        }
    } else if options.auth_required {
        Access::LoggedIn
    } else {
        Access::Public
    }
}

fn method(name: &str) -> Method {
    Method::from_bytes(name.as_bytes()).unwrap_or(Method::GET)
}

impl Api {
    /// Every endpoint this API serves, in the order routes were added, as the one route
    /// description that listings and API documents read: method, full path, who may call it,
    /// and what the generated routes take and give.
    pub fn describe(&self) -> Vec<RouteDoc> {
        let mut out = Vec::new();
        for (pattern, route) in self.table().iter_added() {
            let path = format!("{}{}", self.base_path(), pattern.display());
            out.extend(describe_route(&path, route));
        }
        out
    }
}

fn describe_route(path: &str, route: &Route) -> Vec<RouteDoc> {
    route
        .endpoints
        .iter()
        .map(|(name, endpoint)| {
            // OPTIONS endpoints do not inherit the route's auth (preflights carry no credentials).
            let options = if name == "OPTIONS" {
                endpoint.resolve(&crate::RouteOptions::default())
            } else {
                endpoint.resolve(&route.options)
            };
            let doc = route
                .docs
                .iter()
                .find(|(m, _)| *m == name)
                .map(|(_, d)| d.clone())
                .unwrap_or_else(|| EndpointDoc::new("custom endpoint"));
            RouteDoc {
                door: Door::Routes,
                method: method(name),
                path: path.to_owned(),
                summary: doc.summary,
                access: access(&options),
                rules: doc.rules,
                query: doc.query,
                request_body: doc.request_body,
                reply_body: doc.reply_body,
            }
        })
        .collect()
}
