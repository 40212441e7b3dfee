//! The passkey endpoints (WebAuthn), on when the accounts' passkey settings are (404
//! `passkeys-off` otherwise):
//!
//! | endpoint | body | reply |
//! |---|---|---|
//! | `POST /auth/passkey/register/begin` (logged in) | `{name?}` or none | 200 `{ceremony, publicKey}`: options for `navigator.credentials.create()` |
//! | `POST /auth/passkey/register/finish` (logged in) | `{ceremony, credential}` | 200 `{id, name, createdAt, lastUsed}`: a guest is a guest no more |
//! | `POST /auth/passkey/login/begin` | `{username}`, `{email}` or none | 200 `{ceremony, publicKey}`: options for `navigator.credentials.get()` |
//! | `POST /auth/passkey/login/finish` | `{ceremony, credential}` | 200 `{id, token, tokenExpires}`: no two-factor code asked |
//! | `GET /auth/passkeys` (logged in) | | 200 `{passkeys: [{id, name, createdAt, lastUsed}]}` |
//! | `DELETE /auth/passkeys/{id}` (logged in) | | 200; 404 `not-found` when the account has no such passkey |
//!
//! `credential` is the `PublicKeyCredential` in its JSON form (`credential.toJSON()`: binary
//! values as base64url strings).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use http::Method;
use portico_edge::{Access, AuthenticatedUser, Door, RouteDoc};
use portico_platform::{PasskeyBegin, PasskeyError, PasskeyInfo, UserSelector};
use serde_json::{Value, json};

use crate::{AuthError, AuthState, Reply, login_reply, optional_field};

/// A credential is a few kilobytes at most (an attestation with its certificates).
pub(crate) const BODY_LIMIT: usize = 64 * 1024;

/// The passkey routes, added to the `/auth/` router.
pub(crate) fn routes(router: Router<AuthState>) -> Router<AuthState> {
    router
        .route("/auth/passkey/register/begin", post(register_begin))
        .route("/auth/passkey/register/finish", post(register_finish))
        .route("/auth/passkey/login/begin", post(login_begin))
        .route("/auth/passkey/login/finish", post(login_finish))
        .route("/auth/passkeys", get(list))
        .route("/auth/passkeys/{id}", delete(remove))
}

/// The passkey routes as data (see [`crate::AuthRoutes::docs`]).
pub(crate) fn docs() -> Vec<RouteDoc> {
    let doc = |method: Method, path: &str, access: Access, summary: &str| {
        RouteDoc::new(Door::Accounts, method, format!("/auth/{path}"), access).summary(summary)
    };
    let begin_reply = json!({"type": "object", "properties": {
        "ceremony": {"type": "string"}, "publicKey": {"type": "object"}
    }, "required": ["ceremony", "publicKey"]});
    let finish_body = json!({"type": "object", "properties": {
        "ceremony": {"type": "string"}, "credential": {"type": "object"}
    }, "required": ["ceremony", "credential"]});
    let passkey = json!({"type": "object", "properties": {
        "id": {"type": "string"}, "name": {"type": "string"},
        "createdAt": {"type": "string", "format": "date-time"},
        "lastUsed": {"type": ["string", "null"], "format": "date-time"}
    }, "required": ["id", "name", "createdAt", "lastUsed"]});
    let login_reply = json!({"type": "object", "properties": {
        "id": {"type": "string"},
        "token": {"type": "string"},
        "tokenExpires": {"type": "string", "format": "date-time"}
    }, "required": ["id", "token", "tokenExpires"]});
    vec![
        doc(Method::POST, "passkey/register/begin", Access::LoggedIn, "begin registering a passkey: a ceremony id and the options for navigator.credentials.create()")
            .request_body(json!({"type": "object", "properties": {"name": {"type": "string"}}}))
            .reply_body(begin_reply.clone()),
        doc(Method::POST, "passkey/register/finish", Access::LoggedIn, "finish registering a passkey with the new credential (a guest is a guest no more)")
            .request_body(finish_body.clone())
            .reply_body(passkey.clone()),
        doc(Method::POST, "passkey/login/begin", Access::Public, "begin a passkey login, naming the account or not: a ceremony id and the options for navigator.credentials.get()")
            .request_body(json!({"type": "object", "properties": {
                "username": {"type": "string"}, "email": {"type": "string"}
            }}))
            .reply_body(begin_reply),
        doc(Method::POST, "passkey/login/finish", Access::Public, "finish a passkey login with the assertion: a login token (no two-factor code asked)")
            .request_body(finish_body)
            .reply_body(login_reply),
        doc(Method::GET, "passkeys", Access::LoggedIn, "the caller's passkeys")
            .reply_body(json!({"type": "object", "properties": {
                "passkeys": {"type": "array", "items": passkey}
            }})),
        doc(Method::DELETE, "passkeys/:id", Access::LoggedIn, "remove one of the caller's passkeys: it logs in no more")
            .reply_body(json!({"type": "object", "properties": {"message": {"type": "string"}}})),
    ]
}

