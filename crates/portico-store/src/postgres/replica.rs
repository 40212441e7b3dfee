//! Read replicas: PostgreSQL hot standbys that answer reads, with read-your-writes kept.
//!
//! **Which reads.** A read goes to a replica only inside a [`routing::Reader`] scope (a server
//! sets one per request) that is not [`routing::on_primary`], on a collection not in
//! [`PostgresOptions::primary_collections`](super::PostgresOptions) (accounts, tokens, logins:
//! freshness matters there), and only to a replica that is in use (see below) and has replayed
//! every write the caller made. Everything else (writes, reads outside a scope, background
//! work, the change feed) uses the primary.
//!
//! **Read-your-writes.** After each write inside a scope, the store asks the primary for its
//! WAL insert position (`pg_current_wal_insert_lsn()`, which is past the write's commit
//! record) and records it for the scope and for the scope's caller key (a login token, or the
//! client's address). A read of that caller goes to a replica only once the replica's replayed
//! position (`pg_last_wal_replay_lsn()`, polled) has reached it; until then it goes to the
//! primary. Replay only moves forward and the polled value lags the true one, so a replica
//! chosen this way always holds the caller's writes. A caller's record is dropped once every
//! replica that may be used is sure to hold it (see [`Replicas::poll`]).
//!
//! **The change feed.** Changes are published once every replica in use has replayed the
//! primary's position at the time they were heard ([`Replicas::caught_up`]), and reads of a
//! [`routing::Reader::following`] scope (live queries re-evaluated on a change) go only to a
//! replica that has replayed the last such position: a re-evaluation sees the change that
//! triggered it.
//!
//! **Health.** A background task polls the primary and each replica every [`POLL`]. A replica
//! that does not answer within [`POLL_TIMEOUT`], is not in recovery (not a standby), or lags by
//! more than the configured maximum is skipped until a later poll finds it well. The lag is
//! measured in time: how long ago the primary had flushed WAL the replica has not replayed yet
//! (0 when it has replayed everything the primary had at the last poll). A read that fails on a
//! replica is answered by the primary, and a replica whose connection failed is skipped until
//! the next good poll: clients see no error when a replica stops.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use deadpool_postgres::{Client, Pool};

use crate::routing;
use crate::{Error, Result};

/// How often the primary's and every replica's positions are polled.
pub(crate) const POLL: Duration = Duration::from_millis(200);

/// How long a replica may take to answer a poll before it counts as down.
pub(crate) const POLL_TIMEOUT: Duration = Duration::from_secs(1);

/// The pause between two looks at a replica's replayed position while the change feed waits
/// for it.
const CATCH_UP_PAUSE: Duration = Duration::from_millis(5);

/// The SQL of a replica's poll: in recovery, and the position replayed.
const REPLICA_POSITION: &str =
    "SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint";

/// The SQL of the primary's flushed position (what a replica can have received).
const PRIMARY_FLUSHED: &str = "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint";

/// The SQL of the primary's insert position (past every commit record written so far).
const PRIMARY_INSERTED: &str = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint";

/// What a replica is doing, as polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaState {
    /// Not polled yet.
    Starting,
    /// Answering reads.
    InUse,
    /// Reachable, but further behind the primary than the configured maximum: skipped.
    Lagging,
    /// Not reachable (or failed a read since the last poll): skipped.
    Down,
    /// Reachable but not a standby (`pg_is_in_recovery()` is false): never used.
    NotReplica,
}

impl ReplicaState {
    /// The state as a word: `starting`, `in_use`, `lagging`, `down`, `not_replica`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaState::Starting => "starting",
            ReplicaState::InUse => "in_use",
            ReplicaState::Lagging => "lagging",
            ReplicaState::Down => "down",
            ReplicaState::NotReplica => "not_replica",
        }
    }

    fn from_code(code: u8) -> ReplicaState {
        match code {
            1 => ReplicaState::InUse,
            2 => ReplicaState::Lagging,
            3 => ReplicaState::Down,
            4 => ReplicaState::NotReplica,
            _ => ReplicaState::Starting,
        }
    }

    fn code(self) -> u8 {
        match self {
            ReplicaState::Starting => 0,
            ReplicaState::InUse => 1,
            ReplicaState::Lagging => 2,
            ReplicaState::Down => 3,
            ReplicaState::NotReplica => 4,
        }
    }
}

