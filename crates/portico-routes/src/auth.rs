//! Authenticating callers through the `auth.user` hook (or the default token rule), and
//! letting them in by the endpoint's roles.

use portico_store::Document;

use crate::hooks::AuthOutcome;
use crate::{AuthOptions, Context, Reply};

/// The default `auth.user`: the hashed `X-Auth-Token` header (or `access_token` query parameter
/// when allowed), and `X-User-Id` when sent.
fn default_outcome(ctx: &Context, options: &AuthOptions) -> AuthOutcome {
    let token = portico_edge::request_token(&ctx.request.headers)
        .map(str::to_owned)
        .or_else(|| {
            options
                .allow_query_token
                .then(|| ctx.query_param("access_token").map(str::to_owned))
                .flatten()
        });
    match token {
        Some(t) if !t.is_empty() => AuthOutcome::Token {
            hashed_token: portico_platform::hash_token(&t),
            user_id: ctx.header("x-user-id").map(str::to_owned),
        },
        _ => AuthOutcome::Anonymous,
    }
}

/// An authenticated caller.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) user: Document,
    pub(crate) user_id: String,
    pub(crate) hashed_token: Option<String>,
}

/// The 401 reply.
pub(crate) fn unauthorized() -> Reply {
    Reply::error(401, "You must be logged in to do this.")
}

/// The 403 reply.
pub(crate) fn forbidden() -> Reply {
    Reply::error(403, "You do not have permission to do this.")
}

/// Runs the hook and resolves its outcome to a user, or to the reply to send instead.
pub(crate) async fn authenticate(ctx: &Context, options: &AuthOptions) -> Result<Caller, Reply> {
    authenticate_if_sent(ctx, options)
        .await?
        .ok_or_else(unauthorized)
}

/// [`authenticate`], with `None` for a caller who sent no credentials (the hook, or the default
/// rule, found none) instead of a 401. Credentials that were sent and find no user are a 401.
async fn authenticate_if_sent(
    ctx: &Context,
    options: &AuthOptions,
) -> Result<Option<Caller>, Reply> {
    let outcome = match &options.user {
        Some(hook) => hook.call(ctx.clone()).await,
        None => default_outcome(ctx, options),
    };
    let caller = match outcome {
        AuthOutcome::User(user) => match portico_store::document_id(&user) {
            Some(id) => Ok(Caller {
                user_id: id.to_owned(),
                user,
                hashed_token: None,
            }),
            None => Err(Reply::internal(
                "auth.user returned a user without a string _id",
            )),
        },
        AuthOutcome::Token {
            hashed_token,
            user_id,
        } => {
            let found = ctx
                .platform
                .accounts()
                .user_by_hashed_token(&options.token_path, &hashed_token)
                .await;
            match found {
                Ok(Some(user)) => {
                    let id = portico_store::document_id(&user)
                        .unwrap_or_default()
                        .to_owned();
                    if user_id.as_deref().is_some_and(|want| want != id) {
                        return Err(unauthorized());
                    }
                    Ok(Caller {
                        user_id: id,
                        user,
                        hashed_token: Some(hashed_token),
                    })
                }
                Ok(None) => Err(unauthorized()),
                // 503 while the database is unreachable, else 500 (see `Reply::from`).
                Err(e) => Err(Reply::from(e)),
            }
        }
        AuthOutcome::Error(reply) => Err(reply),
        AuthOutcome::Anonymous => return Ok(None),
    };
    caller.map(Some)
}

/// Lets the caller of `ctx` in when its endpoint's options need one: authenticates (or takes
/// `known`, the caller found already for an earlier request of the same batch), checks the
/// roles, and sets the user on the context. `known` is left holding the caller.
///
/// # Errors
/// The reply to send instead: 401 (or the `auth.user` hook's own reply), 403 without a role.
pub(crate) async fn admit(
    ctx: &mut Context,
    options: &AuthOptions,
    known: &mut Option<Caller>,
) -> Result<(), Reply> {
    if !ctx.options.auth_required {
        if !ctx.options.auth_optional {
            return Ok(());
        }
        // `auth = "optional"`: the caller when credentials came (or 401), else anonymous.
        let caller = match known {
            Some(caller) => Some(caller.clone()),
            None => authenticate_if_sent(ctx, options).await?,
        };
        if let Some(caller) = caller {
            *known = Some(caller.clone());
            set_caller(ctx, caller, options);
        }
        return Ok(());
    }
    let caller = match known {
        Some(caller) => caller.clone(),
        None => {
            let caller = authenticate(ctx, options).await?;
            *known = Some(caller.clone());
            caller
        }
    };
    let roles = &ctx.options.role_required;
    if !roles.is_empty() && !portico_platform::user_has_any_role(&caller.user, roles) {
        return Err(forbidden());
    }
    set_caller(ctx, caller, options);
    Ok(())
}

/// Sets the authenticated `caller` on the context.
fn set_caller(ctx: &mut Context, caller: Caller, options: &AuthOptions) {
    ctx.user = Some(caller.user);
    ctx.user_id = Some(caller.user_id);
    ctx.hashed_token = caller.hashed_token;
    if portico_edge::wants_event_stream(&ctx.request.headers) {
        ctx.token_path = Some(options.token_path.clone());
    }
}

/// Lets in the caller of a file download that carries a download token (`?token=`) and no
/// other credentials; true when it did. An unknown or expired token is a 401.
pub(crate) async fn admit_file_token(ctx: &mut Context) -> std::result::Result<bool, Reply> {
    if !ctx.options.auth_required || portico_edge::request_token(&ctx.request.headers).is_some() {
        return Ok(false);
    }
    let Some(token) = ctx.query_param("token").map(str::to_owned) else {
        return Ok(false);
    };
    let Some(files) = ctx.platform.files() else {
        return Ok(false);
    };
    let user_id = files
        .token_user(&ctx.platform, &token)
        .await
        .map_err(Reply::from)?
        .ok_or_else(|| Reply::error(401, "The download token is unknown or expired."))?;
    let user = ctx
        .platform
        .accounts()
        .find_user_by_id(&user_id)
        .await
        .map_err(Reply::from)?
        .ok_or_else(unauthorized)?;
    let roles = &ctx.options.role_required;
    if !roles.is_empty() && !portico_platform::user_has_any_role(&user, roles) {
        return Err(forbidden());
    }
    ctx.user = Some(user);
    ctx.user_id = Some(user_id);
    Ok(true)
}
