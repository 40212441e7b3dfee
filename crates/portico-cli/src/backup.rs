//! `portico backup` and `portico restore`: copies of a SQLite database taken while it serves,
//! and putting one back (see `portico_store::sqlite` for how both stay safe).

use std::path::{Path, PathBuf};

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
/// SQLite file of `choice`. `None` without `[backups]`.
///
/// # Errors
/// As [`sqlite_file`]: `[backups]` on a store that is not a SQLite file.
pub fn configured_set(
    config: &Config,
    choice: &DatabaseChoice,
) -> crate::Result<Option<BackupSet>> {
    let Some(backups) = &config.backups else {
        return Ok(None);
    };
    let database = sqlite_file(choice, "backup").map_err(|e| {
        crate::Error::Usage(format!(
            "[backups] (line {}) backs up SQLite databases only: {e}",
            backups.line
        ))
    })?;
    Ok(Some(BackupSet::new(database, &backups.dir, backups.keep)))
}

/// `portico backup`: an online copy of the SQLite database of `choice`, to `out`, else into
/// `[backups] dir` (keeping its newest `keep`), else `./portico-backup-<UTC time>.db`.
///
/// # Errors
/// [`crate::Error::Usage`] for a store that is not a SQLite file or a file that does not
/// exist; [`crate::Error::Backup`] when the copy or its check fails (nothing is left under the
/// final name then).
pub async fn backup(
    choice: &DatabaseChoice,
    out: Option<PathBuf>,
    config: &Config,
) -> crate::Result<BackupReport> {
    let database = sqlite_file(choice, "backup")?;
    if !database.is_file() {
        return Err(crate::Error::Usage(format!(
            "database {choice}: {} does not exist",
            database.display()
        )));
    }
    let set = config.backups.as_ref().map(|b| (b.dir.clone(), b.keep));
    run_blocking(move || match (out, set) {
        (Some(out), _) => portico_store::sqlite::backup(&database, &out),
        (None, Some((dir, keep))) => BackupSet::new(database, dir, keep).take(),
        // In the working directory, where nothing is ever removed.
        (None, None) => BackupSet::new(database, ".", usize::MAX).take(),
    })
    .await
}

/// `portico restore FILE`: replaces the SQLite database of `choice` with the backup `file`
/// (see `portico_store::sqlite::restore`).
///
/// # Errors
/// [`crate::Error::Usage`] for a store that is not a SQLite file; [`crate::Error::Backup`]
/// when the backup fails its checks or the database is in use: nothing is replaced then.
pub async fn restore(file: &Path, choice: &DatabaseChoice) -> crate::Result<RestoreReport> {
    let database = sqlite_file(choice, "restore")?;
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
pub fn backup_line(report: &BackupReport) -> String {
    format!(
        "backup: {} ({}, stored format {}, {:.1} s, integrity_check ok)",
        report.path.display(),
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