fn passkey_error(e: PasskeyError) -> AuthError {
    let status = match &e {
        PasskeyError::Off => StatusCode::NOT_FOUND,
        PasskeyError::Refused => StatusCode::UNAUTHORIZED,
        PasskeyError::Taken => StatusCode::CONFLICT,
        PasskeyError::ServiceAccount | PasskeyError::EmailNotVerified => StatusCode::FORBIDDEN,
        PasskeyError::Platform(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    };
    match e {
        // The platform's own mapping (429 with Retry-After, 503 while the database is down).
        PasskeyError::Platform(e) => AuthError::from(e),
        e => AuthError::new(status, e.code(), e.to_string()),
    }
}

/// The body as a JSON object; an empty body is `{}` (400 for anything but an object).
async fn optional_object(
    request: axum::extract::Request,
) -> Result<(http::request::Parts, Value), AuthError> {
    crate::read_object(request, true, BODY_LIMIT).await
}

/// `ceremony` and `credential` (an object) of a finish body.
fn finish_fields(value: &Value) -> Result<(String, &Value), AuthError> {
    match (
        optional_field(value, "ceremony"),
        value.get("credential").filter(|c| c.is_object()),
    ) {
        (Some(ceremony), Some(credential)) => Ok((ceremony, credential)),
        _ => Err(AuthError::new(
            StatusCode::BAD_REQUEST,
            "invalid-body",
            "The body needs \"ceremony\" (from the begin) and \"credential\" (the \
             PublicKeyCredential's JSON)",
        )),
    }
}

/// `{ceremony, publicKey, ...}`: the begin's options with the ceremony id.
fn begin_reply(begin: PasskeyBegin) -> Response {
    let mut body = match begin.options {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    body.insert("ceremony".into(), json!(begin.ceremony));
    axum::Json(Value::Object(body)).into_response()
}

fn passkey_json(info: &PasskeyInfo) -> Value {
    json!({
        "id": info.id, "name": info.name, "createdAt": info.created_at, "lastUsed": info.last_used,
    })
}

async fn register_begin(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    request: axum::extract::Request,
) -> Reply {
    let (parts, value) = optional_object(request).await?;
    let name = match value.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name.clone()),
        Some(_) => return Err(passkey_error(PasskeyError::InvalidName)),
    };
    let ip = state
        .proxies
        .client_ip_of(&parts.headers, &parts.extensions);
    let begin = (state.platform.accounts())
        .passkey_register_begin(user.user_id(), name.as_deref(), ip)
        .await
        .map_err(passkey_error)?;
    Ok(begin_reply(begin))
}

async fn register_finish(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    request: axum::extract::Request,
) -> Reply {
    let (_, value) = optional_object(request).await?;
    let (ceremony, credential) = finish_fields(&value)?;
    let info = (state.platform.accounts())
        .passkey_register_finish(user.user_id(), &ceremony, credential)
        .await
        .map_err(passkey_error)?;
    Ok(axum::Json(passkey_json(&info)).into_response())
}

async fn login_begin(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let (parts, value) = optional_object(request).await?;
    let user = match (
        optional_field(&value, "username"),
        optional_field(&value, "email"),
    ) {
        (Some(username), None) => Some(UserSelector::Username(username)),
        (None, Some(email)) => Some(UserSelector::Email(email)),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(AuthError::new(
                StatusCode::BAD_REQUEST,
                "invalid-body",
                "Send \"username\" or \"email\", not both (or neither, for a discoverable passkey)",
            ));
        }
    };
    let ip = state
        .proxies
        .client_ip_of(&parts.headers, &parts.extensions);
    let begin = (state.platform.accounts())
        .passkey_login_begin(user.as_ref(), ip)
        .await
        .map_err(passkey_error)?;
    Ok(begin_reply(begin))
}

async fn login_finish(State(state): State<AuthState>, request: axum::extract::Request) -> Reply {
    let (_, value) = optional_object(request).await?;
    let (ceremony, credential) = finish_fields(&value)?;
    let token = (state.platform.accounts())
        .passkey_login_finish(&ceremony, credential)
        .await
        .map_err(passkey_error)?;
    Ok(login_reply(&state, &token))
}

async fn list(State(state): State<AuthState>, user: AuthenticatedUser) -> Reply {
    let passkeys = (state.platform.accounts())
        .list_passkeys(user.user_id())
        .await
        .map_err(passkey_error)?;
    let passkeys: Vec<Value> = passkeys.iter().map(passkey_json).collect();
    Ok(axum::Json(json!({"passkeys": passkeys})).into_response())
}

async fn remove(
    State(state): State<AuthState>,
    user: AuthenticatedUser,
    Path(id): Path<String>,
) -> Reply {
    let removed = (state.platform.accounts())
        .remove_passkey(user.user_id(), &id)
        .await
        .map_err(passkey_error)?;
    if !removed {
        return Err(AuthError::new(
            StatusCode::NOT_FOUND,
            "not-found",
            "This account has no passkey of that id",
        ));
    }
    Ok(axum::Json(json!({"message": "The passkey is removed"})).into_response())
}
