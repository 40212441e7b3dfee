//! The password login add-on: `POST /users/login` and `POST /users/register`.
//!
//! The auto API issues no tokens itself (as the spec says); this optional router does, over the
//! platform's [`LoginService`] (the same credential forms, lookup order and limits as the routes
//! door). Both endpoints answer `{"id": user_id, "token": token, "tokenExpires": ISO-8601}`; the
//! token then goes in `Authorization: Bearer <token>`.
//!
//! | Request body (JSON, or a form) | Meaning |
//! |---|---|
//! | `email`, else `username`, else `user` (a string: an email when it holds `@`, else a username; or `{email}`, `{username}`, `{id}`) | who logs in |
//! | `password` (a string), with `hashed: true` when it is already the SHA-256 hex digest, or `{digest, algorithm: "sha-256"}` (the algorithm is required) | the password |
//! | `profile` (register only) | the new user's profile object |
//!
//! Every failed login — unknown user, wrong password, no password, missing fields, a body that
//! is not an object — is the same 401 `{"error":"unauthorized","reason":"Incorrect
//! credentials"}`; a body that is not JSON or a form at all is a 400. Failures are limited per
//! account and client address, per account, and per address; sign-ups per address. Past a
//! limit the reply is 429 with `Retry-After`. A correct password from another address is still
//! accepted while one address is held back, so no one can lock an owner out (see
//! [`portico_platform::LoginService`]).
//!
//! The client address is the TCP peer's (the server must be run with
//! `into_make_service_with_connect_info::<SocketAddr>()`), or, when that peer is one of
//! [`LoginOptions::trusted_proxies`], the client its `X-Forwarded-For` names.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use axum::{Json, Router};
use http::{Method, StatusCode};
use portico_edge::{TrustedProxies, parse_body, read_body};
use portico_platform::{Limit, LoginError, LoginLimits, LoginService, LoginToken, Platform};
use serde_json::{Value, json};

use crate::ApiError;

/// The login add-on's routes, with what each does, as the route description lists them.
pub(crate) const LOGIN_ROUTES: [(&str, &str); 2] =
    [("/users/login", "log in"), ("/users/register", "register")];

/// Login bodies are small; this caps what an anonymous client can make the server buffer.
const LOGIN_BODY_LIMIT: usize = 64 * 1024;

/// Settings of the login add-on.
///
/// Built with its setters, one a field:
///
/// ```
/// use std::time::Duration;
/// use portico_auto::LoginOptions;
///
/// let options = LoginOptions::default()
///     .allow_register(false)
///     .attempts_per_identity(3)
///     .window(Duration::from_secs(60));
/// assert!(!options.allow_register);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginOptions {
    /// Whether `POST /users/register` creates accounts (default true). When false — or when the
    /// platform's `AccountsConfig::forbid_client_account_creation` is set — it answers 403.
    pub allow_register: bool,
    /// Failed logins allowed per account and client address per window (default 5).
    pub attempts_per_identity: u32,
    /// Failed logins allowed per client address per window (default 20).
    pub attempts_per_address: u32,
    /// The sliding window of both limits (default 10 seconds).
    pub window: Duration,
    /// Sign-ups allowed per client address (default 10 a minute); `None` for no limit.
    pub register_per_address: Option<Limit>,
    /// The proxies whose `X-Forwarded-For` is believed when finding the client address (none
    /// by default: the address is the TCP peer's).
    pub trusted_proxies: TrustedProxies,
}

impl LoginOptions {
    /// Sets [`allow_register`](LoginOptions::allow_register): whether `POST /users/register`
    /// creates accounts (default true).
    pub fn allow_register(mut self, allow_register: bool) -> Self {
        self.allow_register = allow_register;
        self
    }

    /// Sets [`attempts_per_identity`](LoginOptions::attempts_per_identity): failed logins allowed
    /// per account and client address per window (default 5).
    pub fn attempts_per_identity(mut self, attempts_per_identity: u32) -> Self {
        self.attempts_per_identity = attempts_per_identity;
        self
    }

    /// Sets [`attempts_per_address`](LoginOptions::attempts_per_address): failed logins allowed per
    /// client address per window (default 20).
    pub fn attempts_per_address(mut self, attempts_per_address: u32) -> Self {
        self.attempts_per_address = attempts_per_address;
        self
    }

    /// Sets [`window`](LoginOptions::window): the sliding window of both limits (default 10
    /// seconds).
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Sets [`register_per_address`](LoginOptions::register_per_address): sign-ups allowed per
    /// client address (default 10 a minute) (`None` turns it off).
    pub fn register_per_address(mut self, register_per_address: Option<Limit>) -> Self {
        self.register_per_address = register_per_address;
        self
    }

    /// Sets [`trusted_proxies`](LoginOptions::trusted_proxies): the proxies whose `X-Forwarded-For`
    /// is believed when finding the client address (none by default.
    pub fn trusted_proxies(mut self, trusted_proxies: TrustedProxies) -> Self {
        self.trusted_proxies = trusted_proxies;
        self
    }
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            allow_register: true,
            attempts_per_identity: 5,
            attempts_per_address: 20,
            window: Duration::from_secs(10),
            register_per_address: LoginLimits::default().register_per_address,
            trusted_proxies: TrustedProxies::none(),
        }
    }
}

