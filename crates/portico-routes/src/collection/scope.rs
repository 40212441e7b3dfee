//! Per-collection access scopes: which documents a caller may see and change.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::Context;

type SelectorFn = Arc<dyn Fn(&Context) -> Value + Send + Sync>;
type StampFn = Arc<dyn Fn(&Context) -> Map<String, Value> + Send + Sync>;

/// A function from the caller to a selector, applied by every generated endpoint (ANDed with
/// the request's own conditions), plus fields stamped on created and replaced documents.
///
/// ```
/// # use portico_routes::AccessScope;
/// // Only documents whose `ownerId` is the caller's id; post and put set `ownerId`.
/// let scope = AccessScope::owner_field("ownerId");
/// # let _ = scope;
/// ```
#[derive(Clone)]
pub struct AccessScope {
    selector: SelectorFn,
    stamp: Option<StampFn>,
    requires_user: bool,
    rule: String,
}

impl std::fmt::Debug for AccessScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessScope")
            .field("requires_user", &self.requires_user)
            .finish_non_exhaustive()
    }
}

/// A selector no document matches.
pub(crate) fn nothing() -> Value {
    json!({"_id": {"$in": []}})
}

impl AccessScope {
    /// Documents whose `field` equals the caller's user id. Makes the collection's endpoints
    /// require authentication; post and put stamp `field` with the caller's id, and patch may
    /// not change it.
    pub fn owner_field(field: impl Into<String>) -> AccessScope {
        let field: String = field.into();
        let f2 = field.clone();
        let f2_doc = field.clone();
        AccessScope {
            selector: Arc::new(move |ctx: &Context| match &ctx.user_id {
                Some(id) => json!({ field.as_str(): id }),
                None => nothing(),
            }),
            stamp: Some(Arc::new(move |ctx: &Context| {
                let mut m = Map::new();
                if let Some(id) = &ctx.user_id {
                    m.insert(f2.clone(), Value::String(id.clone()));
                }
                m
            })),
            requires_user: true,
            rule: format!("own documents only ({f2_doc} is the caller's id)"),
        }
    }

    /// A scope computed by `selector` from the context (`user_id`, `user`, headers...). Return a
    /// selector object; `{"_id": {"$in": []}}` matches nothing.
    pub fn new(selector: impl Fn(&Context) -> Value + Send + Sync + 'static) -> AccessScope {
        AccessScope {
            selector: Arc::new(selector),
            stamp: None,
            requires_user: false,
            rule: "a custom access scope".to_owned(),
        }
    }

    /// Fields set on every document post creates and put replaces (they win over the body's).
    pub fn with_stamp(
        mut self,
        stamp: impl Fn(&Context) -> Map<String, Value> + Send + Sync + 'static,
    ) -> AccessScope {
        self.stamp = Some(Arc::new(stamp));
        self
    }

    /// Makes the collection's endpoints require authentication.
    pub fn require_user(mut self) -> AccessScope {
        self.requires_user = true;
        self
    }

    /// The scope in words, for route descriptions.
    pub(crate) fn rule(&self) -> &str {
        &self.rule
    }

    pub(crate) fn requires_user(&self) -> bool {
        self.requires_user
    }

    pub(crate) fn selector(&self, ctx: &Context) -> Value {
        (self.selector)(ctx)
    }

    pub(crate) fn stamp(&self, ctx: &Context) -> Map<String, Value> {
        self.stamp.as_ref().map(|s| s(ctx)).unwrap_or_default()
    }
}