/// A replica's state, lag and use, as last polled (see `PostgresStore::replica_status`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplicaStatus {
    /// The replica's URL, without its password.
    pub url: String,
    /// What it is doing.
    pub state: ReplicaState,
    /// How far behind the primary it was at the last poll that reached it, in milliseconds.
    pub lag_ms: Option<u64>,
    /// Reads it answered.
    pub reads: u64,
    /// Reads sent to it that failed there and were answered by the primary instead.
    pub fallbacks: u64,
}

/// One replica: its pool and what the last poll found.
pub(crate) struct Replica {
    url: String,
    pool: Pool,
    in_use: AtomicBool,
    state: AtomicU8,
    /// The replayed position at the last poll.
    replayed: AtomicU64,
    /// The lag at the last poll that reached it; `u64::MAX` when never measured.
    lag_ms: AtomicU64,
    reads: AtomicU64,
    fallbacks: AtomicU64,
}

impl Replica {
    fn set(&self, state: ReplicaState) {
        let before = ReplicaState::from_code(self.state.swap(state.code(), Ordering::AcqRel));
        self.in_use
            .store(state == ReplicaState::InUse, Ordering::Release);
        if before != state {
            let level_ok = matches!(state, ReplicaState::InUse);
            if level_ok {
                tracing::info!(replica = %self.url, "read replica in use");
            } else {
                tracing::warn!(replica = %self.url, state = state.as_str(), "read replica skipped; its reads go to the primary");
            }
        }
    }

    /// A connection to this replica.
    pub(crate) async fn client(&self) -> Result<Client> {
        Ok(self.pool.get().await?)
    }

    /// Counts a read it answered.
    pub(crate) fn served(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes a read that failed here (and goes to the primary): a connection failure takes the
    /// replica out of use until the next good poll.
    pub(crate) fn failed(&self, error: &Error) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(replica = %self.url, "read failed on a replica, answered by the primary: {error}");
        if matches!(error, Error::Unavailable(_)) {
            self.set(ReplicaState::Down);
        }
    }
}

/// The replicas of a store, the callers' write positions, and the primary's recent positions.
pub(crate) struct Replicas {
    primary: Pool,
    list: Vec<Replica>,
    max_lag: Duration,
    primary_collections: Vec<String>,
    /// The highest write position of each caller key, dropped once every usable replica holds it.
    callers: Mutex<HashMap<Arc<str>, u64>>,
    /// The primary's flushed position at recent polls, oldest first.
    samples: Mutex<VecDeque<(Instant, u64)>>,
    next: AtomicUsize,
    /// A primary position past every change the change feed has published: reads of a
    /// [`routing::Reader::following`] scope need a replica that has replayed it.
    feed_position: AtomicU64,
}

impl std::fmt::Debug for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replicas")
            .field("replicas", &self.status())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn position(value: Option<i64>) -> Option<u64> {
    value.and_then(|v| u64::try_from(v).ok())
}

