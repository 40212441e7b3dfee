//! Every hook of the routes door is one type, [`Hook`]: a shared async function of one
//! argument. The four kinds are names for it:
//!
//! | hook | runs | gets | gives |
//! |---|---|---|---|
//! | [`AuthUserHook`] (`auth.user`) | to identify a caller | the [`Context`], no user yet | an [`AuthOutcome`] |
//! | [`LoginHook`] (on logged in / out) | after a default login or logout | the [`Context`], user set | `data.extra`, when any |
//! | [`BeforeHook`] | before a generated endpoint's action | a [`HookEvent`] | the event (maybe changed), or a reply sent instead |
//! | [`AfterHook`] | after the action succeeded | an [`AfterEvent`] | the reply's `data` |
//!
//! Hooks on collection writes that every door runs (scripts' `onBefore`/`onAfter`) are the
//! platform's [`portico_platform::WriteHooks`]; these are the routes door's own.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::Document;
use serde_json::Value;

use crate::{Context, Op, Reply};

/// A hook: a shared async function from `A` to `R`. Cloning it shares the function.
///
/// ```
/// use portico_routes::{AuthOutcome, AuthUserHook, Context};
///
/// let hook = AuthUserHook::new(|ctx: Context| async move {
///     match ctx.header("x-api-key").map(portico_platform::hash_token) {
///         Some(hashed_token) => AuthOutcome::Token { hashed_token, user_id: None },
///         None => AuthOutcome::Anonymous,
///     }
/// });
/// # let _ = hook;
/// ```
pub struct Hook<A, R>(Arc<dyn Fn(A) -> BoxFuture<'static, R> + Send + Sync>);

impl<A, R> Clone for Hook<A, R> {
    fn clone(&self) -> Self {
        Hook(Arc::clone(&self.0))
    }
}

impl<A, R> std::fmt::Debug for Hook<A, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

impl<A: 'static, R: 'static> Hook<A, R> {
    /// Wraps an async function.
    pub fn new<F, Fut>(f: F) -> Hook<A, R>
    where
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
    {
        Hook(Arc::new(move |arg| f(arg).boxed()))
    }

    pub(crate) fn call(&self, arg: A) -> BoxFuture<'static, R> {
        (self.0)(arg)
    }
}

/// The `auth.user` hook: called with the endpoint's context (without user) to identify the
/// caller.
pub type AuthUserHook = Hook<Context, AuthOutcome>;

/// An on-logged-in / on-logged-out hook: called with the context (user set); the value it
/// returns, when any, is added to the reply as `data.extra`.
pub type LoginHook = Hook<Context, Option<Value>>;

/// Runs before a generated endpoint's default action: returns the (possibly changed) event,
/// or a reply that is sent instead (a 400 for an invalid body, say).
pub type BeforeHook = Hook<HookEvent, Result<HookEvent, Reply>>;

/// Runs after a generated endpoint's default action succeeded: returns the `data` to send (an
/// audit hook returns it unchanged).
pub type AfterHook = Hook<AfterEvent, Value>;

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

/// What a before hook sees and may change.
#[derive(Debug, Clone)]
pub struct HookEvent {
    /// The generated endpoint.
    pub op: Op,
    /// The caller, when authenticated.
    pub user_id: Option<String>,
    /// The `:id` of get, put, patch and delete.
    pub id: Option<String>,
    /// The client body of post, put and patch (the hook may reshape it).
    pub body: Option<Document>,
}

/// What an after hook sees: the reply's `data`.
#[derive(Debug, Clone)]
pub struct AfterEvent {
    /// The generated endpoint.
    pub op: Op,
    /// The caller, when authenticated.
    pub user_id: Option<String>,
    /// The `:id` of get, put, patch and delete, or the new id of post.
    pub id: Option<String>,
    /// The reply's `data`.
    pub data: Value,
}
