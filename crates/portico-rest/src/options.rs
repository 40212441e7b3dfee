//! The options of an [`crate::Api`].

use std::time::Duration;

use crate::{AuthUserHook, Endpoint, LoginHook};

/// Everything an [`crate::Api`] can be configured with. Start from the defaults and set what
/// differs (the struct is `#[non_exhaustive]`, so new options never break your code):
/// `let mut options = ApiOptions::default(); options.version = Some("v1".into());`.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginRateLimit {
    /// Per identity (user, username or email); 5 per 10 s by default. `None` disables it.
    pub per_identity: Option<RateLimit>,
    /// Per client address; 20 per 10 s by default. `None` disables it.
    pub per_address: Option<RateLimit>,
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
