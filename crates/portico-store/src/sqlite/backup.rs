//! Online backups of a SQLite database, their checks, and restoring one.
//!
//! [`backup`] copies a database while other connections (a running server) read and write it:
//! SQLite's online backup API, run inside one read transaction on a connection of its own, so
//! the copy is the database as of one commit (WAL mode lets writers go on meanwhile; what they
//! commit after the copy's snapshot is not in it). The copy is written under a temporary name
//! (`<out>.partial`), checked with `PRAGMA integrity_check`, flushed to disk, and only then
//! renamed to its final name: a process killed halfway leaves at most the `.partial` file, never
//! a torn file under the final name, and the database is only read.
//!
//! The copy, its check and its flush run on a thread of their own at the lowest scheduling
//! priority (nice 19 on Linux): beside a busy server they take the CPU its threads leave, so a
//! backup slows down under load rather than the server's requests.
//!
//! [`verify`] is the check a backup must pass before it replaces anything: a SQLite header whose
//! size matches the file, `integrity_check` ok, Portico's tables, a stored format this build can
//! open. [`restore`] copies the backup beside the database, checks the copy, keeps the current
//! database under another name, and renames the copy into place, all while holding the
//! database's lock exclusively (see [`super::lock`]): it refuses while any process has the
//! database open.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::format;
use super::lock::{DatabaseLock, lock_path};
use crate::format::{FORMAT_VERSION, FormatStatus};
use crate::{Error, Result};

/// Pages copied per backup step (4 MiB of 4 KiB pages). Between steps the copy lets other
/// threads run; the read transaction stays open, so every step reads the same snapshot.
const PAGES_PER_STEP: i32 = 1024;

/// A pause between steps, so a backup leaves the server's requests most of the CPU and disk.
const PAUSE_BETWEEN_STEPS: Duration = Duration::from_millis(2);

/// The suffix of a backup being written (`<out>.partial`).
pub const PARTIAL_SUFFIX: &str = ".partial";

/// A finished, checked backup.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupReport {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The stored format of the copy (the database's).
    pub format: u32,
    /// How long the copy and its check took.
    pub elapsed: Duration,
}

/// What [`verify`] found in a good backup.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupCheck {
    /// Its size in bytes.
    pub bytes: u64,
    /// Its stored format (this build's or older).
    pub format: u32,
    /// How many collections it holds.
    pub collections: usize,
}

/// What [`restore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestoreReport {
    /// The database now holding the backup's content.
    pub database: PathBuf,
    /// Where the database it replaced was kept (`None`: there was none).
    pub kept: Option<PathBuf>,
    /// The check of the backup.
    pub check: BackupCheck,
}

/// `<path><suffix>` (`portico.db` and `-wal` give `portico.db-wal`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A name beside `path` for a kept file, `<path>.<what>-<UTC time>`, that does not exist yet.
pub(crate) fn kept_name(path: &Path, what: &str) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let first = with_suffix(path, &format!(".{what}-{stamp}"));
    let mut candidate = first.clone();
    let mut n = 2;
    while candidate.exists() || with_suffix(&candidate, "-wal").exists() {
        candidate = with_suffix(&first, &format!("-{n}"));
        n += 1;
    }
    candidate
}

/// Makes the directory entry of `path` (a rename, a new file) durable.
fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // Directories cannot be opened for syncing everywhere; where they cannot, the rename is
    // as durable as that system makes it.
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
    Ok(())
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::Backend(format!("{what} {}: {e}", path.display()))
}

/// Opens `path` (which must exist) read and write, as the server does; busy timeout 5 s.
fn open_existing(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| super::pool::open_error(path, &e))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| super::pool::open_error(path, &e))?;
    Ok(conn)
}

