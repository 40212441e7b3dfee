//! A directory of backups of one database: taking one now, listing them, keeping the newest.
//!
//! Backups are named `portico-backup-<UTC time>.db` (`portico-backup-20261125T140501Z.db`),
//! so they sort by time and nothing else in the directory is taken for one. One backup runs at
//! a time per [`BackupSet`]; a second asked for meanwhile is refused, not queued.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, TryLockError};
use std::time::SystemTime;

use super::backup::{BackupReport, PARTIAL_SUFFIX, backup_with};
use crate::{Error, Result};

/// How every backup file of a set starts.
pub const BACKUP_PREFIX: &str = "portico-backup-";
/// How every backup file of a set ends.
pub const BACKUP_EXTENSION: &str = ".db";

/// One backup file of a [`BackupSet`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupFile {
    /// Its file name (no directory).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was last written.
    pub modified: SystemTime,
}

impl BackupFile {
    /// A backup named `name`, of `bytes` bytes, last written at `modified` (backups kept
    /// elsewhere than in a directory list theirs with it).
    pub fn new(name: impl Into<String>, bytes: u64, modified: SystemTime) -> BackupFile {
        BackupFile {
            name: name.into(),
            bytes,
            modified,
        }
    }

    /// Orders `files` newest first (by time written, then by name), as [`BackupSet::list`]
    /// answers.
    pub fn sort_newest_first(files: &mut [BackupFile]) {
        files.sort_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| b.name.cmp(&a.name))
        });
    }
}

/// The backups of the database at `database` in `dir`, keeping the newest `keep`.
#[derive(Debug)]
pub struct BackupSet {
    database: PathBuf,
    dir: PathBuf,
    keep: usize,
    running: Mutex<()>,
}