impl Replicas {
    /// The replicas at `urls` beside `primary` (no connection made yet).
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for a URL that is not PostgreSQL's.
    pub(crate) fn new(
        primary: Pool,
        urls: &[String],
        max_lag: Duration,
        primary_collections: Vec<String>,
    ) -> Result<Replicas> {
        let list = urls
            .iter()
            .map(|url| {
                Ok(Replica {
                    url: crate::redact_url(url),
                    pool: super::pool::build_replica(url)?,
                    in_use: AtomicBool::new(false),
                    state: AtomicU8::new(ReplicaState::Starting.code()),
                    replayed: AtomicU64::new(0),
                    lag_ms: AtomicU64::new(u64::MAX),
                    reads: AtomicU64::new(0),
                    fallbacks: AtomicU64::new(0),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Replicas {
            primary,
            list,
            max_lag,
            primary_collections,
            callers: Mutex::default(),
            samples: Mutex::default(),
            next: AtomicUsize::new(0),
            feed_position: AtomicU64::new(0),
        })
    }

    /// Closes every replica's pool (their connections end; later reads go to the primary,
    /// closed too).
    pub(crate) fn close(&self) {
        for replica in &self.list {
            replica.pool.close();
        }
    }

    /// Polls every [`POLL`] until the store is gone.
    pub(crate) fn start(self: &Arc<Self>) {
        let weak: Weak<Replicas> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(POLL).await;
                let Some(replicas) = weak.upgrade() else {
                    return;
                };
                replicas.poll().await;
            }
        });
    }

    /// True when every read of `collection` goes to the primary.
    pub(crate) fn read_on_primary(&self, collection: &str) -> bool {
        self.primary_collections
            .iter()
            .any(|name| match name.strip_suffix('*') {
                Some(prefix) => collection.starts_with(prefix),
                None => collection == name,
            })
    }

