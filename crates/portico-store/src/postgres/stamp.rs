//! Change stamps on PostgreSQL ([`crate::Store::change_stamp`]): a number per collection that
//! every instance's writes move, read so that a write committed before the read began is never
//! missed.
//!
//! # Why not the change feed alone
//!
//! Every write already notifies every instance (see `feed.rs`), so a stamp kept in memory and
//! moved by the listener looks enough, but it is not: instance A commits a logout and answers
//! its client; the client's next request reaches instance B, whose listener may not have
//! received (or processed) the notification yet. B would serve the logged-out token from its
//! cache. Nothing B holds locally can tell that a write it has not heard of has committed.
//!
//! # What is done instead
//!
//! `portico_stamps` holds [`SLOTS`] counters per collection. The statement that sends a write's
//! notification (`feed::notify`, inside the write's transaction, so in the same round trip)
//! also adds one to a slot of the collection's counter, so the counter and the documents become
//! visible together, at commit. A collection's stamp is the sum of its slots, read by one
//! statement: it only grows, and it has grown for every write committed before the statement's
//! snapshot. Slots spread concurrent writers (each connection uses the slot of its backend pid,
//! so one transaction never waits on two slots of a collection) the way `portico_counts` does.
//!
//! Reading costs a round trip, but not one per caller: callers that arrive while a read is under
//! way wait for the *next* read, which starts when the current one ends and answers all of them
//! (it started after each of them called, so it cannot miss a write they could know of). Under
//! load one read serves many requests; an idle server pays one small read per request.
//!
//! Rows are made with the collection (`schema::create_collection`, and at start for
//! collections made by older versions) and kept when it is dropped, so a stamp never goes back.
//! A collection without rows (not made yet) has no stamp: nothing is cached for it. If the
//! stamps cannot be read (the database is down), there is no stamp either.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::NoTls;

/// Counters per collection.
pub(crate) const SLOTS: i32 = 8;

/// The longest a read of the stamps may take; past it the answer is "no stamp".
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// One read of every collection's stamp; `stamps` is `None` when it failed.
#[derive(Clone, Default)]
struct Round {
    number: u64,
    stamps: Option<Arc<HashMap<String, u64>>>,
}

/// Whether a read runs, and whether callers wait for one after it.
#[derive(Default)]
struct State {
    /// The number of the last read started.
    started: u64,
    running: bool,
    again: bool,
}

/// The stamps of a store: reads shared by concurrent callers, on a connection of their own.
pub(crate) struct Stamps {
    config: tokio_postgres::Config,
    state: Mutex<State>,
    rounds: watch::Sender<Round>,
    /// The connection reads use, kept between reads (taken by the one running read).
    client: Mutex<Option<tokio_postgres::Client>>,
}

impl std::fmt::Debug for Stamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stamps").finish_non_exhaustive()
    }
}

impl Stamps {
    /// Stamps read with the connection settings `config`.
    pub(crate) fn new(config: tokio_postgres::Config) -> Stamps {
        Stamps {
            config,
            state: Mutex::default(),
            rounds: watch::Sender::new(Round::default()),
            client: Mutex::default(),
        }
    }

    /// The stamp of `collection` read by a statement that started after this call: `None` when
    /// the collection has no stamp yet or the read failed.
    pub(crate) async fn stamp(self: &Arc<Self>, collection: &str) -> Option<u64> {
        self.round().await?.get(collection).copied()
    }

    /// The stamps of `collections` (in that order) from one read that started after this
    /// call: `None` when one has no stamp yet or the read failed.
    pub(crate) async fn stamps(self: &Arc<Self>, collections: &[&str]) -> Option<Vec<u64>> {
        let round = self.round().await?;
        collections.iter().map(|c| round.get(*c).copied()).collect()
    }

    /// Every collection's stamp, read by a statement that started after this call.
    async fn round(self: &Arc<Self>) -> Option<Arc<HashMap<String, u64>>> {
        let mut rounds = self.rounds.subscribe();
        let (wanted, lead) = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.running {
                // The running read may have started before this call: wait for the next.
                state.again = true;
                (state.started + 1, false)
            } else {
                state.running = true;
                state.started += 1;
                (state.started, true)
            }
        };
        if lead {
            // Its own task, so a caller that gives up does not stop the others' read.
            tokio::spawn(Arc::clone(self).run(wanted));
        }
        let round = rounds.wait_for(|r| r.number >= wanted).await.ok()?.clone();
        round.stamps
    }

    /// Reads rounds from `number` on while callers wait for another.
    async fn run(self: Arc<Self>, mut number: u64) {
        let mut client = self
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        loop {
            let stamps = match tokio::time::timeout(READ_TIMEOUT, self.read(&mut client)).await {
                Ok(Ok(stamps)) => Some(Arc::new(stamps)),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "postgres: cannot read the change stamps");
                    client = None;
                    None
                }
                Err(_) => {
                    client = None;
                    None
                }
            };
            self.rounds.send_replace(Round { number, stamps });
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.again {
                state.again = false;
                state.started += 1;
                number = state.started;
            } else {
                state.running = false;
                drop(state);
                *self.client.lock().unwrap_or_else(PoisonError::into_inner) = client;
                return;
            }
        }
    }

    /// Every collection's stamp, connecting first when needed.
    async fn read(
        &self,
        client: &mut Option<tokio_postgres::Client>,
    ) -> Result<HashMap<String, u64>, tokio_postgres::Error> {
        let connected = match client.take() {
            Some(c) if !c.is_closed() => c,
            _ => {
                let (c, connection) = self.config.connect(NoTls).await?;
                tokio::spawn(connection);
                c
            }
        };
        // The simple protocol: one round trip, no statement to prepare.
        let messages = connected
            .simple_query("SELECT name, sum(v)::bigint FROM portico_stamps GROUP BY name")
            .await?;
        *client = Some(connected);
        let mut stamps = HashMap::new();
        for message in messages {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message
                && let (Some(name), Some(v)) = (row.get(0), row.get(1))
                && let Ok(v) = v.parse::<u64>()
            {
                stamps.insert(name.to_owned(), v);
            }
        }
        Ok(stamps)
    }
}
