//! Before/after hooks on generated endpoints.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::Document;
use serde_json::Value;

use crate::Op;
use crate::Reply;

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

type BeforeFn =
    Arc<dyn Fn(HookEvent) -> BoxFuture<'static, Result<HookEvent, crate::Reply>> + Send + Sync>;
type AfterFn = Arc<dyn Fn(AfterEvent) -> BoxFuture<'static, Value> + Send + Sync>;

/// Runs before a default action: returns the (possibly changed) event, or a reply that is sent
/// instead (a 400 for an invalid body, say).
#[derive(Clone)]
pub struct BeforeHook(BeforeFn);

impl BeforeHook {
    /// Wraps an async function.
    pub fn new<F, Fut>(f: F) -> BeforeHook
    where
        F: Fn(HookEvent) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<HookEvent, Reply>> + Send + 'static,
    {
        BeforeHook(Arc::new(move |e| f(e).boxed()))
    }

    pub(crate) async fn call(&self, event: HookEvent) -> Result<HookEvent, Reply> {
        (self.0)(event).await
    }
}

impl std::fmt::Debug for BeforeHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeHook")
    }
}

/// Runs after a default action succeeded: returns the `data` to send (an audit hook returns it
/// unchanged).
#[derive(Clone)]
pub struct AfterHook(AfterFn);

impl AfterHook {
    /// Wraps an async function.
    pub fn new<F, Fut>(f: F) -> AfterHook
    where
        F: Fn(AfterEvent) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Value> + Send + 'static,
    {
        AfterHook(Arc::new(move |e| f(e).boxed()))
    }

    pub(crate) async fn call(&self, event: AfterEvent) -> Value {
        (self.0)(event).await
    }
}

impl std::fmt::Debug for AfterHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterHook")
    }
}
