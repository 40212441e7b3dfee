//! `portico backup` and `portico restore`: copies of a SQLite database taken while it serves,
//! and putting one back (see `portico_store::sqlite` for how both stay safe).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use portico_platform::backups::{BackupFiles, Backups, RestoredFiles, TakenBackup};
use portico_store::sqlite::{BackupSet, RestoreReport, files_name};

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

/// The files store whose files a backup of `config`'s application holds: `[files] store`,
/// read for the collections with file fields. `None` when no collection has file fields.
///
/// # Errors
/// [`crate::Error::Setup`] when the store cannot be opened.
pub fn backup_files(config: &Config) -> crate::Result<Option<BackupFiles>> {
    if !crate::files::wanted(config) {
        return Ok(None);
    }
    let collections: Vec<String> = config
        .apis
        .iter()
        .flat_map(|api| &api.collections)
        .filter(|c| !c.files.is_empty())
        .map(|c| c.name.clone())
        .collect();
    BackupFiles::open(&config.files.store, collections)
        .map(Some)
        .map_err(|e| crate::Error::Setup(format!("[files] store: {e}")))
}

/// The backups `serve` schedules and the admin page lists: `[backups]` of `config` for the
/// SQLite file of `choice`, in its `dir` or its bucket (`url`), each holding the files its
/// database names when collections have file fields. `None` without `[backups]`.
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
    let set = match &backups.url {
        Some(url) => {
            let set = Backups::in_bucket(database, url, backups.keep)
                .map_err(|e| crate::Error::Setup(format!("[backups] url: {e}")))?;
            match &backups.staging {
                Some(dir) => set.staged_in(dir),
                None => set,
            }
        }
        None => Backups::in_dir(BackupSet::new(database, &backups.dir, backups.keep)),
    };
    Ok(Some(with_files(set, config)?))
}

/// `set`, holding the files of `config`'s files store when it has any.
fn with_files(set: Backups, config: &Config) -> crate::Result<Backups> {
    Ok(match backup_files(config)? {
        Some(files) => set.with_files(files),
        None => set,
    })
}

/// `portico backup`: an online copy of the SQLite database of `choice`, to `out`, else into
/// `[backups] dir` or its bucket (keeping the newest `keep`), else
/// `./portico-backup-<UTC time>.db`; with the uploaded files the copy names beside it (in
/// `<name>.files`) when collections have file fields.
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
            let files = backup_files(config)?;
            return portico_platform::backups::take_to_file(&database, &out, files.as_ref())
                .await
                .map_err(|e| crate::Error::Backup(e.to_string()));
        }
        (None, Some(set)) => set,
        // In the working directory, where nothing is ever removed.
        (None, None) => with_files(
            Backups::in_dir(BackupSet::new(database, ".", usize::MAX)),
            config,
        )?,
    };
    Arc::new(set)
        .take()
        .await
        .map_err(|e| crate::Error::Backup(e.to_string()))
}

/// What `portico restore` did: the database, and the files it put back.
#[derive(Debug)]
pub struct Restored {
    /// The database's restore.
    pub database: RestoreReport,
    /// The files put back into `[files] store`, and where from (`None`: the backup holds no
    /// files).
    pub files: Option<(String, RestoredFiles)>,
    /// The files store, when the application has file fields.
    pub store: Option<String>,
}

/// `portico restore FILE`: replaces the SQLite database of `choice` with the backup `file`
/// (see `portico_store::sqlite::restore`), and puts the files the backup holds (the folder
/// `<name>.files` beside it) back into `[files] store` first. `file` may be an object of an
/// S3-compatible bucket, `s3://bucket/prefix/portico-backup-<time>.db` (endpoint, region and
/// keys from the `AWS_*` environment variables): it is downloaded beside the database first,
/// then restored as a file, and the download removed; its files are read from the prefix
/// `s3://bucket/prefix/portico-backup-<time>.files/`.
///
/// # Errors
/// [`crate::Error::Usage`] for a store that is not a SQLite file; [`crate::Error::Backup`]
/// when the backup cannot be downloaded, its files cannot be copied, it fails its checks or the
/// database is in use: the database is not replaced then (files already copied stay in the
/// store, where the files sweep deletes those no document names).
pub async fn restore(
    file: &Path,
    choice: &DatabaseChoice,
    config: &Config,
) -> crate::Result<Restored> {
    let database = sqlite_file(choice, "restore")?;
    let backup_error = |e: portico_store::Error| crate::Error::Backup(e.to_string());
    refuse_held(&database)?;
    let url = file.to_str().filter(|f| f.starts_with("s3://"));
    let (source, prefix, source_name) = backup_source(file, url)?;
    let holds_files = portico_platform::backups::holds_files(&source, &prefix)
        .await
        .map_err(backup_error)?;
    let wanted = crate::files::wanted(config);
    if holds_files && !wanted {
        return Err(crate::Error::Usage(format!(
            "the backup holds files ({source_name}), but no collection of the config has file \
             fields: give the config the backup was taken with (--config), so that its files go \
             back into its [files] store"
        )));
    }
    // The database file to restore from: the backup, or its download from the bucket.
    let download = match url {
        Some(url) => {
            let mut download = database.as_os_str().to_owned();
            download.push(".download");
            let download = PathBuf::from(download);
            portico_platform::backups::fetch_object(url, &download)
                .await
                .map_err(backup_error)?;
            Some(download)
        }
        None => None,
    };
    let from = download.clone().unwrap_or_else(|| file.to_owned());
    let files = holds_files.then_some((&source, prefix.as_str(), source_name));
    let restored = restore_from(from, database, files, config).await;
    if let Some(download) = &download {
        let _ = std::fs::remove_file(download);
    }
    let (database, files) = restored?;
    let store = wanted.then(|| config.files.store.clone());
    Ok(Restored {
        database,
        files,
        store,
    })
}

