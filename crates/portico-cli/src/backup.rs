//! `portico backup` and `portico restore`: copies of a SQLite database taken while it serves,
//! and putting one back (see `portico_store::sqlite` for how both stay safe).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use portico_platform::backups::{Backups, TakenBackup};
use portico_store::sqlite::{BackupReport, BackupSet, RestoreReport};

use crate::config::Config;
use crate::database::DatabaseChoice;

/// The SQLite file a store URL names (`sqlite:PATH` or `sqlite://PATH`), if it names one.
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// The SQLite file of `choice`, or why backups and restores do not apply to it.
///
/// # Errors
/// [`crate::Error::Usage`] for PostgreSQL (use `pg_dump`) and `memory:`.
pub fn sqlite_file(choice: &DatabaseChoice, what: &str) -> crate::Result<PathBuf> {
    if let Some(path) = sqlite_path(&choice.url) {
        return Ok(path);
    }
    if choice.url.starts_with("postgres") {
        return Err(crate::Error::Usage(format!(
            "database {choice} is PostgreSQL: `portico {what}` works on SQLite files. Back up a \
             PostgreSQL database with its own tools, as in `pg_dump --format=custom --file=portico.dump \
             DATABASE_URL`, and restore it with `pg_restore`"
        )));
    }
    Err(crate::Error::Usage(format!(
        "database {choice}: there is nothing lasting to {what}; give a SQLite database with \
         --database sqlite:PATH"
    )))
}

/// The backups `serve` schedules and the admin page lists: `[backups]` of `config` for the
/// SQLite file of `choice`, in its `dir` or its bucket (`url`). `None` without `[backups]`.
///
/// # Errors
/// As [`sqlite_file`]: `[backups]` on a store that is not a SQLite file;
/// [`crate::Error::Setup`] when the bucket cannot be set up.
pub fn configured_set(config: &Config, choice: &DatabaseChoice) -> crate::Result<Option<Backups>> {
    let Some(backups) = &config.backups else {
        return Ok(None);
    };
    let database = sqlite_file(choice, "backup").map_err(|e| {
        crate::Error::Usage(format!(
            "[backups] (line {}) backs up SQLite databases only: {e}",
            backups.line
        ))
    })?;
    match &backups.url {
        Some(url) => {
            let set = Backups::in_bucket(database, url, backups.keep)
                .map_err(|e| crate::Error::Setup(format!("[backups] url: {e}")))?;
            Ok(Some(match &backups.staging {
                Some(dir) => set.staged_in(dir),
                None => set,
            }))
        }
        None => Ok(Some(Backups::in_dir(BackupSet::new(
            database,
            &backups.dir,
            backups.keep,
        )))),
    }
}

/// `portico backup`: an online copy of the SQLite database of `choice`, to `out`, else into
/// `[backups] dir` or its bucket (keeping the newest `keep`), else
/// `./portico-backup-<UTC time>.db`.
///
/// # Errors
/// [`crate::Error::Usage`] for a store that is not a SQLite file or a file that does not
/// exist; [`crate::Error::Backup`] when the copy, its check or its upload fails (nothing is
/// left under the final name then).
pub async fn backup(
    choice: &DatabaseChoice,
    out: Option<PathBuf>,
    config: &Config,
) -> crate::Result<TakenBackup> {
    let database = sqlite_file(choice, "backup")?;
    if !database.is_file() {
        return Err(crate::Error::Usage(format!(
            "database {choice}: {} does not exist",
            database.display()
        )));
    }
    let set = match (out, configured_set(config, choice)?) {
        (Some(out), _) => {
            let report =
                run_blocking(move || portico_store::sqlite::backup(&database, &out)).await?;
            return Ok(taken(&report));
        }
        (None, Some(set)) => set,
        // In the working directory, where nothing is ever removed.
        (None, None) => Backups::in_dir(BackupSet::new(database, ".", usize::MAX)),
    };
    Arc::new(set)
        .take()
        .await
        .map_err(|e| crate::Error::Backup(e.to_string()))
}

