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
//! | `POST /auth/email-code` | `{email}` | 202, the same whether or not an account has the address: a sign-in code and link (or a mail saying no account has it); sent with a guest's token, the code gives a free address to the guest |
//! | `POST /auth/email-code/confirm` | `{email, code, totp?}` or `{token, totp?}` | 200 `{id, token, tokenExpires}`: signed in (signed up with `email_code_signup`) |
//! | `POST /auth/guest` | | 200 `{id, token, tokenExpires, guest: true}`: a guest account (`allow_guests`; 403 `guests-off` otherwise) |
//! | `POST /auth/guest/upgrade` (logged in as a guest) | `{username?, email?, password}` | 200 `{id}`: the same account, with credentials |
//! | `POST /auth/logout-everywhere` (logged in) | | 200 `{loggedOut}`: every login token of the account ends, the one sent included |
//! | `GET /auth/methods` | | which sign-in methods are on |
//! | `GET /auth/oidc/{name}` | | 302 to the provider (authorization code with PKCE S256, state and nonce); 429 past the accounts' `oidc_start_limit` per client |
//! | `GET /auth/oidc/{name}/callback` | | the provider's way back: 302 to `{app_url}/oidc?code=...` (or `?error=...`) |
//! | `POST /auth/oidc/exchange` | `{code, totp?}` | 200 `{id, token, tokenExpires}`: the one-time code (60 s) for a login token |
//! | `GET /auth/oauth2/{name}` | | 302 to an OAuth2 provider (GitHub, GitLab, Discord, ...: authorization code with PKCE S256 and state); the same limit |
//! | `GET /auth/oauth2/{name}/callback` | | the provider's way back: 302 to `{app_url}/oauth2?code=...` (or `?error=...`) |
//! | `POST /auth/oauth2/exchange` | `{code, totp?}` | as `/auth/oidc/exchange` (either takes either flow's code) |
//!
//! The passkey endpoints (`/auth/passkey/...`, `/auth/passkeys`) are listed in the `passkeys`
//! module's docs.
//!
//! Replies are plain JSON; errors are `{"error": code, "reason": text}` (400 `invalid-token`
//! for a bad, used or expired link; 429 with `Retry-After` past a rate limit; 503 when this
//! server sends no mail).
//!
//! The sign-in with a provider binds its state to the browser with a cookie (`portico_oidc`,
//! path `/auth/oidc/`, `HttpOnly`, `SameSite=Lax`, `Secure` when the server's address is
//! `https://`): a callback URL made in another browser does not sign this one in. The callback
//! never puts a login token in a URL: the application trades the one-time code of
//! `{app_url}/oidc?code=...` at `/auth/oidc/exchange`. When the sign-in fails, the browser goes to
//! `{app_url}/oidc?error=WORD` (`invalid-state`, `provider-refused`, `provider-unavailable`,
//! `invalid-response`, `email-not-verified`, `account-not-verified`, `internal-server-error`).
//! OAuth2 providers work the same way with the cookie `portico_oauth2` (path `/auth/oauth2/`)
//! and the application's page `{app_url}/oauth2`.
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let platform = portico_platform::Platform::open("memory:").await?;
//! let app: axum::Router = portico_accounts::AuthRoutes::new(platform, portico_edge::TrustedProxies::none()).router();
//! # Ok(()) }
//! ```

mod oauth2;

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRef, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::Method;
use portico_edge::{Access, AuthenticatedUser, Door, RouteDoc, TrustedProxies};
use portico_platform::{
    EmailCodeError, EmailCodeProof, Error, GuestUpgrade, Lifecycle, OidcCallback, OidcError,
    Password, Platform,
};
use serde_json::{Value, json};

