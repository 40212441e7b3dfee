//! Files attached to documents: kept on local disk or in an S3-compatible store, streamed in
//! and out with bounded memory, their metadata stored in the document's own field.
//!
//! A file is written in three steps, so that a document and its files never disagree:
//! 1. its bytes are streamed to a temporary key (`tmp/...`), hashed and typed as they come,
//!    and refused as soon as they pass the size limit;
//! 2. its metadata (`name`, `size`, `type`, `sha256`, `createdAt`) is written into the
//!    document's field in one conditional update (retried when the document changed);
//! 3. the temporary object is renamed to its final key, derived from the document, the field,
//!    the name and the content hash (never from the client's name alone).
//!
//! A crash after step 1 leaves a temporary object without metadata; after step 2, metadata
//! whose final object is missing and a temporary object holding its bytes. The sweep
//! ([`Files::sweep`], run at start and every hour by [`Files::start_cleaner`]) deletes the
//! first kind and finishes the second (renames it when its hash matches the metadata). A
//! document removed by any writer has its files deleted after the commit (the store's change
//! feed); files the feed missed, and files whose metadata was overwritten, are swept.

mod cleaner;
mod config;
mod download;
mod error;
mod kind;
mod name;
mod store;
mod thumb;
mod token;
mod upload;

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use object_store::{ObjectStore, ObjectStoreExt};
use serde_json::{Map, Value, json};

pub use cleaner::{SweepReport, TEMP_GRACE};
pub use config::{
    DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIZE_MB, FileField, FilesConfig, MAX_THUMB_SIDE, ThumbSize,
};
pub use download::{ByteRange, Download, DownloadOptions};
pub use error::FileError;
pub use kind::{detect as detect_type, disposition, inline_safe};
pub use name::sanitize as sanitize_name;
pub use token::{FILE_TOKENS, TOKEN_LIFETIME};
pub use upload::NewFile;

/// Opens the object store a `store` value names (a directory or `s3://bucket/prefix`), as the
/// files service does; the backups of [`crate::backups`] use it for their bucket.
pub(crate) use store::open as open_store;

/// Opens the object store a `[files] store` value names (a directory, created when missing, or
/// `s3://bucket/prefix`), as the files service does: `portico restore` puts a backup's files
/// back through it.
///
/// # Errors
/// [`FileError::Invalid`] for a store that cannot be opened.
pub fn open_store_url(store: &str) -> Result<Arc<dyn ObjectStore>, FileError> {
    store::open(store)
}

use crate::{Collection, Document, Platform, Selector};

/// Who a file operation is done for, and how their access is checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FileAccess {
    /// Server code: no check.
    Server,
    /// A client under the collection's update rules (as [`Collection::client_update`]); for
    /// reads, anyone who may read the document.
    Rules(Option<String>),
    /// A client (`user_id`, `None` when anonymous) who may touch the document only when it
    /// matches `selector` (a door's access scope, `_id` included).
    Scoped {
        /// The document's `_id` and the access scope.
        selector: Selector,
        /// The caller.
        user_id: Option<String>,
    },
}

impl FileAccess {
    /// The client, `None` for server code and anonymous callers.
    fn user_id(&self) -> Option<&str> {
        match self {
            FileAccess::Server => None,
            FileAccess::Rules(user_id) | FileAccess::Scoped { user_id, .. } => user_id.as_deref(),
        }
    }
}

/// One file field of one document: where a file operation acts.
#[derive(Debug, Clone, Copy)]
pub struct FileSlot<'a> {
    /// The collection.
    pub collection: &'a Collection,
    /// The document's `_id`.
    pub id: &'a str,
    /// The file field.
    pub field: &'a str,
}

impl<'a> FileSlot<'a> {
    /// The field `field` of the document `id` of `collection`.
    pub fn new(collection: &'a Collection, id: &'a str, field: &'a str) -> FileSlot<'a> {
        FileSlot {
            collection,
            id,
            field,
        }
    }

    /// The collection, the document's `_id` and the field.
    pub fn parts(self) -> (&'a Collection, &'a str, &'a str) {
        (self.collection, self.id, self.field)
    }
}

/// One stored file, as its document's field holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file's name, unique within its field.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
    /// Its type, judged by its content.
    pub mime: String,
    /// The lowercase hex SHA-256 of its bytes.
    pub sha256: String,
    /// When it was stored (ISO-8601).
    pub created_at: String,
}