/// `PRAGMA integrity_check` on `conn`: `Ok` when SQLite answers `ok`, else what it found (the
/// first few problems).
fn integrity_check(conn: &Connection, place: &Path) -> Result<()> {
    let found: Vec<String> = conn
        .prepare("PRAGMA integrity_check(5)")
        .and_then(|mut stmt| {
            stmt.query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| {
            Error::Open(format!(
                "{}: the integrity check failed: {e}",
                place.display()
            ))
        })?;
    if found.len() == 1 && found[0] == "ok" {
        Ok(())
    } else {
        Err(Error::Open(format!(
            "{}: the integrity check failed: {}",
            place.display(),
            found.join("; ")
        )))
    }
}

/// Copies the database at `database` to `out`, online (see the module docs): other processes
/// may go on reading and writing it. The copy is checked before it gets its final name.
///
/// # Errors
/// [`Error::Open`] when `database` does not exist, is not a Portico database, or the copy fails
/// its check; [`Error::Backend`] when a file cannot be written. Then nothing is left under
/// `out`, and the `.partial` file is removed when possible.
pub fn backup(database: &Path, out: &Path) -> Result<BackupReport> {
    at_low_priority(|| backup_here(database, out, |_| Ok(())))
}

/// [`backup`], running `before_rename` on the checked copy (`<out>.partial`, a standalone
/// file: read it with [`for_each_document`]) before it gets its final name: a backup that is
/// more than its database (the files the database names) is whole once `out` exists. When
/// `before_rename` fails, the copy is removed and its error returned.
///
/// # Errors
/// As [`backup`]; `before_rename`'s error.
pub fn backup_with(
    database: &Path,
    out: &Path,
    before_rename: impl FnOnce(&Path) -> Result<()> + Send,
) -> Result<BackupReport> {
    at_low_priority(|| backup_here(database, out, before_rename))
}

/// Calls `visit` with each document of `collection` (its `_id` and its stored JSON) in the
/// database file at `path`, opened read-only (a backup, or a copy being made: nothing is written
/// beside it). A collection the file does not hold has no documents.
///
/// # Errors
/// [`Error::Open`] when the file cannot be opened; [`Error::Backend`] when a document cannot
/// be read or decoded; `visit`'s error.
pub fn for_each_document(
    path: &Path,
    collection: &str,
    mut visit: impl FnMut(&str, crate::Document) -> Result<()>,
) -> Result<()> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| super::pool::open_error(path, &e))?;
    if !super::schema::collection_exists(&conn, collection)? {
        return Ok(());
    }
    let mut stmt = conn.prepare(&format!(
        "SELECT id, doc FROM {}",
        super::schema::collection_table(collection)
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let doc = super::plan::parse_doc(collection, &id, row.get_ref(1)?)?;
        visit(&id, doc)?;
    }
    Ok(())
}

/// Runs `work` on a thread of its own at the lowest scheduling priority (nice 19 on Linux; a
/// thread's priority cannot be raised back without privileges, hence a thread for it), and
/// waits for it. A backup beside a busy server then takes the CPU the server's threads leave:
/// the page copy, the integrity check and the flush slow down under load instead of the
/// server's requests. Failing to lower the priority is harmless (the backup runs as it is).
fn at_low_priority<T: Send>(work: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("portico-backup".to_owned())
            .spawn_scoped(scope, || {
                let _ = thread_priority::set_current_thread_priority(
                    thread_priority::ThreadPriority::Min,
                );
                work()
            })
            .map_err(|e| Error::Backend(format!("cannot start the backup's thread: {e}")))?;
        thread
            .join()
            .unwrap_or_else(|_| Err(Error::Backend("the backup's thread failed".to_owned())))
    })
}

