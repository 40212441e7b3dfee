//! Allow/deny rules for client writes.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::Document;
use serde_json::Value;

/// An insert rule: `(user_id, doc) -> bool`.
pub type InsertRule =
    Arc<dyn Fn(Option<String>, Document) -> BoxFuture<'static, bool> + Send + Sync>;
/// An update rule: `(user_id, doc, changed top-level field names, modifier) -> bool`.
pub type UpdateRule = Arc<
    dyn Fn(Option<String>, Document, Vec<String>, Value) -> BoxFuture<'static, bool> + Send + Sync,
>;
/// A remove rule: `(user_id, doc) -> bool`.
pub type RemoveRule =
    Arc<dyn Fn(Option<String>, Document) -> BoxFuture<'static, bool> + Send + Sync>;

/// A set of rules for client writes, passed to [`crate::Collection::allow`] or
/// [`crate::Collection::deny`]. Each rule is an async predicate.
///
/// Semantics: any deny rule returning true refuses; otherwise at least one allow rule must return
/// true; with no rules for that operation, client writes are refused.
#[derive(Clone, Default)]
pub struct Rules {
    /// Decides client inserts.
    pub insert: Option<InsertRule>,
    /// Decides client updates.
    pub update: Option<UpdateRule>,
    /// Decides client removes.
    pub remove: Option<RemoveRule>,
    /// How these rules read, for route listings (`owner:ownerId`, `logged-in`...); see
    /// [`Rules::described`].
    pub description: Option<String>,
}

impl fmt::Debug for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rules")
            .field("insert", &self.insert.is_some())
            .field("update", &self.update.is_some())
            .field("remove", &self.remove.is_some())
            .field("description", &self.description)
            .finish()
    }
}

impl Rules {
    /// No rules.
    pub fn new() -> Rules {
        Rules::default()
    }

    /// Names these rules in words, for route listings and API documents (a rule is code, so
    /// only its author can say what it checks).
    pub fn described(mut self, description: impl Into<String>) -> Rules {
        self.description = Some(description.into());
        self
    }

    /// Sets the insert rule.
    pub fn insert<F, Fut>(mut self, rule: F) -> Rules
    where
        F: Fn(Option<String>, Document) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.insert = Some(Arc::new(move |user, doc| rule(user, doc).boxed()));
        self
    }

    /// Sets the update rule.
    pub fn update<F, Fut>(mut self, rule: F) -> Rules
    where
        F: Fn(Option<String>, Document, Vec<String>, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.update = Some(Arc::new(move |user, doc, fields, modifier| {
            rule(user, doc, fields, modifier).boxed()
        }));
        self
    }

    /// Sets the remove rule.
    pub fn remove<F, Fut>(mut self, rule: F) -> Rules
    where
        F: Fn(Option<String>, Document) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.remove = Some(Arc::new(move |user, doc| rule(user, doc).boxed()));
        self
    }
}

/// The allow and deny rules of one collection.
#[derive(Default, Clone)]
pub(crate) struct RuleSet {
    pub(crate) allow: Vec<Rules>,
    pub(crate) deny: Vec<Rules>,
}

/// Which write is being decided, with the arguments its rules take.
pub(crate) enum Write<'a> {
    Insert(&'a Document),
    Update(&'a Document, &'a [String], &'a Value),
    Remove(&'a Document),
}

impl RuleSet {
    /// The rules of one operation (`insert`, `update` or `remove`) in words: the allow rules
    /// joined by "or", then the deny rules; `nobody` without an allow rule.
    pub(crate) fn summary(&self, op: &str) -> String {
        let has = |r: &Rules| match op {
            "insert" => r.insert.is_some(),
            "update" => r.update.is_some(),
            _ => r.remove.is_some(),
        };
        let words = |list: &[Rules]| {
            list.iter()
                .filter(|r| has(r))
                .map(|r| {
                    r.description
                        .clone()
                        .unwrap_or_else(|| "a rule of the host".into())
                })
                .collect::<Vec<_>>()
        };
        let allow = words(&self.allow);
        if allow.is_empty() {
            return "nobody (no allow rule)".to_owned();
        }
        let mut text = allow.join(" or ");
        let deny = words(&self.deny);
        if !deny.is_empty() {
            text.push_str(&format!(", unless {}", deny.join(" or ")));
        }
        text
    }

    /// True when some allow rule decides updates (`update`) or removes (otherwise). Without one,
    /// every client write of that kind is refused, whatever the document.
    pub(crate) fn may_allow(&self, update: bool) -> bool {
        self.allow.iter().any(|r| {
            if update {
                r.update.is_some()
            } else {
                r.remove.is_some()
            }
        })
    }

    /// Runs one rule of `rules` for `write`; `None` when `rules` has no rule for that operation.
    async fn run(rules: &Rules, user: Option<&str>, write: &Write<'_>) -> Option<bool> {
        let user = user.map(str::to_string);
        Some(match write {
            Write::Insert(doc) => (rules.insert.as_ref()?)(user, (*doc).clone()).await,
            Write::Update(doc, fields, modifier) => {
                (rules.update.as_ref()?)(user, (*doc).clone(), fields.to_vec(), (*modifier).clone())
                    .await
            }
            Write::Remove(doc) => (rules.remove.as_ref()?)(user, (*doc).clone()).await,
        })
    }

    /// True when the write may go ahead: no deny says true, and an allow says true.
    pub(crate) async fn permits(&self, user: Option<&str>, write: &Write<'_>) -> bool {
        for rules in &self.deny {
            if RuleSet::run(rules, user, write).await == Some(true) {
                return false;
            }
        }
        for rules in &self.allow {
            if RuleSet::run(rules, user, write).await == Some(true) {
                return true;
            }
        }
        false
    }
}