mod passkeys;

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
    cors: bool,
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
            cors: false,
        }
    }

    /// Lets pages of any origin call the endpoints (`portico serve` turns this on when an
    /// `[[api]]` has `enable_cors`, as it has by default): preflights are answered, and replies carry
    /// `Access-Control-Allow-Origin: *`. No cookie is sent or read cross-origin (the provider
    /// sign-in's cookie is for its own redirects), and tokens travel in headers.
    pub fn cors(mut self, on: bool) -> AuthRoutes {
        self.cors = on;
        self
    }

    /// The router, with every route under [`AUTH_PATH`].
    pub fn router(&self) -> Router {
        let router = passkeys::routes(Router::new())
            .route("/auth/verify-email", post(verify_email))
            .route("/auth/verify-email/confirm", post(verify_email_confirm))
            .route("/auth/password-reset", post(password_reset))
            .route("/auth/password-reset/confirm", post(password_reset_confirm))
            .route("/auth/email-change", post(email_change))
            .route("/auth/email-change/confirm", post(email_change_confirm))
            .route("/auth/totp/setup", post(totp_setup))
            .route("/auth/totp/enable", post(totp_enable))
            .route("/auth/totp/disable", post(totp_disable))
            .route("/auth/email-code", post(email_code))
            .route("/auth/email-code/confirm", post(email_code_confirm))
            .route("/auth/guest", post(guest))
            .route("/auth/guest/upgrade", post(guest_upgrade))
            .route("/auth/methods", get(methods))
            .route("/auth/oidc/exchange", post(oidc_exchange))
            .route("/auth/oidc/{name}", get(oidc_begin))
            .route("/auth/oidc/{name}/callback", get(oidc_callback))
            .route("/auth/logout-everywhere", post(logout_everywhere))
            .route("/auth/oauth2/exchange", post(oidc_exchange))
            .route("/auth/oauth2/{name}", get(oauth2::begin))
            .route("/auth/oauth2/{name}/callback", get(oauth2::callback))
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .layer(axum::middleware::from_fn(read_whole_body))
            .with_state(self.state.clone());
        if self.cors {
            router.layer(cors_layer())
        } else {
            router
        }
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
        let login_reply = json!({"type": "object", "properties": {
            "id": {"type": "string"},
            "token": {"type": "string"},
            "tokenExpires": {"type": "string", "format": "date-time"}
        }, "required": ["id", "token", "tokenExpires"]});
        let mut guest_reply = login_reply.clone();
        guest_reply["properties"]["guest"] = json!({"type": "boolean"});
        let doc = |method: Method, path: &str, access: Access, summary: &str| {
            RouteDoc::new(Door::Accounts, method, format!("/auth/{path}"), access).summary(summary)
        };
        let mut docs = passkeys::docs();
        docs.extend([
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
                .reply_body(message.clone()),
            doc(Method::POST, "email-code", Access::Public, "mail a sign-in code and link (202 whether or not an account has the address)")
                .request_body(object(&["email"]))
                .reply_body(message),
            doc(Method::POST, "email-code/confirm", Access::Public, "sign in with a mailed code (with its address) or the link's token; totp when the account has two-factor codes on")
                .request_body(json!({"type": "object", "properties": {
                    "email": {"type": "string"}, "code": {"type": "string"},
                    "token": {"type": "string"}, "totp": {"type": "string"}
                }}))
                .reply_body(login_reply.clone()),
            doc(Method::POST, "guest", Access::Public, "make a guest account (no credentials) and log it in; 403 when guests are off")
                .reply_body(guest_reply),
            doc(Method::POST, "guest/upgrade", Access::LoggedIn, "give the calling guest a username or email and a password; it keeps its id and documents")
                .request_body(json!({"type": "object", "properties": {
                    "username": {"type": "string"}, "email": {"type": "string"},
                    "password": {"type": "string"}
                }, "required": ["password"]}))
                .reply_body(json!({"type": "object", "properties": {"id": {"type": "string"}}})),
            doc(Method::POST, "logout-everywhere", Access::LoggedIn, "end every login token of the account, the one sent included")
                .reply_body(json!({"type": "object", "properties": {"loggedOut": {"type": "integer"}}})),
            doc(Method::GET, "methods", Access::Public, "which sign-in methods are on")
                .reply_body(json!({"type": "object", "properties": {
                    "password": {"type": "boolean"},
                    "emailVerification": {"type": "boolean"},
                    "passwordReset": {"type": "boolean"},
                    "requireVerifiedEmail": {"type": "boolean"},
                    "oidc": {"type": "array", "items": {"type": "string"}},
                    "oauth2": {"type": "array", "items": {"type": "string"}},
                    "totp": {"type": "boolean"},
                    "emailCode": {"type": "boolean"},
                    "emailCodeSignup": {"type": "boolean"},
                    "guests": {"type": "boolean"},
                    "passkeys": {"type": "boolean"}
                }})),
            doc(Method::GET, "oidc/:name", Access::Public, "sign in with an OpenID Connect provider: 302 to the provider")
                .redirects(),
            doc(Method::GET, "oidc/:name/callback", Access::Public, "the provider's way back: 302 to {app_url}/oidc?code=... (or ?error=...)")
                .query(["code", "state", "iss", "error"])
                .redirects(),
            doc(Method::POST, "oidc/exchange", Access::Public, "trade the one-time code of a provider sign-in (60 s, single use) for a login token; totp when the account has two-factor codes on")
                .request_body(json!({"type": "object", "properties": {
                    "code": {"type": "string"}, "totp": {"type": "string"}
                }, "required": ["code"]}))
                .reply_body(login_reply.clone()),
        ]);
        docs.extend(oauth2::docs(login_reply));
        docs
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
    fields_of(&value, names)
}