impl FileMeta {
    /// The metadata as the document holds it.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "size": self.size,
            "type": self.mime,
            "sha256": self.sha256,
            "createdAt": self.created_at,
        })
    }

    /// Metadata read from a document; `None` for anything that is not.
    pub fn from_json(value: &Value) -> Option<FileMeta> {
        let map = value.as_object()?;
        let text = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(FileMeta {
            name: text("name")?,
            size: map.get("size").and_then(Value::as_u64)?,
            mime: text("type")?,
            sha256: text("sha256")?,
            created_at: text("createdAt").unwrap_or_default(),
        })
    }
}

/// The files of `field` in `doc` (one object, or an array of them).
pub fn files_of(doc: &Document, field: &str) -> Vec<FileMeta> {
    match doc.get(field) {
        Some(Value::Array(items)) => items.iter().filter_map(FileMeta::from_json).collect(),
        Some(v @ Value::Object(_)) => FileMeta::from_json(v).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The key `file` of `field` of the document `id` of `collection` is stored under in a files
/// store (`f/<collection>/<id>/<field>/<sha256>-<hash of the name>`; its thumbnails are
/// `<key>.thumb-<size>`). Backups copy these.
pub fn file_key(collection: &str, id: &str, field: &str, file: &FileMeta) -> String {
    name::final_key(collection, id, field, &file.name, &file.sha256)
}

struct Inner {
    config: FilesConfig,
    store: Arc<dyn ObjectStore>,
    /// File fields by collection, then by field name.
    fields: RwLock<BTreeMap<String, BTreeMap<String, FileField>>>,
    /// Thumbnails being made at once (each decodes a whole image).
    thumbs: tokio::sync::Semaphore,
    /// The server's memory budget, shared with the request bodies in flight: a thumbnail's
    /// decode reserves what it holds from it ([`Files::share_memory_budget`]).
    memory: std::sync::OnceLock<MemoryBudget>,
}

/// A server-wide memory budget: a semaphore of `units` permits of `unit` bytes each.
#[derive(Debug, Clone)]
struct MemoryBudget {
    permits: Arc<tokio::sync::Semaphore>,
    unit: u64,
    units: u32,
}

/// Thumbnails made at once: each decodes a whole image on a blocking thread.
pub const THUMBS_AT_ONCE: usize = 2;
/// How long a thumbnail waits for room in the memory budget before its 503.
pub const THUMB_BUDGET_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The files service of a platform ([`Platform::set_files`]). Cheap to clone.
#[derive(Clone)]
pub struct Files {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files")
            .field("store", &self.inner.config.store)
            .field("max_size", &self.inner.config.max_size)
            .finish_non_exhaustive()
    }
}

impl Files {
    /// Opens the store `config` names (creating a local directory when missing).
    ///
    /// # Errors
    /// [`FileError::Invalid`] for a store that cannot be opened (an unwritable directory, an
    /// `s3://` URL without a bucket or without usable `AWS_*` settings).
    pub fn open(config: FilesConfig) -> Result<Files, FileError> {
        let store = store::open(&config.store)?;
        Ok(Files::with_store(config, store))
    }

    /// Files kept in `store` (any [`ObjectStore`]).
    pub fn with_store(config: FilesConfig, store: Arc<dyn ObjectStore>) -> Files {
        Files {
            inner: Arc::new(Inner {
                config,
                store,
                fields: RwLock::new(BTreeMap::new()),
                thumbs: tokio::sync::Semaphore::new(THUMBS_AT_ONCE),
                memory: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Counts the decodes of thumbnails against a server-wide memory budget (the one request
    /// bodies in flight reserve from): `permits` of `unit` bytes each, `units` in all. A decode
    /// reserves what it holds at its peak (the image's pixels, see the files docs) before it
    /// starts, and waits up to [`THUMB_BUDGET_WAIT`] for room (then 503 with `Retry-After`);
    /// a decode larger than the whole budget reserves all of it. Once; later calls are ignored.
    pub fn share_memory_budget(&self, permits: Arc<tokio::sync::Semaphore>, unit: u64, units: u32) {
        let _ = self.inner.memory.set(MemoryBudget {
            permits,
            unit: unit.max(1),
            units,
        });
    }

    /// Reserves `bytes` from the memory budget, when there is one.
    async fn reserve_memory(
        &self,
        bytes: u64,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, FileError> {
        let Some(budget) = self.inner.memory.get() else {
            return Ok(None);
        };
        let units = u32::try_from(bytes.div_ceil(budget.unit))
            .unwrap_or(u32::MAX)
            .min(budget.units);
        let acquire = budget.permits.clone().acquire_many_owned(units);
        match tokio::time::timeout(THUMB_BUDGET_WAIT, acquire).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            Ok(Err(_)) | Err(_) => Err(FileError::Busy(
                "The server is busy decoding other images; retry shortly".into(),
            )),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FilesConfig {
        &self.inner.config
    }

    /// The object store files are kept in.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner.store
    }

    /// Declares `field` of `collection` a file field. Once this service is the platform's
    /// ([`Platform::set_files`]), no client write sets, changes or removes the field
    /// ([`Collection::check_server_fields`]): its metadata changes only by an upload or a delete.
    ///
    /// # Errors
    /// [`FileError::Invalid`] for a field name that is not letters, digits and `_`.
    pub fn declare(&self, collection: &str, field: &str, spec: FileField) -> Result<(), FileError> {
        if !config::valid_field_name(field) {
            return Err(FileError::Invalid(format!(
                "`{field}` cannot be a file field: use letters, digits and _, starting with a letter"
            )));
        }
        self.inner
            .fields
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(collection.to_owned())
            .or_default()
            .insert(field.to_owned(), spec);
        Ok(())
    }

    /// The file field `field` of `collection`, when declared.
    pub fn field(&self, collection: &str, field: &str) -> Option<FileField> {
        self.inner
            .fields
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(collection)
            .and_then(|f| f.get(field))
            .cloned()
    }

    /// The file fields of `collection`, by name.
    pub fn fields(&self, collection: &str) -> BTreeMap<String, FileField> {
        self.inner
            .fields
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(collection)
            .cloned()
            .unwrap_or_default()
    }

    /// The collections with file fields.
    pub fn collections(&self) -> Vec<String> {
        self.inner
            .fields
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The declared field, or 404.
    fn declared(&self, collection: &str, field: &str) -> Result<FileField, FileError> {
        self.field(collection, field).ok_or_else(|| {
            FileError::NotFound(format!("{collection} has no file field named {field:?}"))
        })
    }

    /// The document `id` when `access` may read it; 404 otherwise (a caller outside its scope
    /// learns nothing of it). A client sees it through the collection's field rules: the
    /// files of a field hidden from it are not there.
    async fn readable(
        collection: &Collection,
        id: &str,
        access: &FileAccess,
    ) -> Result<Document, FileError> {
        let found = match access {
            FileAccess::Scoped { selector, .. } => collection.find_one(selector).await?,
            FileAccess::Server | FileAccess::Rules(_) => collection.get(id).await?,
        };
        let doc = match found {
            Some(doc) if portico_store::document_id(&doc) == Some(id) => doc,
            _ => return Err(FileError::NotFound("Item not found".into())),
        };
        if let FileAccess::Server = access {
            return Ok(doc);
        }
        let view = collection.field_view(access.user_id()).await?;
        Ok(view.applied(doc))
    }

    /// The document `id` when `access` may change `field` of it by `modifier`.
    async fn writable(
        collection: &Collection,
        id: &str,
        field: &str,
        access: &FileAccess,
        modifier: &Value,
    ) -> Result<Document, FileError> {
        if let FileAccess::Rules(_) = access {
            collection
                .refuse_without_allow_update()
                .map_err(|_| FileError::AccessDenied)?;
        }
        let doc = Files::readable(collection, id, access).await?;
        if !matches!(access, FileAccess::Server) {
            let stored = collection
                .get(id)
                .await?
                .ok_or_else(|| FileError::NotFound("Item not found".into()))?;
            collection
                .field_view(access.user_id())
                .await?
                .check_write(&stored, [field])?;
        }
        if let FileAccess::Rules(user_id) = access {
            collection
                .check_update(user_id.as_deref(), &doc, &[field.to_owned()], modifier)
                .await
                .map_err(|_| FileError::AccessDenied)?;
        }
        Ok(doc)
    }

    /// The metadata of the file `name` of `field` of the document `id`.
    ///
    /// # Errors
    /// [`FileError::NotFound`] when the document (as `access` sees it), the field or the file
    /// is missing.
    pub async fn meta(
        &self,
        slot: FileSlot<'_>,
        name: &str,
        access: &FileAccess,
    ) -> Result<FileMeta, FileError> {
        let (collection, id, field) = slot.parts();
        self.declared(collection.name(), field)?;
        let doc = Files::readable(collection, id, access).await?;
        files_of(&doc, field)
            .into_iter()
            .find(|f| f.name == name)
            .ok_or_else(|| FileError::NotFound("No such file".into()))
    }

    /// Removes the file `name` from `field` of the document `id`: its metadata first (one
    /// conditional update), then its bytes and thumbnails.
    ///
    /// # Errors
    /// [`FileError::NotFound`], [`FileError::AccessDenied`], [`FileError::Conflict`].
    pub async fn delete(
        &self,
        slot: FileSlot<'_>,
        name: &str,
        access: &FileAccess,
    ) -> Result<FileMeta, FileError> {
        let (collection, id, field) = slot.parts();
        let spec = self.declared(collection.name(), field)?;
        let modifier = json!({"$pull": {field: {"name": name}}});
        for _ in 0..ATTEMPTS {
            let doc = Files::writable(collection, id, field, access, &modifier).await?;
            let files = files_of(&doc, field);
            let Some(gone) = files.iter().find(|f| f.name == name).cloned() else {
                return Err(FileError::NotFound("No such file".into()));
            };
            let kept: Vec<Value> = files
                .iter()
                .filter(|f| f.name != name)
                .map(FileMeta::to_json)
                .collect();
            let value = if spec.max == 1 {
                Value::Null
            } else {
                Value::Array(kept)
            };
            if self.set_field(slot, &doc, value, access).await? {
                self.remove_objects(collection.name(), id, field, &gone)
                    .await;
                return Ok(gone);
            }
        }
        Err(FileError::Conflict)
    }

    /// Sets the field of `slot` to `value` when the document is still `doc`; false when it
    /// changed meanwhile. The collection's update hooks are handed the client of `access`.
    async fn set_field(
        &self,
        slot: FileSlot<'_>,
        doc: &Document,
        value: Value,
        access: &FileAccess,
    ) -> Result<bool, FileError> {
        let (collection, id, field) = slot.parts();
        let selector = Selector::by_id(id).and_etag(portico_store::etag(doc));
        let mut set = Map::new();
        set.insert(field.to_owned(), value);
        let update = crate::Update::set(set).map_err(crate::Error::from)?;
        let result = collection
            .update_as(
                access.user_id(),
                &selector,
                &update,
                crate::UpdateOptions::default(),
            )
            .await?;
        Ok(result.matched > 0)
    }

    /// Deletes a file's bytes and thumbnails (errors logged: the sweep retries).
    async fn remove_objects(&self, collection: &str, id: &str, field: &str, file: &FileMeta) {
        let key = name::final_key(collection, id, field, &file.name, &file.sha256);
        let dir = key.rsplit_once('/').map_or("", |(dir, _)| dir).to_owned();
        self.delete_under(&dir, &key).await;
    }

    /// Deletes every object under the folder `dir` whose key starts with `key` (a file and
    /// its thumbnails; with `key == dir`, all the files of a document).
    async fn delete_under(&self, dir: &str, key: &str) {
        use futures::StreamExt;
        let store = &self.inner.store;
        let mut listed = store.list(Some(&object_store::path::Path::from(dir)));
        while let Some(item) = listed.next().await {
            match item {
                Ok(meta) if meta.location.as_ref().starts_with(key) => {
                    if let Err(e) = store.delete(&meta.location).await {
                        tracing::warn!(key = %meta.location, "deleting a file failed: {e}");
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(key, "listing files failed: {e}");
                    return;
                }
            }
        }
    }
}

/// A platform's collections ask its files service for their file fields: a client write never
/// changes those (see [`Collection::check_server_fields`]).
impl crate::collection::ServerFields for std::sync::OnceLock<Files> {
    fn of(&self, collection: &str) -> Vec<String> {
        let Some(files) = self.get() else {
            return Vec::new();
        };
        files
            .inner
            .fields
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(collection)
            .map(|fields| fields.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// How many times a metadata write is retried when the document changed meanwhile.
const ATTEMPTS: usize = 8;

impl Platform {
    /// Gives the platform a files service (once; later calls are ignored and return false).
    pub fn set_files(&self, files: Files) -> bool {
        self.files_cell().set(files).is_ok()
    }

    /// The files service, when the platform has one.
    pub fn files(&self) -> Option<&Files> {
        self.files_cell().get()
    }
}
