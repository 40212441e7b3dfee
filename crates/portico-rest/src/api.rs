//! The [`Api`] object: configuration, the route table, and the axum router it serves.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::routing::any;
use http::HeaderValue;
use portico_platform::{Platform, RateLimiter};

use crate::cors::BaseHeaders;
use crate::path::{Matcher, normalize_api_path};
use crate::reply::Renderer;
use crate::{ApiOptions, Endpoints, Error, Result, RouteOptions, RoutePath};

/// One route: a compiled path, its options and endpoints.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) matcher: Matcher,
    pub(crate) options: RouteOptions,
    pub(crate) endpoints: Endpoints,
    /// The `Allow` header value: the route's methods.
    pub(crate) allow: HeaderValue,
}

/// An API object: a base path (plus version), options, and routes. Several can live side by
/// side; each gives an [`axum::Router`] and the routers merge (give each a distinct base path
/// or version).
///
/// # Examples
///
/// ```
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use portico_rest::{Api, ApiOptions, Endpoints, RouteOptions, Context};
/// let platform = portico_platform::Platform::open("memory:").await?;
/// let mut api = Api::new(ApiOptions { version: Some("v1".into()), ..ApiOptions::default() }, platform)?;
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
    pub(crate) routes: Vec<Route>,
    pub(crate) base_headers: BaseHeaders,
    pub(crate) limiters: Arc<LoginLimiters>,
}

/// A route as [`Api::routes`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    /// The full path, base path included.
    pub path: String,
    /// The methods it answers (`GET`, `HEAD`, `POST`...).
    pub methods: Vec<String>,
}

/// The login rate limiters of one API.
pub(crate) struct LoginLimiters {
    pub(crate) identity: Option<RateLimiter>,
    pub(crate) address: Option<RateLimiter>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("prefix", &self.prefix)
            .field(
                "routes",
                &self
                    .routes
                    .iter()
                    .map(|r| r.matcher.display())
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
        let limiters = Arc::new(LoginLimiters {
            identity: limit
                .per_identity
                .map(|l| RateLimiter::new(l.attempts, l.per)),
            address: limit
                .per_address
                .map(|l| RateLimiter::new(l.attempts, l.per)),
        });
        let mut api = Api {
            options,
            platform,
            prefix,
            routes: Vec::new(),
            base_headers,
            limiters,
        };
        if api.options.use_default_auth {
            crate::login::add_login_routes(&mut api)?;
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
        self.routes
            .iter()
            .map(|r| RouteInfo {
                path: format!("{}{}", self.prefix, r.matcher.display()),
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
        let path = path.into();
        let matcher = Matcher::compile(&path)?;
        if endpoints.is_empty() {
            return Err(Error::NoEndpoints(matcher.display().to_owned()));
        }
        for (method, endpoint) in endpoints.iter() {
            if endpoint.action.is_none() {
                return Err(Error::MissingAction {
                    path: matcher.display().to_owned(),
                    method: method.to_owned(),
                });
            }
        }
        self.insert_route(matcher, options, endpoints)
    }

    pub(crate) fn insert_route(
        &mut self,
        matcher: Matcher,
        options: RouteOptions,
        endpoints: Endpoints,
    ) -> Result<()> {
        if self.routes.iter().any(|r| r.matcher.key() == matcher.key()) {
            return Err(Error::DuplicatePath(matcher.display().to_owned()));
        }
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
            matcher,
            options,
            endpoints,
            allow,
        };
        // Keep the table in match order: patterns by specificity (a static segment beats a
        // parameter at the first place they differ), then regular expressions as added.
        let spec = route.matcher.specificity();
        let position = if route.matcher.is_regex() {
            self.routes.len()
        } else {
            self.routes
                .iter()
                .position(|r| r.matcher.is_regex() || r.matcher.specificity() < spec)
                .unwrap_or(self.routes.len())
        };
        self.routes.insert(position, route);
        Ok(())
    }

    /// The axum router serving this API under its base path. Merge several with
    /// [`axum::Router::merge`]; wrap with any tower layer via [`axum::Router::layer`].
    ///
    /// The router serves the routes added so far (a snapshot): add every route first.
    /// Serve it with `into_make_service_with_connect_info::<SocketAddr>()` so login rate limits
    /// can count per client address.
    pub fn router(&self) -> Router {
        let inner = Arc::new(crate::dispatch::ApiInner {
            prefix: self.prefix.clone(),
            routes: self.routes.clone(),
            platform: self.platform.clone(),
            renderer: Renderer {
                pretty: self.options.pretty_json,
            },
            base_headers: self.base_headers.clone(),
            auth: self.options.auth.clone(),
            default_options: self.options.default_options_endpoint.clone(),
            delay: self.options.auth_failure_delay,
            body_limit: self.options.body_limit,
            trust_forwarded_for: self.options.trust_forwarded_for,
        });
        let handler = move |req: Request| {
            let inner = inner.clone();
            async move { inner.handle(req).await }
        };
        let escaped = self.prefix.replace('{', "{{").replace('}', "}}");
        let mut router = Router::new()
            .route(&format!("{escaped}{{*rest}}"), any(handler.clone()))
            .route(&escaped, any(handler.clone()));
        let bare = escaped.trim_end_matches('/');
        if !bare.is_empty() {
            router = router.route(bare, any(handler));
        }
        router
    }
}
