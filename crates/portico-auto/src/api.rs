//! [`AutoApi`]: the builder that turns a platform into a router.

use std::sync::Arc;

use axum::Router;
use axum::routing::any;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use portico_edge::{DEFAULT_BODY_LIMIT, RouteDoc};
use portico_platform::{MethodOptions, Platform};
use serde_json::Value;

use crate::auth::{BearerTokenLayer, TokenAuthLayer};
use crate::dispatch::dispatch;
use crate::layers::{
    FailureDelay, add_response_headers, catch_panic, default_response_headers, delay_auth_failures,
};
use crate::login::{LOGIN_ROUTES, LoginOptions, PasswordLogin};
use crate::route::RouteTable;
use crate::route_doc::listing;
use crate::state::Shared;
use crate::{AutoConfig, Error, Result};

/// The automatic JSON HTTP API of a [`Platform`].
///
/// Every method becomes `POST /methods/<name>`, every publication `GET /publications/<name>`
/// (or their `url` / `http_method` options), every configured collection gets `POST /<name>`,
/// `PATCH /<name>/:_id` and `DELETE /<name>/:_id`, and `GET /publications/api-routes` lists
/// them all. See the crate docs for the request and reply rules.
#[derive(Clone)]
pub struct AutoApi {
    platform: Platform,
    config: AutoConfig,
    headers: Option<Vec<(String, String)>>,
    body_limit: usize,
    login: Option<LoginOptions>,
    token_auth: Option<BearerTokenLayer>,
    failure_delay: FailureDelay,
}

impl std::fmt::Debug for AutoApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoApi")
            .field("config", &self.config)
            .field("headers", &self.headers)
            .field("body_limit", &self.body_limit)
            .field("login", &self.login)
            .field("token_auth", &self.token_auth)
            .field("failure_delay", &self.failure_delay)
            .finish_non_exhaustive()
    }
}

impl AutoApi {
    /// An auto API over `platform` with the default configuration: endpoints for every
    /// collection, no object-id collections, the default headers, a 50 MB body limit, no
    /// authentication layers, no login add-on and no delay before 401 and 403 replies.
    pub fn new(platform: Platform) -> Self {
        AutoApi {
            platform,
            config: AutoConfig::default(),
            headers: None,
            body_limit: DEFAULT_BODY_LIMIT,
            login: None,
            token_auth: None,
            failure_delay: FailureDelay::default(),
        }
    }

    /// Holds every 401 and 403 reply of this API (a failed `/users/login` too) back for a
    /// random delay between `min` and `max` before it is sent, as the routes door does with
    /// its `auth_failure_delay`: failures cannot be told apart by their timing, and each guess
    /// costs time. None by default (the spec's behaviour); the `portico` server sets 500-1000
    /// ms unless its config says otherwise.
    #[must_use]
    pub fn auth_failure_delay(
        mut self,
        min: std::time::Duration,
        max: std::time::Duration,
    ) -> Self {
        self.failure_delay = FailureDelay { min, max };
        self
    }

    /// Sets which collections get endpoints and which use object ids (the spec's
    /// `AutoApi.configure`).
    #[must_use]
    pub fn configure(mut self, config: AutoConfig) -> Self {
        self.config = config;
        self
    }

    /// Replaces the headers sent with every response (the spec's `setResponseHeaders`). The
    /// default is `Cache-Control: no-store` and `Pragma: no-cache`; pass those too to keep them.
    /// A header an endpoint sets itself (`Allow`, `Retry-After`) is never overridden.
    ///
    /// This is how cross-origin use is enabled:
    ///
    /// ```
    /// # use portico_auto::AutoApi;
    /// # fn f(api: AutoApi) -> AutoApi {
    /// api.response_headers([
    ///     ("Cache-Control", "no-store"),
    ///     ("Pragma", "no-cache"),
    ///     ("Access-Control-Allow-Origin", "*"),
    ///     ("Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, OPTIONS"),
    ///     ("Access-Control-Allow-Headers", "Content-Type, Authorization, X-Requested-With"),
    /// ])
    /// # }
    /// ```
    ///
    /// Names and values are checked by [`AutoApi::router`].
    #[must_use]
    pub fn response_headers<I, K, V>(mut self, headers: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.headers = Some(
            headers
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        self
    }

    /// Sets the largest accepted request body in bytes (default 50 MB); larger ones get 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Adds the password login add-on (`POST /users/login`, `POST /users/register`) to the
    /// router, and to the route listing.
    #[must_use]
    pub fn with_login(mut self, options: LoginOptions) -> Self {
        self.login = Some(options);
        self
    }

    /// Wraps the router in the two authentication layers, in the right order: `parser` (a
    /// [`BearerTokenLayer`]) outside, a [`TokenAuthLayer`] on this platform inside. Without this
    /// (or layers of your own), every call runs with no user.
    #[must_use]
    pub fn with_token_authentication(mut self, parser: BearerTokenLayer) -> Self {
        self.token_auth = Some(parser);
        self
    }

    /// Sets a method's options before the method is defined (the spec's
    /// `AutoApi.setMethodOptions`); the platform keeps them for the definition.
    ///
    /// # Errors
    /// [`Error::Platform`] when the method is defined already or has options already.
    pub fn set_method_options(&self, name: &str, options: MethodOptions) -> Result<()> {
        Ok(self.platform.set_method_options(name, options)?)
    }

    /// The platform this API serves.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    fn listed_routes(&self) -> Vec<(Method, &'static str, &'static str)> {
        if self.login.is_some() {
            LOGIN_ROUTES
                .iter()
                .map(|(path, what)| (Method::POST, *path, *what))
                .collect()
        } else {
            Vec::new()
        }
    }

