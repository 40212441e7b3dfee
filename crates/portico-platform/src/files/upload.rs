//! Streaming a file in: to a temporary key while it is hashed, typed and measured; then its
//! metadata into the document; then to its final key.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use object_store::path::Path;
use object_store::{ObjectStoreExt, WriteMultipart};
use rand::distr::{Alphanumeric, SampleString};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::kind::{SNIFF_BYTES, detect};
use super::name::{final_key, sanitize, temp_key, unique};
use super::{ATTEMPTS, FileAccess, FileError, FileMeta, FileSlot, Files, files_of};

/// Bytes sent to an S3 store per part: S3 needs at least 5 MiB for every part but the last.
const S3_PART_BYTES: usize = 5 * 1024 * 1024;
/// Bytes written to a local file per part.
const LOCAL_PART_BYTES: usize = 1024 * 1024;
/// Parts in flight to the store at once per upload.
const PARTS_IN_FLIGHT: usize = 2;

/// One file to store: its name and declared type as the client gave them.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::files::NewFile;
///
/// let file = NewFile::default().name("photo.png").declared_type("image/png");
/// assert_eq!(file.name, "photo.png");
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NewFile {
    /// The client's name (sanitized before use).
    pub name: String,
    /// The declared `Content-Type` (believed only for content without magic bytes).
    pub declared_type: Option<String>,
}

impl NewFile {
    /// Sets [`name`](NewFile::name): the client's name (sanitized before use).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets [`declared_type`](NewFile::declared_type): the declared `Content-Type` (believed only
    /// for content without magic bytes) (to `Some`).
    pub fn declared_type(mut self, declared_type: impl Into<String>) -> Self {
        self.declared_type = Some(declared_type.into());
        self
    }
}

impl NewFile {
    /// A file named `name` with the declared type `declared_type`.
    pub fn new(name: impl Into<String>, declared_type: Option<String>) -> NewFile {
        NewFile {
            name: name.into(),
            declared_type,
        }
    }
}

/// What was streamed to the temporary key.
struct Written {
    key: Path,
    size: u64,
    sha256: String,
    mime: String,
}

impl Files {
    /// Stores the bytes of `body` as a file of `field` of the document `id` and returns its
    /// metadata (also written into the field: the object, or appended to the array).
    ///
    /// Access is checked before a byte is read. The body is read once, with at most a few
    /// parts of it in memory; it is refused as soon as it passes the size limit or its first
    /// bytes show a type the field does not accept. On any failure nothing is left: no
    /// object, no metadata.
    ///
    /// # Errors
    /// [`FileError::NotFound`] for an unknown document or field, [`FileError::AccessDenied`],
    /// [`FileError::TooLarge`], [`FileError::WrongType`], [`FileError::Aborted`] when `body`
    /// fails, [`FileError::Invalid`] for a full field, store errors.
    pub async fn upload<S, E>(
        &self,
        slot: FileSlot<'_>,
        file: NewFile,
        access: &FileAccess,
        body: S,
    ) -> Result<FileMeta, FileError>
    where
        S: Stream<Item = Result<Bytes, E>> + Send,
        E: std::fmt::Display,
    {
        let (collection, id, field) = slot.parts();
        let spec = self.declared(collection.name(), field)?;
        let name = sanitize(&file.name);
        let modifier = serde_json::json!({"$set": {field: {"name": name}}});
        let doc = Files::writable(collection, id, field, access, &modifier).await?;
        if spec.max > 1 && files_of(&doc, field).len() >= spec.max {
            return Err(full(field, spec.max));
        }
        let written = self
            .write_temp(
                collection.name(),
                id,
                field,
                &spec,
                file.declared_type,
                body,
            )
            .await?;
        match self.commit(slot, &name, access, &modifier, &written).await {
            Ok(meta) => Ok(meta),
            Err(e) => {
                if let Err(del) = self.inner.store.delete(&written.key).await {
                    tracing::warn!(key = %written.key, "removing a refused upload failed: {del}");
                }
                Err(e)
            }
        }
    }

