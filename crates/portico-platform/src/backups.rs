//! Where a SQLite database's backups go: a directory (see [`BackupSet`]) or an S3-compatible
//! bucket, with one interface for `serve`'s schedule, the admin page and `portico backup`.
//!
//! A backup to a bucket is first taken into a file (beside the database, or in the directory
//! [`Backups::staged_in`] names), the same online,
//! checked copy as a directory's ([`portico_store::sqlite::backup`]), and only then uploaded:
//! as one multipart upload that S3 shows under the backup's name only once it is completed, at
//! the end. A backup cut short (a failure, a killed process) leaves no object under a backup's
//! name; a failed upload is aborted, and the staging file is removed (a killed process's one
//! by the next backup). The bucket is opened as the files service opens one
//! (`s3://bucket/prefix`, the endpoint, region and keys from the `AWS_*` environment
//! variables), and keeps the newest `keep` backups: older ones are deleted after each backup.
//!
//! With [`Backups::with_files`], a backup is the application's whole state: the database and
//! the uploaded files it names, in the folder (or under the prefix) `portico-backup-<time>.files`
//! beside `portico-backup-<time>.db` (see [`files`] for how the two are kept consistent). The
//! `.db` is written last: a backup whose `.db` exists holds every file its database names.

mod files;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt as _, WriteMultipart};
use portico_store::Error;
use portico_store::sqlite::{
    BackupFile, BackupReport, BackupSet, files_name, is_backup_name, new_backup_name,
};

pub use files::{
    ATTEMPTS, BackupFiles, FilesReport, RestoredFiles, dir_store, holds_files, named_files,
    restore_files,
};
use tokio::io::AsyncReadExt as _;

/// Bytes per part of a backup's upload (S3 takes at most 10,000 parts: backups up to 80 GB).
const PART_BYTES: usize = 8 * 1024 * 1024;
/// Parts uploading at once.
const PARTS_IN_FLIGHT: usize = 2;
/// Bytes read from a backup file per chunk of a download.
const CHUNK: usize = 64 * 1024;

/// The backups of one SQLite database, in a directory or a bucket.
#[derive(Debug)]
pub struct Backups {
    place: Place,
    /// The files store whose files a backup holds (none: the database alone).
    files: Option<BackupFiles>,
}

#[derive(Debug)]
enum Place {
    Dir(BackupSet),
    Bucket(Bucket),
}

struct Bucket {
    database: PathBuf,
    /// Where a backup is taken and checked before its upload.
    staging_dir: PathBuf,
    url: String,
    store: Arc<dyn ObjectStore>,
    keep: usize,
    running: AtomicBool,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket")
            .field("database", &self.database)
            .field("url", &self.url)
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

/// A backup just taken and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TakenBackup {
    /// Its name in the directory or bucket (`portico-backup-<UTC time>.db`).
    pub name: String,
    /// Where it is: its path, or `s3://bucket/prefix/name`.
    pub location: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The stored format of the copy.
    pub format: u32,
    /// How long the copy, its check and its upload took.
    pub elapsed: Duration,
    /// The files it holds (`None`: a backup of the database alone).
    pub files: Option<FilesReport>,
}

impl TakenBackup {
    /// A backup named `name`, at `location`, of `bytes` bytes (format 0, no time: set them).
    pub fn new(name: impl Into<String>, location: impl Into<String>, bytes: u64) -> TakenBackup {
        TakenBackup {
            name: name.into(),
            location: location.into(),
            bytes,
            format: 0,
            elapsed: Duration::ZERO,
            files: None,
        }
    }

    fn from_report(report: &BackupReport, files: Option<FilesReport>) -> TakenBackup {
        let name = report
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        TakenBackup {
            name,
            location: report.path.display().to_string(),
            bytes: report.bytes,
            format: report.format,
            elapsed: report.elapsed,
            files,
        }
    }
}

/// A backup being downloaded: its size and its bytes.
#[non_exhaustive]
pub struct BackupDownload {
    /// Its size in bytes.
    pub bytes: u64,
    /// Its content, read in chunks.
    pub stream: BoxStream<'static, std::io::Result<Bytes>>,
}

/// Clears a bucket's running flag when the backup ends, however it ends.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn backend(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Backend(format!("{what}: {e}"))
}

