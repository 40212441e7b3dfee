//! The generated `users` collection: only `_id` and `profile` are exposed; post creates an
//! account with a hashed password; put sets `profile`.

use portico_platform::{NewUser, Password};
use portico_store::{Document, Projection};
use serde_json::{Map, Value, json};

use super::client_body::{BodyUse, check};
use super::crud::{Outcome, list, not_found, platform_error, scoped};
use super::list::ListParams;
use super::{CollectionState, Op};
use crate::{Context, Reply};

/// Only `_id` and `profile` of a user record.
fn public(user: &Document) -> Value {
    let mut out = Map::new();
    if let Some(id) = user.get("_id") {
        out.insert("_id".into(), id.clone());
    }
    if let Some(profile) = user.get("profile") {
        out.insert("profile".into(), profile.clone());
    }
    Value::Object(out)
}

/// True for a path a client may filter, sort or project users by.
fn exposed(path: &str) -> bool {
    path == "_id" || path == "profile" || path.starts_with("profile.")
}

async fn find(state: &CollectionState, ctx: &Context, id: &str) -> Result<Document, Reply> {
    let selector = scoped(state, ctx, Some(json!({"_id": id})))?;
    state
        .collection
        .find_one(&selector)
        .await
        .map_err(platform_error)?
        .ok_or_else(not_found)
}

fn string_field(body: &Document, name: &str) -> Result<Option<String>, Reply> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Reply::error(400, format!("{name} must be a string"))),
    }
}

pub(crate) async fn run(
    state: &CollectionState,
    op: Op,
    ctx: &Context,
    id: Option<&str>,
    body: Option<Document>,
) -> Result<Outcome, Reply> {
    let accounts = ctx.platform.accounts();
    match op {
        Op::GetAll => {
            let params = ListParams::parse(
                &ctx.query_params,
                state.default_page_size,
                state.max_page_size,
            )?;
            // Filtering or sorting on a hidden field would leak it one question at a time.
            if let Some(path) = params.paths().into_iter().find(|p| !exposed(p)) {
                return Err(Reply::error(
                    400,
                    format!("Invalid where/sort: field {path:?} is not exposed"),
                ));
            }
            let fields: Vec<String> = match &params.fields {
                Some(f) => f.iter().filter(|p| exposed(p)).cloned().collect(),
                None => Vec::new(),
            };
            let fields = if fields.is_empty() {
                "_id,profile".to_owned()
            } else {
                fields.join(",")
            };
            let projection = Projection::parse_list(&fields)
                .map_err(|e| Reply::error(400, format!("Invalid fields: {e}")))?;
            let mut outcome = list(state, ctx, params, Some(projection)).await?;
            if let Value::Array(items) = &mut outcome.data {
                for item in items.iter_mut() {
                    if let Value::Object(doc) = item {
                        *item = public(doc);
                    }
                }
            }
            Ok(outcome)
        }
        Op::Get => {
            let user = find(state, ctx, id.ok_or_else(not_found)?).await?;
            Ok(Outcome::data(public(&user)))
        }
        Op::Post => {
            // An anonymous sign-up is a client creating an account; an authenticated caller
            // passed the endpoint's auth and role checks, which the host set up on purpose.
            if accounts.config().forbid_client_account_creation && ctx.user_id.is_none() {
                return Err(Reply::error(403, "Signups forbidden"));
            }
            let mut body = body.unwrap_or_default();
            check(&mut body, BodyUse::Create, None)?;
            let password = string_field(&body, "password")?.map(Password::Plain);
            let profile = match body.get("profile") {
                None | Some(Value::Null) => None,
                Some(p @ Value::Object(_)) => Some(p.clone()),
                Some(_) => return Err(Reply::error(400, "profile must be an object")),
            };
            let new_user = NewUser {
                username: string_field(&body, "username")?,
                email: string_field(&body, "email")?,
                password,
                profile,
                roles: Vec::new(),
            };
            let new_id = accounts
                .create_user(new_user)
                .await
                .map_err(platform_error)?;
            let user = accounts
                .find_user_by_id(&new_id)
                .await
                .map_err(platform_error)?
                .ok_or_else(|| Reply::internal("created user not found"))?;
            Ok(Outcome {
                data: public(&user),
                headers: Vec::new(),
                id: Some(new_id),
            })
        }
        Op::Put | Op::Patch => {
            let id = id.ok_or_else(not_found)?;
            let mut body = body.unwrap_or_default();
            let how = if op == Op::Put {
                BodyUse::Replace
            } else {
                BodyUse::Change
            };
            check(&mut body, how, Some(id))?;
            let user = find(state, ctx, id).await?;
            let profile = if op == Op::Put {
                Value::Object(body)
            } else {
                let mut profile = match user.get("profile") {
                    Some(Value::Object(p)) => p.clone(),
                    _ => Map::new(),
                };
                for (k, v) in body {
                    set_path(&mut profile, &k, v);
                }
                Value::Object(profile)
            };
            accounts
                .set_profile(id, profile)
                .await
                .map_err(platform_error)?;
            let user = find(state, ctx, id).await?;
            Ok(Outcome::data(public(&user)))
        }
        Op::Delete => {
            let id = id.ok_or_else(not_found)?;
            find(state, ctx, id).await?;
            if accounts.remove_user(id).await.map_err(platform_error)? {
                Ok(Outcome::data(json!({"message": "Item removed"})))
            } else {
                Err(not_found())
            }
        }
    }
}

/// Sets a dotted path inside an object, creating objects on the way.
fn set_path(target: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            target.insert(path.to_owned(), value);
        }
        Some((head, rest)) => {
            let child = target
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !child.is_object() {
                *child = Value::Object(Map::new());
            }
            if let Value::Object(map) = child {
                set_path(map, rest, value);
            }
        }
    }
}
