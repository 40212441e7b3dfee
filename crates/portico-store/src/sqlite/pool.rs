//! The connection pool: one writer connection and a few reader connections.
//!
//! SQLite allows one writer at a time per database file, so every write goes through the single
//! writer connection behind a mutex; a second writer connection would only wait on SQLite's file
//! lock instead of on our mutex. In WAL mode readers never wait for the writer, so reads use a
//! small set of separate connections and run in parallel with each other and with the write.
//!
//! The pool itself is synchronous: its users call it from `tokio::task::spawn_blocking` (see the
//! module docs of [`crate::sqlite`]), where waiting on a mutex or on the disk is what the thread is
//! for.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::checkpoint::{self, Checkpoints};
use crate::{Error, Result};

/// How long a connection waits for another process's lock before giving up with `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection (the SQL differs per collection, so keep a few dozen).
const STATEMENT_CACHE: usize = 64;

/// One writer and `readers.len()` readers on one database file. Each connection is `None` once
/// the pool is closed ([`Pool::close`]): then every call fails with [`Error::Closed`].
pub(crate) struct Pool {
    path: PathBuf,
    writer: Mutex<Option<Connection>>,
    readers: Vec<Mutex<Option<Connection>>>,
    next_reader: AtomicUsize,
    /// A read-only connection that only asks `PRAGMA data_version` (see [`Pool::data_version`]).
    watcher: Mutex<Option<Connection>>,
    /// The checkpoint thread's counter (see [`super::checkpoint`]); `None` when the writer
    /// checkpoints by itself.
    checkpoints: Option<Arc<Checkpoints>>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.stop();
        }
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("path", &self.path)
            .field("readers", &self.readers.len())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Opens (creating when missing) the database at `path` with one writer and `readers` readers,
    /// switches it to WAL and runs `init` on the writer before any reader opens.
    ///
    /// # Errors
    /// [`Error::Open`] when the file cannot be opened or is not a SQLite database.
    pub(crate) fn open(
        path: &Path,
        readers: usize,
        init: impl FnOnce(&mut Connection) -> Result<()>,
    ) -> Result<Pool> {
        let open_error = |e: rusqlite::Error| open_error(path, &e);
        check_path(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut writer = Connection::open_with_flags(path, flags).map_err(open_error)?;
        // The first statements touch the file: this is where "file is not a database" shows up.
        let mode: String = writer
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Open(format!(
                "{}: the database refused WAL mode (journal mode is {mode:?})",
                path.display()
            )));
        }
        configure(&writer).map_err(open_error)?;
        init(&mut writer).map_err(|e| match e {
            Error::Backend(message) => Error::Open(format!("{}: {message}", path.display())),
            other => other,
        })?;

        let mut pool_readers = Vec::with_capacity(readers);
        for _ in 0..readers {
            let reader = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(open_error)?;
            configure(&reader).map_err(open_error)?;
            pool_readers.push(Mutex::new(Some(reader)));
        }
        let watcher = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error)?;
        configure(&watcher).map_err(open_error)?;
        watcher.busy_timeout(Duration::ZERO).map_err(open_error)?;
        // Checkpoints off the writer's path when a thread can take them (see `checkpoint`).
        let checkpoints = checkpoint::start(path);
        if checkpoints.is_some() {
            writer
                .pragma_update(None, "wal_autocheckpoint", checkpoint::FALLBACK_PAGES)
                .map_err(open_error)?;
        }
        Ok(Pool {
            checkpoints,
            watcher: Mutex::new(Some(watcher)),
            path: path.to_path_buf(),
            writer: Mutex::new(Some(writer)),
            readers: pool_readers,
            next_reader: AtomicUsize::new(0),
        })
    }

    /// The file this pool is open on.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the writer connection, waiting for it if another write is running.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut guard = lock(&self.writer);
        let conn = guard.as_mut().ok_or_else(|| self.closed())?;
        let result = f(conn);
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.wrote();
        }
        result
    }

    /// Runs `f` on the writer connection now if no other write holds it, with SQLite's busy
    /// timeout at zero (a write lock held by another process fails at once instead of
    /// waiting); `None` when the writer is in use. For writes run on an async worker.
    pub(crate) fn try_write_now<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T>,
    ) -> Option<Result<T>> {
        let mut guard = match self.writer.try_lock() {
            Ok(conn) => conn,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        let Some(conn) = guard.as_mut() else {
            return Some(Err(self.closed()));
        };
        let result = without_waiting(conn, f);
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.wrote();
        }
        result
    }

    /// Runs `f` on a reader connection: the first idle one, or else the next in turn.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        if self.readers.is_empty() {
            return self.write(f);
        }
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        for i in 0..n {
            let mut guard = match self.readers[(start + i) % n].try_lock() {
                Ok(conn) => conn,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            };
            return f(guard.as_mut().ok_or_else(|| self.closed())?);
        }
        let mut guard = lock(&self.readers[start % n]);
        f(guard.as_mut().ok_or_else(|| self.closed())?)
    }

    /// The error of a call on the closed pool.
    fn closed(&self) -> Error {
        Error::Closed(format!(
            "{}: the SQLite store was closed (its server stopped)",
            self.path.display()
        ))
    }

    /// Closes the pool: waits for each connection's current user, then closes the checkpoint
    /// thread's connection (after its last checkpoint), the readers, the watcher and last the
    /// writer, so that SQLite checkpoints the WAL into the file as its last connection closes.
    /// Every later call fails with [`Error::Closed`]. Blocking: call it where waiting is fine.
    pub(crate) fn close(&self) {
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.stop_and_wait();
        }
        for reader in &self.readers {
            drop(lock(reader).take());
        }
        drop(lock(&self.watcher).take());
        drop(lock(&self.writer).take());
    }
}

