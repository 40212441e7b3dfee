//! The [`Api`] builder: configuration, adding routes to its [`RouteTable`], and the axum router
//! it serves.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::routing::any;
use http::HeaderValue;
use portico_edge::{PathPattern, PathTable, RoutePath};
use portico_platform::{LoginLimits, LoginService, Platform};
use tower_http::catch_panic::CatchPanicLayer;

use crate::cors::BaseHeaders;
use crate::reply::Renderer;
use crate::route_table::{Route, RouteExtras, RouteTable, compile};
use crate::{ApiOptions, Endpoints, Error, Result, RouteOptions};

/// An API object: a base path (plus version), options, and routes. Several can live side by
/// side; each gives an [`axum::Router`] and the routers merge (give each a distinct base path
/// or version).
///
/// # Examples
///
/// ```
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use portico_routes::{Api, ApiOptions, Endpoints, RouteOptions, Context};
/// let platform = portico_platform::Platform::open("memory:").await?;
/// let mut api = Api::new(ApiOptions::default().version("v1"), platform)?;
/// api.add_route("hello/:name", RouteOptions::default(), Endpoints::new().get(|ctx: Context| async move {
///     format!("hello {}", ctx.url_param("name").unwrap_or("you"))
/// }))?;
/// let app: axum::Router = api.router(); // serves GET /api/v1/hello/:name
/// # let _ = app; Ok(()) }
/// ```
pub struct Api {
    pub(crate) options: ApiOptions,
    pub(crate) platform: Platform,
    pub(crate) prefix: String,
    pub(crate) routes: RouteTable,
    pub(crate) base_headers: BaseHeaders,
    pub(crate) logins: LoginService,
    /// The generated collections by name, for expansions (see `collection/expand.rs`).
    pub(crate) readers: Readers,
}

/// The generated collections of one API by collection name (the first one added for a name),
/// for an expansion to find the rules of a related collection. Held weakly (the routes hold
/// them), and as `Any` so that the API need not know the collection's type.
pub(crate) type Readers = Arc<
    std::sync::RwLock<
        std::collections::BTreeMap<String, std::sync::Weak<dyn std::any::Any + Send + Sync>>,
    >,
>;

