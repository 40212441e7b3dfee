//! The parts of the server beside the front doors, and the paths each claims in the
//! [`Registry`]: the health probes, the live socket (`/live`), `/openapi.json` and `/metrics`
//! when served, the account
//! routes under `/auth/`, and everything under the admin page's path. They are claimed before
//! the doors', so a door's route on one of them is refused naming both.
//!
//! A new part of the server adds one entry to `parts`.

use crate::config::{Config, ConfigError};

use super::registry::{Owner, Reach, Registry};

/// The liveness probe's path.
pub const HEALTHZ: &str = "/healthz";
/// The readiness probe's path.
pub const READYZ: &str = "/readyz";
/// Where `/metrics` is served when `[metrics]` has no `listen` of its own.
pub const METRICS_PATH: &str = "/metrics";
/// Where the account lifecycle's routes live (`portico_accounts`).
pub const AUTH_AREA: &str = "/auth/";

/// True when `serve` mounts the account routes under `/auth/` (`[accounts]` or `[email]`).
pub fn serves_account_routes(config: &Config) -> bool {
    config.accounts.is_some() || config.email.is_some()
}

/// Every part of the server `config` turns on, with what it claims.
fn parts(config: &Config) -> Vec<(Reach, Owner)> {
    let route = |path: &str| Reach::Route(path.to_owned());
    let mut parts = vec![
        (route(HEALTHZ), Owner::server("the health probe /healthz")),
        (route(READYZ), Owner::server("the readiness probe /readyz")),
        (
            route(portico_edge::socket::LIVE_PATH),
            Owner::server("the live socket /live (channels, live lists)"),
        ),
    ];
    if config.serves_openapi() {
        parts.push((
            route(portico_edge::openapi::OPENAPI_PATH),
            Owner::server("the OpenAPI document (`openapi = false` turns it off)"),
        ));
    }
    if config.metrics.as_ref().is_some_and(|m| m.listen.is_none()) {
        parts.push((
            route(METRICS_PATH),
            Owner::server("the metrics of [metrics] (served beside the APIs without its `listen`)"),
        ));
    }
    if serves_account_routes(config) {
        parts.push((
            Reach::Area(AUTH_AREA.to_owned()),
            Owner::server("the account routes of [accounts] and [email]"),
        ));
    }
    if config.admin.enabled {
        parts.push((
            Reach::Area(config.admin.path.clone()),
            Owner::new("the admin page ([admin] path)", 1, "admin.path"),
        ));
    }
    parts
}

/// Claims the paths of every part of the server `config` turns on; the refusals, when two
/// parts overlap (an admin page at `/auth/`, say).
pub(crate) fn register(config: &Config, registry: &mut Registry) -> Vec<ConfigError> {
    parts(config)
        .into_iter()
        .filter_map(|(reach, owner)| {
            let owner = registry.owner(owner);
            registry.server(reach, owner).err()
        })
        .map(super::registry::Clash::refusal)
        .collect()
}