impl Pool {
    /// SQLite's `PRAGMA data_version` as seen by the watcher connection: it changes whenever a
    /// transaction that changed the database committed on another connection since the last
    /// call, the writer of this pool and any other process alike (the watcher itself never
    /// writes). `None` when it cannot be read (then nothing may be cached).
    ///
    /// The watcher's busy timeout is zero: a read is never refused in WAL mode, and if the file
    /// is locked in a way that would make us wait, the answer is `None` rather than a stall.
    pub(crate) fn data_version(&self) -> Option<u64> {
        let guard = lock(&self.watcher);
        guard
            .as_ref()?
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut stmt| stmt.query_row([], |row| row.get::<_, i64>(0)))
            .ok()
            .and_then(|v| u64::try_from(v).ok())
    }

    /// Runs `f` on a reader that is idle right now, never waiting: `None` when every reader is
    /// busy. While `f` runs the reader's busy timeout is zero, so a lock held by someone else
    /// makes `f` fail at once (with `SQLITE_BUSY`) instead of sleeping; callers retry in the
    /// blocking pool. Meant for short point reads run on an async worker thread.
    pub(crate) fn try_read_now<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T>,
    ) -> Option<Result<T>> {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        for i in 0..n {
            let mut guard = match self.readers[(start + i) % n].try_lock() {
                Ok(conn) => conn,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            };
            let Some(conn) = guard.as_mut() else {
                return Some(Err(self.closed()));
            };
            return without_waiting(conn, f);
        }
        None
    }
}

/// Runs `f` on `conn` with SQLite's busy timeout at zero (a lock held elsewhere fails at once
/// instead of waiting), then puts the pool's timeout back. `None` when the timeout cannot be
/// changed (nothing ran).
fn without_waiting<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Connection) -> Result<T>,
) -> Option<Result<T>> {
    if conn.busy_timeout(Duration::ZERO).is_err() {
        return None;
    }
    let result = f(conn);
    if let Err(e) = conn.busy_timeout(BUSY_TIMEOUT) {
        return Some(Err(e.into()));
    }
    Some(result)
}

/// Locks a connection mutex. A panic while a connection was held leaves no open transaction
/// (rusqlite's `Transaction` rolls back on drop, also while unwinding), so the connection is still
/// good and the poison flag is ignored.
fn lock(m: &Mutex<Option<Connection>>) -> MutexGuard<'_, Option<Connection>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Settings every connection needs.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Durability: in WAL mode with synchronous=NORMAL a commit is complete once its frames are
    // written to the WAL file with write(2); the fsync happens at checkpoints only. A write(2)
    // that returned is in the operating system's page cache, which belongs to the kernel, not to
    // our process, so an acknowledged write survives the process being killed (SIGKILL, a crash,
    // an abort) and the next open replays the WAL. Only a power loss or kernel crash can drop the
    // last commits; FULL would fsync on every commit to cover that, at many times the cost of a
    // write, which is not what the store promises (it promises surviving `kill -9`).
    conn.execute_batch("PRAGMA synchronous=NORMAL;")?;
    // The page cache stays at SQLite's default (2 MB per connection): with five connections
    // that bounds the store's cache at about 10 MB whatever the file's size. Measured with
    // `benches/store.rs`: 8 MB per connection makes get-by-id at a million documents about 15%
    // faster (fewer interior B-tree pages re-read from the OS), for 30 MB more resident memory.
    Ok(())
}

/// Refuses a path that names no database file: SQLite gives "" and ":memory:" a private
/// database per connection, which our readers would never see (refused rather than lose
/// writes), and a directory cannot be one. URIs (`file:...`) are not interpreted (no
/// SQLITE_OPEN_URI): every path is a file name.
pub(crate) fn check_path(path: &Path) -> Result<()> {
    let text = path.to_string_lossy();
    if text.is_empty() || text == ":memory:" {
        return Err(Error::Open(format!(
            "{text:?} is not a file path; the SQLite store needs a file (use the memory: \
             store for data that lives in memory)"
        )));
    }
    if path.is_dir() {
        return Err(Error::Open(format!(
            "{}: a directory, not a database file",
            path.display()
        )));
    }
    Ok(())
}

/// The [`Error::Open`] for a failure opening `path`.
pub(crate) fn open_error(path: &Path, e: &rusqlite::Error) -> Error {
    let reason = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => "the file is not a SQLite database".to_string(),
        Some(rusqlite::ErrorCode::CannotOpen) => {
            "the file cannot be opened or created (does its directory exist, and may we write there?)"
                .to_string()
        }
        _ => e.to_string(),
    };
    Error::Open(format!("{}: {reason}", path.display()))
}
