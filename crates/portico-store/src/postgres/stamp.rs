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
//! # Rounds: one read for many callers, paced by demand
//!
//! Reading costs a round trip, but not one per caller: a caller waits for the next *round*, a
//! read of every collection's stamp that starts after it called (so it cannot miss a write the
//! caller could know of), shared by every caller waiting when it starts. One round runs at a
//! time. When a round ends and callers wait, the next starts once [`StampPacing::batch`] callers
//! wait or the first of them has waited [`StampPacing::wait`], whichever comes first (the way
//! PostgreSQL's own `commit_delay` / `commit_siblings` gather commits). A lone caller starts
//! one at once: nobody else waits and the last round answered one caller at most (so one
//! request's calls one after another are not held back), or no round ended in the last `wait`.
//! So under load the number of rounds
//! follows the requests, not the round trips: a second instance sharing the load does not make
//! twice the reads per request, as it would if each ran rounds back to back. What it costs is
//! latency: at most `wait` (rounded up to the runtime's 1 ms timer) for a caller of a busy
//! instance whose round did not fill; none for a lone one.
//!
//! Rows are made with the collection (`schema::create_collection`, and at start for
//! collections made by older versions) and kept when it is dropped, so a stamp never goes back.
//! A collection without rows (not made yet) has no stamp: nothing is cached for it. If the
//! stamps cannot be read (the database is down), there is no stamp either.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};
use tokio_postgres::NoTls;

/// Counters per collection.
pub(crate) const SLOTS: i32 = 8;

/// The longest a read of the stamps may take; past it the answer is "no stamp".
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The statement a round runs.
const READ: &str = "SELECT name, sum(v)::bigint FROM portico_stamps GROUP BY name";

/// How rounds of stamp reads are paced (see the module docs of `stamp.rs` in
/// [`super::PostgresStore`]'s): a round starts when `batch` callers wait, or when the first
/// has waited `wait`, or at once on an idle instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StampPacing {
    /// Callers that start a round without waiting longer ([`StampPacing::DEFAULT`]: 8; 1
    /// starts every round as soon as the previous one ends, as without pacing).
    pub batch: usize,
    /// The longest a caller of a busy instance waits for others before its round starts
    /// (default 500 µs; tokio's timer rounds it up to the next millisecond tick).
    pub wait: Duration,
}

impl StampPacing {
    /// 8 callers or 500 µs.
    pub const DEFAULT: StampPacing = StampPacing {
        batch: 8,
        wait: Duration::from_micros(500),
    };
}

impl Default for StampPacing {
    fn default() -> Self {
        StampPacing::DEFAULT
    }
}

/// How many stamp rounds a store has read and for how many callers (see
/// `PostgresStore::stamp_status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StampStatus {
    /// Rounds read (failed ones too).
    pub rounds: u64,
    /// Calls answered by those rounds.
    pub callers: u64,
}

/// One read of every collection's stamp; `stamps` is `None` when it failed.
#[derive(Clone, Default)]
struct Round {
    number: u64,
    stamps: Option<Arc<HashMap<String, u64>>>,
}

/// The callers waiting for the next round, and whether a task leads the rounds.
#[derive(Default)]
struct State {
    /// The number of the last round started.
    started: u64,
    /// A leader task runs: it reads a round or gathers callers for the next.
    leading: bool,
    /// Callers waiting for a round that has not started.
    waiting: usize,
    /// When the first of them called.
    first: Option<Instant>,
    /// When the last round ended (`None`: none yet).
    ended: Option<Instant>,
    /// How many callers the last round answered.
    last_callers: usize,
}

impl State {
    /// When the next round may start (`None`: nobody waits). At once when enough callers
    /// wait, or when the first is alone: nobody else waits and the last round answered one
    /// caller at most (one request's calls one after another are not held back), or it came
    /// after a quiet spell of `pacing.wait`. Else when the first has waited `pacing.wait`.
    fn start_at(&self, pacing: StampPacing) -> Option<Instant> {
        let first = self.first?;
        let quiet = self
            .ended
            .is_none_or(|ended| first.saturating_duration_since(ended) >= pacing.wait);
        let lone = self.waiting <= 1 && self.last_callers <= 1;
        if self.waiting >= pacing.batch || quiet || lone {
            Some(first)
        } else {
            Some(first + pacing.wait)
        }
    }
}

/// The stamps of a store: reads shared by concurrent callers, on a connection of their own.
pub(crate) struct Stamps {
    config: tokio_postgres::Config,
    pacing: StampPacing,
    state: Mutex<State>,
    /// Wakes the leader gathering callers when enough wait.
    gathered: Notify,
    rounds: watch::Sender<Round>,
    /// The connection reads use, kept between reads (taken by the leader).
    client: Mutex<Option<(tokio_postgres::Client, tokio_postgres::Statement)>>,
    read_rounds: AtomicU64,
    callers: AtomicU64,
    /// Set when the store is closed: no round reads, no connection is kept.
    closed: AtomicBool,
}

impl std::fmt::Debug for Stamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stamps")
            .field("pacing", &self.pacing)
            .finish_non_exhaustive()
    }
}

