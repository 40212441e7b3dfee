//! The uploaded files a backup's database names, copied into the backup beside it, and put back
//! by a restore.
//!
//! A backup of an application with file fields is its database and the files that database
//! names: `portico-backup-<time>.db` and the folder (or, in a bucket, the prefix)
//! `portico-backup-<time>.files/`, holding each content the database names once, under its
//! SHA-256 (`portico-backup-<time>.files/<sha256>`). A restore reads the backup's documents to
//! put each file back under the key the files store keeps it under
//! (`f/<collection>/<id>/<field>/<sha256>-<hash of the name>`). Thumbnails are not copied
//! (they are made again on demand).
//!
//! The database is copied first (one snapshot); the files are read from the copy and copied
//! after it, and the database gets its final name only when every file is in: a backup whose
//! `.db` exists is whole. Files uploaded after the snapshot are not in it (the snapshot does not
//! name them). A file the snapshot names may be gone by the time it is copied (its document was
//! removed or its file replaced after the snapshot, and the files service deleted the bytes):
//! then the backup is taken again from a new snapshot, which no longer names it. A file still
//! missing after [`ATTEMPTS`] snapshots is missing from the store itself (a store that lost it):
//! the backup is kept and says which files it lacks.
//!
//! A content held under its SHA-256 never changes: one the previous backup holds is linked from
//! it (a hard link in a directory, a server-side copy in a bucket) rather than read from the
//! files store again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use futures::{StreamExt as _, TryStreamExt as _};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload, WriteMultipart};
use portico_store::Error;

use crate::files::{file_key, files_of};

/// How many snapshots a backup tries before it keeps one whose files are not all in the store.
pub const ATTEMPTS: usize = 3;
/// Files at most this large are copied in one request; larger ones in parts of this size.
const PART_BYTES: usize = 5 * 1024 * 1024;
/// Files copied at once.
const IN_FLIGHT: usize = 4;

/// The files store a backup copies files from, and the collections whose documents name them.
#[derive(Clone)]
pub struct BackupFiles {
    /// The store, opened at the first backup (so that `portico check` makes no directory).
    store: Arc<std::sync::OnceLock<Arc<dyn ObjectStore>>>,
    url: String,
    collections: Vec<String>,
}

impl std::fmt::Debug for BackupFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupFiles")
            .field("store", &self.url)
            .field("collections", &self.collections)
            .finish_non_exhaustive()
    }
}

/// The files a backup holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilesReport {
    /// Files (distinct contents) the database names and the backup holds.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// How many of them were linked from the previous backup instead of copied.
    pub linked: u64,
    /// The keys of files the database names that the files store does not hold (the backup
    /// cannot hold them either).
    pub missing: Vec<String>,
}

/// What a restore put back into the files store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestoredFiles {
    /// Files copied from the backup into the store.
    pub copied: u64,
    /// Files the store held already (same key, so same content).
    pub present: u64,
    /// Keys of files the database names that neither the backup nor the store holds.
    pub missing: Vec<String>,
}

/// The files the database file `db` (a backup, read-only) names in `collections`: each one's
/// key in a files store, and its SHA-256.
///
/// # Errors
/// As [`portico_store::sqlite::for_each_document`].
pub fn named_files(db: &Path, collections: &[String]) -> Result<BTreeMap<String, String>, Error> {
    let mut named = BTreeMap::new();
    for collection in collections {
        portico_store::sqlite::for_each_document(db, collection, |id, doc| {
            // Every field, as the files sweep keeps every file a document names.
            for field in doc.keys() {
                for file in files_of(&doc, field) {
                    named.insert(file_key(collection, id, field, &file), file.sha256);
                }
            }
            Ok(())
        })?;
    }
    Ok(named)
}

/// True for a lowercase hex SHA-256 (a content's name in a backup).
fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn backend(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Backend(format!("{what}: {e}"))
}

/// `prefix/key`, or `key` for an empty prefix.
fn under(prefix: &str, key: &str) -> Key {
    if prefix.is_empty() {
        Key::from(key)
    } else {
        Key::from(format!("{prefix}/{key}"))
    }
}

