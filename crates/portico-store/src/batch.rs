//! Atomic batches of writes ([`crate::Store::batch`]): inserts, updates and removals over any
//! collections, applied in order and all or nothing.

use crate::{Document, Error, Selector, Update};

/// One write of a batch.
#[derive(Debug, Clone)]
pub enum BatchOp {
    /// Inserts `doc` (a new random `_id` when it has none), as [`crate::Store::insert`].
    Insert {
        /// The collection.
        collection: String,
        /// The document.
        doc: Document,
    },
    /// Applies `update` to the first document matching `selector`; the batch fails with
    /// [`BatchFailure::NoMatch`] when none does.
    Update {
        /// The collection.
        collection: String,
        /// Which document.
        selector: Selector,
        /// A modifier or a whole-document replacement (keeping `_id`).
        update: Update,
    },
    /// Removes the first document matching `selector`; the batch fails with
    /// [`BatchFailure::NoMatch`] when none does.
    Remove {
        /// The collection.
        collection: String,
        /// Which document.
        selector: Selector,
    },
}

/// What one write of a successful batch did, with the document it wrote.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchOutcome {
    /// The inserted document, as stored (with its `_id`).
    Inserted(Document),
    /// The updated document, after the update.
    Updated(Document),
    /// The removed document, as it was.
    Removed(Document),
}

/// Why a batch wrote nothing: the write at `index` failed.
#[derive(Debug, thiserror::Error)]
#[error("batch write {index}: {failure}")]
pub struct BatchError {
    /// The position of the failing write in the batch (from 0).
    pub index: usize,
    /// What went wrong.
    pub failure: BatchFailure,
}

/// What made a write of a batch fail.
#[derive(Debug, thiserror::Error)]
pub enum BatchFailure {
    /// An update or a removal found no document matching its selector (at that point of the
    /// batch: earlier writes of the batch count).
    #[error("no document matches")]
    NoMatch,
    /// The store refused the write (a duplicate `_id`, a modifier that does not apply...) or
    /// failed.
    #[error(transparent)]
    Store(#[from] Error),
    /// The backend has no atomic batches.
    #[error("this store has no atomic batches")]
    Unsupported,
}

impl BatchError {
    /// The error of write `index`.
    pub fn new(index: usize, failure: impl Into<BatchFailure>) -> BatchError {
        BatchError {
            index,
            failure: failure.into(),
        }
    }
}

impl BatchOp {
    /// The collection it writes.
    pub fn collection(&self) -> &str {
        match self {
            BatchOp::Insert { collection, .. }
            | BatchOp::Update { collection, .. }
            | BatchOp::Remove { collection, .. } => collection,
        }
    }
}
