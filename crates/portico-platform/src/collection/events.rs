//! Write events: jobs a collection's writes store with themselves, in the write's own store
//! transaction (an outbox), such as the webhook deliveries of `[[webhooks]]`. Unlike a hook, an
//! event source runs no code of the application: it says which jobs a written document makes,
//! and the write stores them, so a committed write always has them and a failed one never.
//!
//! A collection with an event source writes as a collection with hooks does (its updates and
//! removals read the documents first), so each event sees the document: as inserted, as it is
//! after an update, as it was before a removal. Imports and an upsert that inserts make none.

use std::sync::Arc;

use futures::future::BoxFuture;
use portico_store::Document;

use super::hooks::Enqueued;
use super::{Collection, HookOp};
use crate::Result;

/// What makes the jobs of a collection's writes (see the module documentation).
pub trait WriteEvents: Send + Sync {
    /// True when writes of kind `op` make jobs.
    fn watches(&self, op: HookOp) -> bool;

    /// The job documents a write of kind `op` of `doc` makes (built with
    /// [`crate::jobs::Jobs::prepare_job`]).
    ///
    /// # Errors
    /// Why the jobs cannot be made (a full queue): the write fails then, and stores nothing.
    fn jobs(&self, op: HookOp, doc: Document) -> BoxFuture<'static, Result<Vec<Document>>>;
}

impl Collection {
    /// Sets this collection's event source (replacing any set before).
    pub fn set_events(&self, events: Arc<dyn WriteEvents>) {
        *self
            .inner
            .events
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(events);
    }

    /// The event source when it watches `op`.
    pub(super) fn events_watching(&self, op: HookOp) -> Option<Arc<dyn WriteEvents>> {
        self.inner
            .events
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .filter(|e| e.watches(op))
    }

    /// The jobs writes of kind `op` of `docs` make, added to `jobs`.
    pub(super) async fn add_events(
        &self,
        op: HookOp,
        docs: impl IntoIterator<Item = &Document>,
        jobs: &mut Enqueued,
    ) -> Result<()> {
        if let Some(events) = self.events_watching(op) {
            for doc in docs {
                jobs.extend(events.jobs(op, doc.clone()).await?);
            }
        }
        Ok(())
    }
}