impl Stamps {
    /// Stamps read with the connection settings `config`, rounds paced by `pacing`.
    pub(crate) fn new(config: tokio_postgres::Config, pacing: StampPacing) -> Stamps {
        Stamps {
            config,
            pacing: StampPacing {
                batch: pacing.batch.max(1),
                wait: pacing.wait,
            },
            state: Mutex::default(),
            gathered: Notify::new(),
            rounds: watch::Sender::new(Round::default()),
            client: Mutex::default(),
            read_rounds: AtomicU64::new(0),
            callers: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Closes the connection reads use; every later read answers `None` (nothing cached).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        drop(
            self.client
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }

    /// Rounds read and callers answered so far.
    pub(crate) fn status(&self) -> StampStatus {
        StampStatus {
            rounds: self.read_rounds.load(Ordering::Relaxed),
            callers: self.callers.load(Ordering::Relaxed),
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
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let mut rounds = self.rounds.subscribe();
        let (wanted, lead) = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.waiting += 1;
            state.first.get_or_insert_with(Instant::now);
            let lead = !state.leading;
            state.leading = true;
            if !lead && state.waiting >= self.pacing.batch {
                self.gathered.notify_one();
            }
            // The next round to start: it starts after this call, under this lock.
            (state.started + 1, lead)
        };
        if lead {
            // Its own task, so a caller that gives up does not stop the others' read.
            tokio::spawn(Arc::clone(self).run());
        }
        let round = rounds.wait_for(|r| r.number >= wanted).await.ok()?.clone();
        round.stamps
    }

    /// Reads rounds while callers wait for one, each started as [`State::start_at`] says.
    async fn run(self: Arc<Self>) {
        let mut client = self
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        loop {
            self.gather().await;
            // Once more behind the tasks that are ready to run: requests that arrived together
            // (a burst read from many connections at one wake-up, or an instance given the CPU
            // back after another had it) call in before the round starts and share it, instead
            // of the first of them starting a round of its own. A lone caller loses nothing:
            // with no other task ready, the yield returns at once.
            tokio::task::yield_now().await;
            let (number, callers) = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.started += 1;
                state.first = None;
                state.last_callers = std::mem::take(&mut state.waiting);
                (state.started, state.last_callers)
            };
            // A closed store reads nothing, so it opens no connection again.
            let read = if self.closed.load(Ordering::Acquire) {
                None
            } else {
                Some(tokio::time::timeout(READ_TIMEOUT, self.read(&mut client)).await)
            };
            let stamps = match read {
                Some(Ok(Ok(stamps))) => Some(Arc::new(stamps)),
                Some(Ok(Err(e))) => {
                    tracing::debug!(error = %e, "postgres: cannot read the change stamps");
                    client = None;
                    None
                }
                Some(Err(_)) | None => {
                    client = None;
                    None
                }
            };
            self.read_rounds.fetch_add(1, Ordering::Relaxed);
            self.callers.fetch_add(callers as u64, Ordering::Relaxed);
            self.rounds.send_replace(Round { number, stamps });
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.ended = Some(Instant::now());
            if state.waiting == 0 {
                state.leading = false;
                drop(state);
                if !self.closed.load(Ordering::Acquire) {
                    *self.client.lock().unwrap_or_else(PoisonError::into_inner) = client;
                }
                return;
            }
        }
    }

    /// Waits until the next round may start.
    async fn gather(&self) {
        loop {
            let start_at = self
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .start_at(self.pacing);
            let Some(at) = start_at.filter(|at| *at > Instant::now()) else {
                return;
            };
            tokio::select! {
                () = self.gathered.notified() => {}
                () = tokio::time::sleep_until(at.into()) => {}
            }
        }
    }

    /// Every collection's stamp, connecting (and preparing the statement) first when needed.
    async fn read(
        &self,
        client: &mut Option<(tokio_postgres::Client, tokio_postgres::Statement)>,
    ) -> Result<HashMap<String, u64>, tokio_postgres::Error> {
        let (connected, statement) = match client.take() {
            Some((c, s)) if !c.is_closed() => (c, s),
            _ => {
                let (c, connection) = self.config.connect(NoTls).await?;
                tokio::spawn(connection);
                let s = c.prepare(READ).await?;
                (c, s)
            }
        };
        // Prepared once per connection: one round trip, nothing parsed or planned again.
        let rows = connected.query(&statement, &[]).await?;
        *client = Some((connected, statement));
        let mut stamps = HashMap::with_capacity(rows.len());
        for row in rows {
            if let (Ok(name), Ok(Some(v))) = (
                row.try_get::<_, String>(0),
                row.try_get::<_, Option<i64>>(1),
            ) && let Ok(v) = u64::try_from(v)
            {
                stamps.insert(name, v);
            }
        }
        Ok(stamps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACING: StampPacing = StampPacing {
        batch: 4,
        wait: Duration::from_millis(10),
    };

    fn state(waiting: usize, last_callers: usize, since_end: Option<Duration>) -> State {
        let first = Instant::now();
        State {
            started: 1,
            leading: true,
            waiting,
            first: Some(first),
            ended: since_end.map(|d| first - d),
            last_callers,
        }
    }

    #[test]
    fn a_round_waits_for_a_batch_or_the_wait_on_a_busy_instance_only() {
        let soon = Some(Duration::from_millis(1));
        // Busy (the last round had several callers, or several wait): until the batch fills
        // or the first has waited.
        let busy = state(2, 5, soon);
        assert_eq!(busy.start_at(PACING), busy.first.map(|f| f + PACING.wait));
        let one_after_many = state(1, 5, soon);
        assert_eq!(
            one_after_many.start_at(PACING),
            one_after_many.first.map(|f| f + PACING.wait)
        );
        let two_after_one = state(2, 1, soon);
        assert_eq!(
            two_after_one.start_at(PACING),
            two_after_one.first.map(|f| f + PACING.wait)
        );
        // At once: a full batch, a lone caller, a caller after a quiet spell, the first ever.
        for now in [
            state(4, 5, soon),
            state(1, 1, soon),
            state(1, 0, soon),
            state(3, 8, Some(PACING.wait)),
            state(3, 8, None),
        ] {
            assert_eq!(now.start_at(PACING), now.first);
        }
        // Nobody waits: nothing to start.
        let mut none = state(0, 3, soon);
        none.first = None;
        assert_eq!(none.start_at(PACING), None);
    }
}
