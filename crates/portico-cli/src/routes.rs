//! The route table: every route a config serves, read from the server itself.
//!
//! `portico routes` builds the doors the config declares ([`Doors`]) on an in-memory platform,
//! assembles the application around them as `serve` does ([`crate::serve::assemble`]: the
//! account routes under `/auth/`, the health probes, `/metrics`, `/openapi.json`) and prints
//! their own descriptions ([`portico_edge::RouteDoc`]), the ones the OpenAPI document is made
//! of, so the listing cannot drift from what `serve` answers.

use std::fmt::Write as _;
use std::path::Path;

use portico_edge::{Access, Door, RouteDoc};
use portico_platform::Platform;

use crate::config::Config;
use crate::doors::Doors;

/// Every route `serve` would answer for `config` (read from the file `file`, for messages):
/// both doors with the application's script routes, then the server's own (`/auth/...` when
/// `[accounts]` or `[email]` is present, the probes, `/metrics` beside the APIs, and
/// `/openapi.json` unless `openapi = false`), built on an in-memory platform.
///
/// # Errors
/// [`crate::Error::Script`] when the scripts do not load; what the doors refuse, as
/// [`crate::doors::refused`] says it for `file`; [`crate::Error::Setup`] when the application
/// cannot be assembled.
pub async fn served_routes(config: &Config, file: Option<&Path>) -> crate::Result<Vec<RouteDoc>> {
    let platform = Platform::open("memory:").await?;
    crate::doors::declare_collections(config, &platform)?;
    let scripts = crate::scripts::load(config, &platform).await?;
    let doors = Doors::build_with(config, &platform, scripts.as_ref())
        .map_err(|errors| crate::doors::refused(file, errors))?;
    Ok(crate::serve::assemble(config, &platform, doors)?.routes)
}

/// Every route `config` serves, door by door, as the doors describe them (built on an
/// in-memory platform: see [`Doors::build_scratch`]).
///
/// # Errors
/// What a door refused, one `line N: message` a line.
pub fn route_table(config: &Config) -> Result<Vec<RouteDoc>, String> {
    Doors::build_scratch(config)
        .map(|doors| doors.routes)
        .map_err(|refusals| crate::doors::lines(&refusals))
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
            Door::Accounts => "accounts",
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

    /// What parsing and building the doors of `text` refuses.
    fn refusals(text: &str) -> Vec<crate::config::ConfigError> {
        match Config::parse(text) {
            Ok(config) => Doors::build_scratch(&config).err().unwrap_or_default(),
            Err(errors) => errors,
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

    #[tokio::test]
    async fn the_listing_has_the_account_routes_and_the_servers_own() {
        let c = config(
            "[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"items\"\n[accounts]\napp_url = \"https://app.example.com\"\n",
        );
        let routes = match served_routes(&c, None).await {
            Ok(routes) => routes,
            Err(e) => panic!("{e}"),
        };
        let text = format_table(&routes);
        let line = |method: &str, path: &str| {
            text.lines()
                .find(|l| l.split_whitespace().take(2).eq([method, path]))
                .map(str::to_owned)
        };
        for (method, path) in [
            ("POST", "/auth/password-reset"),
            ("POST", "/auth/password-reset/confirm"),
            ("POST", "/auth/verify-email"),
            ("POST", "/auth/totp/setup"),
            ("GET", "/auth/methods"),
            ("GET", "/healthz"),
            ("GET", "/openapi.json"),
            ("GET", "/api/items"),
        ] {
            assert!(line(method, path).is_some(), "{method} {path} in\n{text}");
        }
        assert!(
            line("POST", "/auth/totp/setup").is_some_and(|l| l.split_whitespace().nth(2)
                == Some("auth")
                && l.contains("accounts:")),
            "{text}"
        );
        // The same routes as the OpenAPI document, which is made of them.
        let document = crate::serve::openapi::document(&routes);
        let paths = document["paths"].as_object().cloned().unwrap_or_default();
        assert!(paths.contains_key("/auth/password-reset"), "{paths:?}");
        // No [accounts] and no [email]: no account routes.
        let c = config("[[api]]\n[[api.collection]]\nname = \"items\"\n");
        let routes = match served_routes(&c, None).await {
            Ok(routes) => routes,
            Err(e) => panic!("{e}"),
        };
        assert!(!routes.iter().any(|r| r.path.starts_with("/auth/")));
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
        let errors = refusals(
            "[[api]]\n[[api.collection]]\nname = \"a\"\npath = \"x\"\n[[api.collection]]\nname = \"b\"\npath = \"x\"\n",
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, 6);
        assert!(errors[0].message.contains('x'), "{}", errors[0].message);
    }

    #[test]
    fn auto_and_routes_clash_on_a_shared_path() {
        let errors = refusals(
            "[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"widgets\"\n[auto]\ncollections = [\"widgets\"]\n",
        );
        assert!(!errors.is_empty());
    }

    #[test]
    fn auto_writes_default_to_every_collection_the_file_names() {
        let c = config(
            "[[api]]\n[[api.collection]]\nname = \"articles\"\n[auto]\nobject_id_collections = [\"ids\"]\n[auto.rules.widgets]\ninsert = \"anyone\"\n[[auto.publication]]\nname = \"p\"\ncollection = \"feed\"\n",
        );
        let auto = c.auto.clone().unwrap_or_default();
        assert_eq!(
            c.auto_write_collections(&auto),
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
            refusals("[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"healthz\"\n");
        assert!(
            errors
                .iter()
                .any(|e| e.message.contains("/healthz") && e.line == 4),
            "{errors:?}"
        );
        let errors = refusals(
            "[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"items\"\npath = \"openapi.json\"\n",
        );
        assert!(!errors.is_empty(), "/openapi.json is the server's");
        let fine = refusals(
            "openapi = false\n[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"items\"\npath = \"openapi.json\"\n",
        );
        assert!(fine.is_empty(), "{fine:?}");
    }

    #[test]
    fn login_clashes_with_a_collection_named_login() {
        let errors =
            refusals("[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"login\"\n");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].line, 4);
    }
}