/// The string fields `names` of a JSON object, each required and not blank.
fn fields_of<const N: usize>(value: &Value, names: [&str; N]) -> Result<[String; N], AuthError> {
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
) -> Result<(String, Option<std::net::IpAddr>, Lifecycle), AuthError> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(too_large)?;
    let [email] = fields(&body, ["email"])?;
    sends_mail(state)?;
    let ip = state
        .proxies
        .client_ip_of(&parts.headers, &parts.extensions);
    Ok((email, ip, lifecycle_for(state, &parts.headers)))
}

/// The lifecycle noting the request's `Accept-Language` (the language of the mail, when the
/// account has no `locale`).
fn lifecycle_for(state: &AuthState, headers: &http::HeaderMap) -> Lifecycle {
    let language = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    state.platform.lifecycle().with_accept_language(language)
}

async fn verify_email(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let (email, ip, lifecycle) = email_request(&state, request).await?;
    lifecycle.request_verification(&email, ip).await?;
    Ok(accepted())
}

async fn password_reset(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let (email, ip, lifecycle) = email_request(&state, request).await?;
    lifecycle.request_password_reset(&email, ip).await?;
    Ok(accepted())
}

async fn email_change(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    request: axum::extract::Request,
) -> Reply {
    let (email, ip, lifecycle) = email_request(&state, request).await?;
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

/// Reads each request's body before its handler runs (up to the passkeys' larger limit; past it
/// 413; each handler keeps its own limit below that), so
/// an endpoint that takes no body still consumes one a client sent and the connection stays
/// usable for the next request.
async fn read_whole_body(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let limit = BODY_LIMIT.max(passkeys::BODY_LIMIT);
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => {
            let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
            next.run(request).await
        }
        Err(_) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            axum::Json(json!({"error": "payload-too-large", "reason": format!("A body of the account endpoints holds at most {limit} bytes")})),
        )
            .into_response(),
    }
}

/// Any origin, the methods and headers the endpoints take, preflights kept for 10 minutes.
fn cors_layer() -> tower_http::cors::CorsLayer {
    use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderName};
    tower_http::cors::CorsLayer::new()
        .allow_origin(tower_http::cors::Any)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            ACCEPT,
            AUTHORIZATION,
            CONTENT_TYPE,
            HeaderName::from_static("x-auth-token"),
            HeaderName::from_static("x-api-key"),
            HeaderName::from_static("accept-language"),
        ])
        .expose_headers([header::RETRY_AFTER])
        .max_age(Duration::from_secs(600))
}

/// `POST /auth/logout-everywhere`: ends every login token of the caller's account, the one sent
/// included (a password change or reset does the same).
async fn logout_everywhere(State(state): State<AuthState>, user: AuthenticatedUser) -> Reply {
    let ended = (state.platform.accounts())
        .remove_all_tokens(user.user_id())
        .await?;
    Ok(axum::Json(json!({"loggedOut": ended})).into_response())
}

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
        "oidc": state.platform.oidc().names(),
        "oauth2": state.platform.oauth2().names(),
        "totp": true,
        "emailCode": mail,
        "emailCodeSignup": mail && config.email_code_signup && !config.forbid_client_account_creation,
        "guests": config.allow_guests && !config.forbid_client_account_creation,
        "passkeys": state.platform.accounts().passkeys_on(),
    }))
    .into_response()
}

/// The cookie that binds a provider sign-in to the browser that started it.
const OIDC_COOKIE: &str = "portico_oidc";

/// `Set-Cookie` for the sign-in state (`None`: remove it).
fn oidc_cookie(state: &AuthState, value: Option<&str>) -> String {
    state_cookie(state, (OIDC_COOKIE, "/auth/oidc/"), value)
}