    fn build_table(&self) -> Result<RouteTable> {
        let (table, mut errors) =
            RouteTable::build(&self.platform, &self.config, &self.listed_routes(), None);
        match errors.is_empty() {
            true => Ok(table),
            false => Err(errors.swap_remove(0)),
        }
    }

    /// The `api-routes` listing of the routes as they are now:
    /// `{"api-routes": [{"_id": path, "methods": [...], "path": path}, ...]}`.
    ///
    /// # Errors
    /// As [`AutoApi::router`].
    pub fn route_listing(&self) -> Result<Value> {
        Ok(listing(&self.routes()?))
    }

    /// Every route this API serves as it is now, as data: method, path (from the router's root,
    /// parameters as `:name`), who may call it, the rules that apply, and JSON Schemas of the
    /// bodies where they are known. Methods and publications are
    /// [`portico_edge::Access::OptionalUser`] (they run with or without a user); the login
    /// add-on's routes are public. The `api-routes` listing is made from this, and so can
    /// `portico routes` and API documents be.
    ///
    /// # Errors
    /// As [`AutoApi::router`].
    pub fn routes(&self) -> Result<Vec<RouteDoc>> {
        let register_open = self.login.as_ref().is_some_and(|l| l.allow_register)
            && !self
                .platform
                .accounts()
                .config()
                .forbid_client_account_creation;
        let context = crate::route_doc::Context {
            platform: &self.platform,
            register_open,
        };
        Ok(self.build_table()?.docs(Some(&context)))
    }

    fn header_map(&self) -> Result<HeaderMap> {
        let Some(pairs) = &self.headers else {
            return Ok(default_response_headers());
        };
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            let invalid = |reason: String| Error::InvalidHeader {
                name: name.clone(),
                reason,
            };
            let header_name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(e.to_string()))?;
            let header_value = HeaderValue::from_str(value).map_err(|e| invalid(e.to_string()))?;
            headers.append(header_name, header_value);
        }
        Ok(headers)
    }

    /// Builds the router.
    ///
    /// Methods, publications and collections defined later are still served: the router looks
    /// the registries up again when a request finds no route.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`], [`Error::ForeignArgsExtractor`] or [`Error::DuplicateRoute`] for
    /// a method, publication or collection whose endpoint cannot be built;
    /// [`Error::InvalidHeader`] for a bad response header.
    pub fn router(&self) -> Result<Router> {
        let headers = Arc::new(self.header_map()?);
        let table = self.build_table()?;
        let shared = Arc::new(Shared::new(
            self.platform.clone(),
            self.config.clone(),
            self.body_limit,
            self.listed_routes(),
            table,
        ));
        let mut router = Router::new()
            .route("/", any(dispatch))
            .route("/{*path}", any(dispatch))
            .with_state(shared);
        if let Some(options) = &self.login {
            router =
                router.merge(PasswordLogin::new(self.platform.clone(), options.clone()).router());
        }
        if let Some(parser) = self.token_auth {
            router = router
                .layer(TokenAuthLayer::new(self.platform.clone()))
                .layer(parser);
        }
        // Outside the authentication layers, so a panic anywhere below is a JSON 500; inside
        // the header layer, so that reply still carries the global headers.
        router = router.layer(axum::middleware::from_fn(catch_panic));
        router = router.layer(axum::middleware::map_response_with_state(
            headers,
            add_response_headers,
        ));
        if !self.failure_delay.is_zero() {
            router = router.layer(axum::middleware::map_response_with_state(
                self.failure_delay,
                delay_auth_failures,
            ));
        }
        Ok(router)
    }
}