/// `s3://bucket/prefix` split into the store's URL and one object's name: `s3://b/p/n.db` gives
/// (`s3://b/p`, `n.db`).
pub fn split_object_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("s3://")?;
    let (bucket_and_prefix, name) = rest.rsplit_once('/')?;
    (!bucket_and_prefix.is_empty() && !name.is_empty())
        .then(|| (&url[..url.len() - name.len() - 1], name))
}

impl Backups {
    /// Backups kept in a directory.
    pub fn in_dir(set: BackupSet) -> Backups {
        Backups {
            place: Place::Dir(set),
            files: None,
        }
    }

    /// Backups of `database` kept in the bucket `url` (`s3://bucket/prefix`), the newest
    /// `keep` (at least one).
    ///
    /// # Errors
    /// [`Error::Open`] when `url` is not an `s3://` URL naming a bucket or the store cannot be
    /// set up (as the files service says).
    pub fn in_bucket(
        database: impl Into<PathBuf>,
        url: &str,
        keep: usize,
    ) -> Result<Backups, Error> {
        if !url.starts_with("s3://") {
            return Err(Error::Open(format!(
                "`{url}`: backups go to a directory or to s3://bucket/prefix"
            )));
        }
        let store = crate::files::open_store(url).map_err(|e| Error::Open(e.to_string()))?;
        let database = database.into();
        let staging_dir = match database.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        Ok(Backups {
            place: Place::Bucket(Bucket {
                database,
                staging_dir,
                url: url.trim_end_matches('/').to_owned(),
                store,
                keep: keep.max(1),
                running: AtomicBool::new(false),
            }),
            files: None,
        })
    }

    /// The same, taking each backup for a bucket in `dir` (made when missing) before its upload
    /// instead of beside the database. No change for backups kept in a directory.
    pub fn staged_in(mut self, dir: impl Into<PathBuf>) -> Backups {
        if let Place::Bucket(bucket) = &mut self.place {
            bucket.staging_dir = dir.into();
        }
        self
    }

    /// The same, each backup holding the files of `files` its database names (see the module
    /// docs).
    pub fn with_files(mut self, files: BackupFiles) -> Backups {
        self.files = Some(files);
        self
    }

    /// Where the backups are: the directory, or the bucket's `s3://` URL.
    pub fn location(&self) -> String {
        match &self.place {
            Place::Dir(set) => set.dir().display().to_string(),
            Place::Bucket(bucket) => bucket.url.clone(),
        }
    }

    /// How many backups are kept.
    pub fn keep(&self) -> usize {
        match &self.place {
            Place::Dir(set) => set.keep(),
            Place::Bucket(bucket) => bucket.keep,
        }
    }

    /// True while a backup is being taken.
    pub fn is_running(&self) -> bool {
        match &self.place {
            Place::Dir(set) => set.is_running(),
            Place::Bucket(bucket) => bucket.running.load(Ordering::Acquire),
        }
    }

