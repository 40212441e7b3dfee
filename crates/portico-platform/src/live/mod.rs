//! Live queries: publications and collection lists followed as streams of `added`, `ready`,
//! `changed` and `removed` events ([`LiveEvent`]), for the front doors' server-sent events.
//!
//! | part | file |
//! |---|---|
//! | the events and the field diff behind `changed` | `event.rs` |
//! | one shared evaluation per distinct query, diffed on each relevant change | `query.rs` |
//! | a publication's sources (cursors, by-hand calls) merged per document | `merge.rs` |
//! | who a stream runs as; logout and expiry end it | `caller.rs` |
//! | the subscriber's stream, its buffer and its end | `stream.rs` |
//! | a publication's by-hand calls after its handler returned | `by_hand.rs` |
//! | the limits | `config.rs` |
//! | opening a stream ([`crate::Platform::subscribe_live`], [`crate::Platform::live_query`]) | `open.rs` |
//!
//! The hub below reads the store's change feed ([`portico_store::Store::changes`]) on one task:
//! a change marks the live queries of its collection (their own tasks re-evaluate them), and a
//! change of a `users` document re-checks the tokens of that user's streams, so a logout (a
//! write to the user's record, on any instance of a shared database) ends them within moments.
//! Should the hub itself fall behind the feed's bounded backlog, every query re-runs (never
//! unbounded memory); a slow subscriber has its own bounded buffer and is ended when it fills. A
//! reconnecting client gets a fresh initial set (there is no event log to resume).

mod by_hand;
mod caller;
mod config;
mod event;
mod merge;
mod open;
mod query;
mod stream;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use portico_store::{Change, Store};
use tokio::sync::{Semaphore, broadcast, mpsc};

pub use caller::{LiveCaller, LoginWatch};
pub use config::LiveConfig;
pub use event::{LiveEvent, SentEvent};
pub use stream::LiveStream;

pub(crate) use by_hand::HandSink;
pub(crate) use caller::Control;
pub(crate) use event::fields_of;
pub(crate) use merge::MergeBox;
pub(crate) use merge::run as run_merge;
pub(crate) use stream::Membership;

use crate::{Accounts, Cursor, MethodError, USERS};
use query::{LiveQuery, Subscriber};

/// How often token expiries are looked at.
const EXPIRY_SWEEP: Duration = Duration::from_millis(250);

#[derive(Default)]
struct HubState {
    started: bool,
    queries: HashMap<String, Arc<LiveQuery>>,
    /// Streams of authenticated callers, by user id.
    callers: HashMap<String, Vec<Weak<Control>>>,
    next_id: u64,
}

/// The live queries of one platform (see the module docs).
pub(crate) struct Hub {
    store: Arc<dyn Store>,
    accounts: Accounts,
    config: LiveConfig,
    permits: Arc<Semaphore>,
    state: Mutex<HubState>,
}

/// The error of a refused stream: the server has as many open as it may.
fn full() -> MethodError {
    MethodError::new(
        "too-many-streams",
        "The server has as many live streams open as it may; try again later",
    )
    .with_status(503)
}

