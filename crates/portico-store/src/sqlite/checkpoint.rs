//! WAL checkpoints on a thread of their own, off the writers' path.
//!
//! By default SQLite checkpoints inside the commit that takes the WAL past 1,000 pages: that
//! commit copies the pages into the database file and syncs it before it returns, while every
//! other writer waits on the writer connection. A profile of single inserts under load put 14%
//! of the server's CPU in that checkpoint, on the writer's path, plus the sync's wait.
//!
//! Here the writer's own threshold is raised to [`FALLBACK_PAGES`] (a safety net: if this
//! thread cannot keep up or is gone, the WAL stays bounded as before, only larger), and a
//! thread with its own connection runs a `PASSIVE` checkpoint once [`WRITES_PER_CHECKPOINT`]
//! writes went through the pool (the write that makes the count wakes it), or
//! [`CHECKPOINT_EVERY`] after the first write since the last one. A passive checkpoint never
//! blocks a reader or the writer; pages a reader still needs wait for the next one. Durability
//! is unchanged: a commit is in the WAL when it returns, and the checkpoint only moves committed
//! pages into the database file.
//!
//! Checkpoints come often on purpose: once one has moved every frame, the next commit starts
//! the WAL over from its beginning, so it stays small and is rewritten in place. A WAL that
//! keeps growing is appended to, and on ext4 those appends stalled commits for tens of
//! milliseconds (insert load: p99 39-48 ms checkpointing every 256 writes, 90-111 ms with no
//! checkpoint at all, 21-23 ms every 32 writes; on tmpfs 8 ms either way).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

/// The writer connection's own auto-checkpoint threshold, in pages (4 KiB each: 64 MiB).
pub(crate) const FALLBACK_PAGES: u32 = 16_384;
/// Writes after which the thread checkpoints.
const WRITES_PER_CHECKPOINT: u64 = 32;
/// Longest time a write waits to be checkpointed.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// Pause after a checkpoint that met a lock or failed.
const RETRY: Duration = Duration::from_millis(50);

/// What the pool and the checkpoint thread share.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// Writes through the pool's writer so far.
    writes: AtomicU64,
    /// The value of `writes` at the last checkpoint that moved everything.
    checkpointed: AtomicU64,
    stop: AtomicBool,
    thread: OnceLock<Thread>,
    /// The thread, to wait for its end ([`Checkpoints::stop_and_wait`]).
    handle: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Checkpoints {
    /// Counts one write through the pool's writer. The first write since the last checkpoint
    /// wakes the thread (its clock starts), and so does every [`WRITES_PER_CHECKPOINT`]th.
    pub(crate) fn wrote(&self) {
        let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        let pending = n.saturating_sub(self.checkpointed.load(Ordering::Relaxed));
        if pending == 1 || pending.is_multiple_of(WRITES_PER_CHECKPOINT) {
            self.wake();
        }
    }

    /// Asks the thread to make a last checkpoint and end.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake();
    }

    /// As [`Checkpoints::stop`], and waits for the thread to end (its connection closed).
    pub(crate) fn stop_and_wait(&self) {
        self.stop();
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            // The thread ends after at most one passive checkpoint (which never waits).
            let _ = handle.join();
        }
    }

    fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }
}

/// Starts the checkpoint thread on `path`. `None` when its connection or thread cannot be made:
/// then the writer checkpoints by itself (its threshold is set back to SQLite's default).
pub(crate) fn start(path: &Path) -> Option<Arc<Checkpoints>> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    // A checkpoint that meets a lock gives up at once and is tried again later.
    conn.busy_timeout(Duration::ZERO).ok()?;
    let shared = Arc::new(Checkpoints::default());
    let state = Arc::clone(&shared);
    let handle = std::thread::Builder::new()
        .name("portico-sqlite-checkpoint".into())
        .spawn(move || run(&conn, &state))
        .ok()?;
    // Set once, before any write can be counted: the pool is not built yet.
    let _ = shared.thread.set(handle.thread().clone());
    *shared
        .handle
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
    Some(shared)
}

fn run(conn: &Connection, state: &Checkpoints) {
    let mut done = 0u64;
    let mut first_pending: Option<Instant> = None;
    loop {
        let stopping = state.stop.load(Ordering::Relaxed);
        let writes = state.writes.load(Ordering::Relaxed);
        if writes == done {
            first_pending = None;
            if stopping {
                return;
            }
            // Woken by the next write or by `stop` (a look each second all the same).
            std::thread::park_timeout(CHECKPOINT_EVERY);
            continue;
        }
        let since = *first_pending.get_or_insert_with(Instant::now);
        let waited = since.elapsed();
        if !stopping && writes - done < WRITES_PER_CHECKPOINT && waited < CHECKPOINT_EVERY {
            std::thread::park_timeout(CHECKPOINT_EVERY - waited);
            continue;
        }
        // Busy (a lock held elsewhere) or failed: the writes stay pending and are tried again
        // after a pause; the writer's fallback threshold bounds the WAL meanwhile.
        let moved = conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                row.get::<_, i64>(0)
            })
            .is_ok_and(|busy| busy == 0);
        if stopping {
            return;
        }
        if moved {
            done = writes;
            state.checkpointed.store(done, Ordering::Relaxed);
            first_pending = None;
        } else {
            std::thread::sleep(RETRY);
        }
    }
}