impl BackupFiles {
    /// Files kept at `url` (a directory or `s3://bucket/prefix`, as `[files] store`), named by
    /// the documents of `collections` (those with file fields).
    ///
    /// # Errors
    /// [`Error::Open`] when `url` names no store (a directory, created at the first backup, or
    /// `s3://bucket/prefix`).
    pub fn open(url: &str, collections: Vec<String>) -> Result<BackupFiles, Error> {
        if url.contains("://") && !url.starts_with("s3://") {
            return Err(Error::Open(format!(
                "`{url}`: a files store is a directory or s3://bucket/prefix"
            )));
        }
        Ok(BackupFiles {
            store: Arc::new(std::sync::OnceLock::new()),
            url: url.to_owned(),
            collections,
        })
    }

    /// The store, opened now when it was not yet.
    fn store(&self) -> Result<Arc<dyn ObjectStore>, Error> {
        if let Some(store) = self.store.get() {
            return Ok(Arc::clone(store));
        }
        let opened = crate::files::open_store(&self.url).map_err(|e| Error::Open(e.to_string()))?;
        Ok(Arc::clone(self.store.get_or_init(|| opened)))
    }

    /// Files kept in `store` (described as `url`), named by the documents of `collections`.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        url: &str,
        collections: Vec<String>,
    ) -> BackupFiles {
        BackupFiles {
            store: Arc::new(std::sync::OnceLock::from(store)),
            url: url.to_owned(),
            collections,
        }
    }

    /// The collections whose documents name files.
    pub fn collections(&self) -> &[String] {
        &self.collections
    }

    /// The files the database file `db` (a backup, read-only) names: key and SHA-256.
    ///
    /// # Errors
    /// As [`portico_store::sqlite::for_each_document`].
    pub fn named(&self, db: &Path) -> Result<BTreeMap<String, String>, Error> {
        named_files(db, &self.collections)
    }

    /// Copies the contents of the files `named` (key and SHA-256) from the files store into
    /// `to` under `prefix/<sha256>`, linking those `to` holds under `previous/` (the previous
    /// backup's files) instead. A file the store does not hold is listed in
    /// [`FilesReport::missing`].
    ///
    /// # Errors
    /// [`Error::Backend`] when a file cannot be read or written.
    pub async fn copy(
        &self,
        named: &BTreeMap<String, String>,
        to: &Arc<dyn ObjectStore>,
        prefix: &str,
        previous: Option<&str>,
    ) -> Result<FilesReport, Error> {
        // One key per content: the first naming it.
        let mut contents: BTreeMap<&str, &str> = BTreeMap::new();
        for (key, sha) in named {
            if is_sha256(sha) {
                contents.entry(sha).or_insert(key);
            }
        }
        // A content whose name is no SHA-256 cannot be held; such metadata names no file the
        // files service stored.
        let mut report = FilesReport {
            missing: named
                .iter()
                .filter(|(_, sha)| !is_sha256(sha))
                .map(|(key, _)| key.clone())
                .collect(),
            ..FilesReport::default()
        };
        let source = self.store()?;
        let jobs: Vec<_> = contents
            .into_iter()
            .map(|(sha, key)| {
                let (from, to, url) = (Arc::clone(&source), Arc::clone(to), self.url.clone());
                let target = under(prefix, sha);
                let old = previous.map(|previous| under(previous, sha));
                let key = key.to_owned();
                async move {
                    if let Some(old) = old
                        && let Ok(meta) = to.head(&old).await
                        && to.copy(&old, &target).await.is_ok()
                    {
                        return Ok((key, Some((meta.size, true))));
                    }
                    let size = copy_object(from, Key::from(key.as_str()), to, target)
                        .await
                        .map_err(|e| {
                            backend(
                                &format!("cannot copy the file {key} of {url} into the backup"),
                                e,
                            )
                        })?;
                    Ok::<_, Error>((key, size.map(|s| (s, false))))
                }
            })
            .collect();
        let copied: Vec<(String, Option<(u64, bool)>)> = futures::stream::iter(jobs)
            .buffer_unordered(IN_FLIGHT)
            .try_collect()
            .await?;
        for (key, copied) in copied {
            match copied {
                Some((size, linked)) => {
                    report.files += 1;
                    report.bytes += size;
                    report.linked += u64::from(linked);
                }
                None => report.missing.push(key),
            }
        }
        report.missing.sort();
        Ok(report)
    }
}