/// A backup written to a file, reported as the set's backups are.
fn taken(report: &BackupReport) -> TakenBackup {
    let mut taken = TakenBackup::new(
        report
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        report.path.display().to_string(),
        report.bytes,
    );
    taken.format = report.format;
    taken.elapsed = report.elapsed;
    taken
}

/// `portico restore FILE`: replaces the SQLite database of `choice` with the backup `file`
/// (see `portico_store::sqlite::restore`). `file` may be an object of an S3-compatible bucket,
/// `s3://bucket/prefix/portico-backup-<time>.db` (endpoint, region and keys from the `AWS_*`
/// environment variables): it is downloaded beside the database first, then restored as a
/// file, and the download removed.
///
/// # Errors
/// [`crate::Error::Usage`] for a store that is not a SQLite file; [`crate::Error::Backup`]
/// when the backup cannot be downloaded, fails its checks or the database is in use: nothing
/// is replaced then.
pub async fn restore(file: &Path, choice: &DatabaseChoice) -> crate::Result<RestoreReport> {
    let database = sqlite_file(choice, "restore")?;
    if let Some(url) = file.to_str().filter(|f| f.starts_with("s3://")) {
        let mut download = database.as_os_str().to_owned();
        download.push(".download");
        let download = PathBuf::from(download);
        portico_platform::backups::fetch_object(url, &download)
            .await
            .map_err(|e| crate::Error::Backup(e.to_string()))?;
        let (from, to) = (download.clone(), database);
        let restored = run_blocking(move || portico_store::sqlite::restore(&from, &to)).await;
        let _ = std::fs::remove_file(&download);
        return restored;
    }
    if !file.is_file() {
        return Err(crate::Error::Usage(format!(
            "{}: no such backup file",
            file.display()
        )));
    }
    let file = file.to_owned();
    run_blocking(move || portico_store::sqlite::restore(&file, &database)).await
}

async fn run_blocking<T: Send + 'static>(
    task: impl FnOnce() -> portico_store::Result<T> + Send + 'static,
) -> crate::Result<T> {
    tokio::task::spawn_blocking(task)
        .await
        .map_err(|e| crate::Error::Backup(format!("the backup task failed: {e}")))?
        .map_err(|e| crate::Error::Backup(e.to_string()))
}

/// `12.3 MB`, `845 kB`, `512 bytes`.
pub fn size(bytes: u64) -> String {
    const KB: f64 = 1_000.0;
    let b = bytes as f64;
    if b >= KB * KB * KB {
        format!("{:.2} GB", b / (KB * KB * KB))
    } else if b >= KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else if b >= KB {
        format!("{:.0} kB", b / KB)
    } else {
        format!("{bytes} bytes")
    }
}

/// What `portico backup` prints.
pub fn backup_line(report: &TakenBackup) -> String {
    format!(
        "backup: {} ({}, stored format {}, {:.1} s, integrity_check ok)",
        report.location,
        size(report.bytes),
        report.format,
        report.elapsed.as_secs_f64()
    )
}

/// What `portico restore` prints.
pub fn restore_lines(file: &Path, report: &RestoreReport) -> String {
    let mut lines = format!(
        "checked {}: integrity_check ok, stored format {}, {} collection{}, {}\nrestored it into {}",
        file.display(),
        report.check.format,
        report.check.collections,
        if report.check.collections == 1 {
            ""
        } else {
            "s"
        },
        size(report.check.bytes),
        report.database.display()
    );
    match &report.kept {
        Some(kept) => lines.push_str(&format!(
            "\nthe database it replaced is kept as {}",
            kept.display()
        )),
        None => lines.push_str("\nthere was no database there before"),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_name_their_file() {
        assert_eq!(sqlite_path("sqlite:./a.db"), Some(PathBuf::from("./a.db")));
        assert_eq!(
            sqlite_path("sqlite:///var/a.db"),
            Some(PathBuf::from("/var/a.db"))
        );
        assert_eq!(sqlite_path("sqlite:"), None);
        assert_eq!(sqlite_path("postgres://h/db"), None);
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(12_345_678), "12.3 MB");
    }
}
