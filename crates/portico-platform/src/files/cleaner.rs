//! Keeping the store and the documents in agreement: the files of removed documents are
//! deleted after the commit, and a sweep heals what a crash left half done.

use std::collections::HashSet;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStoreExt};
use portico_store::{Change, ChangeKind};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast::error::RecvError;

use super::name::{document_prefix, final_key, unsegment};
use super::{FileError, Files, files_of};
use crate::Platform;
use crate::WeakPlatform;

/// How old a temporary object must be before the sweep touches it (an upload in progress
/// writes its temporary object only when its last byte has come, and commits right after).
pub const TEMP_GRACE: Duration = Duration::from_secs(15 * 60);
/// How often the cleaner sweeps the whole store.
const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepReport {
    /// Objects deleted: temporary ones never committed, files no document names.
    pub deleted: usize,
    /// Uploads whose metadata was committed and whose object is now made final.
    pub finished: usize,
}

/// The parts of a key below `tmp/` or `f/`: collection, document id, field, rest.
fn parts(key: &str, top: &str) -> Option<(String, String, String, String)> {
    let mut it = key.strip_prefix(top)?.strip_prefix('/')?.splitn(4, '/');
    let collection = unsegment(it.next()?)?;
    let id = unsegment(it.next()?)?;
    let field = unsegment(it.next()?)?;
    Some((collection, id, field, it.next()?.to_owned()))
}

impl Files {
    /// Deletes the objects no document names and temporary objects older than `grace`
    /// whose metadata was never committed; makes final the temporary objects whose metadata
    /// was committed (a crash between the two steps of an upload); removes expired download
    /// tokens.
    ///
    /// # Errors
    /// Store failures (listing); single deletes that fail are logged and left for the next
    /// sweep.
    pub async fn sweep(
        &self,
        platform: &Platform,
        grace: Duration,
    ) -> Result<SweepReport, FileError> {
        let mut report = SweepReport::default();
        let store = self.inner.store.clone();
        let now = chrono::Utc::now();
        let temps: Vec<ObjectMeta> = store.list(Some(&Path::from("tmp"))).try_collect().await?;
        for object in temps {
            let age = now.signed_duration_since(object.last_modified);
            if age.to_std().unwrap_or_default() < grace {
                continue;
            }
            if self.finish_temp(platform, &object).await? {
                report.finished += 1;
            } else {
                self.delete_logged(&object.location).await;
                report.deleted += 1;
            }
        }
        let finals: Vec<ObjectMeta> = store.list(Some(&Path::from("f"))).try_collect().await?;
        let mut named: Option<(String, String, HashSet<String>)> = None;
        for object in finals {
            let key = object.location.as_ref().to_owned();
            let Some((collection, id, _, _)) = parts(&key, "f") else {
                continue;
            };
            let fresh = matches!(&named, Some((c, i, _)) if *c == collection && *i == id);
            if !fresh {
                let keys = self.named_keys(platform, &collection, &id).await?;
                named = Some((collection, id, keys));
            }
            let keys = named.as_ref().map(|(_, _, k)| k);
            let base = key.split_once(".thumb-").map_or(key.as_str(), |(b, _)| b);
            if !keys.is_some_and(|k| k.contains(base)) {
                self.delete_logged(&object.location).await;
                report.deleted += 1;
            }
        }
        self.purge_tokens(platform).await?;
        Ok(report)
    }

    /// The final keys the document names (none when it is gone).
    async fn named_keys(
        &self,
        platform: &Platform,
        collection: &str,
        id: &str,
    ) -> Result<HashSet<String>, FileError> {
        let Some(doc) = platform.collection(collection).get(id).await? else {
            return Ok(HashSet::new());
        };
        Ok(doc
            .keys()
            .flat_map(|field| {
                files_of(&doc, field)
                    .into_iter()
                    .map(move |f| final_key(collection, id, field, &f.name, &f.sha256))
            })
            .collect())
    }