/// [`backup_with`], on the calling thread.
fn backup_here(
    database: &Path,
    out: &Path,
    before_rename: impl FnOnce(&Path) -> Result<()>,
) -> Result<BackupReport> {
    let started = Instant::now();
    if !database.is_file() {
        return Err(Error::Open(format!(
            "{}: no such database file",
            database.display()
        )));
    }
    let partial = with_suffix(out, PARTIAL_SUFFIX);
    let copied = copy_online(database, &partial);
    let format = match copied {
        Ok(format) => format,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    if let Err(e) = before_rename(&partial) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    let finish = || -> Result<u64> {
        File::open(&partial)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error("cannot flush", &partial, &e))?;
        std::fs::rename(&partial, out).map_err(|e| io_error("cannot rename to", out, &e))?;
        sync_parent(out)?;
        Ok(std::fs::metadata(out)
            .map_err(|e| io_error("cannot read", out, &e))?
            .len())
    };
    match finish() {
        Ok(bytes) => Ok(BackupReport {
            path: out.to_owned(),
            bytes,
            format,
            elapsed: started.elapsed(),
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// The copy itself, into `partial`; returns the stored format. The copy is a standalone file
/// (rollback journal mode, no `-wal` needed) that passed `integrity_check`.
fn copy_online(database: &Path, partial: &Path) -> Result<u32> {
    let source = open_existing(database)?;
    // One read transaction for the whole copy: every step reads the same snapshot, and writes
    // committed meanwhile by other connections neither show up in the copy nor restart it.
    source.execute_batch("BEGIN DEFERRED")?;
    let format = format::read(&source)?.ok_or_else(|| {
        Error::Open(format!(
            "{}: not a Portico database (it has no Portico tables)",
            database.display()
        ))
    })?;
    if partial.exists() {
        std::fs::remove_file(partial).map_err(|e| io_error("cannot remove", partial, &e))?;
    }
    let mut target = Connection::open(partial)
        .map_err(|e| Error::Backend(format!("cannot create {}: {e}", partial.display())))?;
    // The copy is synced once, as a whole, before its rename; a journal is of no use for it.
    target.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")?;
    {
        let copy = Backup::new(&source, &mut target)?;
        loop {
            match copy.step(PAGES_PER_STEP)? {
                StepResult::Done => break,
                StepResult::More => std::thread::sleep(PAUSE_BETWEEN_STEPS),
                StepResult::Busy | StepResult::Locked => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                // `StepResult` may grow; anything else is a step that did not finish.
                #[allow(unreachable_patterns)]
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
    source.execute_batch("COMMIT")?;
    drop(source);
    // The copied header says WAL, as the database does; a backup is one standalone file.
    target.execute_batch("PRAGMA journal_mode=DELETE;")?;
    integrity_check(&target, partial)?;
    let copied = format::read(&target)?;
    if copied != Some(format) {
        return Err(Error::Open(format!(
            "{}: the copy holds stored format {copied:?}, the database {format}",
            partial.display()
        )));
    }
    drop(target);
    Ok(format)
}

/// Checks what SQLite's header says about the file at `path` against its size, so that a file
/// cut short is refused before SQLite reads it.
fn check_header(path: &Path) -> Result<u64> {
    let refuse = |why: String| Error::Open(format!("{}: {why}", path.display()));
    let bytes = std::fs::metadata(path)
        .map_err(|e| refuse(format!("cannot be read: {e}")))?
        .len();
    let mut header = [0u8; 100];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .map_err(|_| refuse(format!("not a SQLite database (only {bytes} bytes)")))?;
    if &header[..16] != b"SQLite format 3\0" {
        return Err(refuse("not a SQLite database".to_owned()));
    }
    let page_size = match u32::from(u16::from_be_bytes([header[16], header[17]])) {
        1 => 65_536,
        n => n,
    };
    let pages = u32::from_be_bytes([header[28], header[29], header[30], header[31]]);
    let counter = &header[24..28];
    let valid_for = &header[92..96];
    // The page count in the header is right when the two counters agree (SQLite 3.7.0 on).
    if counter == valid_for && pages > 0 {
        let expected = u64::from(page_size) * u64::from(pages);
        if expected != bytes {
            return Err(refuse(format!(
                "the file is {bytes} bytes, its header says {expected}: it was cut short or \
                 changed after it was written"
            )));
        }
    } else if bytes % u64::from(page_size.max(512)) != 0 {
        return Err(refuse(format!(
            "the file is {bytes} bytes, not a whole number of {page_size}-byte pages"
        )));
    }
    Ok(bytes)
}

/// Checks that the file at `path` is a whole, sound Portico database this build can open: the
/// header against the file's size, `PRAGMA integrity_check`, Portico's tables, and a stored
/// format no newer than this build's. The file is only read (it is opened as the server opens
/// a database; give it a copy when even SQLite's own side files must not appear beside it).
///
/// # Errors
/// [`Error::Open`] saying what is wrong.
pub fn verify(path: &Path) -> Result<BackupCheck> {
    let bytes = check_header(path)?;
    let conn = open_existing(path)?;
    integrity_check(&conn, path)?;
    let stored = format::read(&conn).map_err(|e| match e {
        Error::Open(m) | Error::Backend(m) => Error::Open(format!("{}: {m}", path.display())),
        other => other,
    })?;
    let format = match FormatStatus::of(stored) {
        FormatStatus::Empty => {
            return Err(Error::Open(format!(
                "{}: a SQLite database, but not a Portico one (it has no Portico tables)",
                path.display()
            )));
        }
        FormatStatus::Newer(v) => {
            return Err(crate::format::newer_error(&path.display().to_string(), v));
        }
        FormatStatus::Current => FORMAT_VERSION,
        FormatStatus::Older(v) => v,
    };
    let collections = super::schema::list_collections(&conn)?.len();
    Ok(BackupCheck {
        bytes,
        format,
        collections,
    })
}

/// Removes `path` and the side files SQLite may have left beside it.
fn remove_with_side_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(with_suffix(path, suffix));
    }
}

/// Replaces the database at `database` with the backup at `backup` (see the module docs).
///
/// In order: the backup's header is checked; the database's lock is taken exclusively (refused
/// at once while any process has the database open); the backup is copied to
/// `<database>.restoring` and the copy checked with [`verify`]; the current database (and its
/// `-wal`, if any) is renamed to `<database>.before-restore-<UTC time>`; the copy is renamed to
/// `<database>`. A backup that fails a check replaces nothing.
///
/// # Errors
/// [`Error::Open`] when the backup fails a check or the database is in use (the message says
/// which, and how it knows); [`Error::Backend`] when a file cannot be copied or renamed.
pub fn restore(backup: &Path, database: &Path) -> Result<RestoreReport> {
    check_header(backup)?;
    let Some(lock) = DatabaseLock::exclusive(database)? else {
        return Err(Error::Open(format!(
            "{}: the database is in use: a process has it open (`portico serve`, or another \
             portico command), known by the shared lock it holds on {}. Stop it, then restore",
            database.display(),
            lock_path(database).display()
        )));
    };
    let copy = with_suffix(database, ".restoring");
    remove_with_side_files(&copy);
    std::fs::copy(backup, &copy).map_err(|e| io_error("cannot copy the backup to", &copy, &e))?;
    let checked = File::open(&copy)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error("cannot flush", &copy, &e))
        .and_then(|()| {
            verify(&copy).map_err(|e| match e {
                // Name the file the operator gave, not the private copy.
                Error::Open(m) => Error::Open(
                    m.replace(&copy.display().to_string(), &backup.display().to_string()),
                ),
                other => other,
            })
        });
    let check = match checked {
        Ok(check) => check,
        Err(e) => {
            remove_with_side_files(&copy);
            return Err(e);
        }
    };
    let kept = if database.exists() {
        let kept = kept_name(database, "before-restore");
        std::fs::rename(database, &kept).map_err(|e| io_error("cannot rename", database, &e))?;
        let wal = with_suffix(database, "-wal");
        if wal.exists() {
            std::fs::rename(&wal, with_suffix(&kept, "-wal"))
                .map_err(|e| io_error("cannot rename", &wal, &e))?;
        }
        let _ = std::fs::remove_file(with_suffix(database, "-shm"));
        Some(kept)
    } else {
        None
    };
    std::fs::rename(&copy, database).map_err(|e| io_error("cannot rename", &copy, &e))?;
    remove_with_side_files(&copy);
    sync_parent(database)?;
    drop(lock);
    Ok(RestoreReport {
        database: database.to_owned(),
        kept,
        check,
    })
}

/// Takes the backup a migration needs: `<database>.before-format-<N>-<UTC time>`, beside it.
pub(crate) fn before_migration(database: &Path) -> Result<BackupReport> {
    let out = kept_name(database, &format!("before-format-{FORMAT_VERSION}"));
    backup(database, &out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use serde_json::json;

    use super::*;
    use crate::Store as _;
    use crate::sqlite::{SqliteStore, read_stored_format};

    fn doc(n: u64) -> crate::Document {
        json!({ "_id": format!("d{n:06}"), "n": n, "pad": "x".repeat(300) })
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    async fn store_with(dir: &Path, n: u64) -> SqliteStore {
        let store = SqliteStore::open(dir.join("app.db")).await.unwrap();
        store.insert_many("items", (0..n).map(doc)).await.unwrap();
        store
    }

    fn sha(path: &Path) -> Vec<u8> {
        use sha2::Digest as _;
        sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backup_taken_during_writes_holds_every_write_acknowledged_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), 2_000).await;
        let acknowledged = Arc::new(AtomicU64::new(2_000));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, acknowledged, stop) = (store.clone(), acknowledged.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 2_000;
                while !stop.load(Ordering::Relaxed) {
                    store.insert("items", doc(n)).await.unwrap();
                    n += 1;
                    acknowledged.store(n, Ordering::SeqCst);
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let before = acknowledged.load(Ordering::SeqCst);
        let (db, out) = (dir.path().join("app.db"), dir.path().join("copy.db"));
        let report = tokio::task::spawn_blocking(move || backup(&db, &out))
            .await
            .unwrap()
            .unwrap();
        stop.store(true, Ordering::Relaxed);
        writer.await.unwrap();
        assert!(!with_suffix(&report.path, PARTIAL_SUFFIX).exists());
        assert_eq!(report.format, FORMAT_VERSION);
        let check = verify(&report.path).unwrap();
        assert_eq!(check.collections, 1);
        let copy = SqliteStore::open(&report.path).await.unwrap();
        let count = copy.count("items", &crate::Selector::all()).await.unwrap();
        assert!(count >= before, "{count} < {before}");
        for n in [0, 1_999, before - 1] {
            let id = format!("d{n:06}");
            assert!(copy.get("items", &id).await.unwrap().is_some(), "{id}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_backup_runs_at_the_lowest_priority_and_leaves_the_caller_s_alone() {
        // Field 19 of /proc/thread-self/stat is the thread's nice value.
        fn nice() -> i64 {
            let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
            let after_name = &stat[stat.rfind(')').unwrap() + 2..];
            after_name.split(' ').nth(16).unwrap().parse().unwrap()
        }
        let before = nice();
        let inside = at_low_priority(|| Ok(nice())).unwrap();
        assert_eq!(inside, 19);
        assert_eq!(nice(), before);
        let failed: Result<()> = at_low_priority(|| Err(Error::Backend("no".into())));
        assert!(matches!(failed, Err(Error::Backend(m)) if m == "no"));
    }

    #[tokio::test]
    async fn truncated_and_corrupt_files_are_refused_before_anything_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), 500).await;
        let db = dir.path().join("app.db");
        let good = backup(&db, &dir.path().join("good.db")).unwrap();
        drop(store);
        let bytes = std::fs::read(&good.path).unwrap();
        let truncated = dir.path().join("truncated.db");
        std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
        let corrupt = dir.path().join("corrupt.db");
        let mut flipped = bytes.clone();
        for b in &mut flipped[bytes.len() / 2..bytes.len() / 2 + 4096] {
            *b = !*b;
        }
        std::fs::write(&corrupt, &flipped).unwrap();
        let not_sqlite = dir.path().join("text.db");
        std::fs::write(&not_sqlite, "hello").unwrap();
        // The closed store's checkpoint thread makes its last checkpoint on its own time.
        std::thread::sleep(Duration::from_millis(300));
        let before = sha(&db);
        for (bad, why) in [
            (&truncated, "cut short"),
            (&corrupt, "integrity check failed"),
            (&not_sqlite, "not a SQLite database"),
        ] {
            let refused = restore(bad, &db);
            let message = format!("{refused:?}");
            assert!(message.contains(why), "{bad:?}: {message}");
            assert_eq!(sha(&db), before, "{bad:?}");
            assert!(!with_suffix(&db, ".restoring").exists());
        }
        let kept: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("before-restore"))
            .collect();
        assert!(kept.is_empty());
    }

    #[tokio::test]
    async fn a_restore_is_refused_while_a_store_is_open_and_keeps_what_it_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), 10).await;
        let db = dir.path().join("app.db");
        let copy = backup(&db, &dir.path().join("ten.db")).unwrap();
        store.insert_many("items", (10..20).map(doc)).await.unwrap();
        let refused = restore(&copy.path, &db);
        let message = format!("{refused:?}");
        assert!(
            message.contains("in use") && message.contains("-lock"),
            "{message}"
        );
        drop(store);
        let report = restore(&copy.path, &db).unwrap();
        let kept = report.kept.unwrap();
        let restored = SqliteStore::open(&db).await.unwrap();
        assert_eq!(
            restored
                .count("items", &crate::Selector::all())
                .await
                .unwrap(),
            10
        );
        let old = SqliteStore::open(&kept).await.unwrap();
        assert_eq!(
            old.count("items", &crate::Selector::all()).await.unwrap(),
            20
        );
    }

    #[tokio::test]
    async fn an_older_format_is_backed_up_then_migrated_and_a_newer_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("app.db");
        drop(store_with(dir.path(), 5).await);
        assert_eq!(read_stored_format(&db).unwrap(), Some(FORMAT_VERSION));
        // Back to format 1: the catalog without the version row.
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("DROP TABLE portico_format").unwrap();
        drop(conn);
        assert_eq!(read_stored_format(&db).unwrap(), Some(1));
        let store = SqliteStore::open(&db).await.unwrap();
        assert_eq!(read_stored_format(&db).unwrap(), Some(FORMAT_VERSION));
        assert_eq!(
            store.count("items", &crate::Selector::all()).await.unwrap(),
            5
        );
        drop(store);
        let kept: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().contains(".before-format-3-"))
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(read_stored_format(&kept[0]).unwrap(), Some(1));
        // A newer format: refused, and the file is not changed.
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("UPDATE portico_format SET version = 99; PRAGMA journal_mode=DELETE;")
            .unwrap();
        drop(conn);
        let before = sha(&db);
        let refused = SqliteStore::open(&db).await;
        let message = format!("{:?}", refused.err());
        assert!(
            message.contains("stored format 99") && message.contains("Nothing was changed"),
            "{message}"
        );
        assert_eq!(sha(&db), before);
        assert!(!with_suffix(&db, "-wal").exists());
    }
}
