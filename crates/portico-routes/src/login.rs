//! The default authentication routes: `POST {api}login` and `POST {api}logout` (GET accepted).

use std::time::Duration;

use portico_platform::LoginError;
use portico_store::Update;
use serde_json::{Map, Value, json};

use crate::endpoint_doc::EndpointDoc;
use crate::route_table::RouteExtras;
use crate::{ApiOptions, Context, Endpoint, Endpoints, LoginHook, Reply};

const DEFAULT_TOKEN_PATH: &str = "services.resume.loginTokens.hashedToken";

/// Login and logout bodies are small; this caps what an anonymous client can make the server
/// buffer.
pub(crate) const LOGIN_BODY_LIMIT: usize = 64 * 1024;

/// The one reply for every login failure, whatever the cause.
fn login_failed() -> Reply {
    Reply::error(401, "Unauthorized")
}

fn too_many(retry_after: Duration) -> Reply {
    let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    Reply::error(429, "Too many login attempts; try again later")
        .with_header("retry-after", secs.max(1).to_string())
}

/// The login and logout routes of an API with `options`: path (relative to the API), endpoints
/// and what the API adds to them.
pub(crate) fn routes(options: &ApiOptions) -> Vec<(&'static str, Endpoints, RouteExtras)> {
    let on_in = options.on_logged_in.clone();
    let login = Endpoint::new(move |ctx: Context| {
        let on_in = on_in.clone();
        async move { login(ctx, on_in.as_ref()).await }
    });
    let login_doc = EndpointDoc::new("log in: a token for username, email or user + password")
        .request(json!({
            "type": "object",
            "properties": {
                "username": {"type": "string"},
                "email": {"type": "string"},
                "user": {"type": ["string", "object"]},
                "password": {"type": ["string", "object"]},
                "hashed": {"type": "boolean"}
            },
            "required": ["password"]
        }))
        .reply(json!({
            "type": "object",
            "properties": {
                "authToken": {"type": "string"},
                "userId": {"type": "string"},
                "when": {"type": "string", "format": "date-time"}
            }
        }));
    let login_route = (
        "login",
        Endpoints::new().post(login),
        RouteExtras {
            body_limit: Some(LOGIN_BODY_LIMIT),
            docs: vec![("POST", login_doc)],
            ..RouteExtras::default()
        },
    );
    let token_path = options.auth.token_path.clone();
    let on_out = options.on_logged_out.clone();
    let logout = Endpoint::new(move |ctx: Context| {
        let token_path = token_path.clone();
        let on_out = on_out.clone();
        async move { logout(ctx, &token_path, on_out.as_ref()).await }
    })
    .auth_required(true);
    let logout_doc = || {
        EndpointDoc::new("log out: the request's token stops working")
            .reply(json!({"type": "object", "properties": {"message": {"type": "string"}}}))
    };
    let logout_route = (
        "logout",
        Endpoints::new().post(logout.clone()).get(logout),
        RouteExtras {
            body_limit: Some(LOGIN_BODY_LIMIT),
            docs: vec![("POST", logout_doc()), ("GET", logout_doc())],
            ..RouteExtras::default()
        },
    );
    vec![login_route, logout_route]
}

async fn login(mut ctx: Context, on_in: Option<&LoginHook>) -> Reply {
    let token = match ctx
        .logins
        .login(Some(&ctx.body_params), ctx.client_addr)
        .await
    {
        Ok(token) => token,
        Err(LoginError::TooManyAttempts(wait)) => return too_many(wait),
        Err(LoginError::Platform(e)) => return Reply::from(e),
        Err(e @ LoginError::EmailNotVerified) => return Reply::error(403, e.to_string()),
        Err(e @ (LoginError::TotpRequired | LoginError::TotpInvalid)) => {
            return Reply::error(401, e.to_string());
        }
        Err(_) => return login_failed(),
    };
    let accounts = ctx.platform.accounts();
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
        if let Some(extra) = hook.call(ctx).await {
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
    if let Some(hook) = on_out
        && let Some(extra) = hook.call(ctx).await
    {
        data.insert("extra".into(), extra);
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
