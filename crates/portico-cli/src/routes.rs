//! The route table: every route a config serves, with its method, path, auth and roles.
//!
//! `portico routes` prints it, and config checking uses it to refuse two routes on one path.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::config::{ApiConfig, AutoConfig, Config, ConfigError, Rule};

/// Who may call a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// A logged-in caller (`X-Auth-Token` on route APIs, a bearer token on the auto API).
    Authenticated,
    /// A logged-in caller holding any of these roles.
    Roles(Vec<String>),
    /// Decided per call by the collection's allow rules (auto API writes).
    Rules(Vec<Rule>),
    /// Served, but refuses every caller with 403 (`allow_register = false`).
    Closed,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Access::Public => f.write_str("public"),
            Access::Closed => f.write_str("closed (403)"),
            Access::Authenticated => f.write_str("auth"),
            Access::Roles(roles) => write!(f, "auth, roles: {}", roles.join("|")),
            Access::Rules(rules) if rules.is_empty() => f.write_str("rules: nobody (no rule)"),
            Access::Rules(rules) => {
                let rules: Vec<String> = rules.iter().map(ToString::to_string).collect();
                write!(f, "rules: {}", rules.join(" or "))
            }
        }
    }
}

/// One route: an HTTP method at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    /// Upper-case HTTP method.
    pub method: String,
    /// The path, `:name` for parameters.
    pub path: String,
    /// Who may call it.
    pub access: Access,
    /// What serves it (`api /api/: collection articles`, `auto: publication widgets`).
    pub source: String,
    /// The config line that declares it.
    pub line: usize,
    /// Routes sharing a path must share this group (one route object); see [`conflicts`].
    group: String,
}

/// Every route `config` serves, API by API, in config order.
pub fn route_table(config: &Config) -> Vec<RouteInfo> {
    let mut routes = Vec::new();
    for (index, api) in config.apis.iter().enumerate() {
        api_routes(index, api, &mut routes);
    }
    if let Some(auto) = &config.auto {
        auto_routes(config, auto, &mut routes);
    }
    routes
}

fn api_routes(index: usize, api: &ApiConfig, routes: &mut Vec<RouteInfo>) {
    let base = api.base_path();
    let door = format!("api {base}");
    if api.use_default_auth {
        let group = format!("api{index}:login");
        routes.push(RouteInfo {
            method: "POST".into(),
            path: format!("{base}login"),
            access: Access::Public,
            source: format!("{door}: default login"),
            line: api.line,
            group,
        });
        for method in ["POST", "GET"] {
            routes.push(RouteInfo {
                method: method.into(),
                path: format!("{base}logout"),
                access: Access::Authenticated,
                source: format!("{door}: default logout"),
                line: api.line,
                group: format!("api{index}:logout"),
            });
        }
    }
    if api.batch_limit > 0 {
        routes.push(RouteInfo {
            method: "POST".into(),
            path: format!("{base}batch"),
            access: Access::Public,
            source: format!(
                "{door}: batch (up to {}; each write checked as its single request)",
                api.batch_limit
            ),
            line: api.line,
            group: format!("api{index}:batch"),
        });
    }
    for (c_index, collection) in api.collections.iter().enumerate() {
        for (endpoint, options) in &collection.endpoints {
            let mut roles = collection.role_required.clone();
            for role in &options.role_required {
                if !roles.contains(role) {
                    roles.push(role.clone());
                }
            }
            // An owner scope needs a caller, so it makes the route require one (an endpoint may still
            // override it, as with `auth_required`).
            let route_auth = collection.auth_required || collection.owner_field.is_some();
            let auth = options.auth_required.unwrap_or(route_auth);
            let access = if !roles.is_empty() {
                Access::Roles(roles)
            } else if auth {
                Access::Authenticated
            } else {
                Access::Public
            };
            let path = if endpoint.on_item() {
                format!("{base}{}/:id", collection.path)
            } else {
                format!("{base}{}", collection.path)
            };
            let item = if endpoint.on_item() { "item" } else { "list" };
            routes.push(RouteInfo {
                method: endpoint.http_method().into(),
                path,
                access,
                source: format!(
                    "{door}: collection {} ({}{})",
                    collection.name,
                    endpoint.as_str(),
                    if collection.owner_field.is_some() {
                        ", owner scoped"
                    } else {
                        ""
                    }
                ),
                line: collection.line,
                group: format!("api{index}:collection{c_index}:{item}"),
            });
        }
    }
}

