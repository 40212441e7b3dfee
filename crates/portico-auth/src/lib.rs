//! The account lifecycle over HTTP: the `/auth/` endpoints of `portico serve`, as one axum
//! [`Router`] over a [`Platform`] (its [`portico_platform::Lifecycle`] does the work).
//!
//! | endpoint | body | reply |
//! |---|---|---|
//! | `POST /auth/verify-email` | `{email}` | 202, the same whether or not an account has the address |
//! | `POST /auth/verify-email/confirm` | `{token}` | 200 `{email}` |
//! | `POST /auth/password-reset` | `{email}` | 202, the same whether or not an account has the address |
//! | `POST /auth/password-reset/confirm` | `{token, password}` | 200; every login token of the account stops working |
//! | `POST /auth/email-change` (logged in) | `{email}` | 202; the link goes to the new address |
//! | `POST /auth/email-change/confirm` | `{token}` | 200 `{email}` |
//! | `POST /auth/totp/setup` (logged in) | | 200 `{secret, uri}`: a new secret, pending |
//! | `POST /auth/totp/enable` (logged in) | `{code}` | 200 `{recoveryCodes}`: password logins need `totp` from now on |
//! | `POST /auth/totp/disable` (logged in) | `{code}` | 200 (a code or a recovery code) |
//! | `GET /auth/methods` | | which sign-in methods are on |
//!
//! Replies are plain JSON; errors are `{"error": code, "reason": text}` (400 `invalid-token`
//! for a bad, used or expired link; 429 with `Retry-After` past a rate limit; 503 when this
//! server sends no mail).
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let platform = portico_platform::Platform::open("memory:").await?;
//! let app: axum::Router = portico_auth::AuthRoutes::new(platform, portico_edge::TrustedProxies::none()).router();
//! # Ok(()) }
//! ```

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRef, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::Method;
use portico_edge::{Access, AuthenticatedUser, Door, RouteDoc, TrustedProxies};
use portico_platform::{Error, Password, Platform};
use serde_json::{Value, json};

/// Where the endpoints are served.
pub const AUTH_PATH: &str = "/auth/";

/// Bodies are an address, a token and a password: a few hundred bytes.
const BODY_LIMIT: usize = 16 * 1024;

/// The reply of every request endpoint, whatever happens to the mail.
const ON_ITS_WAY: &str = "If an account has this address, a mail is on its way.";

#[derive(Clone)]
struct AuthState {
    platform: Platform,
    proxies: TrustedProxies,
}

impl FromRef<AuthState> for Platform {
    fn from_ref(state: &AuthState) -> Platform {
        state.platform.clone()
    }
}

/// The `/auth/` endpoints (see the crate docs).
#[derive(Clone)]
pub struct AuthRoutes {
    state: AuthState,
}

impl std::fmt::Debug for AuthRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthRoutes").finish_non_exhaustive()
    }
}

impl AuthRoutes {
    /// The endpoints over `platform`; `proxies` are believed about the client address that the
    /// rate limits count.
    pub fn new(platform: Platform, proxies: TrustedProxies) -> AuthRoutes {
        AuthRoutes {
            state: AuthState { platform, proxies },
        }
    }

    /// The router, with every route under [`AUTH_PATH`].
    pub fn router(&self) -> Router {
        Router::new()
            .route("/auth/verify-email", post(verify_email))
            .route("/auth/verify-email/confirm", post(verify_email_confirm))
            .route("/auth/password-reset", post(password_reset))
            .route("/auth/password-reset/confirm", post(password_reset_confirm))
            .route("/auth/email-change", post(email_change))
            .route("/auth/email-change/confirm", post(email_change_confirm))
            .route("/auth/totp/setup", post(totp_setup))
            .route("/auth/totp/enable", post(totp_enable))
            .route("/auth/totp/disable", post(totp_disable))
            .route("/auth/methods", get(methods))
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(self.state.clone())
    }