/// Copies the object `from_key` of `from` to `to_key` of `to`, streamed (at most
/// [`PART_BYTES`] in memory per part, two parts in flight). `None` when `from_key` does not
/// exist; its size otherwise.
async fn copy_object(
    from: Arc<dyn ObjectStore>,
    from_key: Key,
    to: Arc<dyn ObjectStore>,
    to_key: Key,
) -> Result<Option<u64>, object_store::Error> {
    let got = match from.get(&from_key).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = got.meta.size;
    if size <= PART_BYTES as u64 {
        let bytes = got.bytes().await?;
        to.put(&to_key, PutPayload::from(bytes)).await?;
        return Ok(Some(size));
    }
    let upload = to.put_multipart(&to_key).await?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
    let mut stream = got.into_stream();
    let failure = loop {
        match stream.next().await {
            None => break None,
            Some(Err(e)) => break Some(e),
            Some(Ok(chunk)) => {
                if let Err(e) = writer.wait_for_capacity(2).await {
                    break Some(e);
                }
                writer.write(&chunk);
            }
        }
    };
    if let Some(e) = failure {
        let _ = writer.abort().await;
        return Err(e);
    }
    writer.finish().await?;
    Ok(Some(size))
}

/// Puts the files `named` (key and SHA-256, as [`named_files`] reads them from the backup's
/// database) back into the files store `to`, each from `prefix/<sha256>` of `from` (the
/// backup's files); a key `to` holds already is left alone (a key names its content).
///
/// # Errors
/// [`Error::Backend`] when a file cannot be read or written.
pub async fn restore_files(
    from: &Arc<dyn ObjectStore>,
    prefix: &str,
    named: &BTreeMap<String, String>,
    to: &Arc<dyn ObjectStore>,
) -> Result<RestoredFiles, Error> {
    let jobs: Vec<_> = named
        .iter()
        .map(|(key, sha)| {
            let (from, to) = (Arc::clone(from), Arc::clone(to));
            let (key, source) = (key.clone(), under(prefix, sha));
            async move {
                let target = Key::from(key.as_str());
                if to.head(&target).await.is_ok() {
                    return Ok((key, Some(false)));
                }
                let copied = copy_object(from, source, to, target)
                    .await
                    .map_err(|e| backend(&format!("cannot restore the file {key}"), e))?;
                Ok::<_, Error>((key, copied.map(|_| true)))
            }
        })
        .collect();
    let outcomes: Vec<(String, Option<bool>)> = futures::stream::iter(jobs)
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    let mut restored = RestoredFiles::default();
    for (key, outcome) in outcomes {
        match outcome {
            Some(true) => restored.copied += 1,
            Some(false) => restored.present += 1,
            None => restored.missing.push(key),
        }
    }
    restored.missing.sort();
    Ok(restored)
}

/// True when `prefix/` of `store` holds any object (a backup that holds files).
///
/// # Errors
/// [`Error::Backend`] when it cannot be listed.
pub async fn holds_files(store: &Arc<dyn ObjectStore>, prefix: &str) -> Result<bool, Error> {
    let mut listed = store.list(Some(&Key::from(prefix)));
    match listed.next().await {
        None => Ok(false),
        Some(Ok(_)) => Ok(true),
        Some(Err(e)) => Err(backend(&format!("cannot list {prefix}"), e)),
    }
}