/// The collections the auto API serves writes for.
pub fn auto_write_collections(config: &Config, auto: &AutoConfig) -> Vec<String> {
    match &auto.collections {
        Some(list) => list.clone(),
        None => {
            // "All collections": every collection the config declares anywhere.
            let mut all: Vec<String> = config
                .apis
                .iter()
                .flat_map(|a| a.collections.iter().map(|c| c.name.clone()))
                .chain(auto.rules.iter().map(|r| r.collection.clone()))
                .chain(auto.publications.iter().map(|p| p.collection.clone()))
                .chain(auto.object_id_collections.iter().cloned())
                .collect();
            all.sort();
            all.dedup();
            all
        }
    }
}

fn auto_routes(config: &Config, auto: &AutoConfig, routes: &mut Vec<RouteInfo>) {
    let group = "auto".to_owned();
    let mut push = |method: &str, path: String, access: Access, source: String, line: usize| {
        routes.push(RouteInfo {
            method: method.into(),
            path,
            access,
            source,
            line,
            group: group.clone(),
        });
    };
    push(
        "GET",
        "/publications/api-routes".into(),
        Access::Public,
        "auto: route listing".into(),
        auto.line,
    );
    push(
        "POST",
        "/users/login".into(),
        Access::Public,
        "auto: password login".into(),
        auto.line,
    );
    // Served either way: closed, it answers 403.
    let register = if auto.allow_register {
        Access::Public
    } else {
        Access::Closed
    };
    push(
        "POST",
        "/users/register".into(),
        register,
        "auto: password register".into(),
        auto.line,
    );
    for publication in &auto.publications {
        let method = publication
            .http_method
            .as_deref()
            .unwrap_or("get")
            .to_ascii_uppercase();
        let access = if publication.auth_required {
            Access::Authenticated
        } else {
            Access::Public
        };
        push(
            &method,
            publication.path(),
            access,
            format!(
                "auto: publication {} ({})",
                publication.name, publication.collection
            ),
            publication.line,
        );
    }
    for collection in auto_write_collections(config, auto) {
        let rules = auto.rules.iter().find(|r| r.collection == collection);
        let of = |pick: fn(&crate::config::CollectionRules) -> &Vec<Rule>| {
            Access::Rules(rules.map(|r| pick(r).clone()).unwrap_or_default())
        };
        let source = format!("auto: collection {collection}");
        push(
            "POST",
            format!("/{collection}"),
            of(|r| &r.insert),
            source.clone(),
            auto.line,
        );
        push(
            "PATCH",
            format!("/{collection}/:_id"),
            of(|r| &r.update),
            source.clone(),
            auto.line,
        );
        push(
            "DELETE",
            format!("/{collection}/:_id"),
            of(|r| &r.remove),
            source,
            auto.line,
        );
    }
}

/// A path with every parameter name erased: `/a/:id` and `/a/:_id` are one path to a router.
fn normalized(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with(':') { ":" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
        .trim_end_matches('/')
        .to_owned()
}

/// Two routes on one path: routes of different route objects (two collections, a collection and
/// the login route, a route API and the auto API...) may not share a path; within the auto API,
/// two routes may not share a method and a path.
pub(crate) fn conflicts(config: &Config) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    // Each routes API answers everything under its base path, so two of them cannot share one,
    // and one at the root would swallow the auto API.
    for (index, api) in config.apis.iter().enumerate() {
        let base = api.base_path();
        if let Some(first) = config.apis[..index].iter().find(|a| a.base_path() == base) {
            errors.push(ConfigError {
                line: api.line,
                column: 1,
                key: "api.api_path".to_owned(),
                message: format!(
                    "two [[api]] tables on one base path {base} (the other is at line {}); give one a `version` or another `api_path`, or put their collections in one [[api]]",
                    first.line
                ),
            });
        }
        if base == "/" {
            if let Some(auto) = &config.auto {
                errors.push(ConfigError {
                    line: api.line,
                    column: 1,
                    key: "api.api_path".to_owned(),
                    message: format!(
                        "an [[api]] at the root path / would answer every path of the auto API ([auto] at line {}); give it an `api_path`",
                        auto.line
                    ),
                });
            }
        }
    }
    let mut seen: BTreeMap<String, Vec<RouteInfo>> = BTreeMap::new();
    let mut reported: Vec<(usize, usize)> = Vec::new();
    for route in route_table(config) {
        let key = normalized(&route.path);
        let earlier = seen.entry(key).or_default();
        let clash = earlier.iter().find(|e| {
            if e.group != route.group {
                true
            } else {
                e.group == "auto" && e.method == route.method
            }
        });
        if let Some(first) = clash {
            // One message per pair of declarations, not one per clashing endpoint.
            if !reported.contains(&(route.line, first.line)) {
                reported.push((route.line, first.line));
                let config_key = if route.source.starts_with("auto") {
                    "auto"
                } else {
                    "api.collection.path"
                };
                errors.push(ConfigError {
                    line: route.line,
                    column: 1,
                    key: config_key.to_owned(),
                    message: format!(
                        "two routes on one path: {} {} ({}) is already served by {} (line {})",
                        route.method, route.path, route.source, first.source, first.line
                    ),
                });
            }
        } else {
            earlier.push(route);
        }
    }
    errors
}

