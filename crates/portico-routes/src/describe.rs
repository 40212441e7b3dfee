//! What an [`Api`] serves, as data ([`portico_edge::RouteDoc`]): read by `Api::describe`,
//! `portico routes` and API documents, so no listing is written a second time.

use http::Method;
use portico_edge::{Access, Door, RouteDoc};

use crate::endpoint_doc::EndpointDoc;
use crate::route_table::Route;
use crate::{Api, ResolvedOptions};

fn access(options: &ResolvedOptions) -> Access {
    if !options.role_required.is_empty() {
        Access::Roles {
            roles: options.role_required.clone(),
        }
    } else if options.auth_required {
        Access::LoggedIn
    } else if options.auth_optional {
        Access::OptionalUser
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
            let mut route = RouteDoc::new(Door::Routes, method(name), path, access(&options));
            route.summary = doc.summary;
            route.rules = doc.rules;
            route.query = doc.query;
            route.request_body = doc.request_body;
            route.reply_body = doc.reply_body;
            route
        })
        .collect()
}