    /// Step 1: the body to a temporary key.
    async fn write_temp<S, E>(
        &self,
        collection: &str,
        id: &str,
        field: &str,
        spec: &super::FileField,
        declared: Option<String>,
        body: S,
    ) -> Result<Written, FileError>
    where
        S: Stream<Item = Result<Bytes, E>> + Send,
        E: std::fmt::Display,
    {
        let random = Alphanumeric.sample_string(&mut rand::rng(), 24);
        let key = Path::from(temp_key(collection, id, field, &random));
        let upload = self.inner.store.put_multipart(&key).await?;
        let part = if self.inner.config.is_s3() {
            S3_PART_BYTES
        } else {
            LOCAL_PART_BYTES
        };
        let mut writer = WriteMultipart::new_with_chunk_size(upload, part);
        let max = self.inner.config.max_size;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut judge = Judge::new(spec, declared.as_deref(), self.inner.config.max_pixels);
        let mut body = std::pin::pin!(body);
        let failure = loop {
            let chunk = match body.next().await {
                None => break None,
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) => break Some(FileError::Aborted(e.to_string())),
            };
            let start = size;
            size = size.saturating_add(chunk.len() as u64);
            if size > max {
                break Some(FileError::TooLarge(max));
            }
            hasher.update(&chunk);
            if let Err(e) = judge.feed(&chunk, start) {
                break Some(e);
            }
            if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
                break Some(e.into());
            }
            writer.put(chunk);
        };
        let judged = match failure {
            Some(e) => Err(e),
            None => judge.verdict(),
        };
        let mime = match judged {
            Ok(mime) => mime,
            Err(e) => {
                if let Err(abort) = writer.abort().await {
                    tracing::warn!(key = %key, "aborting an upload failed: {abort}");
                }
                return Err(e);
            }
        };
        writer.finish().await?;
        Ok(Written {
            key,
            size,
            sha256: hex::encode(hasher.finalize()),
            mime,
        })
    }

    /// Steps 2 and 3: the metadata into the document (when it did not change meanwhile, else
    /// again), then the object to its final key.
    async fn commit(
        &self,
        slot: FileSlot<'_>,
        name: &str,
        access: &FileAccess,
        modifier: &Value,
        written: &Written,
    ) -> Result<FileMeta, FileError> {
        let (collection, id, field) = slot.parts();
        let spec = self.declared(collection.name(), field)?;
        for _ in 0..ATTEMPTS {
            let doc = Files::writable(collection, id, field, access, modifier).await?;
            let files = files_of(&doc, field);
            let (name, replaced, value) = if spec.max == 1 {
                (name.to_owned(), files.into_iter().next(), None)
            } else {
                if files.len() >= spec.max {
                    return Err(full(field, spec.max));
                }
                let taken: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
                let unique = unique(name, &taken);
                let items: Vec<Value> = files.iter().map(FileMeta::to_json).collect();
                (unique, None, Some(items))
            };
            let meta = FileMeta {
                name,
                size: written.size,
                mime: written.mime.clone(),
                sha256: written.sha256.clone(),
                created_at: crate::now_iso(),
            };
            let value = match value {
                Some(mut items) => {
                    items.push(meta.to_json());
                    Value::Array(items)
                }
                None => meta.to_json(),
            };
            if !self.set_field(slot, &doc, value, access).await? {
                continue;
            }
            let key = final_key(collection.name(), id, field, &meta.name, &meta.sha256);
            if let Err(e) = self
                .inner
                .store
                .rename(&written.key, &Path::from(key))
                .await
            {
                // The metadata is committed: the sweep finishes the move from the temporary key.
                tracing::warn!(key = %written.key, "making an upload final failed (the sweep retries): {e}");
            }
            if let Some(old) = replaced {
                let old_key = final_key(collection.name(), id, field, &old.name, &old.sha256);
                let new_key = final_key(collection.name(), id, field, &meta.name, &meta.sha256);
                if old_key != new_key {
                    self.remove_objects(collection.name(), id, field, &old)
                        .await;
                }
            }
            return Ok(meta);
        }
        Err(FileError::Conflict)
    }
}

