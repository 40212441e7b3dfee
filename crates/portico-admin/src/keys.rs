//! The API keys view: the keys servers and scripts call the API with (as `portico keys` does),
//! listed by name with their roles and last use, added (the key is shown once) and revoked.
//! The key itself is stored only hashed and never listed.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::admin_error::{AdminError, AdminResult, object_body};
use crate::state::AdminState;

/// The longest lifetime the page gives a key, in days (as `portico keys add --expires`).
const MAX_DAYS: u64 = 100 * 365;

/// `GET api/keys`: `{keys: [{name, roles, userId, createdAt, expires, lastUsed}]}` by name.
pub(crate) async fn list(State(state): State<AdminState>) -> AdminResult<Json<Value>> {
    let keys: Vec<Value> = state
        .platform
        .accounts()
        .list_api_keys()
        .await?
        .into_iter()
        .map(|key| {
            json!({
                "name": key.name,
                "roles": key.roles,
                "userId": key.user_id,
                "createdAt": key.created_at,
                "expires": key.expires,
                "lastUsed": key.last_used,
            })
        })
        .collect();
    Ok(Json(json!({ "keys": keys })))
}

/// The roles of a new key: an array of names or one comma-separated string.
fn roles(body: &Map<String, Value>) -> AdminResult<Vec<String>> {
    let bad = || {
        AdminError::bad_request("roles must be an array of role names or a comma-separated text")
    };
    let names: Vec<String> = match body.get("roles") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => text.split(',').map(|r| r.trim().to_owned()).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|r| r.as_str().map(|r| r.trim().to_owned()).ok_or_else(bad))
            .collect::<AdminResult<_>>()?,
        Some(_) => return Err(bad()),
    };
    Ok(names.into_iter().filter(|r| !r.is_empty()).collect())
}

/// `POST api/keys` `{name, roles, expiresDays}`: 201 `{name, key}`; the key is shown this once.
/// 400 for a bad name, roles or lifetime, 409 when a key has the name.
pub(crate) async fn create(
    State(state): State<AdminState>,
    body: Bytes,
) -> AdminResult<(StatusCode, Json<Value>)> {
    let body = object_body(&body)?;
    let name = match body.get("name") {
        Some(Value::String(name)) => name.trim().to_owned(),
        _ => return Err(AdminError::bad_request("name is required")),
    };
    let lifetime = match body.get("expiresDays") {
        None | Some(Value::Null) => None,
        Some(days) => {
            let days = days
                .as_u64()
                .filter(|d| (1..=MAX_DAYS).contains(d))
                .ok_or_else(|| {
                    AdminError::bad_request(format!(
                        "expiresDays is a whole number of days from 1 to {MAX_DAYS}, or null for a key that does not expire"
                    ))
                })?;
            Some(chrono::Duration::days(
                i64::try_from(days).unwrap_or(i64::MAX),
            ))
        }
    };
    let roles = roles(&body)?;
    let key = state
        .platform
        .accounts()
        .add_api_key(&name, roles, lifetime)
        .await?;
    tracing::info!(key = %name, "API key added from the admin page");
    Ok((
        StatusCode::CREATED,
        Json(json!({ "name": name, "key": key })),
    ))
}

/// `DELETE api/keys/{name}`: 204 once revoked (it stops working at the next request on every
/// instance), 404 when no key has the name.
pub(crate) async fn revoke(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> AdminResult<StatusCode> {
    if state.platform.accounts().revoke_api_key(&name).await? {
        tracing::info!(key = %name, "API key revoked from the admin page");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AdminError::not_found(format!("No key is named {name:?}")))
    }
}
