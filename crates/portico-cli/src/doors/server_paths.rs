//! The paths the server answers itself beside the front doors: the health probes,
//! the live socket (`/live`), `/openapi.json` and `/metrics` when served, and everything under the admin page's path. A
//! door's route on one of them would be shadowed, so [`super::Doors::build`] refuses it.

use portico_edge::{Door, RouteDoc};

use crate::config::{Config, ConfigError};

/// The liveness probe's path.
pub const HEALTHZ: &str = "/healthz";
/// The readiness probe's path.
pub const READYZ: &str = "/readyz";
/// Where `/metrics` is served when `[metrics]` has no `listen` of its own.
pub const METRICS_PATH: &str = "/metrics";

/// The exact paths the server answers for `config`, and the prefix of the admin page when it
/// is served.
fn server_paths(config: &Config) -> (Vec<&'static str>, Option<String>) {
    let mut exact = vec![HEALTHZ, READYZ, portico_edge::socket::LIVE_PATH];
    if config.serves_openapi() {
        exact.push(portico_edge::openapi::OPENAPI_PATH);
    }
    if config.metrics.as_ref().is_some_and(|m| m.listen.is_none()) {
        exact.push(METRICS_PATH);
    }
    let admin = config.admin.enabled.then(|| config.admin.path.clone());
    (exact, admin)
}

/// A door's route on a path the server answers itself (a collection named `healthz` on an
/// [[api]] at the root, say), naming the [[api]] or [auto] line.
pub(crate) fn clashes(config: &Config, routes: &[RouteDoc]) -> Option<ConfigError> {
    let (exact, admin) = server_paths(config);
    let clash =
        |path: &str| exact.contains(&path) || admin.as_deref().is_some_and(|a| path.starts_with(a));
    let doc = routes.iter().find(|doc| clash(&doc.path))?;
    let (line, key) = match doc.door {
        Door::Auto => (config.auto.as_ref().map_or(1, |a| a.line), "auto"),
        _ => (
            config
                .apis
                .iter()
                .find(|api| doc.path.starts_with(&api.base_path()))
                .map_or(1, |api| api.line),
            "api.collection.path",
        ),
    };
    Some(ConfigError {
        line,
        column: 1,
        key: key.to_owned(),
        message: format!(
            "{} {} is a path the server answers itself (health probes, /openapi.json, /metrics, the admin page); give the collection another `path` or the [[api]] an `api_path`",
            doc.method, doc.path
        ),
    })
}