impl Hub {
    pub(crate) fn new(store: Arc<dyn Store>, accounts: Accounts, config: LiveConfig) -> Hub {
        Hub {
            store,
            accounts,
            permits: Arc::new(Semaphore::new(config.max_streams)),
            config,
            state: Mutex::new(HubState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn config(&self) -> &LiveConfig {
        &self.config
    }

    /// How many streams are open.
    pub(crate) fn open_streams(&self) -> usize {
        self.config
            .max_streams
            .saturating_sub(self.permits.available_permits())
    }

    /// How many distinct live queries are evaluated.
    pub(crate) fn open_queries(&self) -> usize {
        self.lock().queries.len()
    }

    /// Starts following the store's feed (once).
    fn start(self: &Arc<Self>) -> Result<(), MethodError> {
        let mut state = self.lock();
        if state.started {
            return Ok(());
        }
        let rx = self.store.changes().ok_or_else(|| {
            MethodError::new(
                "live-unsupported",
                "This store has no change feed, so nothing can be followed live",
            )
            .with_status(501)
        })?;
        state.started = true;
        tokio::spawn(follow(Arc::downgrade(self), rx));
        Ok(())
    }

    /// Opens a stream's control for `caller`: a slot under the cap, the token checked (and its
    /// expiry noted), and registered for re-checks.
    pub(crate) async fn open(
        self: &Arc<Self>,
        caller: LiveCaller,
    ) -> Result<(Arc<Control>, tokio::sync::OwnedSemaphorePermit), MethodError> {
        let permit = self
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| full())?;
        self.start()?;
        let control = Arc::new(Control::new(caller));
        if let (Some(user_id), Some(_)) = (&control.caller.user_id, &control.caller.token) {
            self.lock()
                .callers
                .entry(user_id.clone())
                .or_default()
                .push(Arc::downgrade(&control));
            control.recheck(&self.accounts).await;
        }
        Ok((control, permit))
    }

    /// Subscribes `tx` to the shared evaluation of `cursor`, and returns the query, the
    /// subscriber's id and its initial `added` events.
    pub(crate) async fn join(
        self: &Arc<Self>,
        cursor: &Cursor,
        tx: mpsc::Sender<Arc<SentEvent>>,
        control: &Arc<Control>,
    ) -> Result<(Arc<LiveQuery>, u64, Vec<Arc<SentEvent>>), MethodError> {
        let key = format!(
            "{}\u{0}{:?}\u{0}{}",
            cursor.collection,
            cursor.query,
            cursor.view.key()
        );
        loop {
            let (query, created) = {
                let mut state = self.lock();
                match state.queries.get(&key) {
                    Some(q) => (q.clone(), false),
                    None => {
                        let q = Arc::new(LiveQuery::new(key.clone(), cursor.clone()));
                        state.queries.insert(key.clone(), q.clone());
                        (q, true)
                    }
                }
            };
            if created {
                // Its reads may go to a read replica that holds every change the feed has
                // told, and the writes of the caller that opened it.
                let reader = portico_store::routing::Reader::following();
                tokio::spawn(reader.scope(query.clone().run(self.store.clone())));
            }
            // Should this caller go away during the first evaluation, nobody would ever leave
            // the query it created: the guard closes it then.
            let mut guard = Unused {
                hub: self,
                query: created.then(|| query.clone()),
            };
            if let Err(e) = query.initialized().await {
                self.forget(&query);
                return Err(MethodError::internal(format!("live query failed: {e}")));
            }
            let id = {
                let mut state = self.lock();
                state.next_id += 1;
                state.next_id
            };
            let subscriber = Subscriber {
                id,
                tx: tx.clone(),
                control: control.clone(),
            };
            let joined = query.join(subscriber);
            guard.query = None;
            if let Some(initial) = joined {
                return Ok((query, id, initial));
            }
            // It closed between lookup and join (its last subscriber left): make a new one.
            self.forget(&query);
        }
    }

    /// Removes `query` from the table (when it is still the one under its key).
    fn forget(&self, query: &Arc<LiveQuery>) {
        let mut state = self.lock();
        if state
            .queries
            .get(&query.key)
            .is_some_and(|q| Arc::ptr_eq(q, query))
        {
            state.queries.remove(&query.key);
        }
    }

    /// A subscriber leaves; the query closes with its last one.
    pub(crate) fn leave(&self, query: &Arc<LiveQuery>, id: u64) {
        if query.leave(id) {
            self.forget(query);
        }
    }

    /// Marks the queries a change concerns, and re-checks the callers whose record changed.
    fn on_change(self: &Arc<Self>, change: &Change) {
        let (queries, controls) = {
            let mut state = self.lock();
            let collection = change.collection();
            let queries: Vec<Arc<LiveQuery>> = state
                .queries
                .values()
                .filter(|q| collection.is_none_or(|c| *q.collection == *c))
                .cloned()
                .collect();
            let users = collection.is_none_or(|c| c == USERS);
            let mut controls = Vec::new();
            if users {
                let ids = match change {
                    Change::Documents { ids, .. } if !ids.is_empty() => Some(ids),
                    _ => None,
                };
                state.callers.retain(|user_id, list| {
                    list.retain(|w| w.strong_count() > 0);
                    if ids.is_none_or(|ids| ids.contains(user_id)) {
                        controls.extend(list.iter().filter_map(Weak::upgrade));
                    }
                    !list.is_empty()
                });
            }
            (queries, controls)
        };
        let ids: &[String] = match change {
            Change::Documents { ids, .. } => ids,
            Change::Resync { .. } => &[],
        };
        for query in queries {
            query.mark(ids);
        }
        if !controls.is_empty() {
            let accounts = self.accounts.clone();
            tokio::spawn(async move {
                for control in controls {
                    control.recheck(&accounts).await;
                }
            });
        }
    }

    /// Ends the streams whose token expired.
    fn sweep(&self) {
        let now = chrono::Utc::now();
        let state = self.lock();
        for control in state.callers.values().flatten().filter_map(Weak::upgrade) {
            if control.expired(now) {
                control.end("expired");
            }
        }
    }
}

/// Closes a query its creator never joined (see [`Hub::join`]).
struct Unused<'a> {
    hub: &'a Hub,
    query: Option<Arc<LiveQuery>>,
}

impl Drop for Unused<'_> {
    fn drop(&mut self) {
        if let Some(query) = self.query.take()
            && query.close_if_unused()
        {
            self.hub.forget(&query);
        }
    }
}

/// The hub's task: reads the feed until the store (or the hub) is gone.
async fn follow(hub: Weak<Hub>, mut rx: broadcast::Receiver<Change>) {
    let mut tick = tokio::time::interval(EXPIRY_SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let change = tokio::select! {
            received = rx.recv() => match received {
                Ok(change) => Some(change),
                // Fell behind the feed's backlog: anything may have changed.
                Err(broadcast::error::RecvError::Lagged(_)) => Some(Change::Resync { collection: None }),
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => None,
        };
        let Some(hub) = hub.upgrade() else { return };
        match change {
            Some(change) => hub.on_change(&change),
            None => hub.sweep(),
        }
    }
}

/// A stream reading one query directly: its initial set, `ready`, then the query's events.
pub(crate) fn direct_stream(
    initial: Vec<Arc<SentEvent>>,
    rx: mpsc::Receiver<Arc<SentEvent>>,
    membership: Membership,
) -> LiveStream {
    let mut initial: VecDeque<Arc<SentEvent>> = initial.into();
    initial.push_back(SentEvent::new(LiveEvent::Ready));
    LiveStream::new(initial, rx, membership)
}