/// The route table as text, one route a line: method, path, access, source.
pub fn format_table(routes: &[RouteInfo]) -> String {
    let method_width = routes
        .iter()
        .map(|r| r.method.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let path_width = routes
        .iter()
        .map(|r| r.path.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let access: Vec<String> = routes.iter().map(|r| r.access.to_string()).collect();
    let access_width = access.iter().map(String::len).max().unwrap_or(0).max(6);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:method_width$}  {:path_width$}  {:access_width$}  SOURCE",
        "METHOD", "PATH", "ACCESS"
    );
    for (route, access) in routes.iter().zip(access) {
        let _ = writeln!(
            out,
            "{:method_width$}  {:path_width$}  {:access_width$}  {}",
            route.method, route.path, access, route.source
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        match Config::parse(text) {
            Ok(config) => config,
            Err(errors) => panic!("config does not parse: {errors:?}"),
        }
    }

    #[test]
    fn lists_collection_routes_with_auth_and_roles() {
        let c = config(
            "[[api]]\nversion = \"v1\"\nuse_default_auth = true\n[[api.collection]]\nname = \"articles\"\nrole_required = \"editor\"\nendpoints = { getAll = { auth_required = false }, put = false }\n",
        );
        let routes = route_table(&c);
        let find = |m: &str, p: &str| {
            routes
                .iter()
                .find(|r| r.method == m && r.path == p)
                .map(|r| r.access.clone())
        };
        assert_eq!(find("POST", "/api/v1/login"), Some(Access::Public));
        assert_eq!(find("POST", "/api/v1/logout"), Some(Access::Authenticated));
        assert_eq!(
            find("GET", "/api/v1/articles"),
            Some(Access::Roles(vec!["editor".into()]))
        );
        assert_eq!(find("PUT", "/api/v1/articles/:id"), None);
        assert_eq!(
            find("DELETE", "/api/v1/articles/:id"),
            Some(Access::Roles(vec!["editor".into()]))
        );
    }

    #[test]
    fn same_collection_at_two_paths_is_fine() {
        let c = config(
            "[[api]]\n[[api.collection]]\nname = \"items\"\n[[api.collection]]\nname = \"items\"\npath = \"secure/items\"\nauth_required = true\n",
        );
        // Six generated routes each, and the API's batch route.
        assert_eq!(route_table(&c).len(), 13);
    }

    #[test]
    fn two_collections_on_one_path_are_refused_with_the_line() {
        let errors = Config::parse("[[api]]\n[[api.collection]]\nname = \"a\"\npath = \"x\"\n[[api.collection]]\nname = \"b\"\npath = \"x\"\n")
            .err()
            .unwrap_or_default();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, 6);
        assert!(
            errors[0].message.contains("/api/x"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn auto_and_routes_clash_on_a_shared_path() {
        let errors = Config::parse("[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"widgets\"\n[auto]\ncollections = [\"widgets\"]\n")
            .err()
            .unwrap_or_default();
        assert!(!errors.is_empty());
        assert!(
            errors.iter().any(|e| e.message.contains("/widgets")),
            "{errors:?}"
        );
    }

    #[test]
    fn auto_writes_default_to_every_collection_the_file_names() {
        let c = config(
            "[[api]]\n[[api.collection]]\nname = \"articles\"\n[auto]\nobject_id_collections = [\"ids\"]\n[auto.rules.widgets]\ninsert = \"anyone\"\n[[auto.publication]]\nname = \"p\"\ncollection = \"feed\"\n",
        );
        let auto = c.auto.clone().unwrap_or_default();
        assert_eq!(
            auto_write_collections(&c, &auto),
            vec!["articles", "feed", "ids", "widgets"]
        );
        let routes = route_table(&c);
        assert!(routes.iter().any(|r| r.method == "POST"
            && r.path == "/widgets"
            && r.access == Access::Rules(vec![Rule::Anyone])));
        assert!(routes.iter().any(|r| r.method == "DELETE"
            && r.path == "/feed/:_id"
            && r.access == Access::Rules(vec![])));
    }

    #[test]
    fn login_clashes_with_a_collection_named_login() {
        let errors = Config::parse(
            "[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"login\"\n",
        )
        .err()
        .unwrap_or_default();
        assert_eq!(errors.len(), 1, "{errors:?}");
    }
}
