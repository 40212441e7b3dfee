//! [`LiveQuery`]: one shared evaluation of a query over one collection, followed by any number of
//! subscribers.
//!
//! The query keeps its current result (ids and projected fields, in result order). When the
//! feed says documents of its collection changed, the query's own task re-reads them: by `_id`
//! when the feed names the ids and the query has no window (no skip or limit), else by running
//! the whole query again (a sorted and limited window can gain a document because another left
//! it). The new result is diffed against the old one and each difference is sent to every
//! subscriber. Reads happen outside the state lock; only the diff and the sends hold it, so a
//! subscriber joining mid-way gets the old result as its initial set and the diff as events.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use portico_store::{Document, Store, document_id};
use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc, watch};

use super::caller::Control;
use super::event::{LiveEvent, SentEvent, diff, fields_of};
use crate::Cursor;

/// More changed ids than this at once: run the whole query instead of reading each.
const MAX_PENDING_IDS: usize = 256;

/// What the feed said since the last evaluation.
#[derive(Debug, Default)]
struct Pending {
    ids: HashSet<String>,
    full: bool,
}

/// One subscriber of a query.
pub(crate) struct Subscriber {
    pub(crate) id: u64,
    pub(crate) tx: mpsc::Sender<Arc<SentEvent>>,
    pub(crate) control: Arc<Control>,
}

/// Where the first evaluation is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Init {
    Loading,
    Ready,
    Failed(String),
}

#[derive(Default)]
struct State {
    /// The result: id -> fields (projected, without `_id`), in result order.
    docs: Map<String, Value>,
    subscribers: Vec<Subscriber>,
    closed: bool,
}