/// `Set-Cookie` for the sign-in state in the cookie `name` at `path` (`None`: remove it).
fn state_cookie(state: &AuthState, (name, path): (&str, &str), value: Option<&str>) -> String {
    let secure = state
        .platform
        .accounts()
        .config()
        .server_url
        .starts_with("https://");
    let (value, age) = value.map_or(("", 0), |v| (v, 600));
    format!(
        "{name}={value}; Path={path}; Max-Age={age}; HttpOnly; SameSite=Lax{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The sign-in state the browser holds (the last `portico_oidc` cookie).
fn browser_state(headers: &http::HeaderMap) -> Option<String> {
    browser_state_named(headers, OIDC_COOKIE)
}

/// The sign-in state the browser holds in the cookie `cookie` (the last one).
fn browser_state_named(headers: &http::HeaderMap, cookie: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == cookie)
        .map(|(_, value)| value.to_owned())
        .next_back()
}

/// A 302 to `location` that sets `cookie`, cached by no one, sending no referrer on.
fn redirect(location: &str, cookie: String) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::LOCATION, location.to_owned()),
        (header::SET_COOKIE, cookie),
        (header::CACHE_CONTROL, "no-store".to_owned()),
        (header::REFERRER_POLICY, "no-referrer".to_owned()),
    ] {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}

fn oidc_error(e: OidcError) -> AuthError {
    let status = match &e {
        OidcError::UnknownProvider => StatusCode::NOT_FOUND,
        OidcError::InvalidCode => StatusCode::BAD_REQUEST,
        OidcError::TotpRequired | OidcError::TotpInvalid => StatusCode::UNAUTHORIZED,
        OidcError::Unavailable(why) => {
            tracing::warn!(error = %why, "OpenID Connect provider unavailable");
            StatusCode::BAD_GATEWAY
        }
        OidcError::Platform(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    match e {
        // The platform's own mapping (503 while the database is down, 500 logged).
        OidcError::Platform(e) => AuthError::from(e),
        e => AuthError::new(status, e.code(), e.to_string()),
    }
}

async fn oidc_begin(
    State(state): State<AuthState>,
    Path(name): Path<String>,
    request: axum::extract::Request,
) -> Reply {
    let ip = state
        .proxies
        .client_ip_of(request.headers(), request.extensions());
    let start = state
        .platform
        .oidc()
        .begin(&name, ip)
        .await
        .map_err(oidc_error)?;
    Ok(redirect(
        &start.url,
        oidc_cookie(&state, Some(&start.state)),
    ))
}

async fn oidc_callback(
    State(state): State<AuthState>,
    Path(name): Path<String>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: http::HeaderMap,
) -> Response {
    let mut callback = OidcCallback::default();
    callback.code = query.get("code").cloned();
    callback.state = query.get("state").cloned();
    callback.iss = query.get("iss").cloned();
    callback.error = query.get("error").cloned();
    callback.browser_state = browser_state(&headers);
    let finished = state.platform.oidc().finish(&name, callback).await;
    let target = landing(&state, "oidc", &name, finished);
    redirect(&target, oidc_cookie(&state, None))
}

/// Where a provider sign-in's way back sends the browser: the application's page
/// `{app_url}/{page}` with the one-time code, or with the error's word (logged: a platform
/// failure as an error, a refusal as information).
pub(crate) fn landing(
    state: &AuthState,
    page: &str,
    provider: &str,
    finished: Result<String, OidcError>,
) -> String {
    let app_url = state.platform.accounts().config().app_url.clone();
    let app_url = app_url.trim_end_matches('/');
    match finished {
        Ok(code) => format!("{app_url}/{page}?code={code}"),
        Err(e) => {
            match &e {
                OidcError::Platform(p) => {
                    tracing::error!(provider, sign_in = page, error = %p, "provider sign-in failed")
                }
                other => {
                    tracing::info!(provider, sign_in = page, error = %other, "provider sign-in refused")
                }
            }
            format!("{app_url}/{page}?error={}", e.code())
        }
    }
}

async fn email_code(
    State(state): State<AuthState>,
    user: Option<AuthenticatedUser>,
    request: axum::extract::Request,
) -> Reply {
    let (email, ip, lifecycle) = email_request(&state, request).await?;
    // A guest asking: the code gives it the address when no account has it.
    match user.filter(|u| portico_platform::is_guest(u.user())) {
        Some(guest) => {
            lifecycle
                .request_email_code_for_guest(guest.user_id(), &email, ip)
                .await?
        }
        None => lifecycle.request_email_code(&email, ip).await?,
    }
    Ok(accepted())
}

fn email_code_error(e: EmailCodeError) -> AuthError {
    let status = match e {
        EmailCodeError::TooManyAttempts(wait) => return Error::TooManyRequests(wait).into(),
        // The platform's own mapping (503 while the database is down, 500 logged).
        EmailCodeError::Platform(e) => return e.into(),
        EmailCodeError::TotpRequired | EmailCodeError::TotpInvalid => StatusCode::UNAUTHORIZED,
        _ => StatusCode::BAD_REQUEST,
    };
    AuthError::new(status, e.code(), e.to_string())
}

/// The request's parts and its body as a JSON object (400 otherwise, 413 past the limit).
async fn object_body(
    request: axum::extract::Request,
) -> Result<(http::request::Parts, Value), AuthError> {
    read_object(request, false, BODY_LIMIT).await
}

/// As [`object_body`], with `limit` bytes at most, and with `empty_is_object` an empty (or
/// blank) body is `{}`.
pub(crate) async fn read_object(
    request: axum::extract::Request,
    empty_is_object: bool,
    limit: usize,
) -> Result<(http::request::Parts, Value), AuthError> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, limit).await.map_err(too_large)?;
    if empty_is_object && body.iter().all(u8::is_ascii_whitespace) {
        return Ok((parts, json!({})));
    }
    let value = serde_json::from_slice::<Value>(&body)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| {
            AuthError::new(
                StatusCode::BAD_REQUEST,
                "invalid-body",
                "The body must be a JSON object",
            )
        })?;
    Ok((parts, value))
}

