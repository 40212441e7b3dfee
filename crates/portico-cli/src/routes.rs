//! The route table: every route a config serves, read from the front doors themselves.
//!
//! `portico routes` and `portico check` build the doors the config declares on an in-memory
//! platform and read their own descriptions ([`portico_edge::RouteDoc`]), so the listing cannot
//! drift from what `serve` answers. Config checking builds them the same way to find two routes
//! on one path, naming the line that declares the second.

use std::fmt::Write as _;

use portico_edge::{Access, Door, RouteDoc};
use portico_platform::Platform;

use crate::config::{AutoConfig, Config, ConfigError};

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

/// A platform over an empty in-memory store, for building the doors without a database.
fn scratch_platform() -> Result<Platform, String> {
    // The memory store's futures need no runtime (no I/O, no timers), so this runs the same
    // inside or outside one.
    futures::executor::block_on(Platform::open("memory:")).map_err(|e| e.to_string())
}

/// One declaration the doors refused, with its config line.
struct Refusal {
    line: usize,
    key: &'static str,
    message: String,
}

/// Builds every door of `config` and collects their routes, or the declarations they refused.
fn build(config: &Config) -> Result<Vec<RouteDoc>, Vec<Refusal>> {
    let platform = scratch_platform().map_err(|message| {
        vec![Refusal {
            line: 1,
            key: "database",
            message,
        }]
    })?;
    let mut refusals = Vec::new();
    if let Err(e) = crate::serve::declare_collections(config, &platform) {
        refusals.push(Refusal {
            line: 1,
            key: "api.collection",
            message: e.to_string(),
        });
        return Err(refusals);
    }
    let mut routes = Vec::new();
    for api in &config.apis {
        match crate::serve::rest::build_each(api, &platform) {
            Ok(rest) => routes.extend(rest.describe()),
            Err((line, message)) => refusals.push(Refusal {
                line,
                key: "api.collection.path",
                message,
            }),
        }
    }
    if let Some(auto) = &config.auto {
        let docs = crate::serve::auto::build(config, auto, &platform)
            .map_err(|e| e.to_string())
            .and_then(|a| a.routes().map_err(|e| e.to_string()));
        match docs {
            Ok(docs) => {
                for doc in &docs {
                    if let Some(api) = config
                        .apis
                        .iter()
                        .find(|api| doc.path.starts_with(&api.base_path()))
                    {
                        refusals.push(Refusal {
                            line: auto.line,
                            key: "auto",
                            message: format!(
                                "two routes on one path: {} {} of the auto API is under the base path {} of the [[api]] at line {}, which answers every path below it",
                                doc.method,
                                doc.path,
                                api.base_path(),
                                api.line
                            ),
                        });
                        break;
                    }
                }
                routes.extend(docs);
            }
            Err(message) => refusals.push(Refusal {
                line: auto.line,
                key: "auto",
                message,
            }),
        }
    }
    refusals.extend(server_path_clashes(config, &routes));
    if refusals.is_empty() {
        Ok(routes)
    } else {
        Err(refusals)
    }
}

/// Paths the server itself answers beside the doors: the health probes, `/openapi.json` and
/// `/metrics` when served, and everything under the admin page's path.
fn server_paths(config: &Config) -> (Vec<&'static str>, Option<String>) {
    let mut exact = vec![crate::serve::probes::HEALTHZ, crate::serve::probes::READYZ];
    if config.serves_openapi() {
        exact.push(portico_edge::openapi::OPENAPI_PATH);
    }
    if config.metrics.as_ref().is_some_and(|m| m.listen.is_none()) {
        exact.push(crate::serve::metrics::METRICS_PATH);
    }
    let admin = config.admin.enabled.then(|| config.admin.path.clone());
    (exact, admin)
}

/// A door's route on a path the server answers itself (a collection named `healthz` on an
/// [[api]] at the root, say) would be shadowed: refused, naming the [[api]] or [auto] line.
fn server_path_clashes(config: &Config, routes: &[RouteDoc]) -> Vec<Refusal> {
    let (exact, admin) = server_paths(config);
    let clash =
        |path: &str| exact.contains(&path) || admin.as_deref().is_some_and(|a| path.starts_with(a));
    let Some(doc) = routes.iter().find(|doc| clash(&doc.path)) else {
        return Vec::new();
    };
    let (line, key) = match doc.door {
        portico_edge::Door::Auto => (config.auto.as_ref().map_or(1, |a| a.line), "auto"),
        _ => (
            config
                .apis
                .iter()
                .find(|api| doc.path.starts_with(&api.base_path()))
                .map_or(1, |api| api.line),
            "api.collection.path",
        ),
    };
    vec![Refusal {
        line,
        key,
        message: format!(
            "{} {} is a path the server answers itself (health probes, /openapi.json, /metrics, the admin page); give the collection another `path` or the [[api]] an `api_path`",
            doc.method, doc.path
        ),
    }]
}