    /// The replica a read of `collection` goes to in the running scope, or `None` for the
    /// primary (see the module docs).
    pub(crate) fn pick(&self, collection: Option<&str>) -> Option<&Replica> {
        let reader = routing::current()?;
        if reader.primary_only() || collection.is_some_and(|c| self.read_on_primary(c)) {
            return None;
        }
        let mut need = reader.written();
        if reader.follows_feed() {
            need = need.max(self.feed_position.load(Ordering::Acquire));
        }
        if let Some(key) = reader.key()
            && let Some(written) = lock(&self.callers).get(key)
        {
            need = need.max(*written);
        }
        let n = self.list.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n).map(|i| &self.list[(start + i) % n]).find(|r| {
            r.in_use.load(Ordering::Acquire) && r.replayed.load(Ordering::Acquire) >= need
        })
    }

    /// Records a write just made in the running scope (see the module docs): nothing outside
    /// a scope.
    pub(crate) async fn wrote(&self) {
        let Some(reader) = routing::current() else {
            return;
        };
        match self.primary_position(PRIMARY_INSERTED).await {
            Ok(lsn) => {
                reader.record_write(lsn);
                if let Some(key) = reader.key() {
                    let mut callers = lock(&self.callers);
                    let entry = callers.entry(Arc::from(key)).or_insert(0);
                    *entry = (*entry).max(lsn);
                }
            }
            // The position is unknown: the rest of this scope reads from the primary.
            Err(_) => reader.record_write(u64::MAX),
        }
    }

    /// Waits until every replica in use has replayed what the primary has written now, so
    /// that the changes the feed is about to publish are on every replica a
    /// [`routing::Reader::following`] read may use; a replica that does not get there within
    /// the maximum lag is skipped (lagging) until a poll finds it well again.
    pub(crate) async fn caught_up(&self) {
        let Ok(target) = self.primary_position(PRIMARY_INSERTED).await else {
            return;
        };
        let deadline = Instant::now() + self.max_lag;
        for replica in self
            .list
            .iter()
            .filter(|r| r.in_use.load(Ordering::Acquire))
        {
            while replica.replayed.load(Ordering::Acquire) < target {
                if Instant::now() >= deadline {
                    replica.set(ReplicaState::Lagging);
                    break;
                }
                let answer = tokio::time::timeout(POLL_TIMEOUT, async {
                    let client = replica.client().await?;
                    let row = client.query_one(REPLICA_POSITION, &[]).await?;
                    Ok::<_, Error>(position(row.try_get(1)?))
                })
                .await;
                match answer {
                    Ok(Ok(Some(replayed))) => {
                        replica.replayed.fetch_max(replayed, Ordering::AcqRel);
                        if replayed < target {
                            tokio::time::sleep(CATCH_UP_PAUSE).await;
                        }
                    }
                    _ => {
                        replica.set(ReplicaState::Down);
                        break;
                    }
                }
            }
        }
        self.feed_position.fetch_max(target, Ordering::AcqRel);
    }

    async fn primary_position(&self, sql: &str) -> Result<u64> {
        let client = self.primary.get().await?;
        let stmt = client.prepare_cached(sql).await?;
        let row = client.query_one(&stmt, &[]).await?;
        position(row.try_get(0)?)
            .ok_or_else(|| Error::Backend("postgres: the primary has no WAL position".into()))
    }

    /// One poll: the primary's flushed position, then each replica's state and lag, then the
    /// callers' records every usable replica is sure to hold are dropped.
    pub(crate) async fn poll(&self) {
        let now = Instant::now();
        if let Ok(lsn) = self.primary_position(PRIMARY_FLUSHED).await {
            let mut samples = lock(&self.samples);
            if samples.back().is_none_or(|(_, last)| *last < lsn) {
                samples.push_back((now, lsn));
            }
            let window = (self.max_lag * 2).max(Duration::from_secs(5));
            while samples.len() > 1
                && samples
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > window)
            {
                samples.pop_front();
            }
        }
        let polls = self.list.iter().map(|replica| async move {
            let answer = tokio::time::timeout(POLL_TIMEOUT, async {
                let client = replica.client().await?;
                let row = client.query_one(REPLICA_POSITION, &[]).await?;
                let recovering: bool = row.try_get(0)?;
                let replayed = position(row.try_get(1)?);
                Ok::<_, Error>((recovering, replayed))
            })
            .await;
            (replica, answer)
        });
        for (replica, answer) in futures::future::join_all(polls).await {
            match answer {
                Ok(Ok((true, Some(replayed)))) => {
                    let lag = self.lag(replayed, Instant::now());
                    replica.replayed.store(replayed, Ordering::Release);
                    replica.lag_ms.store(
                        u64::try_from(lag.as_millis()).unwrap_or(u64::MAX),
                        Ordering::Relaxed,
                    );
                    replica.set(if lag <= self.max_lag {
                        ReplicaState::InUse
                    } else {
                        ReplicaState::Lagging
                    });
                }
                Ok(Ok((false, _))) => replica.set(ReplicaState::NotReplica),
                _ => replica.set(ReplicaState::Down),
            }
        }
        self.forget_held(now);
    }

    /// How far behind the primary a replica that replayed up to `replayed` is: how long ago
    /// the primary had flushed a position past it (zero when none of the recent ones is).
    fn lag(&self, replayed: u64, now: Instant) -> Duration {
        lock(&self.samples)
            .iter()
            .find(|(_, lsn)| *lsn > replayed)
            .map_or(Duration::ZERO, |(at, _)| now.duration_since(*at))
    }

    /// Drops the callers' records every replica in use now or later holds: a replica is used
    /// only while its lag is within the maximum, so it has replayed every position the primary
    /// had flushed more than that long before (polled at `now`).
    fn forget_held(&self, now: Instant) {
        let held = lock(&self.samples)
            .iter()
            .rev()
            .find(|(at, _)| now.duration_since(*at) > self.max_lag)
            .map(|(_, lsn)| *lsn);
        if let Some(held) = held {
            lock(&self.callers).retain(|_, written| *written > held);
        }
    }

    /// Each replica's state, lag and use.
    pub(crate) fn status(&self) -> Vec<ReplicaStatus> {
        self.list
            .iter()
            .map(|r| {
                let lag = r.lag_ms.load(Ordering::Relaxed);
                ReplicaStatus {
                    url: r.url.clone(),
                    state: ReplicaState::from_code(r.state.load(Ordering::Acquire)),
                    lag_ms: (lag != u64::MAX).then_some(lag),
                    reads: r.reads.load(Ordering::Relaxed),
                    fallbacks: r.fallbacks.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}
