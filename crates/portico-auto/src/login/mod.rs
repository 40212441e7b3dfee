//! The password login add-on: `POST /users/login` and `POST /users/register`.
//!
//! The auto API issues no tokens itself (as the spec says); this optional router does, over the
//! platform's accounts. Both endpoints answer `{"id": user_id, "token": token, "tokenExpires":
//! ISO-8601}`; the token then goes in `Authorization: Bearer <token>`.
//!
//! | Request body | Meaning |
//! |---|---|
//! | `username` / `email` / `user` (a string: an email when it holds `@`, else a username; or `{username}`, `{email}`, `{id}`) | who logs in |
//! | `password` (a string), with `hashed: true` when it is already the SHA-256 hex digest, or `{digest, algorithm: "sha-256"}` | the password |
//! | `profile` (register only) | the new user's profile object |
//!
//! Every failed login — unknown user, wrong password, no password, missing fields — is the same
//! 401 `{"error":"unauthorized","reason":"Incorrect credentials"}`. Failures are limited per
//! identity and per client address (the client address needs the server to be run with
//! `into_make_service_with_connect_info::<SocketAddr>()`); past the limit the reply is 429 with
//! `Retry-After`.

mod credentials;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use axum::{Json, Router};
use http::{Method, StatusCode};
use portico_platform::{LoginToken, NewUser, Platform, RateLimiter};
use serde_json::json;

use crate::ApiError;
use crate::args::parse_body;
use crate::body::read_body;
use credentials::{Credentials, Registration};

/// The login add-on's routes, as `api-routes` lists them.
pub(crate) const LOGIN_ROUTES: [&str; 2] = ["/users/login", "/users/register"];

/// Login bodies are small; this caps what an anonymous client can make the server buffer.
const LOGIN_BODY_LIMIT: usize = 64 * 1024;

/// Settings of the login add-on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOptions {
    /// Whether `POST /users/register` creates accounts (default true). When false — or when the
    /// platform's `AccountsConfig::forbid_client_account_creation` is set — it answers 403.
    pub allow_register: bool,
    /// Failed logins allowed per identity (username or email) per window (default 5).
    pub attempts_per_identity: u32,
    /// Failed logins allowed per client address per window (default 20).
    pub attempts_per_address: u32,
    /// The sliding window of both limits (default 10 seconds).
    pub window: Duration,
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            allow_register: true,
            attempts_per_identity: 5,
            attempts_per_address: 20,
            window: Duration::from_secs(10),
        }
    }
}

struct LoginState {
    platform: Platform,
    options: LoginOptions,
    per_identity: RateLimiter,
    per_address: RateLimiter,
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
/// let login = PasswordLogin::new(platform, LoginOptions { allow_register: false, ..LoginOptions::default() });
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
    /// The add-on over `platform`'s accounts.
    pub fn new(platform: Platform, options: LoginOptions) -> Self {
        let per_identity = RateLimiter::new(options.attempts_per_identity, options.window);
        let per_address = RateLimiter::new(options.attempts_per_address, options.window);
        PasswordLogin {
            state: Arc::new(LoginState {
                platform,
                options,
                per_identity,
                per_address,
            }),
        }
    }

    /// A router with `POST /users/login` and `POST /users/register` (and OPTIONS on both, for
    /// cross-origin preflights). Other methods on these paths get a 405 JSON error.
    pub fn router(&self) -> Router {
        Router::new()
            .route(LOGIN_ROUTES[0], endpoint(post(login)))
            .route(LOGIN_ROUTES[1], endpoint(post(register)))
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

/// The client address, when the server was started with connect info.
fn client_address(req: &Request) -> String {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_string())
        .unwrap_or_else(|| "unknown".to_owned())
}

async fn body_of(req: Request) -> Result<Option<serde_json::Value>, ApiError> {
    let (parts, body) = req.into_parts();
    let bytes = read_body(&parts.headers, body, LOGIN_BODY_LIMIT).await?;
    parse_body(&parts.headers, &bytes)
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
    let address = client_address(&req);
    // The failure counts live in the store, shared by every instance on one database.
    let store = state.platform.store().clone();
    let store = store.as_ref();
    let result = async {
        let body = body_of(req).await?;
        let Some(credentials) = Credentials::from_body(body.as_ref()) else {
            // A malformed login is a failed login, and counts against the address.
            if let Err(wait) = state.per_address.check(store, &address).await {
                return Err(ApiError::too_many_requests(wait));
            }
            state.per_address.record_failure(store, &address).await;
            return Err(ApiError::incorrect_credentials());
        };
        let identity = credentials.identity_key();
        let waits = [
            state.per_identity.check(store, &identity).await,
            state.per_address.check(store, &address).await,
        ];
        if let Some(wait) = waits.into_iter().filter_map(Result::err).max() {
            return Err(ApiError::too_many_requests(wait));
        }
        match state
            .platform
            .accounts()
            .login(&credentials.user, &credentials.password)
            .await
        {
            Ok(token) => {
                state.per_identity.reset(store, &identity).await;
                token_reply(&state, &token)
            }
            Err(err) if err.is_client_error() => {
                state.per_identity.record_failure(store, &identity).await;
                state.per_address.record_failure(store, &address).await;
                Err(ApiError::incorrect_credentials())
            }
            Err(err) => Err(ApiError::from(err)),
        }
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

async fn register(State(state): State<Arc<LoginState>>, req: Request) -> Response {
    let result = async {
        let accounts = state.platform.accounts();
        if !state.options.allow_register || accounts.config().forbid_client_account_creation {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "Signups forbidden",
            ));
        }
        let body = body_of(req).await?;
        let registration = Registration::from_body(body.as_ref())?;
        let user_id = accounts
            .create_user(NewUser {
                username: registration.username,
                email: registration.email,
                password: Some(registration.password),
                profile: registration.profile,
                roles: Vec::new(),
            })
            .await?;
        let token = accounts.new_login_token(&user_id).await?;
        token_reply(&state, &token)
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}
