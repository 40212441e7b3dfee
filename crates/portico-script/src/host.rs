//! Host operations: what a script's `await` waits for. Each runs on the server's async
//! runtime, through the platform (so timestamps, schemas and live streams see script writes),
//! as trusted server code: allow/deny rules do not apply. An answer is JSON text; a failure is
//! the JSON of the auto API's error body plus its status, which the prelude throws as a
//! `PorticoError`.

use portico_platform::jobs::EnqueueOptions;
use portico_platform::{
    MethodError, NewUser, Password, Platform, Query, Selector, Update, UpdateOptions, public_user,
    user_has_any_role,
};
use portico_store::{PageRead, Projection, Sort, Stored};
use serde_json::{Map, Value, json};

use crate::payload::{Answer, bad, text, to_json};
use crate::program::Shared;

/// Runs the host operation `op` with its JSON `payload`, for a call that runs the before hook
/// of the write `write`, if any.
pub(crate) async fn run(
    shared: &Shared,
    op: &str,
    payload: &str,
    write: Option<u64>,
) -> Result<String, String> {
    let answer = match serde_json::from_str::<Value>(payload) {
        Ok(payload) if op == "jobs.enqueue" => enqueue(shared, &payload, write).await,
        Ok(payload) if op == "webhooks.send" => send_webhook(shared, &payload, write).await,
        Ok(payload) => dispatch(shared, op, payload).await,
        Err(e) => Err(MethodError::invalid_arguments(format!("bad payload: {e}"))),
    };
    answer.map_err(|e| {
        let mut body = e.to_body();
        if let Value::Object(map) = &mut body {
            map.insert("status".into(), json!(e.status_or_default()));
        }
        body.to_string()
    })
}

fn object(payload: &Value, key: &str) -> Result<Map<String, Value>, MethodError> {
    match payload.get(key) {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => Err(bad(format!("{key} must be an object"))),
    }
}

fn store_error(e: portico_store::Error) -> MethodError {
    MethodError::from(portico_platform::Error::from(e))
}

fn selector(payload: &Value) -> Result<Selector, MethodError> {
    Selector::parse(payload.get("selector").unwrap_or(&Value::Null)).map_err(store_error)
}

/// A query from `{selector, options: {sort, skip, limit, fields}}`.
fn query(payload: &Value) -> Result<Query, MethodError> {
    let mut query = Query::new(selector(payload)?);
    let options = payload.get("options").cloned().unwrap_or(Value::Null);
    if let Some(sort) = options.get("sort").filter(|v| !v.is_null()) {
        query.sort = Some(Sort::parse(sort).map_err(store_error)?);
    }
    if let Some(skip) = options.get("skip").filter(|v| !v.is_null()) {
        query.skip = skip
            .as_u64()
            .ok_or_else(|| bad("skip must be a whole number"))?;
    }
    if let Some(limit) = options.get("limit").filter(|v| !v.is_null()) {
        query.limit = Some(
            limit
                .as_u64()
                .ok_or_else(|| bad("limit must be a whole number"))?,
        );
    }
    if let Some(fields) = options.get("fields").filter(|v| !v.is_null()) {
        query.projection = Some(Projection::parse(fields).map_err(store_error)?);
    }
    Ok(query)
}

/// The JSON array of stored documents, each embedded as its stored text (or encoded).
fn array(docs: &[Stored]) -> Result<String, MethodError> {
    let mut out =
        String::with_capacity(docs.iter().map(|d| d.encoded_len() + 1).sum::<usize>() + 2);
    out.push('[');
    for (i, doc) in docs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&doc.text().map_err(store_error)?);
    }
    out.push(']');
    Ok(out)
}

async fn dispatch(shared: &Shared, op: &str, payload: Value) -> Answer {
    let platform = &shared.platform;
    match op {
        "find" => {
            let collection = platform.collection(&text(&payload, "collection")?);
            let query = query(&payload)?;
            let page = collection.find_page(&PageRead::new(query)).await?;
            array(&page.docs)
        }
        "findOne" => {
            let collection = platform.collection(&text(&payload, "collection")?);
            let mut query = query(&payload)?;
            if query.projection.is_none()
                && query.sort.is_none()
                && let Some(id) = query
                    .selector
                    .id_equality()
                    .filter(|_| is_id_only(&payload))
            {
                return match collection.get_stored(id).await? {
                    Some(doc) => doc.into_text().map_err(store_error),
                    None => Ok("null".to_owned()),
                };
            }
            query.limit = Some(1);
            let page = collection.find_page(&PageRead::new(query)).await?;
            match page.docs.into_iter().next() {
                Some(doc) => doc.into_text().map_err(store_error),
                None => Ok("null".to_owned()),
            }
        }
        "channels.broadcast" => {
            let payload_value = payload.get("payload").cloned().unwrap_or(Value::Null);
            platform
                .channels()
                .broadcast(
                    &text(&payload, "channel")?,
                    &text(&payload, "event")?,
                    &payload_value,
                )
                .map_err(|e| {
                    let status = if matches!(e, portico_platform::ChannelError::Busy) {
                        503
                    } else {
                        400
                    };
                    MethodError::new(e.code(), e.to_string()).with_status(status)
                })?;
            Ok("null".to_owned())
        }
        "count" => {
            let collection = platform.collection(&text(&payload, "collection")?);
            to_json(&collection.count(&selector(&payload)?).await?)
        }
        "insert" => {
            let collection = platform.collection(&text(&payload, "collection")?);
            let doc = object(&payload, "doc")?;
            let id = collection.insert(doc).await?;
            to_json(&id)
        }
        "update" => {
            let collection = platform.collection(&text(&payload, "collection")?);
            let selector = selector(&payload)?;
            let modifier = payload.get("modifier").cloned().unwrap_or(Value::Null);
            let update = Update::parse(&modifier).map_err(store_error)?;
            let options = payload.get("options").cloned().unwrap_or(Value::Null);
            let flag = |name: &str| options.get(name).and_then(Value::as_bool).unwrap_or(false);
            let options = UpdateOptions::new(flag("multi"), flag("upsert"));
            let result = collection.update(&selector, &update, options).await?;
            to_json(&result.matched.max(u64::from(result.upserted_id.is_some())))
        }
        "remove" => {
            let collection = platform.collection(&text(&payload, "collection")?);
            let removed = collection.remove(&selector(&payload)?).await?;
            to_json(&removed)
        }
        "fetch" => shared.http.fetch(&payload, shared.config.timeout).await,
        op if op.starts_with("files.") => crate::files::run(platform, op, &payload).await,
        op if op.starts_with("accounts.") || op.starts_with("roles.") => {
            accounts(platform, op, &payload).await
        }
        other => Err(bad(format!("unknown host operation {other:?}"))),
    }
}

