//! Streaming a file out: the whole file or one byte range, or a thumbnail.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, GetResultPayload, ObjectStore, ObjectStoreExt};

use super::name::{final_key, thumb_key};
use super::{FileAccess, FileError, FileMeta, FileSlot, Files, ThumbSize};

/// A byte range a client asked for (`Range: bytes=...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=a-b` (both inclusive) or `bytes=a-` (`end` is `None`).
    From {
        /// The first byte.
        start: u64,
        /// The last byte, inclusive.
        end: Option<u64>,
    },
    /// `bytes=-n`: the last `n` bytes.
    Last(u64),
}

impl ByteRange {
    /// A `Range` header's single byte range; `None` for anything else (several ranges, other
    /// units, nonsense), which is answered with the whole file.
    pub fn parse(header: &str) -> Option<ByteRange> {
        let spec = header.trim().strip_prefix("bytes=")?.trim();
        if spec.contains(',') {
            return None;
        }
        let (a, b) = spec.split_once('-')?;
        let number = |s: &str| -> Option<u64> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        };
        match (a.trim().is_empty(), b.trim().is_empty()) {
            (true, false) => number(b).map(ByteRange::Last),
            (false, true) => number(a).map(|start| ByteRange::From { start, end: None }),
            (false, false) => {
                let (start, end) = (number(a)?, number(b)?);
                (end >= start).then_some(ByteRange::From {
                    start,
                    end: Some(end),
                })
            }
            (true, true) => None,
        }
    }

    /// The bytes `[start, end)` this range names in a file of `size` bytes.
    ///
    /// # Errors
    /// [`FileError::RangeNotSatisfiable`] when it names no byte of the file.
    pub fn resolve(self, size: u64) -> Result<std::ops::Range<u64>, FileError> {
        let range = match self {
            ByteRange::From { start, end } => {
                let end = end.map_or(size, |e| e.saturating_add(1).min(size));
                start..end
            }
            ByteRange::Last(n) => size.saturating_sub(n)..size,
        };
        if range.start >= range.end {
            return Err(FileError::RangeNotSatisfiable(size));
        }
        Ok(range)
    }
}

/// What part of a file a download asks for.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::files::DownloadOptions;
///
/// let options = DownloadOptions::default().thumb("100x100");
/// assert_eq!(options.thumb.as_deref(), Some("100x100"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DownloadOptions {
    /// One byte range (`Range`), or the whole file.
    pub range: Option<ByteRange>,
    /// A thumbnail size (`?thumb=WxH`), or the file itself.
    pub thumb: Option<String>,
}

impl DownloadOptions {
    /// Sets [`range`](DownloadOptions::range): one byte range (`Range`), or the whole file (to
    /// `Some`).
    pub fn range(mut self, range: ByteRange) -> Self {
        self.range = Some(range);
        self
    }

    /// Sets [`thumb`](DownloadOptions::thumb): A thumbnail size (`?thumb=WxH`), or the file itself
    /// (to `Some`).
    pub fn thumb(mut self, thumb: impl Into<String>) -> Self {
        self.thumb = Some(thumb.into());
        self
    }
}

impl DownloadOptions {
    /// The byte `range` (if any) of the thumbnail `thumb` (if any).
    pub fn new(range: Option<ByteRange>, thumb: Option<String>) -> DownloadOptions {
        DownloadOptions { range, thumb }
    }
}

/// A file (or part of it, or a thumbnail) being sent.
pub struct Download {
    /// The file's metadata.
    pub meta: FileMeta,
    /// The type of what is sent (a thumbnail's may differ from the file's).
    pub mime: String,
    /// The bytes sent and the whole length: `Some((range, size))` for a partial reply.
    pub range: Option<(std::ops::Range<u64>, u64)>,
    /// How many bytes are sent.
    pub length: u64,
    /// An entity tag of what is sent (the content hash, and the thumbnail size).
    pub etag: String,
    /// The bytes, read from the store as they are sent.
    pub body: BoxStream<'static, Result<Bytes, FileError>>,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download")
            .field("meta", &self.meta)
            .field("range", &self.range)
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

impl Files {
    /// Opens the file `name` of `field` of the document `id` for reading: the whole file, the
    /// byte range asked for, or a thumbnail (made on first request and kept): see
    /// [`DownloadOptions`].
    ///
    /// A client may ask only the thumbnail sizes the field lists; [`FileAccess::Server`] any.
    ///
    /// # Errors
    /// [`FileError::NotFound`] when the document (as `access` sees it), the field or the file
    /// is missing; [`FileError::Invalid`] for a thumbnail size the field does not allow or a
    /// file that is not a PNG, JPEG or WebP image; [`FileError::RangeNotSatisfiable`].
    pub async fn download(
        &self,
        slot: FileSlot<'_>,
        name: &str,
        access: &FileAccess,
        options: DownloadOptions,
    ) -> Result<Download, FileError> {
        let DownloadOptions { range, thumb } = options;
        let (collection, id, field) = slot.parts();
        let spec = self.declared(collection.name(), field)?;
        let meta = self.meta(slot, name, access).await?;
        let key = final_key(collection.name(), id, field, &meta.name, &meta.sha256);
        let (key, mime, size, etag) = match thumb.as_deref() {
            None => (
                Path::from(key),
                meta.mime.clone(),
                meta.size,
                meta.sha256.clone(),
            ),
            Some(text) => {
                let size: ThumbSize = text.parse().map_err(FileError::Invalid)?;
                // Server code (a method, the admin page's previews) may ask any size.
                if !spec.thumbs.contains(&size) && !matches!(access, FileAccess::Server) {
                    return Err(FileError::Invalid(format!(
                        "thumbnail size {text} is not allowed for {field}; allowed: {}",
                        allowed(&spec.thumbs)
                    )));
                }
                let mime = super::thumb::output_type(&meta.mime).ok_or_else(|| {
                    FileError::Invalid(format!(
                        "{} is not an image a thumbnail can be made of (PNG, JPEG, WebP)",
                        meta.name
                    ))
                })?;
                let thumb = Path::from(thumb_key(&key, &size.to_string()));
                let length = self
                    .ensure_thumb(&Path::from(key), &thumb, size, &meta)
                    .await?;
                (
                    thumb,
                    mime.to_owned(),
                    length,
                    format!("{}-{size}", meta.sha256),
                )
            }
        };
        let range = range.map(|r| r.resolve(size)).transpose()?;
        let options = GetOptions {
            range: range.clone().map(GetRange::Bounded),
            ..GetOptions::default()
        };
        let got = self.inner.store.get_opts(&key, options).await?;
        let length = range.as_ref().map_or(size, |r| r.end - r.start);
        let body = match got.payload {
            // A local file is read in large chunks (the store's own stream reads 8 KiB at a time).
            GetResultPayload::File(file, _) => {
                read_file(file, got.range.start, got.range.end - got.range.start)
            }
            GetResultPayload::Stream(stream) => stream.map_err(FileError::from).boxed(),
        };
        Ok(Download {
            meta,
            mime,
            range: range.map(|r| (r, size)),
            length,
            etag,
            body,
        })
    }

