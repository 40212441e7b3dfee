//! The options of an [`crate::Api`].

use std::time::Duration;

use crate::{AuthUserHook, Endpoint, LoginHook};

/// Everything an [`crate::Api`] can be configured with. Start from the defaults and set what
/// differs (the struct is `#[non_exhaustive]`, so new options never break your code), with its
/// setters, one a field:
///
/// ```
/// use portico_routes::ApiOptions;
///
/// let options = ApiOptions::default()
///     .api_path("api/")
///     .version("v1")
///     .use_default_auth(true)
///     .pretty_json(true);
/// assert_eq!(options.version.as_deref(), Some("v1"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ApiOptions {
    /// Base path of the API (`api/` by default); normalised: leading slash dropped, trailing
    /// slash added.
    pub api_path: String,
    /// Appended to the base path when set (`api/v1/`).
    pub version: Option<String>,
    /// Indent JSON replies.
    pub pretty_json: bool,
    /// Headers added to every reply. They override the built-in ones (`Content-Type:
    /// application/json` and the CORS headers) and are overridden by an endpoint's own headers;
    /// names are compared case-insensitively.
    pub default_headers: Vec<(String, String)>,
    /// Accept cross-origin requests (true by default).
    pub enable_cors: bool,
    /// Details of the CORS replies when `enable_cors` is on.
    pub cors: CorsOptions,
    /// Add `POST {api}login` and `POST {api}logout` (GET accepted too).
    pub use_default_auth: bool,
    /// How callers are authenticated.
    pub auth: AuthOptions,
    /// Serves OPTIONS on every route that has no OPTIONS endpoint of its own.
    pub default_options_endpoint: Option<Endpoint>,
    /// Random delay before every 401 and 403 reply (500-1000 ms by default; use
    /// [`DelayRange::none`] in tests).
    pub auth_failure_delay: DelayRange,
    /// Limits on failed logins.
    pub login_rate_limit: LoginRateLimit,
    /// Called after a successful login; its value is added to the reply as `data.extra`.
    pub on_logged_in: Option<LoginHook>,
    /// Called after a logout; its value is added to the reply as `data.extra`.
    pub on_logged_out: Option<LoginHook>,
    /// Largest accepted request body in bytes (50 MB by default); larger ones get 413.
    pub body_limit: usize,
    /// Page size of a generated getAll without `limit` (100 by default).
    pub default_page_size: u64,
    /// Largest `limit` a generated getAll accepts (1000 by default); larger ones are clamped.
    pub max_page_size: u64,
    /// Largest page a generated getAll sends, in bytes of JSON (16 MiB by default): a page of
    /// large documents stops early, and its `Link` header names where the next page starts. So
    /// a list's memory is bounded by bytes as well as by count.
    pub max_reply_bytes: usize,
    /// The proxies whose `X-Forwarded-For` is believed when working out the client address for
    /// login limits (none by default: the TCP peer is the client).
    pub trusted_proxies: portico_edge::TrustedProxies,
}

impl ApiOptions {
    /// Sets [`api_path`](ApiOptions::api_path): base path of the API (`api/` by default).
    pub fn api_path(mut self, api_path: impl Into<String>) -> Self {
        self.api_path = api_path.into();
        self
    }

    /// Sets [`version`](ApiOptions::version): appended to the base path when set (`api/v1/`) (to
    /// `Some`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets [`pretty_json`](ApiOptions::pretty_json): indent JSON replies.
    pub fn pretty_json(mut self, pretty_json: bool) -> Self {
        self.pretty_json = pretty_json;
        self
    }

    /// Sets [`default_headers`](ApiOptions::default_headers): headers added to every reply.
    pub fn default_headers(mut self, default_headers: Vec<(String, String)>) -> Self {
        self.default_headers = default_headers;
        self
    }

    /// Sets [`enable_cors`](ApiOptions::enable_cors): accept cross-origin requests (true by
    /// default).
    pub fn enable_cors(mut self, enable_cors: bool) -> Self {
        self.enable_cors = enable_cors;
        self
    }

    /// Sets [`cors`](ApiOptions::cors): details of the CORS replies when `enable_cors` is on.
    pub fn cors(mut self, cors: CorsOptions) -> Self {
        self.cors = cors;
        self
    }

    /// Sets [`use_default_auth`](ApiOptions::use_default_auth): add `POST {api}login` and `POST
    /// {api}logout` (GET accepted too).
    pub fn use_default_auth(mut self, use_default_auth: bool) -> Self {
        self.use_default_auth = use_default_auth;
        self
    }

    /// Sets [`auth`](ApiOptions::auth): how callers are authenticated.
    pub fn auth(mut self, auth: AuthOptions) -> Self {
        self.auth = auth;
        self
    }

    /// Sets [`default_options_endpoint`](ApiOptions::default_options_endpoint): serves OPTIONS on
    /// every route that has no OPTIONS endpoint of its own (to `Some`).
    pub fn default_options_endpoint(mut self, default_options_endpoint: Endpoint) -> Self {
        self.default_options_endpoint = Some(default_options_endpoint);
        self
    }

