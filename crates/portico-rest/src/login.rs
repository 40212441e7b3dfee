//! The default authentication routes: `POST {api}login` and `POST {api}logout` (GET accepted).

use std::time::Duration;

use portico_platform::{Password, UserSelector};
use portico_store::Update;
use serde_json::{Map, Value, json};

use crate::api::LoginLimiters;
use crate::path::Matcher;
use crate::{Api, Context, Endpoint, Endpoints, LoginHook, Reply, Result, RouteOptions};

const DEFAULT_TOKEN_PATH: &str = "services.resume.loginTokens.hashedToken";

/// The one reply for every login failure, whatever the cause.
fn login_failed() -> Reply {
    Reply::error(401, "Unauthorized")
}

fn too_many(retry_after: Duration) -> Reply {
    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    Reply::error(429, "Too many login attempts; try again later")
        .with_header("retry-after", secs.max(1).to_string())
}

pub(crate) fn add_login_routes(api: &mut Api) -> Result<()> {
    let limiters = api.limiters.clone();
    let on_in = api.options.on_logged_in.clone();
    let login = Endpoint::new(move |ctx: Context| {
        let limiters = limiters.clone();
        let on_in = on_in.clone();
        async move { login(ctx, &limiters, on_in.as_ref()).await }
    });
    api.insert_route(
        Matcher::compile(&"login".into())?,
        RouteOptions::default(),
        Endpoints::new().post(login),
    )?;
    let token_path = api.options.auth.token_path.clone();
    let on_out = api.options.on_logged_out.clone();
    let logout = Endpoint::new(move |ctx: Context| {
        let token_path = token_path.clone();
        let on_out = on_out.clone();
        async move { logout(ctx, &token_path, on_out.as_ref()).await }
    })
    .auth_required(true);
    api.insert_route(
        Matcher::compile(&"logout".into())?,
        RouteOptions::default(),
        Endpoints::new().post(logout.clone()).get(logout),
    )
}

