//! The change feed: what every backend tells its readers after each committed write, so live
//! queries can be re-evaluated.
//!
//! A [`ChangeFeed`] is a bounded broadcast channel of [`Change`]s. The memory and SQLite
//! backends publish after their write committed, in process; the PostgreSQL backend sends a
//! notification inside the write transaction (PostgreSQL delivers it only on commit) and every
//! instance's listener connection publishes what it receives, plus a [`Change::Resync`] after a
//! reconnect and at a slow safety interval, so a missed notification heals itself.
//!
//! The feed never holds more than its capacity: a reader that falls that far behind gets
//! [`tokio::sync::broadcast::error::RecvError::Lagged`] and must re-check everything it follows
//! (treat it as [`Change::Resync`] with no collection). Writes made by another process on the
//! same SQLite file are not seen.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::{BatchOp, BatchOutcome, Selector, UpdateResult, document_id};

/// How many changes the feed keeps for a slow reader before that reader lags.
pub const FEED_CAPACITY: usize = 4096;

/// What kind of write changed documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Documents were inserted.
    Insert,
    /// Documents were updated (or upserted).
    Update,
    /// Documents were removed.
    Remove,
}

/// One committed write as the feed tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// These documents of `collection` changed (`ids` empty: which ones is not known, any
    /// document of the collection may have changed).
    Documents {
        /// The collection written.
        collection: Arc<str>,
        /// The `_id`s written; empty when not known.
        ids: Vec<String>,
        /// The kind of write.
        kind: ChangeKind,
    },
    /// Anything may have changed: in `collection`, or anywhere when `None` (a dropped
    /// collection, a listener that reconnected, the slow safety re-check).
    Resync {
        /// The collection, or `None` for every collection.
        collection: Option<Arc<str>>,
    },
}

impl Change {
    /// The collection the change is about, `None` for a global resync.
    pub fn collection(&self) -> Option<&str> {
        match self {
            Change::Documents { collection, .. } => Some(collection),
            Change::Resync { collection } => collection.as_deref(),
        }
    }

    /// A change of the documents `ids` of `collection`.
    pub fn documents(collection: &str, ids: Vec<String>, kind: ChangeKind) -> Change {
        Change::Documents {
            collection: collection.into(),
            ids,
            kind,
        }
    }

    /// What an update through `selector` changed: the upserted id, else the selector's `_id`
    /// when it names one, else (a multi-document update) any document of the collection.
    pub fn of_update(collection: &str, selector: &Selector, result: &UpdateResult) -> Change {
        let ids = match (&result.upserted_id, selector.id_equality()) {
            (Some(id), _) => vec![id.clone()],
            (None, Some(id)) => vec![id.to_owned()],
            (None, None) => Vec::new(),
        };
        Change::documents(collection, ids, ChangeKind::Update)
    }

    /// What a removal through `selector` changed: the selector's `_id` when it names one, else
    /// any document of the collection.
    pub fn of_remove(collection: &str, selector: &Selector) -> Change {
        let ids = selector
            .id_equality()
            .map(|id| vec![id.to_owned()])
            .unwrap_or_default();
        Change::documents(collection, ids, ChangeKind::Remove)
    }
}

/// The collection and kind of each write of a batch, taken before the batch runs (it consumes
/// its writes); give them to [`batch_changes`] with the outcomes.
pub fn batch_targets(ops: &[BatchOp]) -> Vec<(Arc<str>, ChangeKind)> {
    ops.iter()
        .map(|op| match op {
            BatchOp::Insert { collection, .. } => (collection.as_str().into(), ChangeKind::Insert),
            BatchOp::Update { collection, .. } => (collection.as_str().into(), ChangeKind::Update),
            BatchOp::Remove { collection, .. } => (collection.as_str().into(), ChangeKind::Remove),
        })
        .collect()
}

/// The changes of a committed batch: one per write, with the `_id` of the document it wrote.
pub fn batch_changes(
    targets: Vec<(Arc<str>, ChangeKind)>,
    outcomes: &[BatchOutcome],
) -> Vec<Change> {
    targets
        .into_iter()
        .zip(outcomes)
        .map(|((collection, kind), outcome)| {
            let doc = match outcome {
                BatchOutcome::Inserted(d) | BatchOutcome::Updated(d) | BatchOutcome::Removed(d) => {
                    d
                }
            };
            Change::Documents {
                collection,
                ids: document_id(doc)
                    .map(|id| vec![id.to_owned()])
                    .unwrap_or_default(),
                kind,
            }
        })
        .collect()
}

/// A broadcast of [`Change`]s with a bounded backlog ([`FEED_CAPACITY`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct ChangeFeed {
    sender: broadcast::Sender<Change>,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        ChangeFeed::new()
    }
}

impl ChangeFeed {
    /// A feed nobody listens to yet.
    pub fn new() -> ChangeFeed {
        ChangeFeed {
            sender: broadcast::channel(FEED_CAPACITY).0,
        }
    }

    /// Tells every reader about `change`. Costs nothing when nobody listens.
    pub fn publish(&self, change: Change) {
        if self.sender.receiver_count() > 0 {
            // Only fails without receivers, which is fine: nobody follows anything.
            let _ = self.sender.send(change);
        }
    }

    /// A reader of every change published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.sender.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_come_from_the_selector_or_upsert() {
        let by_id = Selector::by_id("a");
        let any = Selector::parse(&json!({"x": 1})).unwrap();
        let plain = UpdateResult::default();
        assert_eq!(
            Change::of_update("c", &by_id, &plain),
            Change::documents("c", vec!["a".into()], ChangeKind::Update)
        );
        assert_eq!(
            Change::of_update("c", &any, &plain),
            Change::documents("c", vec![], ChangeKind::Update)
        );
        let upsert = UpdateResult {
            upserted_id: Some("n".into()),
            ..UpdateResult::default()
        };
        assert_eq!(
            Change::of_update("c", &any, &upsert),
            Change::documents("c", vec!["n".into()], ChangeKind::Update)
        );
        assert_eq!(
            Change::of_remove("c", &any),
            Change::documents("c", vec![], ChangeKind::Remove)
        );
    }

    #[tokio::test]
    async fn readers_get_changes_published_after_they_subscribe() {
        let feed = ChangeFeed::new();
        feed.publish(Change::Resync { collection: None });
        let mut rx = feed.subscribe();
        feed.publish(Change::documents("c", vec!["1".into()], ChangeKind::Insert));
        assert_eq!(rx.recv().await.unwrap().collection(), Some("c"));
    }
}
