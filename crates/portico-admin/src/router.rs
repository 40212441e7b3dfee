//! [`AdminPage`]: the builder of the admin router, and the router it makes (the page, its
//! assets and its JSON API under one path).

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post, put};
use portico_edge::RouteDoc;
use portico_platform::{LoginLimits, Platform};

use crate::state::{AdminState, RouteSource};
use crate::{assets, backups, collections, files, guard, jobs, keys, route_list, session, users};

/// Where the page is served unless told otherwise.
pub const DEFAULT_PATH: &str = "/_/";
/// The role a user must hold to use the page unless told otherwise.
pub const DEFAULT_ROLE: &str = "admin";
/// Where the page links the server's OpenAPI document unless told otherwise.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The admin page and its JSON API, as an `axum::Router` to merge into an application.
///
/// Serve the merged application with
/// `into_make_service_with_connect_info::<SocketAddr>()`, so the login's rate limits count
/// failures per client address.
#[derive(Clone)]
pub struct AdminPage {
    platform: Platform,
    path: String,
    role: String,
    limits: LoginLimits,
    routes: RouteSource,
    openapi: Option<String>,
    backups: Option<Arc<portico_platform::backups::Backups>>,
}

impl std::fmt::Debug for AdminPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminPage")
            .field("path", &self.path)
            .field("role", &self.role)
            .field("openapi", &self.openapi)
            .finish_non_exhaustive()
    }
}

/// A path the admin page cannot be served at; the message says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPath(pub String);

impl std::fmt::Display for InvalidPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPath {}

/// The prefix of a page path, without its trailing slash (`/_/` and `_` give `/_`; `/` gives
/// the empty prefix, the server root).
///
/// # Errors
/// [`InvalidPath`] for an empty segment or a character that is not URL-safe (`:`, `{`, `*`, a
/// space...), which axum would read as a pattern or a URL cannot carry as is.
pub fn normalize_path(path: &str) -> Result<String, InvalidPath> {
    let trimmed = path.trim().trim_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    for segment in trimmed.split('/') {
        if segment.is_empty() {
            return Err(InvalidPath(format!("`{path}` has an empty segment (`//`)")));
        }
        if let Some(c) = segment
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(*c)))
        {
            return Err(InvalidPath(format!(
                "`{path}` holds `{c}`; use letters, digits, `-`, `.`, `_` and `~`"
            )));
        }
    }
    Ok(format!("/{trimmed}"))
}

impl AdminPage {
    /// The page over `platform`, at [`DEFAULT_PATH`], for holders of [`DEFAULT_ROLE`], with the
    /// default login limits, no routes to list and a link to [`OPENAPI_PATH`].
    pub fn new(platform: Platform) -> Self {
        AdminPage {
            platform,
            path: DEFAULT_PATH.to_owned(),
            role: DEFAULT_ROLE.to_owned(),
            limits: LoginLimits::default(),
            routes: Arc::new(Vec::new),
            openapi: Some(OPENAPI_PATH.to_owned()),
            backups: None,
        }
    }

    /// Serves the page at `path` (`/_/`, `/admin`...); its API is under `path/api/`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The role a user must hold to log in and to call the API.
    pub fn role(mut self, role: impl Into<String>) -> Self {
        self.role = role.into();
        self
    }