/// A shared live query (see the module docs).
pub(crate) struct LiveQuery {
    pub(crate) key: String,
    pub(crate) collection: Arc<str>,
    /// The query and the subscribers' view of the documents.
    cursor: Cursor,
    windowed: bool,
    pending: Mutex<Pending>,
    wake: Notify,
    state: Mutex<State>,
    init: watch::Sender<Init>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LiveQuery {
    /// A query not evaluated yet; [`LiveQuery::run`] evaluates it and follows changes.
    pub(crate) fn new(key: String, cursor: Cursor) -> LiveQuery {
        let windowed = cursor.query.limit.is_some() || cursor.query.skip > 0;
        LiveQuery {
            key,
            collection: cursor.collection.as_str().into(),
            cursor,
            windowed,
            pending: Mutex::new(Pending {
                ids: HashSet::new(),
                full: true,
            }),
            wake: Notify::new(),
            state: Mutex::new(State::default()),
            init: watch::channel(Init::Loading).0,
        }
    }

    /// Notes that the documents `ids` changed (empty: any document).
    pub(crate) fn mark(&self, ids: &[String]) {
        {
            let mut pending = lock(&self.pending);
            if ids.is_empty() {
                pending.full = true;
            } else if !pending.full {
                pending.ids.extend(ids.iter().cloned());
                if pending.ids.len() > MAX_PENDING_IDS {
                    pending.full = true;
                }
            }
        }
        self.wake.notify_one();
    }

    /// Waits for the first evaluation.
    pub(crate) async fn initialized(&self) -> Result<(), String> {
        let mut rx = self.init.subscribe();
        let init = rx
            .wait_for(|i| *i != Init::Loading)
            .await
            .map_err(|_| "the live query stopped".to_owned())?
            .clone();
        match init {
            Init::Failed(e) => Err(e),
            Init::Loading | Init::Ready => Ok(()),
        }
    }

    /// Adds a subscriber and returns the current result as its initial `added` events.
    /// `None` when the query closed meanwhile (join another one).
    pub(crate) fn join(&self, subscriber: Subscriber) -> Option<Vec<Arc<SentEvent>>> {
        let mut state = lock(&self.state);
        if state.closed {
            return None;
        }
        let initial = state
            .docs
            .iter()
            .map(|(id, fields)| {
                SentEvent::new(LiveEvent::Added {
                    collection: self.collection.clone(),
                    id: id.clone(),
                    fields: match fields {
                        Value::Object(f) => f.clone(),
                        _ => Document::new(),
                    },
                })
            })
            .collect();
        state.subscribers.push(subscriber);
        Some(initial)
    }

    /// Closes the query when nobody joined it (its creator went away during the first
    /// evaluation); true when it closed.
    pub(crate) fn close_if_unused(&self) -> bool {
        let mut state = lock(&self.state);
        if !state.subscribers.is_empty() {
            return false;
        }
        state.closed = true;
        drop(state);
        self.wake.notify_one();
        true
    }

    /// Removes a subscriber; true when none is left (then the query is closed).
    pub(crate) fn leave(&self, id: u64) -> bool {
        let mut state = lock(&self.state);
        state.subscribers.retain(|s| s.id != id);
        if state.subscribers.is_empty() {
            state.closed = true;
            drop(state);
            self.wake.notify_one();
            return true;
        }
        false
    }

    /// Evaluates the query, then follows the changes [`LiveQuery::mark`] reports, until closed.
    pub(crate) async fn run(self: Arc<Self>, store: Arc<dyn Store>) {
        loop {
            let pending = std::mem::take(&mut *lock(&self.pending));
            if pending.full || !pending.ids.is_empty() {
                if let Err(e) = self.evaluate(&store, pending).await {
                    tracing::warn!(collection = %self.collection, error = %e, "live query: a re-evaluation failed");
                    if *self.init.borrow() == Init::Loading {
                        self.init.send_replace(Init::Failed(e.to_string()));
                        return;
                    }
                    // Try again on the next change (or the slow re-check) rather than stop.
                    lock(&self.pending).full = true;
                }
                if *self.init.borrow() == Init::Loading {
                    self.init.send_replace(Init::Ready);
                }
            }
            if lock(&self.state).closed {
                return;
            }
            self.wake.notified().await;
            if lock(&self.state).closed {
                return;
            }
        }
    }

    /// Whether any of `ids` can change a window: one that is in it, or one that matches now.
    async fn touches_window(
        &self,
        store: &Arc<dyn Store>,
        ids: &HashSet<String>,
    ) -> portico_store::Result<bool> {
        for id in ids {
            if lock(&self.state).docs.contains_key(id) {
                return Ok(true);
            }
            let doc = store.get(&self.collection, id).await?;
            if doc.is_some_and(|d| self.cursor.query.selector.matches(&d)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Re-reads what `pending` names and sends the differences.
    async fn evaluate(
        &self,
        store: &Arc<dyn Store>,
        pending: Pending,
    ) -> portico_store::Result<()> {
        // A window (skip or limit) can gain a document because another left it, so it is read
        // again whole, but only when a changed document is in it or matches now: a write to a
        // document it never shows costs one read by id.
        let full =
            pending.full || (self.windowed && self.touches_window(store, &pending.ids).await?);
        if self.windowed && !full {
            return Ok(());
        }
        if full {
            let docs = store
                .find(&self.collection, &self.cursor.store_query())
                .await?;
            let mut new = Map::new();
            for doc in docs {
                let doc = self.cursor.shape(doc);
                if let Some(id) = document_id(&doc).map(str::to_owned) {
                    new.insert(id, Value::Object(fields_of(doc)));
                }
            }
            self.apply_full(new);
        } else {
            let mut found = Vec::with_capacity(pending.ids.len());
            for id in pending.ids {
                let doc = store
                    .get(&self.collection, &id)
                    .await?
                    .filter(|d| self.cursor.query.selector.matches(d))
                    .map(|d| {
                        let d = self.cursor.shape(d);
                        match (&self.cursor.query.projection, self.cursor.view.is_empty()) {
                            // Shaped with the projection already.
                            (Some(_), false) | (None, _) => fields_of(d),
                            (Some(p), true) => fields_of(p.apply(&d)),
                        }
                    });
                found.push((id, doc));
            }
            self.apply_ids(found);
        }
        Ok(())
    }

    /// A whole new result: removals first, then additions and changes in the new order.
    fn apply_full(&self, new: Map<String, Value>) {
        let mut state = lock(&self.state);
        let mut events = Vec::new();
        for (id, old) in &state.docs {
            if !new.contains_key(id) {
                events.extend(diff(&self.collection, id, as_doc(Some(old)), None));
            }
        }
        for (id, fields) in &new {
            events.extend(diff(
                &self.collection,
                id,
                as_doc(state.docs.get(id)),
                as_doc(Some(fields)),
            ));
        }
        state.docs = new;
        send(&mut state, events);
    }

    /// New versions of some documents (`None`: not in the result).
    fn apply_ids(&self, found: Vec<(String, Option<Document>)>) {
        let mut state = lock(&self.state);
        let mut events = Vec::new();
        for (id, new) in found {
            let old = state.docs.get(&id);
            let event = diff(&self.collection, &id, as_doc(old), new.as_ref());
            let Some(event) = event else { continue };
            match new {
                Some(fields) => {
                    state.docs.insert(id, Value::Object(fields));
                }
                None => {
                    state.docs.shift_remove(&id);
                }
            }
            events.push(event);
        }
        send(&mut state, events);
    }
}

fn as_doc(v: Option<&Value>) -> Option<&Document> {
    match v {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Sends `events` to every subscriber; one whose buffer is full has its stream ended (a slow
/// reader never makes the server hold more than its buffer).
fn send(state: &mut State, events: Vec<LiveEvent>) {
    if events.is_empty() {
        return;
    }
    let events: Vec<Arc<SentEvent>> = events.into_iter().map(SentEvent::new).collect();
    state.subscribers.retain(|sub| {
        if sub.control.ended().is_some() {
            return false;
        }
        for event in &events {
            match sub.tx.try_send(event.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.control.end("slow-subscriber");
                    return false;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return false,
            }
        }
        true
    });
}
