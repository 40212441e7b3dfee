//! The hooks of authentication: `auth.user` ([`AuthUserHook`] and its outcomes) and the
//! on-logged-in / on-logged-out hooks ([`LoginHook`]).

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::Document;
use serde_json::Value;

use crate::{Context, Reply};

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
    /// # use portico_routes::{AuthUserHook, AuthOutcome, Context};
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