    /// Sets [`auth_failure_delay`](ApiOptions::auth_failure_delay): random delay before every 401
    /// and 403 reply (500-1000 ms by default.
    pub fn auth_failure_delay(mut self, auth_failure_delay: DelayRange) -> Self {
        self.auth_failure_delay = auth_failure_delay;
        self
    }

    /// Sets [`login_rate_limit`](ApiOptions::login_rate_limit): limits on failed logins.
    pub fn login_rate_limit(mut self, login_rate_limit: LoginRateLimit) -> Self {
        self.login_rate_limit = login_rate_limit;
        self
    }

    /// Sets [`on_logged_in`](ApiOptions::on_logged_in): called after a successful login (to
    /// `Some`).
    pub fn on_logged_in(mut self, on_logged_in: LoginHook) -> Self {
        self.on_logged_in = Some(on_logged_in);
        self
    }

    /// Sets [`on_logged_out`](ApiOptions::on_logged_out): called after a logout (to `Some`).
    pub fn on_logged_out(mut self, on_logged_out: LoginHook) -> Self {
        self.on_logged_out = Some(on_logged_out);
        self
    }

    /// Sets [`body_limit`](ApiOptions::body_limit): largest accepted request body in bytes (50 MB
    /// by default).
    pub fn body_limit(mut self, body_limit: usize) -> Self {
        self.body_limit = body_limit;
        self
    }

    /// Sets [`default_page_size`](ApiOptions::default_page_size): page size of a generated getAll
    /// without `limit` (100 by default).
    pub fn default_page_size(mut self, default_page_size: u64) -> Self {
        self.default_page_size = default_page_size;
        self
    }

    /// Sets [`max_page_size`](ApiOptions::max_page_size): largest `limit` a generated getAll
    /// accepts (1000 by default).
    pub fn max_page_size(mut self, max_page_size: u64) -> Self {
        self.max_page_size = max_page_size;
        self
    }

    /// Sets [`max_reply_bytes`](ApiOptions::max_reply_bytes): largest page a generated getAll
    /// sends, in bytes of JSON (16 MiB by default).
    pub fn max_reply_bytes(mut self, max_reply_bytes: usize) -> Self {
        self.max_reply_bytes = max_reply_bytes;
        self
    }

    /// Sets [`trusted_proxies`](ApiOptions::trusted_proxies): the proxies whose `X-Forwarded-For`
    /// is believed when working out the client address for login limits (none by default.
    pub fn trusted_proxies(mut self, trusted_proxies: portico_edge::TrustedProxies) -> Self {
        self.trusted_proxies = trusted_proxies;
        self
    }
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            api_path: "api/".into(),
            version: None,
            pretty_json: false,
            default_headers: Vec::new(),
            enable_cors: true,
            cors: CorsOptions::default(),
            use_default_auth: false,
            auth: AuthOptions::default(),
            default_options_endpoint: None,
            auth_failure_delay: DelayRange::default(),
            login_rate_limit: LoginRateLimit::default(),
            on_logged_in: None,
            on_logged_out: None,
            body_limit: 50 * 1024 * 1024,
            default_page_size: 100,
            max_page_size: 1000,
            max_reply_bytes: 16 * 1024 * 1024,
            trusted_proxies: portico_edge::TrustedProxies::none(),
        }
    }
}

/// CORS details. By default any origin is allowed (`Access-Control-Allow-Origin: *`).
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_routes::{ApiOptions, CorsOptions};
///
/// let cors = CorsOptions::default().expose_headers(["X-Total-Count"]);
/// let options = ApiOptions::default().enable_cors(true).cors(cors);
/// assert_eq!(options.cors.expose_headers, ["X-Total-Count"]);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CorsOptions {
    /// `None`: any origin (`*`). `Some(list)`: only these origins; a listed request `Origin` is
    /// echoed back (with `Vary: Origin`), any other gets no allow-origin header.
    pub allow_origins: Option<Vec<String>>,
    /// `None`: `Origin, X-Requested-With, Content-Type, Accept, If-Match, If-None-Match`, plus
    /// `X-User-Id, X-Auth-Token` when default auth is on. `Some(list)`: exactly these.
    pub allow_headers: Option<Vec<String>>,
    /// Response headers a browser script may read (`X-Total-Count, Link, ETag` by default: a
    /// page's paging, and the tag a conditional write sends back).
    pub expose_headers: Vec<String>,
}

impl CorsOptions {
    /// Sets [`allow_origins`](CorsOptions::allow_origins): `None` (to `Some`).
    pub fn allow_origins(mut self, allow_origins: Vec<String>) -> Self {
        self.allow_origins = Some(allow_origins);
        self
    }

    /// Sets [`allow_headers`](CorsOptions::allow_headers): `None` (to `Some`).
    pub fn allow_headers(mut self, allow_headers: Vec<String>) -> Self {
        self.allow_headers = Some(allow_headers);
        self
    }

    /// Sets [`expose_headers`](CorsOptions::expose_headers): response headers a browser script may
    /// read (`X-Total-Count, Link, ETag` by default.
    pub fn expose_headers<S: Into<String>>(
        mut self,
        expose_headers: impl IntoIterator<Item = S>,
    ) -> Self {
        self.expose_headers = expose_headers.into_iter().map(Into::into).collect();
        self
    }
}