    /// The routes as data, for route listings and the OpenAPI document.
    pub fn docs() -> Vec<RouteDoc> {
        let object = |props: &[&str]| {
            let properties: serde_json::Map<String, Value> = props
                .iter()
                .map(|p| ((*p).to_owned(), json!({"type": "string"})))
                .collect();
            json!({"type": "object", "properties": properties, "required": props})
        };
        let message = json!({"type": "object", "properties": {"message": {"type": "string"}}});
        let email_reply = json!({"type": "object", "properties": {"email": {"type": "string"}}});
        let doc = |method: Method, path: &str, access: Access, summary: &str| {
            RouteDoc::new(Door::Accounts, method, format!("/auth/{path}"), access).summary(summary)
        };
        vec![
            doc(Method::POST, "verify-email", Access::Public, "mail a link that verifies an address (202 whether or not an account has it)")
                .request_body(object(&["email"]))
                .reply_body(message.clone()),
            doc(Method::POST, "verify-email/confirm", Access::Public, "verify the address of a mailed link")
                .request_body(object(&["token"]))
                .reply_body(email_reply.clone()),
            doc(Method::POST, "password-reset", Access::Public, "mail a password-reset link (202 whether or not an account has the address)")
                .request_body(object(&["email"]))
                .reply_body(message.clone()),
            doc(Method::POST, "password-reset/confirm", Access::Public, "set the password of a mailed reset link; every login token of the account stops working")
                .request_body(object(&["token", "password"]))
                .reply_body(message.clone()),
            doc(Method::POST, "email-change", Access::LoggedIn, "mail a link to a new address that moves the account to it")
                .request_body(object(&["email"]))
                .reply_body(message.clone()),
            doc(Method::POST, "email-change/confirm", Access::Public, "move the account of a mailed link to its new address")
                .request_body(object(&["token"]))
                .reply_body(email_reply),
            doc(Method::POST, "totp/setup", Access::LoggedIn, "start two-factor setup: a secret and its otpauth:// URI")
                .reply_body(json!({"type": "object", "properties": {
                    "secret": {"type": "string"}, "uri": {"type": "string"}
                }})),
            doc(Method::POST, "totp/enable", Access::LoggedIn, "turn two-factor codes on with a code of the new secret; one-time recovery codes")
                .request_body(object(&["code"]))
                .reply_body(json!({"type": "object", "properties": {
                    "recoveryCodes": {"type": "array", "items": {"type": "string"}}
                }})),
            doc(Method::POST, "totp/disable", Access::LoggedIn, "turn two-factor codes off with a code or a recovery code")
                .request_body(object(&["code"]))
                .reply_body(message),
            doc(Method::GET, "methods", Access::Public, "which sign-in methods are on")
                .reply_body(json!({"type": "object", "properties": {
                    "password": {"type": "boolean"},
                    "emailVerification": {"type": "boolean"},
                    "passwordReset": {"type": "boolean"},
                    "requireVerifiedEmail": {"type": "boolean"},
                    "oidc": {"type": "array", "items": {"type": "string"}},
                    "totp": {"type": "boolean"}
                }})),
        ]
    }
}

/// An error reply: `{"error": code, "reason": text}`.
struct AuthError {
    status: StatusCode,
    error: &'static str,
    reason: String,
    retry_after: Option<Duration>,
}

impl AuthError {
    fn new(status: StatusCode, error: &'static str, reason: impl Into<String>) -> AuthError {
        AuthError {
            status,
            error,
            reason: reason.into(),
            retry_after: None,
        }
    }
}

impl From<Error> for AuthError {
    fn from(e: Error) -> AuthError {
        match e {
            Error::TooManyRequests(wait) => AuthError {
                retry_after: Some(wait),
                ..AuthError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too-many-requests",
                    e.to_string(),
                )
            },
            Error::InvalidToken => {
                AuthError::new(StatusCode::BAD_REQUEST, "invalid-token", e.to_string())
            }
            Error::UserExists(m) => AuthError::new(StatusCode::CONFLICT, "email-taken", m),
            e if e.is_client_error() => {
                AuthError::new(StatusCode::BAD_REQUEST, "invalid", e.to_string())
            }
            e if e.is_unavailable() => {
                tracing::error!(error = %e, "account lifecycle: database unavailable");
                AuthError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "The database is unavailable; try again shortly",
                )
            }
            e => {
                tracing::error!(error = %e, "account lifecycle");
                AuthError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal-server-error",
                    "Internal server error",
                )
            }
        }
    }
}

impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(json!({"error": self.error, "reason": self.reason})),
        )
            .into_response();
        if let Some(wait) = self.retry_after {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(value) = secs.max(1).to_string().parse() {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        response
    }
}

type Reply = Result<Response, AuthError>;

/// The string fields `names` of a JSON object body.
fn fields<const N: usize>(body: &Bytes, names: [&str; N]) -> Result<[String; N], AuthError> {
    let value: Value = serde_json::from_slice(body).map_err(|_| {
        AuthError::new(
            StatusCode::BAD_REQUEST,
            "invalid-body",
            "The body must be a JSON object",
        )
    })?;
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    for (slot, name) in out.iter_mut().zip(names) {
        match value.get(name).and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => *slot = s.to_owned(),
            _ => {
                return Err(AuthError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid-body",
                    format!("The body needs a string \"{name}\""),
                ));
            }
        }
    }
    Ok(out)
}

