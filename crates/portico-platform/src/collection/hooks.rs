//! Write hooks: code a collection runs before and after each write to it, such as a script's
//! `collection("todos").before.insert(...)`.
//!
//! Hooks see server writes and client writes alike, through either door. A before hook runs
//! before anything is written and may change what is written (the document of an insert, the
//! modifier of an update); when it fails, the write is not done and its error is the write's.
//! An after hook runs once the write is stored; a failure there is its own to log, the write
//! stands. A job a before hook enqueues ([`crate::jobs::Jobs::enqueue`]) is stored in the
//! write's own store transaction: a write that fails or is refused leaves no job. Imports ([`Collection::insert_stream`]) run no hooks, and batches of the routes door
//! refuse collections with hooks (a batch cannot run code between its writes).

use std::borrow::Cow;

use futures::future::BoxFuture;
use portico_store::{
    BatchError, BatchFailure, BatchOp, Document, Query, Selector, Update, UpdateOptions,
    UpdateResult,
};
use serde_json::{Value, json};

use super::Collection;
use crate::locks::write;
use crate::{Error, Result};

/// The jobs a write's before hooks enqueued, stored by the write in its own transaction.
pub(super) type Enqueued = Vec<Document>;

/// A write a hook can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookOp {
    /// Inserts (also each document of [`Collection::insert_many`]).
    Insert,
    /// Updates, once for each document changed.
    Update,
    /// Removes, once for each document removed.
    Remove,
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookWhen {
    /// Before the write; a failure refuses it.
    Before,
    /// After the write is stored.
    After,
}

/// The hooks of a collection (see the module documentation), set with
/// [`Collection::set_hooks`]. `user_id` is the client's for a client write (the `client_*`
/// methods, and a door's writes for a client through [`Collection::insert_returning_as`] and the
/// other `*_as` methods) and `None` for a server write.
pub trait WriteHooks: Send + Sync {
    /// True when some hook watches `op` at `when`. The platform reads the documents a write
    /// touches only for a watched write, so writes without hooks cost nothing more.
    fn watches(&self, when: HookWhen, op: HookOp) -> bool;

    /// Before an insert, with the document as it would be stored (its `_id` and timestamps
    /// set). Returns the document to store.
    ///
    /// # Errors
    /// The error the insert fails with; nothing is written.
    fn before_insert(
        &self,
        user_id: Option<String>,
        doc: Document,
    ) -> BoxFuture<'static, Result<Document>>;

    /// Before an update of `doc` (as stored now): the top-level fields the modifier changes and
    /// the modifier. Returns the modifier to apply (for the documents after this one too).
    ///
    /// # Errors
    /// The error the update fails with; nothing is written.
    fn before_update(
        &self,
        user_id: Option<String>,
        doc: Document,
        fields: Vec<String>,
        modifier: Value,
    ) -> BoxFuture<'static, Result<Value>>;

    /// Before `doc` is removed.
    ///
    /// # Errors
    /// The error the remove fails with; nothing is removed.
    fn before_remove(
        &self,
        user_id: Option<String>,
        doc: Document,
    ) -> BoxFuture<'static, Result<()>>;

    /// After `doc` was inserted.
    fn after_insert(&self, user_id: Option<String>, doc: Document) -> BoxFuture<'static, ()>;

    /// After an update: the document as stored now and as it was before.
    fn after_update(
        &self,
        user_id: Option<String>,
        doc: Document,
        previous: Document,
        fields: Vec<String>,
        modifier: Value,
    ) -> BoxFuture<'static, ()>;

    /// After `doc` was removed.
    fn after_remove(&self, user_id: Option<String>, doc: Document) -> BoxFuture<'static, ()>;
}

impl Collection {
    /// Forgets this collection's rules, write hooks and event source (when its platform
    /// closes): what they captured, a platform handle included, is let go.
    pub(crate) fn release(&self) {
        let rules = std::mem::take(&mut *write(&self.inner.rules));
        let hooks = write(&self.inner.hooks).take();
        let events = write(&self.inner.events).take();
        drop((rules, hooks, events));
    }