/// A route as [`Api::routes`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    /// The full path, base path included.
    pub path: String,
    /// The methods it answers (`GET`, `HEAD`, `POST`...).
    pub methods: Vec<String>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("prefix", &self.prefix)
            .field(
                "routes",
                &self
                    .routes()
                    .into_iter()
                    .map(|r| r.path)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Api {
    /// Creates an API over `platform`. With `use_default_auth`, the login and logout routes are
    /// added now.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for a default header that is not a valid header.
    pub fn new(options: ApiOptions, platform: Platform) -> Result<Api> {
        let base_headers = BaseHeaders::new(&options)?;
        let prefix = format!(
            "/{}",
            normalize_api_path(&options.api_path, options.version.as_deref())
        );
        let limit = options.login_rate_limit;
        let logins = platform.login_service({
            let mut o = LoginLimits::default();
            o.per_identity = limit
                .per_identity
                .map(|l| portico_platform::Limit::new(l.attempts, l.per));
            o.per_address = limit
                .per_address
                .map(|l| portico_platform::Limit::new(l.attempts, l.per));
            o.register_per_address = None;
            o
        });
        let mut api = Api {
            options,
            platform,
            prefix,
            routes: RouteTable::default(),
            base_headers,
            logins,
            readers: Readers::default(),
        };
        if api.options.use_default_auth {
            for (path, endpoints, extras) in crate::login::routes(&api.options) {
                api.insert_route_with(
                    compile(&path.into())?,
                    RouteOptions::default(),
                    endpoints,
                    extras,
                )?;
            }
        }
        Ok(api)
    }

    /// The base path every route of this API lives under, such as `/api/v1/`.
    pub fn base_path(&self) -> &str {
        &self.prefix
    }

    /// The API's options.
    pub fn options(&self) -> &ApiOptions {
        &self.options
    }

    /// The platform this API serves.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// The routes of this API in match order: full path (`/api/v1/articles/:id`, or the regular
    /// expression after the base path) and the methods it answers.
    pub fn routes(&self) -> Vec<RouteInfo> {
        self.table()
            .iter()
            .map(|(pattern, r)| RouteInfo {
                path: format!("{}{}", self.prefix, pattern.display()),
                methods: r
                    .allow
                    .to_str()
                    .unwrap_or_default()
                    .split(", ")
                    .map(str::to_owned)
                    .collect(),
            })
            .collect()
    }

    pub(crate) fn table(&self) -> std::sync::RwLockReadGuard<'_, PathTable<Arc<Route>>> {
        self.routes.read()
    }

    /// Adds a route at `path` with default route options: the short form of
    /// [`Api::add_route`].
    ///
    /// # Errors
    /// As [`Api::add_route`].
    pub fn route(&mut self, path: impl Into<RoutePath>, endpoints: Endpoints) -> Result<()> {
        self.add_route(path, RouteOptions::default(), endpoints)
    }

    /// Adds a route at `path` (a `:name` pattern or a [`regex::Regex`]), relative to the base path.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a route exists at that path, [`Error::InvalidPath`] for a bad
    /// path, [`Error::NoEndpoints`] without endpoints, [`Error::MissingAction`] for an endpoint
    /// object without action.
    pub fn add_route(
        &mut self,
        path: impl Into<RoutePath>,
        options: RouteOptions,
        endpoints: Endpoints,
    ) -> Result<()> {
        let pattern = compile(&path.into())?;
        if endpoints.is_empty() {
            return Err(Error::NoEndpoints(pattern.display().to_owned()));
        }
        for (method, endpoint) in endpoints.iter() {
            if endpoint.action.is_none() {
                return Err(Error::MissingAction {
                    path: pattern.display().to_owned(),
                    method: method.to_owned(),
                });
            }
        }
        self.insert_route(pattern, options, endpoints)
    }

    /// True when a route exists at `pattern`'s path.
    pub(crate) fn has_route(&self, pattern: &PathPattern) -> bool {
        self.routes.has(pattern)
    }

    pub(crate) fn insert_route(
        &mut self,
        pattern: PathPattern,
        options: RouteOptions,
        endpoints: Endpoints,
    ) -> Result<()> {
        self.insert_route_with(pattern, options, endpoints, RouteExtras::default())
    }

    /// [`Api::insert_route`] with a body limit and descriptions of its own.
    pub(crate) fn insert_route_with(
        &mut self,
        pattern: PathPattern,
        options: RouteOptions,
        endpoints: Endpoints,
        extras: RouteExtras,
    ) -> Result<()> {
        let mut methods: Vec<&str> = endpoints.iter().map(|(m, _)| m).collect();
        if endpoints.get.is_some() {
            methods.insert(1, "HEAD");
        }
        if endpoints.options.is_none()
            && (self.options.default_options_endpoint.is_some() || self.options.enable_cors)
        {
            methods.push("OPTIONS");
        }
        let allow = HeaderValue::from_str(&methods.join(", "))
            .map_err(|_| Error::InvalidOption("method list".into()))?;
        let route = Route {
            options,
            endpoints,
            allow,
            body_limit: extras.body_limit,
            docs: extras.docs,
            generated: extras.generated,
            streamed: extras.streamed,
            file_download: extras.file_download,
        };
        self.routes.insert(pattern, route)
    }

    /// The axum router serving this API under its base path. Merge several with
    /// [`axum::Router::merge`]; wrap with any tower layer via [`axum::Router::layer`].
    ///
    /// Routes added to the API later are served by routers made earlier too. Serve it with `into_make_service_with_connect_info::<SocketAddr>()` so login rate limits
    /// can count per client address.
    pub fn router(&self) -> Router {
        let inner = Arc::new(crate::dispatch::ApiInner {
            prefix: self.prefix.clone(),
            routes: self.routes.clone(),
            logins: self.logins.clone(),
            platform: self.platform.clone(),
            renderer: Renderer {
                pretty: self.options.pretty_json,
            },
            base_headers: self.base_headers.clone(),
            auth: self.options.auth.clone(),
            default_options: self.options.default_options_endpoint.clone(),
            delay: self.options.auth_failure_delay,
            body_limit: self.options.body_limit,
            trusted_proxies: self.options.trusted_proxies.clone(),
        });
        let handler = move |req: Request| {
            let inner = inner.clone();
            async move { inner.serve(req).await }
        };
        let escaped = self.prefix.replace('{', "{{").replace('}', "}}");
        let mut router = Router::new()
            .route(&format!("{escaped}{{*rest}}"), any(handler.clone()))
            .route(&escaped, any(handler.clone()));
        let bare = escaped.trim_end_matches('/');
        if !bare.is_empty() {
            router = router.route(bare, any(handler));
        }
        let renderer = Renderer {
            pretty: self.options.pretty_json,
        };
        // Shared, not owned: axum clones the layered service (and so this handler) for every
        // request, and cloning the headers each time showed as 3% of a get-by-id in a profile.
        let headers = Arc::new(self.base_headers.clone());
        router.layer(CatchPanicLayer::custom(move |_panic| {
            tracing::error!("request handler panicked");
            renderer.render(
                crate::Reply::error(500, "Internal server error"),
                headers.for_origin(None),
            )
        }))
    }
}

/// Normalises an API base path: the leading slash is dropped, a trailing slash added, and the
/// version (when set) appended with its own trailing slash: `("/api", Some("v1"))` -> `api/v1/`.
/// An empty path stays empty (routes at the server root).
pub fn normalize_api_path(api_path: &str, version: Option<&str>) -> String {
    let mut out = String::new();
    for part in [Some(api_path), version].into_iter().flatten() {
        let trimmed = part.trim_matches('/');
        if !trimmed.is_empty() {
            out.push_str(trimmed);
            out.push('/');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_normalised() {
        assert_eq!(normalize_api_path("api", None), "api/");
        assert_eq!(normalize_api_path("/api/", None), "api/");
        assert_eq!(normalize_api_path("my-api/", Some("v1")), "my-api/v1/");
        assert_eq!(normalize_api_path("/", Some("/v2/")), "v2/");
        assert_eq!(normalize_api_path("", None), "");
    }
}