/// The identity a login names, and its rate-limit key.
fn identity(body: &Value) -> Option<(UserSelector, String)> {
    let field = |name: &str| {
        body.get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    if let Some(email) = field("email") {
        let key = email.to_lowercase();
        return Some((UserSelector::Email(email), key));
    }
    if let Some(username) = field("username") {
        let key = username.to_lowercase();
        return Some((UserSelector::Username(username), key));
    }
    field("user").map(|user| {
        let key = user.to_lowercase();
        (UserSelector::Either(user), key)
    })
}

fn password(body: &Value) -> Option<Password> {
    let hashed = matches!(body.get("hashed"), Some(Value::Bool(true)))
        || body.get("hashed").and_then(Value::as_str) == Some("true");
    match body.get("password")? {
        Value::String(p) if p.is_empty() => None,
        Value::String(p) if hashed => Some(Password::Digest(p.to_lowercase())),
        Value::String(p) => Some(Password::Plain(p.clone())),
        Value::Object(o) => {
            let digest = o.get("digest")?.as_str()?;
            let algorithm = o
                .get("algorithm")
                .and_then(Value::as_str)
                .unwrap_or("sha-256");
            (algorithm == "sha-256").then(|| Password::Digest(digest.to_lowercase()))
        }
        _ => None,
    }
}

async fn login(mut ctx: Context, limiters: &LoginLimiters, on_in: Option<&LoginHook>) -> Reply {
    let id = identity(&ctx.body_params);
    let address_key = ctx.client_addr.map(|a| a.ip().to_string());
    // The failure counts live in the store, shared by every instance on one database.
    let store = ctx.platform.store().clone();
    if let (Some(limiter), Some((_, key))) = (&limiters.identity, &id) {
        if let Err(retry) = limiter.check(store.as_ref(), key).await {
            return too_many(retry);
        }
    }
    if let (Some(limiter), Some(key)) = (&limiters.address, &address_key) {
        if let Err(retry) = limiter.check(store.as_ref(), key).await {
            return too_many(retry);
        }
    }
    let record_failure = || async {
        if let (Some(limiter), Some((_, key))) = (&limiters.identity, &id) {
            limiter.record_failure(store.as_ref(), key).await;
        }
        if let (Some(limiter), Some(key)) = (&limiters.address, &address_key) {
            limiter.record_failure(store.as_ref(), key).await;
        }
    };
    let (Some((selector, _)), Some(pw)) = (&id, password(&ctx.body_params)) else {
        record_failure().await;
        return login_failed();
    };
    let accounts = ctx.platform.accounts();
    let token = match accounts.login(selector, &pw).await {
        Ok(token) => token,
        Err(portico_platform::Error::LoginFailed) => {
            record_failure().await;
            return login_failed();
        }
        Err(e) if e.is_client_error() => {
            record_failure().await;
            return login_failed();
        }
        Err(e) => return Reply::from(e),
    };
    if let (Some(limiter), Some((_, key))) = (&limiters.identity, &id) {
        limiter.reset(store.as_ref(), key).await;
    }
    let mut data = Map::new();
    data.insert("authToken".into(), json!(token.token));
    data.insert("userId".into(), json!(token.user_id));
    data.insert("when".into(), json!(token.when));
    if let Some(hook) = on_in {
        match accounts.find_user_by_id(&token.user_id).await {
            Ok(user) => ctx.user = user,
            Err(e) => return Reply::internal(e),
        }
        ctx.user_id = Some(token.user_id.clone());
        ctx.hashed_token = Some(portico_platform::hash_token(&token.token));
        if let Some(extra) = hook.call(&ctx).await {
            data.insert("extra".into(), extra);
        }
    }
    Reply::success(Value::Object(data))
}

async fn logout(ctx: Context, token_path: &str, on_out: Option<&LoginHook>) -> Reply {
    let (Some(user_id), Some(hashed)) = (ctx.user_id.clone(), ctx.hashed_token.clone()) else {
        // A custom auth.user that trusts a user record gives no token to invalidate.
        return Reply::error(400, "No token to log out");
    };
    let removed = if token_path == DEFAULT_TOKEN_PATH {
        ctx.platform
            .accounts()
            .remove_hashed_token(&user_id, &hashed)
            .await
            .map(|_| ())
    } else {
        remove_token_at(&ctx, token_path, &user_id, &hashed).await
    };
    if let Err(e) = removed {
        return Reply::internal(e);
    }
    let mut data = Map::new();
    data.insert("message".into(), json!("You've been logged out!"));
    if let Some(hook) = on_out {
        if let Some(extra) = hook.call(&ctx).await {
            data.insert("extra".into(), extra);
        }
    }
    Reply::success(Value::Object(data))
}

/// Removes a hashed token stored at a custom `auth.token` path (`a.b.field`): every element of
/// the array at `a.b` whose `field` is the token goes, or the field itself when `a.b` is an object.
async fn remove_token_at(
    ctx: &Context,
    token_path: &str,
    user_id: &str,
    hashed: &str,
) -> std::result::Result<(), portico_platform::Error> {
    let users = ctx.platform.collection("users");
    let Some(user) = users.get(user_id).await? else {
        return Ok(());
    };
    let Some((parent, field)) = token_path.rsplit_once('.') else {
        // The token is a top-level field.
        if user.get(token_path).and_then(Value::as_str) == Some(hashed) {
            let mut unset = Map::new();
            unset.insert(token_path.to_owned(), json!(""));
            let update = Update::parse(&json!({"$unset": unset}))?;
            users.update_by_id(user_id, &update).await?;
        }
        return Ok(());
    };
    let mut current = Some(&Value::Object(user.clone()));
    for part in parent.split('.') {
        current = current.and_then(|v| v.get(part));
    }
    let replacement = match current {
        Some(Value::Array(items)) => Value::Array(
            items
                .iter()
                .filter(|item| item.get(field).and_then(Value::as_str) != Some(hashed))
                .cloned()
                .collect(),
        ),
        Some(Value::Object(obj)) if obj.get(field).and_then(Value::as_str) == Some(hashed) => {
            let mut obj = obj.clone();
            obj.remove(field);
            Value::Object(obj)
        }
        _ => return Ok(()),
    };
    let mut set = Map::new();
    set.insert(parent.to_owned(), replacement);
    users.update_by_id(user_id, &Update::set(set)?).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_prefers_email_then_username_then_user() {
        let (s, k) = identity(&json!({"email": "A@x.io", "username": "bob"})).unwrap();
        assert!(matches!(s, UserSelector::Email(e) if e == "A@x.io"));
        assert_eq!(k, "a@x.io");
        assert!(matches!(
            identity(&json!({"username": "bob"})).unwrap().0,
            UserSelector::Username(_)
        ));
        assert!(matches!(
            identity(&json!({"user": "bob"})).unwrap().0,
            UserSelector::Either(_)
        ));
        assert!(identity(&json!({"password": "x"})).is_none());
    }

    #[test]
    fn password_forms() {
        assert!(
            matches!(password(&json!({"password": "pw"})), Some(Password::Plain(p)) if p == "pw")
        );
        assert!(
            matches!(password(&json!({"password": "AB", "hashed": true})), Some(Password::Digest(p)) if p == "ab")
        );
        assert!(matches!(
            password(&json!({"password": {"digest": "ff", "algorithm": "sha-256"}})),
            Some(Password::Digest(_))
        ));
        assert!(password(&json!({"password": ""})).is_none());
        assert!(password(&json!({})).is_none());
    }

    #[test]
    fn retry_after_rounds_up() {
        let r = too_many(Duration::from_millis(1500));
        assert_eq!(r.status(), 429);
        assert!(
            r.headers
                .iter()
                .any(|(n, v)| n == "retry-after" && v == "2")
        );
    }
}