/// A string field of a JSON body, when it is one and not blank.
fn optional_field(value: &Value, name: &str) -> Option<String> {
    value
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

async fn email_code_confirm(
    State(state): State<AuthState>,
    request: axum::extract::Request,
) -> Reply {
    let (parts, value) = object_body(request).await?;
    let invalid = |why: &str| AuthError::new(StatusCode::BAD_REQUEST, "invalid-body", why);
    let proof = match (
        optional_field(&value, "email"),
        optional_field(&value, "code"),
        optional_field(&value, "token"),
    ) {
        (Some(email), Some(code), None) => EmailCodeProof::Code { email, code },
        (None, None, Some(token)) => EmailCodeProof::Link(token),
        _ => {
            return Err(invalid(
                "The body needs \"email\" and \"code\", or the link's \"token\"",
            ));
        }
    };
    let totp = optional_field(&value, "totp");
    let ip = state
        .proxies
        .client_ip_of(&parts.headers, &parts.extensions);
    let token = state
        .platform
        .lifecycle()
        .confirm_email_code(&proof, totp.as_deref(), ip)
        .await
        .map_err(email_code_error)?;
    Ok(login_reply(&state, &token))
}

async fn guest(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let ip = state
        .proxies
        .client_ip_of(request.headers(), request.extensions());
    let token = match state.platform.accounts().create_guest(ip).await {
        Ok(token) => token,
        Err(Error::AccessDenied) => {
            return Err(AuthError::new(
                StatusCode::FORBIDDEN,
                "guests-off",
                "This server makes no guest accounts",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let mut body = login_body(&state, &token);
    body["guest"] = json!(true);
    Ok(axum::Json(body).into_response())
}

async fn guest_upgrade(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    request: axum::extract::Request,
) -> Reply {
    let (parts, value) = object_body(request).await?;
    let [password] = fields_of(&value, ["password"])?;
    let upgrade = GuestUpgrade::new(
        optional_field(&value, "username"),
        optional_field(&value, "email"),
        Password::Plain(password),
    );
    let accounts = state.platform.accounts();
    let email = accounts.upgrade_guest(user.user_id(), upgrade).await?;
    if let Some(email) = email
        && state.platform.lifecycle().sends_mail()
    {
        let ip = state
            .proxies
            .client_ip_of(&parts.headers, &parts.extensions);
        if let Err(e) = state
            .platform
            .lifecycle()
            .request_verification(&email, ip)
            .await
        {
            tracing::info!(error = %e, "no verification mail after a guest's upgrade");
        }
    }
    Ok(axum::Json(json!({"id": user.user_id()})).into_response())
}

/// The reply of a sign-in: `{id, token, tokenExpires}`, the auto API's login reply.
fn login_reply(state: &AuthState, token: &portico_platform::LoginToken) -> Response {
    axum::Json(login_body(state, token)).into_response()
}

/// The body of [`login_reply`].
fn login_body(state: &AuthState, token: &portico_platform::LoginToken) -> Value {
    let issued = chrono::DateTime::parse_from_rfc3339(&token.when)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now());
    let expires = issued + state.platform.accounts().config().token_lifetime;
    json!({
        "id": token.user_id,
        "token": token.token,
        "tokenExpires": expires.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    })
}

async fn oidc_exchange(State(state): State<AuthState>, body: Bytes) -> Reply {
    let [code] = fields(&body, ["code"])?;
    let totp = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("totp").and_then(Value::as_str).map(str::to_owned));
    let platform = &state.platform;
    let token = platform
        .oidc()
        .exchange(&code, totp.as_deref())
        .await
        .map_err(oidc_error)?;
    Ok(login_reply(&state, &token))
}