/// Refuses to restore over a database a process has open.
fn refuse_held(database: &Path) -> crate::Result<()> {
    let backup_error = |e: portico_store::Error| crate::Error::Backup(e.to_string());
    if portico_store::sqlite::is_held(database).map_err(backup_error)? {
        return Err(crate::Error::Backup(format!(
            "{}: the database is in use: a process has it open (`portico serve`, or another \
             portico command), known by the shared lock it holds on {}. Stop it, then restore",
            database.display(),
            portico_store::sqlite::lock_path(database).display()
        )));
    }
    Ok(())
}

/// Where the files of the backup `file` (`url` when it is in a bucket) are: a store, the
/// prefix in it, and how to name that place in messages.
fn backup_source(
    file: &Path,
    url: Option<&str>,
) -> crate::Result<(Arc<dyn object_store::ObjectStore>, String, String)> {
    let backup_error = |e: portico_store::Error| crate::Error::Backup(e.to_string());
    Ok(match url {
        Some(url) => {
            let (store_url, name) =
                portico_platform::backups::split_object_url(url).ok_or_else(|| {
                    crate::Error::Backup(format!(
                        "`{url}`: name one object, as in s3://bucket/prefix/portico-backup-<time>.db"
                    ))
                })?;
            let store = portico_platform::files::open_store_url(store_url)
                .map_err(|e| crate::Error::Backup(e.to_string()))?;
            (
                store,
                files_name(name),
                format!("{store_url}/{}/", files_name(name)),
            )
        }
        None => {
            if !file.is_file() {
                return Err(crate::Error::Usage(format!(
                    "{}: no such backup file",
                    file.display()
                )));
            }
            let dir = match file.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
                _ => PathBuf::from("."),
            };
            let name = files_name(
                &file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
            let shown = dir.join(&name).display().to_string();
            let store = portico_platform::backups::dir_store(&dir).map_err(backup_error)?;
            (store, name, shown)
        }
    })
}

/// Restores the database file `to` from `from`, after the backup's files (`files`: their
/// store, prefix and name in messages) went back into the `[files]` store.
async fn restore_from(
    from: PathBuf,
    to: PathBuf,
    files: Option<(&Arc<dyn object_store::ObjectStore>, &str, String)>,
    config: &Config,
) -> crate::Result<(RestoreReport, Option<(String, RestoredFiles)>)> {
    let files = match files {
        Some((source, prefix, source_name)) => {
            let collections = backup_files(config)?
                .map(|f| f.collections().to_vec())
                .unwrap_or_default();
            let db = from.clone();
            let named =
                run_blocking(move || portico_platform::backups::named_files(&db, &collections))
                    .await?;
            let store = portico_platform::files::open_store_url(&config.files.store)
                .map_err(|e| crate::Error::Backup(format!("[files] store: {e}")))?;
            let restored = portico_platform::backups::restore_files(source, prefix, &named, &store)
                .await
                .map_err(|e| crate::Error::Backup(e.to_string()))?;
            Some((source_name, restored))
        }
        None => None,
    };
    let database = run_blocking(move || portico_store::sqlite::restore(&from, &to)).await?;
    Ok((database, files))
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
    let mut line = format!(
        "backup: {} ({}, stored format {}, {:.1} s, integrity_check ok)",
        report.location,
        size(report.bytes),
        report.format,
        report.elapsed.as_secs_f64()
    );
    if let Some(files) = &report.files {
        let folder = files_name(&report.location);
        line.push_str(&format!(
            "\nfiles: {} ({} file{} the database names, {}; {} linked from the previous backup)",
            folder,
            files.files,
            if files.files == 1 { "" } else { "s" },
            size(files.bytes),
            files.linked
        ));
        line.push_str(&missing_warning(
            &files.missing,
            "not in the files store, so not in the backup either",
        ));
    }
    line
}

/// The warning line about files the database names that are `where_` (empty when none):
/// `warning: 2 files the database names are <where_> (first: <key>)`.
fn missing_warning(missing: &[String], where_: &str) -> String {
    let Some(first) = missing.first() else {
        return String::new();
    };
    let (s, verb) = if missing.len() == 1 {
        ("", "is")
    } else {
        ("s", "are")
    };
    format!(
        "\nwarning: {} file{s} the database names {verb} {where_} (first: {first})",
        missing.len()
    )
}

/// What `portico restore` prints.
pub fn restore_lines(file: &Path, restored: &Restored) -> String {
    let mut lines = database_lines(file, &restored.database);
    match (&restored.files, &restored.store) {
        (Some((from, files)), Some(store)) => {
            lines.push_str(&format!(
                "\nfiles: {} put back into {store} from {from} ({} there already)",
                files.copied, files.present
            ));
            lines.push_str(&missing_warning(
                &files.missing,
                "neither in the backup nor in the store",
            ));
        }
        (None, Some(store)) => lines.push_str(&format!(
            "\nwarning: the backup holds no files (no {} beside it): the files its documents \
             name must already be in {store}",
            files_name(&file.display().to_string())
        )),
        _ => {}
    }
    lines
}

/// What `portico restore` prints about the database.
fn database_lines(file: &Path, report: &RestoreReport) -> String {
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