/// A directory as an object store (made when missing; writes synced before they count), as
/// backups kept in a directory hold their files.
///
/// # Errors
/// [`Error::Backend`] when it cannot be made.
pub fn dir_store(dir: &Path) -> Result<Arc<dyn ObjectStore>, Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| backend(&format!("cannot make the directory {}", dir.display()), e))?;
    let local = object_store::local::LocalFileSystem::new_with_prefix(dir)
        .map_err(|e| backend(&format!("the directory {}", dir.display()), e))?
        .with_automatic_cleanup(true)
        .with_fsync(true);
    Ok(Arc::new(local))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use portico_store::Store as _;
    use portico_store::sqlite::{BackupSet, SqliteStore};
    use serde_json::json;
    use sha2::Digest as _;

    use super::*;
    use crate::backups::Backups;
    use crate::files::FileMeta;

    fn meta(name: &str, bytes: &[u8]) -> FileMeta {
        FileMeta {
            name: name.to_owned(),
            size: bytes.len() as u64,
            mime: "application/octet-stream".to_owned(),
            sha256: hex::encode(sha2::Sha256::digest(bytes)),
            created_at: String::new(),
        }
    }

    /// Files of a directory store, at any depth.
    fn count_files(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .map(|e| {
                    let p: PathBuf = e.path();
                    if p.is_dir() { count_files(&p) } else { 1 }
                })
                .sum()
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backup_holds_each_named_content_once_links_the_previous_and_names_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("app.db");
        let store = SqliteStore::open(&db).await.unwrap();
        let small = b"a small file".to_vec();
        // Over one part: copied in parts.
        let big: Vec<u8> = (0..6 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        let lost = b"never stored".to_vec();
        let (a, b, c, d) = (
            meta("a.txt", &small),
            meta("b.bin", &big),
            meta("c.txt", &lost),
            meta("same.txt", &small),
        );
        store
            .insert(
                "posts",
                json!({"_id": "p1", "cover": a.to_json(), "attachments": [b.to_json(), c.to_json()]})
                    .as_object()
                    .cloned()
                    .unwrap(),
            )
            .await
            .unwrap();
        store
            .insert(
                "posts",
                json!({"_id": "p2", "cover": d.to_json()})
                    .as_object()
                    .cloned()
                    .unwrap(),
            )
            .await
            .unwrap();
        let files = dir_store(&dir.path().join("files")).unwrap();
        for (id, field, file, bytes) in [
            ("p1", "cover", &a, &small),
            ("p1", "attachments", &b, &big),
            ("p2", "cover", &d, &small),
        ] {
            files
                .put(
                    &Key::from(file_key("posts", id, field, file)),
                    PutPayload::from(bytes.clone()),
                )
                .await
                .unwrap();
        }
        let backups = Arc::new(
            Backups::in_dir(BackupSet::new(&db, dir.path().join("backups"), 5)).with_files(
                BackupFiles::with_store(files, "files", vec!["posts".to_owned()]),
            ),
        );
        let first = backups.take().await.unwrap();
        let report = first.files.clone().unwrap();
        // Two contents (a.txt and same.txt are one), the lost one named after 3 snapshots.
        assert_eq!((report.files, report.linked), (2, 0), "{report:?}");
        assert_eq!(report.bytes, (small.len() + big.len()) as u64);
        assert_eq!(report.missing, [file_key("posts", "p1", "attachments", &c)]);
        let held = dir
            .path()
            .join("backups")
            .join(portico_store::sqlite::files_name(&first.name));
        assert_eq!(count_files(&held), 2);
        assert!(held.join(&b.sha256).is_file());
        let second = backups.take().await.unwrap();
        assert_eq!(second.files.unwrap().linked, 2);

        // Restored into an empty store: every file the backup holds, under its key.
        let named = named_files(
            &dir.path().join("backups").join(&first.name),
            &["posts".to_owned()],
        )
        .unwrap();
        assert_eq!(named.len(), 4);
        let from = dir_store(&dir.path().join("backups")).unwrap();
        let to = dir_store(&dir.path().join("restored")).unwrap();
        let prefix = portico_store::sqlite::files_name(&first.name);
        let restored = restore_files(&from, &prefix, &named, &to).await.unwrap();
        assert_eq!((restored.copied, restored.present), (3, 0));
        assert_eq!(
            restored.missing,
            [file_key("posts", "p1", "attachments", &c)]
        );
        let got = to
            .get(&Key::from(file_key("posts", "p1", "attachments", &b)))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(got.as_ref(), big.as_slice());
        let again = restore_files(&from, &prefix, &named, &to).await.unwrap();
        assert_eq!((again.copied, again.present), (0, 3));
    }
}
