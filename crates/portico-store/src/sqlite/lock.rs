//! Who holds a database file: an OS file lock on `<database>-lock`, beside the database.
//!
//! Every [`super::SqliteStore`] takes a *shared* lock on that file when it opens and keeps it
//! until the store is dropped (`portico serve` for its whole life, `portico users ...` while the
//! command runs). [`super::restore`] takes it *exclusively*, without waiting: it fails at once
//! while any process has the database open, and a store cannot open while a restore replaces
//! the file. The lock is `flock(2)` (Rust's `File::try_lock`): the kernel releases it when the
//! process ends in any way, `kill -9` and crashes included, so a dead server never leaves the
//! database "held". The lock file itself stays (it is empty; removing it while someone might
//! hold it would let two processes lock two different files).
//!
//! SQLite's own locks cannot serve here: they are taken per transaction, so an idle server holds
//! none, and they are POSIX record locks, which a second descriptor of the same file in one
//! process would release when closed.
//!
//! `File::try_lock` is Rust 1.89's; the workspace says 1.85 but needs 1.88 already (let chains),
//! so clippy is told this module's minimum (on its `mod` line).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The suffix of the lock file beside a database (`portico.db-lock`), as `-wal` and `-shm`.
pub const LOCK_SUFFIX: &str = "-lock";

/// A held lock on a database (released when dropped).
#[derive(Debug)]
pub(crate) struct DatabaseLock {
    /// Kept open: closing the file releases the lock.
    _file: File,
}

/// The lock file of the database at `database`.
pub fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(LOCK_SUFFIX);
    PathBuf::from(name)
}

fn open_lock_file(database: &Path) -> Result<File> {
    let path = lock_path(database);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| {
            Error::Open(format!(
                "{}: the lock file {} cannot be opened or created (does the directory exist, \
                 and may we write there?): {e}",
                database.display(),
                path.display()
            ))
        })
}

impl DatabaseLock {
    /// Takes the shared lock a store holds while it is open.
    ///
    /// # Errors
    /// [`Error::Open`] when a restore holds the database, or the lock file cannot be made.
    pub(crate) fn shared(database: &Path) -> Result<DatabaseLock> {
        let file = open_lock_file(database)?;
        match file.try_lock_shared() {
            Ok(()) => Ok(DatabaseLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(Error::Open(format!(
                "{}: a restore is replacing this database (it holds {} exclusively); try again \
                 when it has finished",
                database.display(),
                lock_path(database).display()
            ))),
            Err(TryLockError::Error(e)) => Err(Error::Open(format!(
                "{}: cannot lock {}: {e}",
                database.display(),
                lock_path(database).display()
            ))),
        }
    }

    /// Takes the lock exclusively, never waiting: `Ok(None)` when a process has the database
    /// open (a shared lock is held).
    ///
    /// # Errors
    /// [`Error::Open`] when the lock file cannot be made or locked for another reason.
    pub(crate) fn exclusive(database: &Path) -> Result<Option<DatabaseLock>> {
        let file = open_lock_file(database)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(DatabaseLock { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(Error::Open(format!(
                "{}: cannot lock {}: {e}",
                database.display(),
                lock_path(database).display()
            ))),
        }
    }
}

/// True when a process holds the database at `database` open (a shared lock is held on its lock
/// file). Takes and drops the exclusive lock to find out; a database with no lock file is not
/// held.
///
/// # Errors
/// [`Error::Open`] when the lock file exists but cannot be opened or locked.
pub fn is_held(database: &Path) -> Result<bool> {
    if !lock_path(database).exists() {
        return Ok(false);
    }
    Ok(DatabaseLock::exclusive(database)?.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_keep_out_an_exclusive_one_until_they_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.db");
        assert!(!is_held(&db).unwrap());
        let one = DatabaseLock::shared(&db).unwrap();
        let two = DatabaseLock::shared(&db).unwrap();
        assert!(is_held(&db).unwrap());
        assert!(DatabaseLock::exclusive(&db).unwrap().is_none());
        drop(one);
        assert!(DatabaseLock::exclusive(&db).unwrap().is_none());
        drop(two);
        let exclusive = DatabaseLock::exclusive(&db).unwrap();
        assert!(exclusive.is_some());
        assert!(DatabaseLock::shared(&db).is_err());
        drop(exclusive);
        assert!(DatabaseLock::shared(&db).is_ok());
    }
}
