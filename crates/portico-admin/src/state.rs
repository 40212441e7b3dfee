//! [`AdminState`]: what every handler of the admin router shares.

use std::sync::Arc;

use portico_edge::RouteDoc;
use portico_platform::{LoginService, Platform};

/// Where the API view reads the routes it lists, asked on each visit.
pub(crate) type RouteSource = Arc<dyn Fn() -> Vec<RouteDoc> + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AdminState {
    pub(crate) platform: Platform,
    pub(crate) role: String,
    pub(crate) login: LoginService,
    pub(crate) routes: RouteSource,
    pub(crate) openapi: Option<String>,
    /// The backups the Backups view lists, takes and downloads (see `backups.rs`).
    pub(crate) backups: Option<Arc<portico_platform::backups::Backups>>,
}