    /// Makes final the temporary `object` when committed metadata names its bytes and its
    /// final object is missing; false otherwise.
    async fn finish_temp(
        &self,
        platform: &Platform,
        object: &ObjectMeta,
    ) -> Result<bool, FileError> {
        let Some((collection, id, field, _)) = parts(object.location.as_ref(), "tmp") else {
            return Ok(false);
        };
        let Some(doc) = platform.collection(&collection).get(&id).await? else {
            return Ok(false);
        };
        let store = &self.inner.store;
        let mut sha: Option<String> = None;
        for file in files_of(&doc, &field) {
            if file.size != object.size {
                continue;
            }
            let key = Path::from(final_key(
                &collection,
                &id,
                &field,
                &file.name,
                &file.sha256,
            ));
            match store.head(&key).await {
                Err(object_store::Error::NotFound { .. }) => {}
                Ok(_) => continue,
                Err(e) => return Err(e.into()),
            }
            if sha.is_none() {
                let mut hasher = Sha256::new();
                let mut bytes = store.get(&object.location).await?.into_stream();
                while let Some(chunk) = bytes.next().await {
                    hasher.update(&chunk?);
                }
                sha = Some(hex::encode(hasher.finalize()));
            }
            if sha.as_deref() == Some(file.sha256.as_str()) {
                store.rename(&object.location, &key).await?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn delete_logged(&self, key: &Path) {
        if let Err(e) = self.inner.store.delete(key).await {
            tracing::warn!(key = %key, "deleting a file failed: {e}");
        }
    }

    /// Deletes the files of the document `id` of `collection` when it no longer exists.
    ///
    /// # Errors
    /// Store failures of the document's read.
    pub async fn remove_document_files(
        &self,
        platform: &Platform,
        collection: &str,
        id: &str,
    ) -> Result<(), FileError> {
        if platform.collection(collection).get(id).await?.is_some() {
            return Ok(());
        }
        let prefix = document_prefix(collection, id);
        self.delete_under(&prefix, &format!("{prefix}/")).await;
        Ok(())
    }

    /// Starts the cleaner: after every committed removal in a collection with file fields,
    /// the removed documents' files are deleted; the whole store is swept at start and every
    /// hour (and when the change feed lost track). It stops when the platform is dropped.
    pub fn start_cleaner(&self, platform: &Platform) {
        let files = self.clone();
        let weak = platform.downgrade();
        let changes = platform.store().changes();
        tokio::spawn(async move {
            files.run_cleaner(weak, changes).await;
        });
    }

    async fn run_cleaner(
        &self,
        weak: WeakPlatform,
        mut changes: Option<tokio::sync::broadcast::Receiver<Change>>,
    ) {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        loop {
            let sweep = tokio::select! {
                _ = every.tick() => true,
                change = recv(&mut changes) => match change {
                    Ok(Change::Documents { collection, ids, kind: ChangeKind::Remove }) => {
                        let Some(platform) = weak.upgrade() else { return };
                        if !self.collections().iter().any(|c| **c == *collection) {
                            continue;
                        }
                        if ids.is_empty() {
                            true
                        } else {
                            for id in ids {
                                if let Err(e) = self.remove_document_files(&platform, &collection, &id).await {
                                    tracing::warn!("deleting the files of a removed document: {e}");
                                }
                            }
                            false
                        }
                    }
                    Ok(_) => false,
                    Err(RecvError::Lagged(_)) => true,
                    Err(RecvError::Closed) => {
                        changes = None;
                        false
                    }
                },
            };
            let Some(platform) = weak.upgrade() else {
                return;
            };
            if sweep {
                match self.sweep(&platform, TEMP_GRACE).await {
                    Ok(report) if report != SweepReport::default() => {
                        tracing::info!(
                            deleted = report.deleted,
                            finished = report.finished,
                            "files swept"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!("sweeping files failed: {e}"),
                }
            }
        }
    }
}

/// The next change, or never without a feed.
async fn recv(
    changes: &mut Option<tokio::sync::broadcast::Receiver<Change>>,
) -> Result<Change, RecvError> {
    match changes {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
