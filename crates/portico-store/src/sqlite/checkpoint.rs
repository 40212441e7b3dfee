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
//! writes went through the pool, or [`CHECKPOINT_EVERY`] after the first write since the last
//! one. A passive checkpoint never blocks a reader or the writer; pages a reader still needs
//! wait for the next one. Durability is unchanged: a commit is in the WAL when it returns, and
//! the checkpoint only moves committed pages into the database file.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

/// The writer connection's own auto-checkpoint threshold, in pages (4 KiB each: 64 MiB).
pub(crate) const FALLBACK_PAGES: u32 = 16_384;
/// Writes after which the thread checkpoints.
const WRITES_PER_CHECKPOINT: u64 = 256;
/// Longest time a write waits to be checkpointed.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// How often the thread looks at the write count.
const POLL: Duration = Duration::from_millis(50);

/// What the pool and the checkpoint thread share.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    writes: AtomicU64,
    stop: AtomicBool,
}

impl Checkpoints {
    /// Counts one write through the pool's writer.
    pub(crate) fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Asks the thread to make a last checkpoint and end.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
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
    std::thread::Builder::new()
        .name("portico-sqlite-checkpoint".into())
        .spawn(move || run(&conn, &state))
        .ok()?;
    Some(shared)
}

fn run(conn: &Connection, state: &Checkpoints) {
    let mut done = 0u64;
    let mut first_pending: Option<Instant> = None;
    loop {
        std::thread::sleep(POLL);
        let stopping = state.stop.load(Ordering::Relaxed);
        let writes = state.writes.load(Ordering::Relaxed);
        if writes == done {
            first_pending = None;
            if stopping {
                return;
            }
            continue;
        }
        let since = *first_pending.get_or_insert_with(Instant::now);
        if stopping || writes - done >= WRITES_PER_CHECKPOINT || since.elapsed() >= CHECKPOINT_EVERY
        {
            // Busy (a lock held elsewhere) or failed: the writes stay pending and the next
            // round tries again; the writer's fallback threshold bounds the WAL meanwhile.
            if conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                    row.get::<_, i64>(0)
                })
                .is_ok_and(|busy| busy == 0)
            {
                done = writes;
                first_pending = None;
            }
            if stopping {
                return;
            }
        }
    }
}