/// True for a name a set's backup has: `portico-backup-*.db` of letters, digits, `-`, `_` and
/// `.` (nothing that could leave `dir` or need quoting in a header).
pub fn is_backup_name(name: &str) -> bool {
    name.starts_with(BACKUP_PREFIX)
        && name.ends_with(BACKUP_EXTENSION)
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// How the folder of a backup's files ends: `portico-backup-<time>.files` beside
/// `portico-backup-<time>.db` (see [`files_name`]).
pub const FILES_EXTENSION: &str = ".files";

/// The name of the folder holding the files of the backup `name`: its name without `.db`,
/// then `.files` (`x.db` gives `x.files`, `x` gives `x.files`).
pub fn files_name(name: &str) -> String {
    format!(
        "{}{FILES_EXTENSION}",
        name.strip_suffix(BACKUP_EXTENSION).unwrap_or(name)
    )
}

/// A new backup's name, `portico-backup-<UTC time>.db`, with `-2`, `-3`... before `.db` while
/// `taken` says the name is taken.
pub fn new_backup_name(taken: impl Fn(&str) -> bool) -> String {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let mut name = format!("{BACKUP_PREFIX}{stamp}{BACKUP_EXTENSION}");
    let mut n = 2;
    while taken(&name) {
        name = format!("{BACKUP_PREFIX}{stamp}-{n}{BACKUP_EXTENSION}");
        n += 1;
    }
    name
}

impl BackupSet {
    /// The set of `database`'s backups in `dir`, keeping the newest `keep` (at least one).
    pub fn new(database: impl Into<PathBuf>, dir: impl Into<PathBuf>, keep: usize) -> BackupSet {
        BackupSet {
            database: database.into(),
            dir: dir.into(),
            keep: keep.max(1),
            running: Mutex::new(()),
        }
    }

    /// The database backed up.
    pub fn database(&self) -> &Path {
        &self.database
    }

    /// The directory holding the backups.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many backups are kept.
    pub fn keep(&self) -> usize {
        self.keep
    }

    /// True while a backup of this set is being taken.
    pub fn is_running(&self) -> bool {
        matches!(self.running.try_lock(), Err(TryLockError::WouldBlock))
    }

    /// Takes a backup now (see [`super::backup()`]), then removes the oldest beyond `keep`.
    /// Blocking: call it from a thread that may wait on the disk.
    ///
    /// # Errors
    /// [`Error::Unavailable`] while another backup of this set runs; as [`super::backup()`]
    /// otherwise; [`Error::Backend`] when the directory cannot be made.
    pub fn take(&self) -> Result<BackupReport> {
        self.take_with(|_, _| Ok(()))
    }

    /// [`BackupSet::take`], running `before_rename` on the checked copy and the backup's name
    /// before the copy gets that name (see [`super::backup_with`]): it writes what else the
    /// backup holds (its files, in the folder [`files_name`] names in [`BackupSet::dir`]). When
    /// it fails, that folder is removed with the copy.
    ///
    /// # Errors
    /// As [`BackupSet::take`]; `before_rename`'s error.
    pub fn take_with(
        &self,
        before_rename: impl FnOnce(&Path, &str) -> Result<()> + Send,
    ) -> Result<BackupReport> {
        let _running = match self.running.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Unavailable(
                    "a backup is being taken already; try again when it has finished".into(),
                ));
            }
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            Error::Backend(format!(
                "cannot make the backup directory {}: {e}",
                self.dir.display()
            ))
        })?;
        let name = new_backup_name(|name| {
            self.dir.join(name).exists() || self.dir.join(files_name(name)).exists()
        });
        let out = self.dir.join(&name);
        let files = self.dir.join(files_name(&name));
        let taken = backup_with(&self.database, &out, |partial| {
            before_rename(partial, &name)
        });
        let report = match taken {
            Ok(report) => report,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&files);
                return Err(e);
            }
        };
        self.prune_now()?;
        Ok(report)
    }

    /// The backups in the directory, newest first (none when it does not exist).
    ///
    /// # Errors
    /// [`Error::Backend`] when the directory exists but cannot be read.
    pub fn list(&self) -> Result<Vec<BackupFile>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Error::Backend(format!(
                    "cannot read the backup directory {}: {e}",
                    self.dir.display()
                )));
            }
        };
        let mut files: Vec<BackupFile> = entries
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let name = entry.file_name().into_string().ok()?;
                let meta = entry.metadata().ok()?;
                (is_backup_name(&name) && meta.is_file()).then(|| BackupFile {
                    name,
                    bytes: meta.len(),
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                })
            })
            .collect();
        BackupFile::sort_newest_first(&mut files);
        Ok(files)
    }

    /// The path of the backup named `name`, when it is one of [`BackupSet::list`]'s.
    pub fn find(&self, name: &str) -> Option<PathBuf> {
        if !is_backup_name(name) {
            return None;
        }
        let path = self.dir.join(name);
        path.is_file().then_some(path)
    }

    /// Removes the oldest backups beyond `keep` (each with the folder of its files), and what a
    /// killed backup left (`.partial` files, a folder of files without its database) when no
    /// backup of this set runs. Returns what was removed.
    ///
    /// # Errors
    /// As [`BackupSet::list`].
    pub fn prune(&self) -> Result<Vec<PathBuf>> {
        match self.running.try_lock() {
            Ok(_running) => self.prune_now(),
            Err(TryLockError::Poisoned(p)) => {
                let _running = p.into_inner();
                self.prune_now()
            }
            Err(TryLockError::WouldBlock) => Ok(Vec::new()),
        }
    }

    /// [`BackupSet::prune`], for a caller holding `running`.
    fn prune_now(&self) -> Result<Vec<PathBuf>> {
        let mut removed = Vec::new();
        for old in self.list()?.into_iter().skip(self.keep) {
            let path = self.dir.join(&old.name);
            if std::fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
            let files = self.dir.join(files_name(&old.name));
            if files.is_dir() && std::fs::remove_dir_all(&files).is_ok() {
                removed.push(files);
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(base) = name.strip_suffix(PARTIAL_SUFFIX)
                    && is_backup_name(base)
                    && std::fs::remove_file(entry.path()).is_ok()
                {
                    removed.push(entry.path());
                }
                // The files of a backup whose database was never renamed into place.
                if let Some(stem) = name.strip_suffix(FILES_EXTENSION) {
                    let db = format!("{stem}{BACKUP_EXTENSION}");
                    if is_backup_name(&db)
                        && !self.dir.join(&db).exists()
                        && entry.path().is_dir()
                        && std::fs::remove_dir_all(entry.path()).is_ok()
                    {
                        removed.push(entry.path());
                    }
                }
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store as _;

    #[tokio::test]
    async fn a_set_keeps_the_newest_and_finds_only_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("app.db");
        let store = crate::sqlite::SqliteStore::open(&db).await.unwrap();
        store.insert("a", serde_json::Map::new()).await.unwrap();
        let backups = dir.path().join("backups");
        std::fs::create_dir_all(&backups).unwrap();
        std::fs::write(backups.join("notes.txt"), "mine").unwrap();
        std::fs::write(
            backups.join("portico-backup-19990101T000000Z.db.partial"),
            "left by a kill",
        )
        .unwrap();
        let set = BackupSet::new(&db, &backups, 2);
        let taken: Vec<PathBuf> = (0..3).map(|_| set.take().unwrap().path).collect();
        let listed: Vec<String> = set.list().unwrap().into_iter().map(|f| f.name).collect();
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(!taken[0].exists());
        assert!(taken[1].exists() && taken[2].exists());
        assert!(backups.join("notes.txt").exists());
        assert!(
            !backups
                .join("portico-backup-19990101T000000Z.db.partial")
                .exists()
        );
        assert!(set.find(&listed[0]).is_some());
        assert!(set.find("notes.txt").is_none());
        assert!(set.find("../app.db").is_none());
        assert!(set.find("portico-backup-../../app.db").is_none());
    }
}