/// Every route `config` serves, door by door, as the doors describe them.
///
/// # Errors
/// What a door refused, as in [`Config::parse`].
pub fn route_table(config: &Config) -> Result<Vec<RouteDoc>, String> {
    build(config).map_err(|refusals| {
        refusals
            .into_iter()
            .map(|r| format!("line {}: {}", r.line, r.message))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Two routes on one path (two collections, a collection and the login route, the auto API
/// under a routes API's base path...), found by building the doors; and two routes APIs on one
/// base path, or one at the root beside the auto API.
pub(crate) fn conflicts(config: &Config) -> Vec<ConfigError> {
    let mut errors = Vec::new();
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
    if !errors.is_empty() {
        return errors;
    }
    if let Err(refusals) = build(config) {
        errors.extend(refusals.into_iter().map(|r| ConfigError {
            line: r.line,
            column: 1,
            key: r.key.to_owned(),
            message: r.message,
        }));
    }
    errors
}

/// Who may call a route, as the table prints it.
fn access(route: &RouteDoc) -> String {
    match &route.access {
        Access::Public => "public".to_owned(),
        Access::OptionalUser => "public (as the caller when logged in)".to_owned(),
        Access::LoggedIn => "auth".to_owned(),
        Access::Roles { roles } => format!("auth, roles: {}", roles.join("|")),
    }
}

/// The route table as text, one route a line: method, path, access, door and what it does.
/// Cross-origin preflights (OPTIONS) are answered on every path and left out.
pub fn format_table(routes: &[RouteDoc]) -> String {
    let routes: Vec<&RouteDoc> = routes
        .iter()
        .filter(|r| r.method != http::Method::OPTIONS)
        .collect();
    let method_width = routes
        .iter()
        .map(|r| r.method.as_str().len())
        .max()
        .unwrap_or(0)
        .max(6);
    let path_width = routes
        .iter()
        .map(|r| r.path.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let access: Vec<String> = routes.iter().map(|r| access(r)).collect();
    let access_width = access.iter().map(String::len).max().unwrap_or(0).max(6);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:method_width$}  {:path_width$}  {:access_width$}  SOURCE",
        "METHOD", "PATH", "ACCESS"
    );
    for (route, access) in routes.iter().zip(access) {
        let door = match route.door {
            Door::Routes => "api",
            Door::Auto => "auto",
            Door::Server => "server",
        };
        let mut source = format!("{door}: {}", route.summary);
        if !route.rules.is_empty() {
            let _ = write!(source, " [{}]", route.rules.join("; "));
        }
        let _ = writeln!(
            out,
            "{:method_width$}  {:path_width$}  {:access_width$}  {source}",
            route.method.as_str(),
            route.path,
            access
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

    fn table(c: &Config) -> Vec<RouteDoc> {
        match route_table(c) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn lists_collection_routes_with_auth_and_roles() {
        let c = config(
            "[[api]]\nversion = \"v1\"\nuse_default_auth = true\n[[api.collection]]\nname = \"articles\"\nrole_required = \"editor\"\nendpoints = { getAll = { auth_required = false }, put = false }\n",
        );
        let routes = table(&c);
        let find = |m: &str, p: &str| {
            routes
                .iter()
                .find(|r| r.method.as_str() == m && r.path == p)
                .map(|r| r.access.clone())
        };
        assert_eq!(find("POST", "/api/v1/login"), Some(Access::Public));
        assert_eq!(find("POST", "/api/v1/logout"), Some(Access::LoggedIn));
        let editor = Some(Access::Roles {
            roles: vec!["editor".into()],
        });
        assert_eq!(find("GET", "/api/v1/articles"), editor);
        assert_eq!(find("PUT", "/api/v1/articles/:id"), None);
        assert_eq!(find("DELETE", "/api/v1/articles/:id"), editor);
        let text = format_table(&routes);
        assert!(text.contains("/api/v1/articles/:id"), "{text}");
    }

    #[test]
    fn same_collection_at_two_paths_is_fine() {
        let c = config(
            "[[api]]\n[[api.collection]]\nname = \"items\"\n[[api.collection]]\nname = \"items\"\npath = \"secure/items\"\nauth_required = true\n",
        );
        let without_options = table(&c)
            .into_iter()
            .filter(|r| r.method != http::Method::OPTIONS)
            .count();
        // Six generated routes for each path, and the API's batch route.
        assert_eq!(without_options, 13);
    }

    #[test]
    fn two_collections_on_one_path_are_refused_with_the_line() {
        let errors = Config::parse("[[api]]\n[[api.collection]]\nname = \"a\"\npath = \"x\"\n[[api.collection]]\nname = \"b\"\npath = \"x\"\n")
            .err()
            .unwrap_or_default();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, 6);
        assert!(errors[0].message.contains('x'), "{}", errors[0].message);
    }

    #[test]
    fn auto_and_routes_clash_on_a_shared_path() {
        let errors = Config::parse("[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"widgets\"\n[auto]\ncollections = [\"widgets\"]\n")
            .err()
            .unwrap_or_default();
        assert!(!errors.is_empty());
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
        let routes = table(&c);
        assert!(routes.iter().any(|r| r.method == http::Method::POST
            && r.path == "/widgets"
            && r.door == Door::Auto));
        assert!(
            routes
                .iter()
                .any(|r| r.method == http::Method::DELETE && r.path == "/feed/:_id")
        );
    }

    #[test]
    fn a_collection_on_a_server_path_is_refused() {
        let errors =
            Config::parse("[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"healthz\"\n")
                .err()
                .unwrap_or_default();
        assert!(
            errors
                .iter()
                .any(|e| e.message.contains("/healthz") && e.line == 1),
            "{errors:?}"
        );
        let errors = Config::parse(
            "[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"items\"\npath = \"openapi.json\"\n",
        )
        .err()
        .unwrap_or_default();
        assert!(!errors.is_empty(), "/openapi.json is the server's");
        let fine = Config::parse(
            "openapi = false\n[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"items\"\npath = \"openapi.json\"\n",
        );
        assert!(fine.is_ok(), "{:?}", fine.err());
    }

    #[test]
    fn login_clashes_with_a_collection_named_login() {
        let errors = Config::parse(
            "[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"login\"\n",
        )
        .err()
        .unwrap_or_default();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, 4);
    }
}