impl Default for CorsOptions {
    fn default() -> Self {
        CorsOptions {
            allow_origins: None,
            allow_headers: None,
            expose_headers: vec!["X-Total-Count".into(), "Link".into(), "ETag".into()],
        }
    }
}

/// How callers are authenticated.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_routes::AuthOptions;
///
/// let auth = AuthOptions::default().allow_query_token(true);
/// assert!(auth.allow_query_token);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AuthOptions {
    /// Dotted path, inside the user record, of the hashed login token
    /// (`services.resume.loginTokens.hashedToken` by default).
    pub token_path: String,
    /// Identifies the caller; the default reads `X-Auth-Token` (and `X-User-Id` when sent).
    pub user: Option<AuthUserHook>,
    /// Also accept the token from the `access_token` query parameter (off: URLs leak into logs).
    pub allow_query_token: bool,
}

impl AuthOptions {
    /// Sets [`token_path`](AuthOptions::token_path): dotted path, inside the user record, of the
    /// hashed login token (`services.resume.loginTokens.hashedToken` by default).
    pub fn token_path(mut self, token_path: impl Into<String>) -> Self {
        self.token_path = token_path.into();
        self
    }

    /// Sets [`user`](AuthOptions::user): identifies the caller (to `Some`).
    pub fn user(mut self, user: AuthUserHook) -> Self {
        self.user = Some(user);
        self
    }

    /// Sets [`allow_query_token`](AuthOptions::allow_query_token): also accept the token from the
    /// `access_token` query parameter (off.
    pub fn allow_query_token(mut self, allow_query_token: bool) -> Self {
        self.allow_query_token = allow_query_token;
        self
    }
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            token_path: "services.resume.loginTokens.hashedToken".into(),
            user: None,
            allow_query_token: false,
        }
    }
}

/// A random delay between `min` and `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayRange {
    /// Shortest delay.
    pub min: Duration,
    /// Longest delay.
    pub max: Duration,
}

impl DelayRange {
    /// No delay at all.
    pub fn none() -> DelayRange {
        DelayRange {
            min: Duration::ZERO,
            max: Duration::ZERO,
        }
    }

    /// A delay drawn uniformly from `min..=max` (`max` below `min` counts as `min`).
    pub fn pick(&self) -> Duration {
        if self.max <= self.min {
            return self.min;
        }
        let span = (self.max - self.min).as_millis() as u64;
        self.min + Duration::from_millis(rand::random_range(0..=span))
    }
}

impl Default for DelayRange {
    fn default() -> Self {
        DelayRange {
            min: Duration::from_millis(500),
            max: Duration::from_millis(1000),
        }
    }
}

/// A budget of failed attempts per time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimit {
    /// Failed attempts allowed in the window.
    pub attempts: u32,
    /// The window.
    pub per: Duration,
}

impl RateLimit {
    /// `attempts` failed attempts per `per`.
    pub const fn new(attempts: u32, per: Duration) -> RateLimit {
        RateLimit { attempts, per }
    }
}

/// Limits on failed logins; past them the login route answers 429 with `Retry-After`.
///
/// Built with its setters, one a field:
///
/// ```
/// use std::time::Duration;
/// use portico_routes::{LoginRateLimit, RateLimit};
///
/// // Five failed logins per account and 10 s; no limit per client address.
/// let limits = LoginRateLimit::default()
///     .per_identity(Some(RateLimit::new(5, Duration::from_secs(10))))
///     .per_address(None);
/// assert!(limits.per_address.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginRateLimit {
    /// Per identity (user, username or email); 5 per 10 s by default. `None` disables it.
    pub per_identity: Option<RateLimit>,
    /// Per client address; 20 per 10 s by default. `None` disables it.
    pub per_address: Option<RateLimit>,
}

impl LoginRateLimit {
    /// Sets [`per_identity`](LoginRateLimit::per_identity): per identity (user, username or email)
    /// (`None` turns it off).
    pub fn per_identity(mut self, per_identity: Option<RateLimit>) -> Self {
        self.per_identity = per_identity;
        self
    }

    /// Sets [`per_address`](LoginRateLimit::per_address): per client address (`None` turns it off).
    pub fn per_address(mut self, per_address: Option<RateLimit>) -> Self {
        self.per_address = per_address;
        self
    }
}

impl Default for LoginRateLimit {
    fn default() -> Self {
        LoginRateLimit {
            per_identity: Some(RateLimit {
                attempts: 5,
                per: Duration::from_secs(10),
            }),
            per_address: Some(RateLimit {
                attempts: 20,
                per: Duration::from_secs(10),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_in_range() {
        let d = DelayRange {
            min: Duration::from_millis(5),
            max: Duration::from_millis(9),
        };
        for _ in 0..50 {
            let p = d.pick();
            assert!(p >= d.min && p <= d.max, "{p:?}");
        }
        assert_eq!(DelayRange::none().pick(), Duration::ZERO);
    }
}
