//! Authenticating callers: the `auth.user` hook, its three outcomes, and role checks.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::Document;
use serde_json::Value;

use crate::{AuthOptions, Context, Reply};

/// A shared async function of the context.
type HookFn<T> = Arc<dyn Fn(&Context) -> BoxFuture<'static, T> + Send + Sync>;

/// What the `auth.user` hook says about a caller.
#[derive(Debug)]
pub enum AuthOutcome {
    /// This user record, trusted as is.
    User(Document),
    /// The user whose record holds this *hashed* token at `auth.token_path` (and, when
    /// `user_id` is set, whose `_id` is that).
    Token {
        /// The hashed token (see `portico_platform::hash_token`).
        hashed_token: String,
        /// The `_id` the record must also have.
        user_id: Option<String>,
    },
    /// This reply is sent instead of running the endpoint.
    Error(Reply),
    /// No credentials: 401 where authentication is required.
    Anonymous,
}

/// The `auth.user` hook: called with the endpoint context (without user) to identify the caller.
#[derive(Clone)]
pub struct AuthUserHook(HookFn<AuthOutcome>);

impl AuthUserHook {
    /// Wraps a function. Read what you need from the context before the `async` block:
    ///
    /// ```
    /// # use portico_rest::{AuthUserHook, AuthOutcome, Context};
    /// let hook = AuthUserHook::new(|ctx: &Context| {
    ///     let token = ctx.header("x-api-key").map(portico_platform::hash_token);
    ///     async move {
    ///         match token {
    ///             Some(hashed_token) => AuthOutcome::Token { hashed_token, user_id: None },
    ///             None => AuthOutcome::Anonymous,
    ///         }
    ///     }
    /// });
    /// # let _ = hook;
    /// ```
    pub fn new<F, Fut>(f: F) -> AuthUserHook
    where
        F: Fn(&Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AuthOutcome> + Send + 'static,
    {
        AuthUserHook(Arc::new(move |ctx| f(ctx).boxed()))
    }

    pub(crate) fn call(&self, ctx: &Context) -> BoxFuture<'static, AuthOutcome> {
        (self.0)(ctx)
    }
}

/// An on-logged-in / on-logged-out hook: called with the context (user set); the value it
/// returns, when any, is added to the reply as `data.extra`.
#[derive(Clone)]
pub struct LoginHook(HookFn<Option<Value>>);

impl LoginHook {
    /// Wraps a function.
    pub fn new<F, Fut>(f: F) -> LoginHook
    where
        F: Fn(&Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        LoginHook(Arc::new(move |ctx| f(ctx).boxed()))
    }

    pub(crate) fn call(&self, ctx: &Context) -> BoxFuture<'static, Option<Value>> {
        (self.0)(ctx)
    }
}

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
    let outcome = match &options.user {
        Some(hook) => hook.call(ctx).await,
        None => default_outcome(ctx, options),
    };
    match outcome {
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
        AuthOutcome::Anonymous => Err(unauthorized()),
    }
}