    /// The login's limits; give the front doors' own so the page is no easier to guess
    /// passwords through (failures are counted per platform, across every door).
    pub fn login_limits(mut self, limits: LoginLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The routes the API view lists: the front doors' own descriptions
    /// (`portico_routes::Api::describe`, `portico_auto::AutoApi::routes`).
    pub fn routes(self, routes: Vec<RouteDoc>) -> Self {
        let routes = Arc::new(routes);
        self.routes_with(move || routes.as_ref().clone())
    }

    /// The routes the API view lists, asked for on each visit of that view.
    pub fn routes_with(
        mut self,
        routes: impl Fn() -> Vec<RouteDoc> + Send + Sync + 'static,
    ) -> Self {
        self.routes = Arc::new(routes);
        self
    }

    /// Where the API view links the server's OpenAPI document; `None` shows no link.
    pub fn openapi(mut self, url: Option<String>) -> Self {
        self.openapi = url;
        self
    }

    /// The backups the Backups view lists, takes and downloads (a SQLite database's; without
    /// them the view says backups are not set up).
    pub fn backups(mut self, backups: Arc<portico_platform::backups::Backups>) -> Self {
        self.backups = Some(backups);
        self
    }

    /// The router: the page at the path, its assets beside it, its API under `path/api/`.
    ///
    /// # Errors
    /// [`InvalidPath`] when the path is not usable (see [`normalize_path`]).
    pub fn router<S>(self) -> Result<Router<S>, InvalidPath>
    where
        S: Clone + Send + Sync + 'static,
    {
        let prefix = normalize_path(&self.path)?;
        let state = AdminState {
            login: self.platform.login_service(self.limits),
            platform: self.platform,
            role: self.role,
            routes: self.routes,
            openapi: self.openapi,
            backups: self.backups,
        };
        let api = |p: &str| format!("{prefix}/api{p}");
        let guarded = Router::new()
            .route(&api("/me"), get(session::me))
            .route(&api("/logout"), post(session::logout))
            .route(&api("/collections"), get(collections::list))
            .route(
                &api("/collections/{name}/documents"),
                get(collections::documents).post(collections::insert),
            )
            .route(
                &api("/collections/{name}/documents/{id}"),
                get(collections::document)
                    .put(collections::replace)
                    .delete(collections::remove),
            )
            .route(
                &api("/collections/{name}/documents/{id}/files/{field}"),
                post(files::upload),
            )
            .route(
                &api("/collections/{name}/documents/{id}/files/{field}/{file}"),
                get(files::download).delete(files::delete),
            )
            .route(&api("/users"), get(users::list).post(users::create))
            .route(&api("/users/{id}"), axum::routing::delete(users::remove))
            .route(&api("/users/{id}/roles"), put(users::set_roles))
            .route(&api("/users/{id}/password"), put(users::set_password))
            .route(&api("/users/{id}/logout"), post(users::logout_everywhere))
            .route(&api("/users/{id}/impersonate"), post(users::impersonate))
            .route(
                &api("/users/{id}/password-reset"),
                post(users::send_reset_mail),
            )
            .route(&api("/routes"), get(route_list::list))
            .route(&api("/backups"), get(backups::list).post(backups::start))
            .route(&api("/backups/{name}"), get(backups::download))
            .route(&api("/keys"), get(keys::list).post(keys::create))
            .route(&api("/keys/{name}"), axum::routing::delete(keys::revoke))
            .route(&api("/jobs"), get(jobs::list))
            .route(&api("/jobs/{id}"), axum::routing::delete(jobs::cancel))
            .route(&api("/jobs/{id}/retry"), post(jobs::retry))
            // Unknown API paths answer as the known ones do: 401/403 before 404, so nothing
            // about the API can be learnt without the admin role.
            .route(&api("/{*rest}"), axum::routing::any(guard::no_such_call))
            .route_layer(axum::middleware::from_fn_with_state(
                state.clone(),
                guard::require_admin,
            ));
        let open = Router::new().route(&api("/login"), post(session::login));
        let api_router = guarded
            .merge(open)
            .layer(axum::middleware::map_response(assets::no_store));
        let page = assets::router(&prefix);
        Ok(page
            .merge(api_router)
            .layer(axum::middleware::map_response(assets::common_headers))
            .with_state(state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalized_or_refused() {
        assert_eq!(normalize_path("/_/").unwrap(), "/_");
        assert_eq!(normalize_path("admin").unwrap(), "/admin");
        assert_eq!(normalize_path("/a/b/").unwrap(), "/a/b");
        assert_eq!(normalize_path("/").unwrap(), "");
        assert!(normalize_path("/a//b").is_err());
        assert!(normalize_path("/{x}").is_err());
        assert!(normalize_path("/:x").is_err());
        assert!(normalize_path("/a b").is_err());
    }
}
