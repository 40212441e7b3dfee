//! Merging the sources of one publication stream: several cursors (maybe over one collection)
//! and the handler's own `added`/`changed`/`removed` calls, as one view per document.
//!
//! Each source keeps its own version of each document it publishes; the subscriber sees their
//! union (where two sources publish one field, the earlier source wins), and an event whenever
//! that union changes: `added` when the first source publishes a document, `removed` when the
//! last one withdraws it.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use portico_store::Document;
use tokio::sync::mpsc;

use super::caller::Control;
use super::event::{LiveEvent, SentEvent, diff};

type Key = (Arc<str>, String);

/// The merged view of one stream.
#[derive(Default)]
pub(crate) struct MergeBox {
    sources: usize,
    /// Per document: each source's version.
    docs: HashMap<Key, Vec<Option<Document>>>,
    /// Documents in the order they were first published (for the initial set).
    order: Vec<Key>,
}

impl MergeBox {
    pub(crate) fn new(sources: usize) -> MergeBox {
        MergeBox {
            sources,
            ..MergeBox::default()
        }
    }

    fn merged(versions: &[Option<Document>]) -> Option<Document> {
        let mut out: Option<Document> = None;
        for version in versions.iter().flatten() {
            let out = out.get_or_insert_with(Document::new);
            for (k, v) in version {
                if !out.contains_key(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        out
    }

    /// Applies one source's event; returns the event the subscriber should see, if any.
    pub(crate) fn apply(&mut self, source: usize, event: &LiveEvent) -> Option<LiveEvent> {
        let (collection, id) = event.target()?;
        let key = (collection.clone(), id.to_owned());
        let sources = self.sources;
        if !self.docs.contains_key(&key) {
            self.order.push(key.clone());
        }
        let versions = self
            .docs
            .entry(key.clone())
            .or_insert_with(|| vec![None; sources]);
        let before = Self::merged(versions);
        let slot = versions.get_mut(source)?;
        match event {
            LiveEvent::Added { fields, .. } => match slot {
                Some(doc) => doc.extend(fields.clone()),
                None => *slot = Some(fields.clone()),
            },
            LiveEvent::Changed {
                fields, cleared, ..
            } => {
                if let Some(doc) = slot {
                    doc.extend(fields.clone());
                    for name in cleared {
                        doc.shift_remove(name);
                    }
                }
            }
            LiveEvent::Removed { .. } => *slot = None,
            LiveEvent::Ready | LiveEvent::End { .. } => {}
        }
        let after = Self::merged(versions);
        if after.is_none() {
            self.docs.remove(&key);
            self.order.retain(|k| *k != key);
        }
        diff(collection, id, before.as_ref(), after.as_ref())
    }

    /// The current view as `added` events, in first-published order.
    pub(crate) fn initial(&self) -> Vec<Arc<SentEvent>> {
        self.order
            .iter()
            .filter_map(|key| {
                let doc = Self::merged(self.docs.get(key)?)?;
                Some(SentEvent::new(LiveEvent::Added {
                    collection: key.0.clone(),
                    id: key.1.clone(),
                    fields: doc,
                }))
            })
            .collect()
    }
}

/// Forwards the merged events of `sources` to `out` until every source ends or the stream
/// does. `ready_sent`: whether the initial set already ended with `ready` (else the handler's
/// own `ready` call is forwarded once).
pub(crate) async fn run(
    mut merge: MergeBox,
    sources: Vec<mpsc::Receiver<Arc<SentEvent>>>,
    out: mpsc::Sender<Arc<SentEvent>>,
    control: Arc<Control>,
    mut ready_sent: bool,
) {
    let mut all: SelectAll<BoxStream<'static, (usize, Arc<SentEvent>)>> = SelectAll::new();
    for (index, rx) in sources.into_iter().enumerate() {
        all.push(
            futures::stream::unfold(rx, move |mut rx| async move {
                rx.recv().await.map(|e| ((index, e), rx))
            })
            .boxed(),
        );
    }
    let mut ended = control.watch();
    loop {
        let next = tokio::select! {
            next = all.next() => next,
            _ = ended.wait_for(Option::is_some) => return,
        };
        let Some((source, event)) = next else { return };
        let outgoing = match event.event() {
            LiveEvent::Ready if !ready_sent => {
                ready_sent = true;
                Some(LiveEvent::Ready)
            }
            _ => merge.apply(source, &event),
        };
        if let Some(event) = outgoing {
            match out.try_send(SentEvent::new(event)) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    control.end("slow-subscriber");
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn added(id: &str, fields: Value) -> LiveEvent {
        LiveEvent::Added {
            collection: "c".into(),
            id: id.into(),
            fields: fields.as_object().cloned().unwrap(),
        }
    }

    #[test]
    fn a_document_stays_while_any_source_publishes_it() {
        let mut m = MergeBox::new(2);
        assert_eq!(
            m.apply(0, &added("1", json!({"a": 1}))).unwrap().name(),
            "added"
        );
        let second = m.apply(1, &added("1", json!({"a": 9, "b": 2}))).unwrap();
        // The earlier source wins `a`; `b` is new.
        assert_eq!(second.data()["fields"], json!({"b": 2}));
        let removed = LiveEvent::Removed {
            collection: "c".into(),
            id: "1".into(),
        };
        let after_first = m.apply(0, &removed).unwrap();
        assert_eq!(after_first.data()["fields"], json!({"a": 9}));
        assert_eq!(m.apply(1, &removed).unwrap().name(), "removed");
        assert!(m.initial().is_empty());
    }
}