fn sends_mail(state: &AuthState) -> Result<(), AuthError> {
    if state.platform.lifecycle().sends_mail() {
        Ok(())
    } else {
        Err(AuthError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "mail-unavailable",
            "This server sends no mail",
        ))
    }
}

fn accepted() -> Response {
    (
        StatusCode::ACCEPTED,
        axum::Json(json!({"message": ON_ITS_WAY})),
    )
        .into_response()
}

/// The `email` of a request body and the client's address, once this server sends mail.
async fn email_request(
    state: &AuthState,
    request: axum::extract::Request,
) -> Result<(String, Option<std::net::IpAddr>), AuthError> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(too_large)?;
    let [email] = fields(&body, ["email"])?;
    sends_mail(state)?;
    let ip = state
        .proxies
        .client_ip_of(&parts.headers, &parts.extensions);
    Ok((email, ip))
}

async fn verify_email(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let (email, ip) = email_request(&state, request).await?;
    let lifecycle = state.platform.lifecycle();
    lifecycle.request_verification(&email, ip).await?;
    Ok(accepted())
}

async fn password_reset(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let (email, ip) = email_request(&state, request).await?;
    let lifecycle = state.platform.lifecycle();
    lifecycle.request_password_reset(&email, ip).await?;
    Ok(accepted())
}

async fn email_change(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    request: axum::extract::Request,
) -> Reply {
    let (email, ip) = email_request(&state, request).await?;
    let lifecycle = state.platform.lifecycle();
    lifecycle
        .request_email_change(user.user_id(), &email, ip)
        .await?;
    Ok(accepted())
}

fn too_large(_: axum::Error) -> AuthError {
    AuthError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        "The body is too large",
    )
}

async fn verify_email_confirm(State(state): State<AuthState>, body: Bytes) -> Reply {
    let [token] = fields(&body, ["token"])?;
    let email = state
        .platform
        .lifecycle()
        .confirm_verification(&token)
        .await?;
    Ok(axum::Json(json!({"email": email})).into_response())
}

async fn password_reset_confirm(State(state): State<AuthState>, body: Bytes) -> Reply {
    let [token, password] = fields(&body, ["token", "password"])?;
    state
        .platform
        .lifecycle()
        .confirm_password_reset(&token, Password::Plain(password))
        .await?;
    Ok(
        axum::Json(json!({"message": "Password changed; log in with the new password"}))
            .into_response(),
    )
}

async fn email_change_confirm(State(state): State<AuthState>, body: Bytes) -> Reply {
    let [token] = fields(&body, ["token"])?;
    let email = state
        .platform
        .lifecycle()
        .confirm_email_change(&token)
        .await?;
    Ok(axum::Json(json!({"email": email})).into_response())
}

/// The issuer named in authenticator apps.
const TOTP_ISSUER: &str = "Portico";

async fn totp_setup(State(state): State<AuthState>, user: AuthenticatedUser) -> Reply {
    let accounts = state.platform.accounts();
    let setup = accounts.totp_setup(user.user_id(), TOTP_ISSUER).await?;
    Ok(axum::Json(json!({"secret": setup.secret, "uri": setup.uri})).into_response())
}

async fn totp_enable(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    body: Bytes,
) -> Reply {
    let [code] = fields(&body, ["code"])?;
    let codes = (state.platform.accounts())
        .totp_enable(user.user_id(), &code)
        .await?;
    Ok(axum::Json(json!({"recoveryCodes": codes})).into_response())
}

async fn totp_disable(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    body: Bytes,
) -> Reply {
    let [code] = fields(&body, ["code"])?;
    (state.platform.accounts())
        .totp_disable(user.user_id(), &code)
        .await
        .map(|()| axum::Json(json!({"message": "Two-factor codes are off"})).into_response())
        .map_err(AuthError::from)
}

async fn methods(State(state): State<AuthState>) -> Response {
    let mail = state.platform.lifecycle().sends_mail();
    let config = state.platform.accounts().config();
    axum::Json(json!({
        "password": true,
        "emailVerification": mail,
        "passwordReset": mail,
        "requireVerifiedEmail": config.require_verified_email,
        "oidc": [],
        "totp": true,
    }))
    .into_response()
}
