//! The users view: accounts through the platform's accounts service, shown without their
//! password hashes and login tokens.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query as QueryParams, Request, State};
use http::StatusCode;
use portico_edge::AuthenticatedUser;
use portico_platform::{Document, NewUser, Password, public_user};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::admin_error::{AdminError, AdminResult, object_body};
use crate::state::AdminState;

/// What the page shows of an account: [`public_user`] and when it was made.
fn shown(user: &Document) -> Document {
    let mut out = public_user(user);
    if let Some(created) = user.get("createdAt") {
        out.insert("createdAt".into(), created.clone());
    }
    if portico_platform::is_guest(user) {
        out.insert("guest".into(), Value::Bool(true));
    }
    out
}

fn texts(user: &Document) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["_id", "username"] {
        if let Some(Value::String(s)) = user.get(key) {
            out.push(s.to_lowercase());
        }
    }
    if let Some(Value::Array(emails)) = user.get("emails") {
        for email in emails {
            if let Some(address) = email.get("address").and_then(Value::as_str) {
                out.push(address.to_lowercase());
            }
        }
    }
    out
}

/// The query of the users list.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    q: Option<String>,
}

/// `GET api/users?q=`: accounts whose id, username or an email contains `q` (any case), by
/// username.
pub(crate) async fn list(
    State(state): State<AdminState>,
    QueryParams(params): QueryParams<ListParams>,
) -> AdminResult<Json<Value>> {
    let needle = params.q.unwrap_or_default().trim().to_lowercase();
    let mut users: Vec<Document> = state
        .platform
        .accounts()
        .list_users()
        .await?
        .iter()
        .filter(|u| needle.is_empty() || texts(u).iter().any(|t| t.contains(&needle)))
        .map(shown)
        .collect();
    let key = |u: &Document| {
        u.get("username")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_lowercase()
    };
    users.sort_by_key(key);
    Ok(Json(json!({ "users": users })))
}

fn string_field(body: &Map<String, Value>, key: &str) -> AdminResult<Option<String>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AdminError::bad_request(format!("{key} must be a string"))),
    }
}

fn roles_field(body: &Map<String, Value>) -> AdminResult<Vec<String>> {
    let Some(value) = body.get("roles") else {
        return Ok(Vec::new());
    };
    let bad = || AdminError::bad_request("roles must be a list of non-empty strings");
    let mut roles = Vec::new();
    for role in value.as_array().ok_or_else(bad)? {
        let role = role
            .as_str()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .ok_or_else(bad)?;
        if !roles.iter().any(|r| r == role) {
            roles.push(role.to_owned());
        }
    }
    Ok(roles)
}

/// `POST api/users` with `{username, email, password, roles}`.
pub(crate) async fn create(
    State(state): State<AdminState>,
    body: Bytes,
) -> AdminResult<(StatusCode, Json<Value>)> {
    let body = object_body(&body)?;
    let accounts = state.platform.accounts();
    let password = string_field(&body, "password")?.map(Password::Plain);
    if let Some(p) = &password {
        accounts.check_password_length(p)?;
    }
    let id = accounts
        .create_user(NewUser {
            username: string_field(&body, "username")?,
            email: string_field(&body, "email")?,
            password,
            profile: None,
            roles: roles_field(&body)?,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "_id": id }))))
}