    /// Takes a backup now, then removes the oldest beyond `keep`.
    ///
    /// # Errors
    /// [`Error::Unavailable`] while another backup of these runs; as
    /// [`portico_store::sqlite::backup`] when the copy or its check fails; [`Error::Backend`]
    /// when it cannot be stored (nothing is left under a backup's name then).
    pub async fn take(self: &Arc<Self>) -> Result<TakenBackup, Error> {
        match (&self.place, &self.files) {
            (Place::Dir(set), Some(files)) => {
                let to = dir_store(set.dir())?;
                let this = Arc::clone(self);
                let previous = tokio::task::spawn_blocking(move || match &this.place {
                    Place::Dir(set) => set.list(),
                    Place::Bucket(_) => Ok(Vec::new()),
                })
                .await
                .map_err(|e| backend("the backup task failed", e))??
                .into_iter()
                .next()
                .map(|newest| files_name(&newest.name));
                let handle = tokio::runtime::Handle::current();
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    let last = attempt >= ATTEMPTS;
                    let (this, files, to, previous, handle) = (
                        Arc::clone(self),
                        files.clone(),
                        Arc::clone(&to),
                        previous.clone(),
                        handle.clone(),
                    );
                    let (taken, copied, retry) = tokio::task::spawn_blocking(move || {
                        let Place::Dir(set) = &this.place else {
                            return (
                                Err(Error::Backend("not a directory".to_owned())),
                                None,
                                false,
                            );
                        };
                        let (mut copied, mut retry) = (None, false);
                        let taken = set.take_with(|partial, name| {
                            let report = copy_named(
                                &handle,
                                &files,
                                partial,
                                &to,
                                &files_name(name),
                                previous.as_deref(),
                            )?;
                            if !report.missing.is_empty() && !last {
                                retry = true;
                                return Err(missing_error(&report));
                            }
                            copied = Some(report);
                            Ok(())
                        });
                        (taken, copied, retry)
                    })
                    .await
                    .map_err(|e| backend("the backup task failed", e))?;
                    match taken {
                        Ok(report) => {
                            warn_missing(copied.as_ref(), &report.path.display().to_string());
                            return Ok(TakenBackup::from_report(&report, copied));
                        }
                        Err(e) if retry => {
                            tracing::info!("backup taken again from a new snapshot: {e}");
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            (Place::Dir(_), None) => {
                let this = Arc::clone(self);
                let report = tokio::task::spawn_blocking(move || match &this.place {
                    Place::Dir(set) => set.take(),
                    Place::Bucket(_) => Err(Error::Backend("not a directory".to_owned())),
                })
                .await
                .map_err(|e| backend("the backup task failed", e))??;
                Ok(TakenBackup::from_report(&report, None))
            }
            (Place::Bucket(bucket), files) => bucket.take(files.as_ref()).await,
        }
    }

    /// The backups, newest first.
    ///
    /// # Errors
    /// [`Error::Backend`] when the directory or bucket cannot be read.
    pub async fn list(self: &Arc<Self>) -> Result<Vec<BackupFile>, Error> {
        match &self.place {
            Place::Dir(_) => {
                let this = Arc::clone(self);
                tokio::task::spawn_blocking(move || match &this.place {
                    Place::Dir(set) => set.list(),
                    Place::Bucket(_) => Ok(Vec::new()),
                })
                .await
                .map_err(|e| backend("listing the backups failed", e))?
            }
            Place::Bucket(bucket) => bucket.list().await,
        }
    }

    /// The backup named `name`, streamed; `None` when there is no such backup.
    ///
    /// # Errors
    /// [`Error::Backend`] when it exists but cannot be read.
    pub async fn download(&self, name: &str) -> Result<Option<BackupDownload>, Error> {
        if !is_backup_name(name) {
            return Ok(None);
        }
        match &self.place {
            Place::Dir(set) => {
                let Some(path) = set.find(name) else {
                    return Ok(None);
                };
                let Ok(file) = tokio::fs::File::open(&path).await else {
                    return Ok(None);
                };
                let bytes = file
                    .metadata()
                    .await
                    .map_err(|e| backend("cannot read the backup", e))?
                    .len();
                Ok(Some(BackupDownload {
                    bytes,
                    stream: file_chunks(file),
                }))
            }
            Place::Bucket(bucket) => match bucket.store.get(&Key::from(name)).await {
                Ok(got) => Ok(Some(BackupDownload {
                    bytes: got.meta.size,
                    stream: got
                        .into_stream()
                        .map_err(|e| std::io::Error::other(e.to_string()))
                        .boxed(),
                })),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(backend("cannot read the backup", e)),
            },
        }
    }
}

/// Takes a backup of `database` into the file `out` (as `portico backup --out`): with `files`,
/// their files go to the folder beside it that [`files_name`] names (`x.db`: `x.files`), and
/// `out` is renamed into place last (see the module docs).
///
/// # Errors
/// As [`portico_store::sqlite::backup`]; [`Error::Backend`] when a file cannot be copied.
pub async fn take_to_file(
    database: &Path,
    out: &Path,
    files: Option<&BackupFiles>,
) -> Result<TakenBackup, Error> {
    let (database, out) = (database.to_owned(), out.to_owned());
    let Some(files) = files else {
        let report =
            tokio::task::spawn_blocking(move || portico_store::sqlite::backup(&database, &out))
                .await
                .map_err(|e| backend("the backup task failed", e))??;
        return Ok(TakenBackup::from_report(&report, None));
    };
    let dir = match out.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let prefix = files_name(
        &out.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let to = dir_store(&dir)?;
    let handle = tokio::runtime::Handle::current();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = attempt >= ATTEMPTS;
        let (database, out, files, to, prefix, handle, dir) = (
            database.clone(),
            out.clone(),
            files.clone(),
            Arc::clone(&to),
            prefix.clone(),
            handle.clone(),
            dir.clone(),
        );
        let (taken, copied, retry) = tokio::task::spawn_blocking(move || {
            let (mut copied, mut retry) = (None, false);
            let _ = std::fs::remove_dir_all(dir.join(&prefix));
            let taken = portico_store::sqlite::backup_with(&database, &out, |partial| {
                let report = copy_named(&handle, &files, partial, &to, &prefix, None)?;
                if !report.missing.is_empty() && !last {
                    retry = true;
                    return Err(missing_error(&report));
                }
                copied = Some(report);
                Ok(())
            });
            if taken.is_err() {
                let _ = std::fs::remove_dir_all(dir.join(&prefix));
            }
            (taken, copied, retry)
        })
        .await
        .map_err(|e| backend("the backup task failed", e))?;
        match taken {
            Ok(report) => {
                warn_missing(copied.as_ref(), &report.path.display().to_string());
                return Ok(TakenBackup::from_report(&report, copied));
            }
            Err(e) if retry => tracing::info!("backup taken again from a new snapshot: {e}"),
            Err(e) => return Err(e),
        }
    }
}

/// Copies the files the checked copy `db` names into `to` under `prefix`, linking those under
/// `previous` (blocking: called on a backup's thread, with the runtime's `handle`).
fn copy_named(
    handle: &tokio::runtime::Handle,
    files: &BackupFiles,
    db: &Path,
    to: &Arc<dyn ObjectStore>,
    prefix: &str,
    previous: Option<&str>,
) -> Result<FilesReport, Error> {
    let named = files.named(db)?;
    handle.block_on(files.copy(&named, to, prefix, previous))
}

/// Why a backup is taken again: files its snapshot names went from the store meanwhile.
fn missing_error(report: &FilesReport) -> Error {
    Error::Backend(format!(
        "{} file(s) the snapshot names are not in the files store (removed after the snapshot), \
         first {}",
        report.missing.len(),
        report.missing.first().map_or("", String::as_str)
    ))
}

/// Logs the files a kept backup lacks because the files store lacks them.
fn warn_missing(files: Option<&FilesReport>, location: &str) {
    if let Some(files) = files.filter(|f| !f.missing.is_empty()) {
        tracing::warn!(
            backup = location,
            missing = files.missing.len(),
            first = %files.missing[0],
            "the backup lacks files its database names: the files store does not hold them \
             (after {ATTEMPTS} snapshots)"
        );
    }
}

/// `file`'s bytes, [`CHUNK`] at a time.
fn file_chunks(file: tokio::fs::File) -> BoxStream<'static, std::io::Result<Bytes>> {
    futures::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buffer = vec![0u8; CHUNK];
        match file.read(&mut buffer).await {
            Ok(0) => None,
            Ok(n) => {
                buffer.truncate(n);
                Some((Ok(Bytes::from(buffer)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
    .boxed()
}

/// Downloads the object `url` (`s3://bucket/prefix/name`) into the file `to`, written under
/// `<to>.partial` and renamed when whole. Returns its size.
///
/// # Errors
/// [`Error::Open`] for a URL that names no object or an object that does not exist;
/// [`Error::Backend`] when it cannot be read or written.
pub async fn fetch_object(url: &str, to: &Path) -> Result<u64, Error> {
    let (store_url, name) = split_object_url(url).ok_or_else(|| {
        Error::Open(format!(
            "`{url}`: name one object, as in s3://bucket/prefix/portico-backup-<time>.db"
        ))
    })?;
    let store = crate::files::open_store(store_url).map_err(|e| Error::Open(e.to_string()))?;
    let got = match store.get(&Key::from(name)).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(Error::Open(format!("{url}: no such object")));
        }
        Err(e) => return Err(backend(&format!("cannot read {url}"), e)),
    };
    let mut partial = to.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let written = async {
        use tokio::io::AsyncWriteExt as _;
        let mut file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| backend(&format!("cannot create {}", partial.display()), e))?;
        let mut stream = got.into_stream();
        let mut bytes = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| backend(&format!("cannot read {url}"), e))?;
            bytes += chunk.len() as u64;
            file.write_all(&chunk)
                .await
                .map_err(|e| backend(&format!("cannot write {}", partial.display()), e))?;
        }
        file.sync_all()
            .await
            .map_err(|e| backend(&format!("cannot flush {}", partial.display()), e))?;
        tokio::fs::rename(&partial, to)
            .await
            .map_err(|e| backend(&format!("cannot rename to {}", to.display()), e))?;
        Ok(bytes)
    }
    .await;
    if written.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    written
}

impl Bucket {
    /// The database's file name (`portico.db`).
    fn base(&self) -> String {
        self.database.file_name().map_or_else(
            || "portico.db".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// The file a backup to the bucket is first taken into: `<database name>.upload-<name>` in
    /// the staging directory (beside the database unless [`Backups::staged_in`] says where).
    fn staging(&self, name: &str) -> PathBuf {
        self.staging_dir
            .join(format!("{}.upload-{name}", self.base()))
    }

    /// Removes staging files a killed backup left (the caller runs the only backup of these).
    async fn remove_stale_staging(&self) {
        let base = self.base();
        let Ok(mut entries) = tokio::fs::read_dir(&self.staging_dir).await else {
            return;
        };
        let start = format!("{base}.upload-");
        while let Ok(Some(entry)) = entries.next_entry().await {
            let name = entry.file_name().to_string_lossy().into_owned();
            let backup = name
                .strip_prefix(&start)
                .map(|rest| rest.strip_suffix(".partial").unwrap_or(rest));
            if backup.is_some_and(is_backup_name) {
                let _ = tokio::fs::remove_file(entry.path()).await;
            }
        }
    }

    async fn take(&self, files: Option<&BackupFiles>) -> Result<TakenBackup, Error> {
        if self.running.swap(true, Ordering::AcqRel) {
            return Err(Error::Unavailable(
                "a backup is being taken already; try again when it has finished".into(),
            ));
        }
        let _running = Running(&self.running);
        let started = Instant::now();
        tokio::fs::create_dir_all(&self.staging_dir)
            .await
            .map_err(|e| {
                backend(
                    &format!("cannot make the directory {}", self.staging_dir.display()),
                    e,
                )
            })?;
        self.remove_stale_staging().await;
        let existing = self.list().await?;
        let name = new_backup_name(|name| existing.iter().any(|b| b.name == name));
        let previous = existing.first().map(|newest| files_name(&newest.name));
        let staging = self.staging(&name);
        let mut attempt = 0;
        let (bytes, format, copied) = loop {
            attempt += 1;
            let (database, copy) = (self.database.clone(), staging.clone());
            let copied = tokio::task::spawn_blocking(move || {
                portico_store::sqlite::backup(&database, &copy)
            })
            .await
            .map_err(|e| backend("the backup task failed", e))
            .and_then(|r| r);
            let with_files = match (copied, files) {
                (Ok(report), Some(files)) => self
                    .copy_files(files, &staging, &name, previous.as_deref())
                    .await
                    .map(|f| (report, Some(f))),
                (Ok(report), None) => Ok((report, None)),
                (Err(e), _) => Err(e),
            };
            let uploaded = match with_files {
                Ok((_, Some(f))) if !f.missing.is_empty() && attempt < ATTEMPTS => {
                    tracing::info!(
                        "backup taken again from a new snapshot: {}",
                        missing_error(&f)
                    );
                    let _ = tokio::fs::remove_file(&staging).await;
                    continue;
                }
                Ok((report, f)) => self
                    .upload(&staging, &name)
                    .await
                    .map(|()| (report.bytes, report.format, f)),
                Err(e) => Err(e),
            };
            let _ = tokio::fs::remove_file(&staging).await;
            if uploaded.is_err() {
                self.delete_files_of(&name).await;
            }
            break uploaded?;
        };
        let location = format!("{}/{name}", self.url);
        warn_missing(copied.as_ref(), &location);
        self.prune().await?;
        Ok(TakenBackup {
            location,
            name,
            bytes,
            format,
            elapsed: started.elapsed(),
            files: copied,
        })
    }

    /// Copies the files the staged copy names into the bucket, under `<name>.files/` (what an
    /// earlier attempt left there is replaced).
    async fn copy_files(
        &self,
        files: &BackupFiles,
        staging: &Path,
        name: &str,
        previous: Option<&str>,
    ) -> Result<FilesReport, Error> {
        self.delete_files_of(name).await;
        let (files_for_read, staged) = (files.clone(), staging.to_owned());
        let named = tokio::task::spawn_blocking(move || files_for_read.named(&staged))
            .await
            .map_err(|e| backend("the backup task failed", e))??;
        files
            .copy(&named, &self.store, &files_name(name), previous)
            .await
    }

    /// Deletes the files of the backup `name` (under `<name>.files/`); failures are logged.
    async fn delete_files_of(&self, name: &str) {
        let prefix = Key::from(files_name(name));
        let listed: Vec<object_store::ObjectMeta> =
            match self.store.list(Some(&prefix)).try_collect().await {
                Ok(listed) => listed,
                Err(e) => {
                    tracing::warn!("listing the files of the backup {name}: {e}");
                    return;
                }
            };
        for object in listed {
            if let Err(e) = self.store.delete(&object.location).await {
                tracing::warn!(key = %object.location, "deleting a backup's file: {e}");
            }
        }
    }

    /// Uploads the checked file `from` as `name`: one multipart upload, completed only when
    /// every byte is sent (aborted on a failure).
    async fn upload(&self, from: &Path, name: &str) -> Result<(), Error> {
        let key = Key::from(name);
        let failed = |e: &dyn std::fmt::Display| {
            Error::Backend(format!(
                "cannot upload the backup to {}/{name}: {e}",
                self.url
            ))
        };
        let mut file = tokio::fs::File::open(from)
            .await
            .map_err(|e| backend(&format!("cannot read {}", from.display()), e))?;
        let upload = self
            .store
            .put_multipart(&key)
            .await
            .map_err(|e| failed(&e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut buffer = vec![0u8; 1024 * 1024];
        let failure = loop {
            let n = match file.read(&mut buffer).await {
                Ok(0) => break None,
                Ok(n) => n,
                Err(e) => break Some(failed(&e)),
            };
            if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
                break Some(failed(&e));
            }
            writer.write(&buffer[..n]);
        };
        if let Some(e) = failure {
            if let Err(abort) = writer.abort().await {
                tracing::warn!(key = %key, "aborting a backup's upload failed: {abort}");
            }
            return Err(e);
        }
        writer.finish().await.map_err(|e| failed(&e))?;
        Ok(())
    }

    async fn list(&self) -> Result<Vec<BackupFile>, Error> {
        let listed = self
            .store
            .list_with_delimiter(None)
            .await
            .map_err(|e| backend(&format!("cannot list {}", self.url), e))?;
        let mut files: Vec<BackupFile> = listed
            .objects
            .into_iter()
            .filter_map(|object| {
                let name = object.location.filename()?.to_owned();
                is_backup_name(&name).then(|| {
                    BackupFile::new(name, object.size, SystemTime::from(object.last_modified))
                })
            })
            .collect();
        BackupFile::sort_newest_first(&mut files);
        Ok(files)
    }

    /// Deletes the oldest backups beyond `keep` (each with its files), and files left by a
    /// backup whose database never came (the caller runs the only backup of these).
    async fn prune(&self) -> Result<(), Error> {
        let listed = self.list().await?;
        for old in listed.iter().skip(self.keep) {
            self.store
                .delete(&Key::from(old.name.as_str()))
                .await
                .map_err(|e| backend(&format!("cannot delete {}/{}", self.url, old.name), e))?;
            self.delete_files_of(&old.name).await;
        }
        let folders = self
            .store
            .list_with_delimiter(None)
            .await
            .map_err(|e| backend(&format!("cannot list {}", self.url), e))?
            .common_prefixes;
        for folder in folders {
            let Some(stem) = folder
                .filename()
                .and_then(|f| f.strip_suffix(portico_store::sqlite::FILES_EXTENSION))
            else {
                continue;
            };
            let db = format!("{stem}{}", portico_store::sqlite::BACKUP_EXTENSION);
            if is_backup_name(&db) && !listed.iter().take(self.keep).any(|b| b.name == db) {
                self.delete_files_of(&db).await;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_urls_split_into_store_and_name() {
        assert_eq!(
            split_object_url("s3://b/p/q/n.db"),
            Some(("s3://b/p/q", "n.db"))
        );
        assert_eq!(split_object_url("s3://b/n.db"), Some(("s3://b", "n.db")));
        assert_eq!(split_object_url("s3://b/"), None);
        assert_eq!(split_object_url("s3://b"), None);
        assert_eq!(split_object_url("./x.db"), None);
    }
}