/// `jobs.enqueue(name, args, {runAt, delayMs, key})`: the job's id. Inside a before hook the
/// job is stored with the hook's write.
async fn enqueue(shared: &Shared, payload: &Value, write: Option<u64>) -> Answer {
    let name = text(payload, "name")?;
    let args = payload.get("args").cloned().unwrap_or(Value::Null);
    let given = payload.get("options").cloned().unwrap_or(Value::Null);
    let mut options = EnqueueOptions::new();
    if let Some(at) = given.get("runAt").filter(|v| !v.is_null()) {
        let at = at
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| bad("runAt must be a Date or milliseconds since the epoch"))?;
        options = options.at(at as i64);
    }
    if let Some(delay) = given.get("delayMs").filter(|v| !v.is_null()) {
        let delay = delay
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .ok_or_else(|| bad("delayMs must be a number of milliseconds, 0 or more"))?;
        options = options.after(std::time::Duration::from_millis(delay as u64));
    }
    if let Some(key) = given.get("key").filter(|v| !v.is_null()) {
        let key = key.as_str().ok_or_else(|| bad("key must be a string"))?;
        options = options.key(key);
    }
    let id = shared
        .platform
        .jobs()
        .enqueue_for(write, &name, args, options)
        .await?;
    to_json(&id)
}

/// `webhooks.send(url, {type, data})`: the delivery's id. Inside a before hook the delivery
/// is stored with the hook's write.
async fn send_webhook(shared: &Shared, payload: &Value, write: Option<u64>) -> Answer {
    let url = text(payload, "url")?;
    let kind = text(payload, "type")?;
    let data = payload.get("data").cloned().unwrap_or(Value::Null);
    let id = shared
        .platform
        .send_webhook_for(write, &url, &kind, data)
        .await?;
    to_json(&id)
}

/// True when the selector is exactly `{_id: "..."}`.
fn is_id_only(payload: &Value) -> bool {
    payload
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|m| m.len() == 1 && m.get("_id").is_some_and(Value::is_string))
}

fn user_id(payload: &Value) -> Result<String, MethodError> {
    text(payload, "userId")
}

fn roles_of(payload: &Value) -> Vec<String> {
    payload
        .get("roles")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

async fn accounts(platform: &Platform, op: &str, payload: &Value) -> Answer {
    let accounts = platform.accounts();
    let optional = |key: &str| payload.get(key).and_then(Value::as_str).map(str::to_owned);
    match op {
        "accounts.createUser" => {
            let id = accounts
                .create_user(NewUser {
                    username: optional("username"),
                    email: optional("email"),
                    password: optional("password").map(Password::Plain),
                    profile: payload.get("profile").filter(|p| p.is_object()).cloned(),
                    roles: roles_of(payload),
                })
                .await?;
            to_json(&id)
        }
        "accounts.findUser" => {
            let user = if let Some(id) = optional("id") {
                accounts.find_user_by_id(&id).await?
            } else if let Some(name) = optional("username") {
                accounts.find_user_by_username(&name).await?
            } else if let Some(email) = optional("email") {
                accounts.find_user_by_email(&email).await?
            } else {
                return Err(bad("give an id, a username or an email"));
            };
            to_json(&user.map(|u| public_user(&u)))
        }
        "accounts.setPassword" => {
            let password = text(payload, "password")?;
            accounts
                .set_password(&user_id(payload)?, Password::Plain(password))
                .await?;
            Ok("null".to_owned())
        }
        "accounts.logoutEverywhere" => {
            to_json(&accounts.remove_all_tokens(&user_id(payload)?).await?)
        }
        "roles.add" => {
            accounts
                .add_roles(&user_id(payload)?, &roles_of(payload))
                .await?;
            Ok("null".to_owned())
        }
        "roles.remove" => {
            accounts
                .remove_roles(&user_id(payload)?, &roles_of(payload))
                .await?;
            Ok("null".to_owned())
        }
        "roles.is" => {
            let user = accounts.find_user_by_id(&user_id(payload)?).await?;
            to_json(&user.is_some_and(|u| user_has_any_role(&u, &roles_of(payload))))
        }
        "roles.get" => {
            let user = accounts.find_user_by_id(&user_id(payload)?).await?;
            to_json(
                &user
                    .and_then(|u| u.get("roles").cloned())
                    .unwrap_or_else(|| json!([])),
            )
        }
        other => Err(bad(format!("unknown host operation {other:?}"))),
    }
}