/// `PUT api/users/{id}/roles` with `{roles}`: the account holds exactly these roles after.
///
/// An admin cannot take the page's role from their own account here: the page would lock them
/// out at once (`portico users roles remove` can).
pub(crate) async fn set_roles(
    State(state): State<AdminState>,
    Extension(me): Extension<AuthenticatedUser>,
    Path(id): Path<String>,
    body: Bytes,
) -> AdminResult<Json<Value>> {
    let body = object_body(&body)?;
    if !body.contains_key("roles") {
        return Err(AdminError::bad_request("roles is required"));
    }
    let wanted = roles_field(&body)?;
    if id == me.user_id() && !wanted.contains(&state.role) {
        return Err(AdminError::bad_request(format!(
            "You cannot take the \"{}\" role from your own account here",
            state.role
        )));
    }
    let accounts = state.platform.accounts();
    let user = accounts
        .find_user_by_id(&id)
        .await?
        .ok_or_else(|| AdminError::not_found("User not found"))?;
    let held: Vec<String> = user
        .get("roles")
        .and_then(Value::as_array)
        .map(|roles| {
            roles
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let gone: Vec<String> = held
        .iter()
        .filter(|r| !wanted.contains(r))
        .cloned()
        .collect();
    if !gone.is_empty() {
        accounts.remove_roles(&id, &gone).await?;
    }
    if !wanted.is_empty() {
        accounts.add_roles(&id, &wanted).await?;
    }
    Ok(Json(json!({ "_id": id, "roles": wanted })))
}

/// `PUT api/users/{id}/password` with `{password}`.
pub(crate) async fn set_password(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    body: Bytes,
) -> AdminResult<Json<Value>> {
    let body = object_body(&body)?;
    let password = string_field(&body, "password")?
        .ok_or_else(|| AdminError::bad_request("password is required"))?;
    let password = Password::Plain(password);
    let accounts = state.platform.accounts();
    accounts.check_password_length(&password)?;
    accounts.set_password(&id, password).await?;
    Ok(Json(json!({ "_id": id, "passwordSet": true })))
}

/// `POST api/users/{id}/logout`: withdraws every login token of the account.
pub(crate) async fn logout_everywhere(
    State(state): State<AdminState>,
    Path(id): Path<String>,
) -> AdminResult<Json<Value>> {
    let accounts = state.platform.accounts();
    if accounts.find_user_by_id(&id).await?.is_none() {
        return Err(AdminError::not_found("User not found"));
    }
    let removed = accounts.remove_all_tokens(&id).await?;
    Ok(Json(json!({ "_id": id, "tokensRemoved": removed })))
}

/// `POST api/users/{id}/impersonate`: a short-lived token acting as the account
/// (`impersonation_lifetime`); every write made with it is logged with both ids, and the admin
/// page refuses it.
pub(crate) async fn impersonate(
    State(state): State<AdminState>,
    Extension(me): Extension<AuthenticatedUser>,
    Path(id): Path<String>,
) -> AdminResult<Json<Value>> {
    let accounts = state.platform.accounts();
    let token = match accounts.impersonate(me.user_id(), &id).await {
        Ok(token) => token,
        Err(portico_platform::Error::UserNotFound) => {
            return Err(AdminError::not_found("User not found"));
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(user = %id, impersonator = %me.user_id(), "admin acts as a user");
    let lifetime = accounts
        .config()
        .impersonation_lifetime
        .min(accounts.config().token_lifetime);
    let expires = chrono::DateTime::parse_from_rfc3339(&token.when)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| chrono::Utc::now())
        + lifetime;
    Ok(Json(json!({
        "_id": id,
        "token": token.token,
        "impersonator": me.user_id(),
        "tokenExpires": expires.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    })))
}

/// `DELETE api/users/{id}`; not the caller's own account (`portico users remove` can).
pub(crate) async fn remove(
    State(state): State<AdminState>,
    Extension(me): Extension<AuthenticatedUser>,
    Path(id): Path<String>,
) -> AdminResult<Json<Value>> {
    if id == me.user_id() {
        return Err(AdminError::bad_request(
            "You cannot remove your own account here",
        ));
    }
    if state.platform.accounts().remove_user(&id).await? {
        Ok(Json(json!({ "removed": id })))
    } else {
        Err(AdminError::not_found("User not found"))
    }
}

/// `POST api/users/{id}/password-reset`: mails a password-reset link to the account's first
/// address, through the account lifecycle (its outbox, rate limits and templates).
pub(crate) async fn send_reset_mail(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    request: Request,
) -> AdminResult<Json<Value>> {
    let client = portico_edge::peer_ip(request.extensions());
    let platform = &state.platform;
    let user = platform
        .accounts()
        .find_user_by_id(&id)
        .await?
        .ok_or_else(|| AdminError::not_found("User not found"))?;
    let email = user
        .get("emails")
        .and_then(Value::as_array)
        .and_then(|emails| emails.iter().find_map(|e| e.get("address")?.as_str()))
        .ok_or_else(|| AdminError::bad_request("This account has no email address"))?
        .to_owned();
    if !platform.lifecycle().sends_mail() {
        return Err(AdminError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "This server sends no mail: set [email] in its config",
        ));
    }
    platform
        .lifecycle()
        .request_password_reset(&email, client)
        .await?;
    Ok(Json(json!({ "_id": id, "email": email })))
}