    /// The length of the thumbnail at `thumb`, made from the file at `source` first when it
    /// is not there yet.
    async fn ensure_thumb(
        &self,
        source: &Path,
        thumb: &Path,
        size: ThumbSize,
        meta: &FileMeta,
    ) -> Result<u64, FileError> {
        let store: &dyn ObjectStore = self.inner.store.as_ref();
        match store.head(thumb).await {
            Ok(found) => return Ok(found.size),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let _permit = self
            .inner
            .thumbs
            .acquire()
            .await
            .map_err(|e| FileError::Store(e.to_string()))?;
        let bytes = store.get(source).await?.bytes().await?;
        let mime = meta.mime.clone();
        // Files stored before `max_pixels` existed are checked here, from their header.
        let (width, height) = super::thumb::dimensions(&bytes, &mime).ok_or_else(|| {
            FileError::Invalid(format!(
                "the {mime} image's width and height cannot be read"
            ))
        })?;
        let max_pixels = self.inner.config.max_pixels;
        if u64::from(width) * u64::from(height) > max_pixels {
            return Err(FileError::TooManyPixels(width, height, max_pixels));
        }
        let cost = super::thumb::decode_cost(width, height, size, bytes.len() as u64);
        let _memory = self.reserve_memory(cost).await?;
        let made = tokio::task::spawn_blocking(move || super::thumb::make(&bytes, &mime, size))
            .await
            .map_err(|e| FileError::Store(e.to_string()))??;
        let length = made.len() as u64;
        store.put(thumb, made.into()).await?;
        Ok(length)
    }
}

/// Bytes read from a local file per chunk sent.
const READ_CHUNK: usize = 256 * 1024;

/// `length` bytes of `file` from `start`, read as they are sent.
fn read_file(
    file: std::fs::File,
    start: u64,
    length: u64,
) -> BoxStream<'static, Result<Bytes, FileError>> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let file = tokio::fs::File::from_std(file);
    futures::stream::try_unfold(
        (file, start, length, false),
        |(mut file, start, left, positioned)| async move {
            if left == 0 {
                return Ok(None);
            }
            if !positioned {
                file.seek(std::io::SeekFrom::Start(start))
                    .await
                    .map_err(|e| FileError::Store(e.to_string()))?;
            }
            let want = usize::try_from(left).unwrap_or(READ_CHUNK).min(READ_CHUNK);
            let mut buf = vec![0u8; want];
            let n = file
                .read(&mut buf)
                .await
                .map_err(|e| FileError::Store(e.to_string()))?;
            if n == 0 {
                return Err(FileError::Store("the file ended early".into()));
            }
            buf.truncate(n);
            Ok(Some((
                Bytes::from(buf),
                (file, start, left - n as u64, true),
            )))
        },
    )
    .boxed()
}

fn allowed(sizes: &[ThumbSize]) -> String {
    if sizes.is_empty() {
        return "none".to_owned();
    }
    sizes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_resolve() {
        let r = |s: &str| ByteRange::parse(s);
        assert_eq!(r("bytes=0-9").unwrap().resolve(100).unwrap(), 0..10);
        assert_eq!(r("bytes=90-").unwrap().resolve(100).unwrap(), 90..100);
        assert_eq!(r("bytes=-10").unwrap().resolve(100).unwrap(), 90..100);
        assert_eq!(r("bytes=-1000").unwrap().resolve(100).unwrap(), 0..100);
        assert_eq!(r("bytes=95-200").unwrap().resolve(100).unwrap(), 95..100);
        assert!(r("bytes=100-").unwrap().resolve(100).is_err());
        assert!(r("bytes=-0").unwrap().resolve(100).is_err());
        for bad in [
            "bytes=5-1",
            "bytes=0-1,3-4",
            "items=0-1",
            "bytes=-",
            "bytes=a-b",
        ] {
            assert_eq!(r(bad), None, "{bad}");
        }
    }
}