/// What an upload's first bytes say, judged as they stream in: its type (sniffed once
/// `SNIFF_BYTES` are in, and one the field accepts) and, for an image the server decodes,
/// that its width and height are within the pixel limit (read from its header).
struct Judge<'a> {
    spec: &'a super::FileField,
    declared: Option<&'a str>,
    max_pixels: u64,
    /// The file's first bytes, kept to judge its type and, for an image the server decodes,
    /// to read its size from its header.
    head: Vec<u8>,
    mime: Option<String>,
    /// An image whose width and height are not known yet.
    sizing: bool,
}

impl<'a> Judge<'a> {
    fn new(spec: &'a super::FileField, declared: Option<&'a str>, max_pixels: u64) -> Self {
        Judge {
            spec,
            declared,
            max_pixels,
            head: Vec::new(),
            mime: None,
            sizing: false,
        }
    }

    /// Looks at the next `chunk`, which starts `start` bytes into the file.
    fn feed(&mut self, chunk: &Bytes, start: u64) -> Result<(), FileError> {
        if self.mime.is_none() {
            let want = SNIFF_BYTES - self.head.len();
            self.head.extend_from_slice(&chunk[..chunk.len().min(want)]);
            if self.head.len() >= SNIFF_BYTES {
                let found = detect(&self.head, self.declared);
                if !self.spec.accepts(&found) {
                    return Err(FileError::WrongType(found));
                }
                self.sizing = super::thumb::decoded(&found);
                self.mime = Some(found);
            }
        }
        if self.sizing
            && let Some(mime) = &self.mime
        {
            // `head` is the file's start: add what of this chunk it lacks.
            let have = usize::try_from(self.head.len() as u64 - start).unwrap_or(usize::MAX);
            let want = super::thumb::HEADER_BYTES.saturating_sub(self.head.len());
            let rest = chunk.get(have.min(chunk.len())..).unwrap_or_default();
            self.head.extend_from_slice(&rest[..rest.len().min(want)]);
            if image_size(&self.head, mime, self.max_pixels, false)?.is_some() {
                self.sizing = false;
                self.head = Vec::new();
            }
        }
        Ok(())
    }

    /// The file's type once the whole file was fed, or why it is refused.
    fn verdict(self) -> Result<String, FileError> {
        match self.mime {
            Some(mime) if self.sizing => {
                image_size(&self.head, &mime, self.max_pixels, true).map(|_| mime)
            }
            Some(mime) => Ok(mime),
            None => {
                let found = detect(&self.head, self.declared);
                if !self.spec.accepts(&found) {
                    Err(FileError::WrongType(found))
                } else if super::thumb::decoded(&found) {
                    image_size(&self.head, &found, self.max_pixels, true).map(|_| found)
                } else {
                    Ok(found)
                }
            }
        }
    }
}

/// Checks the size of the image of type `mime` whose first bytes are `head` against
/// `max_pixels`: `Some` when its header was read and it is within the limit, `None` when `head`
/// does not hold the header yet (and may grow: not `whole`, and below the bytes an upload reads
/// for it).
///
/// # Errors
/// [`FileError::TooManyPixels`] past the limit; [`FileError::Invalid`] when the header cannot
/// be read from all `head` can hold.
fn image_size(
    head: &[u8],
    mime: &str,
    max_pixels: u64,
    whole: bool,
) -> Result<Option<()>, FileError> {
    match super::thumb::dimensions(head, mime) {
        Some((width, height)) => {
            if u64::from(width) * u64::from(height) > max_pixels {
                Err(FileError::TooManyPixels(width, height, max_pixels))
            } else {
                Ok(Some(()))
            }
        }
        None if whole || head.len() >= super::thumb::HEADER_BYTES => {
            Err(FileError::Invalid(format!(
                "the {mime} image's width and height cannot be read from its first {} KiB",
                super::thumb::HEADER_BYTES / 1024
            )))
        }
        None => Ok(None),
    }
}

fn full(field: &str, max: usize) -> FileError {
    FileError::Invalid(format!(
        "{field} holds {max} files already; delete one first"
    ))
}