impl LoginOptions {
    /// The platform login service's limits these options ask for.
    pub fn limits(&self) -> LoginLimits {
        {
            let mut o = LoginLimits::default();
            o.per_identity = Some(Limit::new(self.attempts_per_identity, self.window));
            o.per_address = Some(Limit::new(self.attempts_per_address, self.window));
            o.register_per_address = self.register_per_address;
            o
        }
    }
}

struct LoginState {
    platform: Platform,
    options: LoginOptions,
    service: LoginService,
}

/// The password login add-on (see the module docs). Merge its [`PasswordLogin::router`] with
/// the auto API's, or let [`crate::AutoApi::with_login`] do it.
///
/// ```no_run
/// use portico_auto::{LoginOptions, PasswordLogin};
/// use portico_platform::Platform;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let platform = Platform::open("memory:").await?;
/// let mut options = LoginOptions::default();
/// options.allow_register = false;
/// let login = PasswordLogin::new(platform, options);
/// let app: axum::Router = login.router();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PasswordLogin {
    state: Arc<LoginState>,
}

impl std::fmt::Debug for PasswordLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordLogin")
            .field("options", &self.state.options)
            .finish_non_exhaustive()
    }
}

impl PasswordLogin {
    /// The add-on over `platform`'s login service.
    pub fn new(platform: Platform, options: LoginOptions) -> Self {
        let service = platform.login_service(options.limits());
        PasswordLogin {
            state: Arc::new(LoginState {
                platform,
                options,
                service,
            }),
        }
    }

    /// A router with `POST /users/login` and `POST /users/register` (and OPTIONS on both, for
    /// cross-origin preflights). Other methods on these paths get a 405 JSON error.
    pub fn router(&self) -> Router {
        Router::new()
            .route(LOGIN_ROUTES[0].0, endpoint(post(login)))
            .route(LOGIN_ROUTES[1].0, endpoint(post(register)))
            .with_state(self.state.clone())
    }
}

fn endpoint(router: MethodRouter<Arc<LoginState>>) -> MethodRouter<Arc<LoginState>> {
    router
        .options(|| async {
            let mut response = StatusCode::OK.into_response();
            response.headers_mut().insert(
                http::header::ALLOW,
                http::HeaderValue::from_static("OPTIONS, POST"),
            );
            response
        })
        .fallback(|method: Method, uri: http::Uri| async move {
            ApiError::method_not_allowed(&method, uri.path(), &[Method::OPTIONS, Method::POST])
        })
}

/// The client address (under the trusted-proxy rule) and the parsed body of a request.
async fn read(
    state: &LoginState,
    req: Request,
) -> Result<(Option<std::net::IpAddr>, Option<Value>), ApiError> {
    let (parts, body) = req.into_parts();
    let client = state
        .options
        .trusted_proxies
        .client_ip_of(&parts.headers, &parts.extensions);
    let bytes = read_body(&parts.headers, body, LOGIN_BODY_LIMIT).await?;
    let body = parse_body(&parts.headers, &bytes)?.into_value()?;
    Ok((client, body))
}

/// The reply to a [`LoginError`].
fn login_error(err: LoginError) -> ApiError {
    match err {
        LoginError::Failed => ApiError::incorrect_credentials(),
        LoginError::TooManyAttempts(wait) => ApiError::too_many_requests(wait),
        LoginError::SignupsForbidden => {
            ApiError::new(StatusCode::FORBIDDEN, "forbidden", "Signups forbidden")
        }
        LoginError::InvalidUser(reason) => ApiError::bad_request("invalid-user", reason),
        LoginError::TotpRequired => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "totp-required",
            LoginError::TotpRequired.to_string(),
        ),
        LoginError::TotpInvalid => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "totp-invalid",
            LoginError::TotpInvalid.to_string(),
        ),
        LoginError::EmailNotVerified => ApiError::new(
            StatusCode::FORBIDDEN,
            "email-not-verified",
            LoginError::EmailNotVerified.to_string(),
        ),
        // The one status mapping: 503 while the database is unavailable, else 500.
        LoginError::Platform(e) => ApiError::from(e),
        other => ApiError::internal(other),
    }
}

/// The reply of both endpoints.
fn token_reply(state: &LoginState, token: &LoginToken) -> Result<Response, ApiError> {
    let issued = chrono::DateTime::parse_from_rfc3339(&token.when).map_err(|e| {
        ApiError::internal(format!("login token has a bad date {:?}: {e}", token.when))
    })?;
    let expires =
        issued.with_timezone(&chrono::Utc) + state.platform.accounts().config().token_lifetime;
    Ok(Json(json!({
        "id": token.user_id,
        "token": token.token,
        "tokenExpires": expires.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }))
    .into_response())
}

async fn login(State(state): State<Arc<LoginState>>, req: Request) -> Response {
    let result = async {
        let (client, body) = read(&state, req).await?;
        let token = state
            .service
            .login(body.as_ref(), client)
            .await
            .map_err(login_error)?;
        token_reply(&state, &token)
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

async fn register(State(state): State<Arc<LoginState>>, req: Request) -> Response {
    let result = async {
        let (client, body) = read(&state, req).await?;
        let allowed = state.options.allow_register;
        let token = state
            .service
            .register(body.as_ref(), client, allowed)
            .await
            .map_err(login_error)?;
        token_reply(&state, &token)
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}