    /// Sets this collection's write hooks (replacing any set before).
    pub fn set_hooks(&self, hooks: std::sync::Arc<dyn WriteHooks>) {
        *self
            .inner
            .hooks
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hooks);
    }

    /// True when this collection has write hooks or write events (see
    /// [`Collection::set_events`]): its writes run code or store jobs between reads and writes.
    pub fn has_write_hooks(&self) -> bool {
        self.hooks().is_some()
            || [HookOp::Insert, HookOp::Update, HookOp::Remove]
                .into_iter()
                .any(|op| self.events_watching(op).is_some())
    }

    fn hooks(&self) -> Option<std::sync::Arc<dyn WriteHooks>> {
        self.inner
            .hooks
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The hooks when one of them watches `op` at `when`.
    fn watching(&self, when: HookWhen, op: HookOp) -> Option<std::sync::Arc<dyn WriteHooks>> {
        self.hooks().filter(|h| h.watches(when, op))
    }

    /// True when a hook watches `op`, before or after, or an event source does.
    pub(super) fn hooked(&self, op: HookOp) -> bool {
        self.hooks()
            .is_some_and(|h| h.watches(HookWhen::Before, op) || h.watches(HookWhen::After, op))
            || self.events_watching(op).is_some()
    }

    /// `doc` (with its `_id` and timestamps) through the before-insert hooks, then checked
    /// against the schema: the document an insert stores.
    /// Also returns the jobs the hooks enqueued, for the insert to store with itself
    /// ([`Collection::write_with_jobs`]).
    pub(super) async fn hooked_insert(
        &self,
        user_id: Option<&str>,
        doc: Document,
    ) -> Result<(Document, Enqueued)> {
        let Some(hooks) = self.watching(HookWhen::Before, HookOp::Insert) else {
            self.validate(&doc)?;
            let mut jobs = Vec::new();
            self.add_events(HookOp::Insert, [&doc], &mut jobs).await?;
            return Ok((doc, jobs));
        };
        let id = doc.get("_id").cloned();
        let (doc, mut jobs) =
            crate::jobs::collect(hooks.before_insert(user_id.map(str::to_owned), doc)).await;
        let mut doc = doc?;
        if doc.get("_id") != id.as_ref() {
            // A hook may change the document, not which document it is.
            if let Some(id) = id {
                doc.shift_insert(0, "_id".into(), id);
            }
        }
        self.validate(&doc)?;
        self.add_events(HookOp::Insert, [&doc], &mut jobs).await?;
        Ok((doc, jobs))
    }

    /// Inserts `doc`, with the jobs its before hooks enqueued in the same store transaction.
    pub(super) async fn store_insert(&self, doc: Document, jobs: Enqueued) -> Result<String> {
        if jobs.is_empty() {
            return Ok(self.store().insert(self.name(), doc).await?);
        }
        let id = doc
            .get("_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let op = BatchOp::Insert {
            collection: self.name().to_owned(),
            doc,
        };
        self.write_with_jobs(vec![op], jobs).await?;
        Ok(id)
    }

    /// Applies `ops` (the store writes of one hooked write) and inserts `jobs` (what its before
    /// hooks enqueued) in one store transaction, so the jobs exist exactly when the write
    /// committed. A keyed job pending already is left out (its enqueue is a no-op). An update
    /// or removal whose document no longer matches is left out too, as the write without jobs
    /// would have skipped it. Returns how many of `ops` were applied.
    pub(super) async fn write_with_jobs(
        &self,
        mut ops: Vec<BatchOp>,
        jobs: Enqueued,
    ) -> Result<usize> {
        let store = self.store();
        let mut fresh = Vec::with_capacity(jobs.len());
        for job in jobs {
            let id = job.get("_id").and_then(Value::as_str).unwrap_or_default();
            if store.get(crate::jobs::JOBS, id).await?.is_none() {
                fresh.push(job);
            }
        }
        loop {
            if ops.is_empty() {
                return Ok(0);
            }
            let count = ops.len();
            let mut all = ops.clone();
            all.extend(fresh.iter().map(|job| BatchOp::Insert {
                collection: crate::jobs::JOBS.to_owned(),
                doc: job.clone(),
            }));
            match store.batch(all).await {
                Ok(_) => {
                    crate::jobs::wake();
                    return Ok(count);
                }
                Err(BatchError {
                    index,
                    failure: BatchFailure::NoMatch,
                }) if index < count => {
                    ops.remove(index);
                }
                Err(BatchError {
                    index,
                    failure: BatchFailure::Store(portico_store::Error::DuplicateId { .. }),
                }) if index >= count => {
                    // A keyed job enqueued meanwhile by another writer: this one is a no-op.
                    fresh.remove(index - count);
                }
                Err(BatchError {
                    failure: BatchFailure::Store(e),
                    ..
                }) => return Err(e.into()),
                Err(e) => return Err(Error::Internal(e.to_string())),
            }
        }
    }

    /// A copy of `doc` for the after-insert hooks, when one watches.
    pub(super) fn keep_for_after_insert(&self, doc: &Document) -> Option<Document> {
        self.watching(HookWhen::After, HookOp::Insert)
            .map(|_| doc.clone())
    }

    /// Runs the after-insert hooks on `doc`.
    pub(super) async fn after_insert(&self, user_id: Option<&str>, doc: Option<Document>) {
        if let (Some(hooks), Some(doc)) = (self.watching(HookWhen::After, HookOp::Insert), doc) {
            hooks.after_insert(user_id.map(str::to_owned), doc).await;
        }
    }

    /// An update of what `selector` finds, with the update hooks: the documents are read
    /// first, each goes through the before hooks, and the write is limited to exactly those
    /// documents (a document that starts matching meanwhile is not changed unseen). An upsert
    /// that finds nothing inserts without update hooks.
    pub(super) async fn update_with_hooks(
        &self,
        user_id: Option<&str>,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        let mut query = Query::new(selector.clone());
        if !options.multi {
            query.limit = Some(1);
        }
        // The documents the write changes: read from the primary (never a replica's older view).
        let found = portico_store::routing::on_primary(self.find(&query)).await?;
        if found.is_empty() {
            return self
                .update_unhooked(selector, Cow::Borrowed(update), options)
                .await;
        }
        let (update, modifier, fields, mut jobs) =
            self.before_update(user_id, &found, update).await?;
        let ids: Vec<Value> = found.iter().filter_map(|d| d.get("_id").cloned()).collect();
        let exact = selector
            .clone()
            .and(Selector::parse(&json!({"_id": {"$in": ids.clone()}}))?);
        let events = self.events_watching(HookOp::Update).is_some();
        let result = if jobs.is_empty() && !events {
            let mut exact_options = options;
            exact_options.multi = true;
            exact_options.upsert = false;
            self.update_unhooked(&exact, Cow::Owned(update), exact_options)
                .await?
        } else {
            // One update per document, with the jobs, in one transaction.
            let update = self.stamp_update(&exact, Cow::Owned(update)).await?;
            let mut changed_docs = Vec::with_capacity(found.len());
            for doc in &found {
                let mut changed = doc.clone();
                update.apply(&mut changed)?;
                self.validate(&changed)?;
                changed_docs.push(changed);
            }
            self.add_events(HookOp::Update, &changed_docs, &mut jobs)
                .await?;
            let ops = each_document(selector, ids, |selector| BatchOp::Update {
                collection: self.name().to_owned(),
                selector,
                update: update.clone().into_owned(),
            })?;
            let n = self.write_with_jobs(ops, jobs).await? as u64;
            UpdateResult {
                matched: n,
                modified: n,
                upserted_id: None,
            }
        };
        self.after_update(user_id, found, fields, modifier).await;
        Ok(result)
    }

    /// Runs the before-update hooks on each of `found`; the update to apply, its modifier,
    /// the fields it changes and the jobs the hooks enqueued.
    pub(super) async fn before_update(
        &self,
        user_id: Option<&str>,
        found: &[Document],
        update: &Update,
    ) -> Result<(Update, Value, Vec<String>, Enqueued)> {
        let Some(hooks) = self.watching(HookWhen::Before, HookOp::Update) else {
            let fields = update.field_names();
            return Ok((
                update.clone(),
                update.to_value().clone(),
                fields,
                Vec::new(),
            ));
        };
        let (out, jobs) =
            crate::jobs::collect(self.run_before_update(&*hooks, user_id, found, update)).await;
        let (update, modifier, fields) = out?;
        Ok((update, modifier, fields, jobs))
    }

    async fn run_before_update(
        &self,
        hooks: &dyn WriteHooks,
        user_id: Option<&str>,
        found: &[Document],
        update: &Update,
    ) -> Result<(Update, Value, Vec<String>)> {
        let mut modifier = update.to_value().clone();
        let mut update = update.clone();
        for doc in found {
            let fields = update.field_names();
            let changed = hooks
                .before_update(
                    user_id.map(str::to_owned),
                    doc.clone(),
                    fields,
                    modifier.clone(),
                )
                .await?;
            if changed != modifier {
                update = Update::parse(&changed)?;
                modifier = changed;
            }
        }
        let fields = update.field_names();
        Ok((update, modifier, fields))
    }

    /// Runs the after-update hooks on the documents `previous` (as they were), read again now.
    /// The write is stored already: a failed read is logged and skips that document's hooks,
    /// as a failing after hook would, rather than failing a write that was done.
    pub(super) async fn after_update(
        &self,
        user_id: Option<&str>,
        previous: Vec<Document>,
        fields: Vec<String>,
        modifier: Value,
    ) {
        let Some(hooks) = self.watching(HookWhen::After, HookOp::Update) else {
            return;
        };
        for before in previous {
            let Some(id) = before.get("_id").and_then(Value::as_str) else {
                continue;
            };
            let now = match self.get(id).await {
                Ok(now) => now,
                Err(e) => {
                    tracing::error!(collection = %self.name(), id, "after.update hooks skipped: the updated document could not be read: {e}");
                    continue;
                }
            };
            if let Some(now) = now {
                hooks
                    .after_update(
                        user_id.map(str::to_owned),
                        now,
                        before,
                        fields.clone(),
                        modifier.clone(),
                    )
                    .await;
            }
        }
    }

    /// A remove of what `selector` finds, with the remove hooks (as
    /// [`Collection::update_with_hooks`]: read, before hooks, the exact documents removed,
    /// after hooks).
    pub(super) async fn remove_with_hooks(
        &self,
        user_id: Option<&str>,
        selector: &Selector,
    ) -> Result<u64> {
        let query = Query::new(selector.clone());
        let found = portico_store::routing::on_primary(self.find(&query)).await?;
        if found.is_empty() {
            return Ok(0);
        }
        let mut jobs = self.before_remove(user_id, &found).await?;
        self.add_events(HookOp::Remove, &found, &mut jobs).await?;
        let ids: Vec<Value> = found.iter().filter_map(|d| d.get("_id").cloned()).collect();
        let removed = if jobs.is_empty() {
            let exact = selector
                .clone()
                .and(Selector::parse(&json!({"_id": {"$in": ids}}))?);
            self.store().remove(self.name(), &exact).await?
        } else {
            let ops = each_document(selector, ids, |selector| BatchOp::Remove {
                collection: self.name().to_owned(),
                selector,
            })?;
            self.write_with_jobs(ops, jobs).await? as u64
        };
        self.after_remove(user_id, found).await;
        Ok(removed)
    }

    /// Runs the before-remove hooks on each of `found`; the jobs they enqueued.
    pub(super) async fn before_remove(
        &self,
        user_id: Option<&str>,
        found: &[Document],
    ) -> Result<Enqueued> {
        let Some(hooks) = self.watching(HookWhen::Before, HookOp::Remove) else {
            return Ok(Vec::new());
        };
        let (out, jobs) = crate::jobs::collect(async {
            for doc in found {
                hooks
                    .before_remove(user_id.map(str::to_owned), doc.clone())
                    .await?;
            }
            Ok::<(), Error>(())
        })
        .await;
        out?;
        Ok(jobs)
    }

    /// Runs the after-remove hooks on each of `removed`.
    pub(super) async fn after_remove(&self, user_id: Option<&str>, removed: Vec<Document>) {
        if let Some(hooks) = self.watching(HookWhen::After, HookOp::Remove) {
            for doc in removed {
                hooks.after_remove(user_id.map(str::to_owned), doc).await;
            }
        }
    }
}

/// One write per document of `ids`, each by `selector` and its `_id` (a document that no
/// longer matches is then skipped: see [`Collection::write_with_jobs`]).
fn each_document(
    selector: &Selector,
    ids: Vec<Value>,
    write: impl Fn(Selector) -> BatchOp,
) -> Result<Vec<BatchOp>> {
    ids.into_iter()
        .map(|id| {
            Ok(write(
                selector.clone().and(Selector::parse(&json!({"_id": id}))?),
            ))
        })
        .collect()
}

/// A hook's refusal as a platform error, for implementors: an error the caller may see.
pub fn hook_refusal(error: crate::MethodError) -> Error {
    Error::Hook(Box::new(error))
}
