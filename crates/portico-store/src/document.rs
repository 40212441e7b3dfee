//! Documents: ordered JSON objects with a string `_id`.

use serde_json::Value;

use crate::{Error, Result, new_id};

/// A document: a JSON object whose field order is kept. Stored documents always hold a string `_id`.
pub type Document = serde_json::Map<String, serde_json::Value>;

/// The largest document a store accepts, in bytes of its JSON text: 16 MiB, the limit users of
/// document databases know. Checked on every insert, upsert, update and replacement.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// The longest `_id` a store accepts on insert, in bytes: 512. A longer id would not fit in the
/// URLs that read, change and remove the document (servers refuse long request lines), so the
/// document could never be addressed again.
pub const MAX_ID_BYTES: usize = 512;

/// The document's `_id` when it is a string.
pub fn document_id(doc: &Document) -> Option<&str> {
    doc.get("_id").and_then(serde_json::Value::as_str)
}

/// Readies a document for insertion: checks its `_id` (a non-empty string of at most
/// [`MAX_ID_BYTES`] when present), its top-level field names (none may start with `$`) and its
/// size, and gives it a new random `_id` in first position when it has none. Returns the id and
/// the document to store.
///
/// Backends call this so every backend accepts and refuses the same documents.
///
/// # Errors
/// [`Error::InvalidDocument`] naming the problem, [`Error::IdTooLong`],
/// [`Error::DocumentTooLarge`].
pub fn prepare_insert(doc: Document) -> Result<(String, Document)> {
    let (id, doc) = prepare_insert_unsized(doc)?;
    check_size(&doc)?;
    Ok((id, doc))
}

/// [`prepare_insert`] without the size check, for a backend that encodes the document with
/// [`encode`] (which checks it).
pub(crate) fn prepare_insert_unsized(doc: Document) -> Result<(String, Document)> {
    let (id, doc) = prepare_fields(doc)?;
    if id.len() > MAX_ID_BYTES {
        return Err(Error::IdTooLong {
            len: id.len(),
            limit: MAX_ID_BYTES,
        });
    }
    Ok((id, doc))
}

/// Refuses a document whose JSON text is over [`MAX_DOCUMENT_BYTES`], counting the text
/// without building it.
///
/// # Errors
/// [`Error::DocumentTooLarge`].
pub fn check_size(doc: &Document) -> Result<()> {
    let mut counter = ByteCounter(0);
    // Writing to a counter cannot fail, and a map with string keys always serializes.
    let _ = serde_json::to_writer(&mut counter, doc);
    check_len(counter.0)
}

/// Refuses a document whose JSON text is `len` bytes long, when that is over
/// [`MAX_DOCUMENT_BYTES`] (for a backend that has the text already).
///
/// # Errors
/// [`Error::DocumentTooLarge`].
pub fn check_len(len: usize) -> Result<()> {
    if len > MAX_DOCUMENT_BYTES {
        return Err(Error::DocumentTooLarge {
            size: len,
            limit: MAX_DOCUMENT_BYTES,
        });
    }
    Ok(())
}

/// An `io::Write` that only counts bytes.
pub(crate) struct ByteCounter(pub(crate) usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn prepare_fields(mut doc: Document) -> Result<(String, Document)> {
    if let Some(key) = doc.keys().find(|k| k.starts_with('$') || k.is_empty()) {
        return Err(Error::InvalidDocument(format!(
            "field name {key:?} is not allowed at the top level of a document"
        )));
    }
    match doc.get("_id") {
        Some(Value::String(id)) if !id.is_empty() => Ok((id.clone(), doc)),
        Some(Value::String(_)) => Err(Error::InvalidDocument("_id must not be empty".into())),
        Some(other) => Err(Error::InvalidDocument(format!(
            "_id must be a string, not {other}"
        ))),
        None => {
            let id = new_id();
            doc.insert("_id".to_string(), Value::String(id.clone()));
            // Move the new `_id` to the front, where readers expect it.
            let len = doc.len();
            let mut out = Document::with_capacity(len);
            if let Some(v) = doc.shift_remove("_id") {
                out.insert("_id".to_string(), v);
            }
            debug_assert_eq!(out.len() + doc.len(), len);
            out.extend(doc);
            Ok((id, out))
        }
    }
}

/// A document's compact JSON text, refused past [`MAX_DOCUMENT_BYTES`] before it is built;
/// written into a buffer of exactly its length (no buffer grown by doubling and copied).
///
/// # Errors
/// [`Error::DocumentTooLarge`]; [`Error::InvalidDocument`] when it cannot be encoded.
pub(crate) fn encode<T: serde::Serialize + ?Sized>(doc: &T) -> Result<String> {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, doc)
        .map_err(|e| Error::InvalidDocument(format!("cannot serialize document: {e}")))?;
    check_len(counter.0)?;
    let mut text = Vec::with_capacity(counter.0);
    serde_json::to_writer(&mut text, doc)
        .map_err(|e| Error::InvalidDocument(format!("cannot serialize document: {e}")))?;
    String::from_utf8(text)
        .map_err(|e| Error::InvalidDocument(format!("cannot serialize document: {e}")))
}

/// A strong entity tag of a stored document: 32 hex characters of the SHA-256 of its JSON
/// encoding. Any change to the document (a field, a value, their order) changes it; the same
/// stored document always gives the same tag. HTTP doors send it quoted in `ETag` and compare it
/// with `If-Match`/`If-None-Match`; [`crate::Selector::and_etag`] makes a write conditional on it.
///
/// ```
/// let doc: portico_store::Document = serde_json::from_str(r#"{"_id": "a", "n": 1}"#)?;
/// let tag = portico_store::etag(&doc);
/// assert_eq!(tag.len(), 32);
/// let changed: portico_store::Document = serde_json::from_str(r#"{"_id": "a", "n": 2}"#)?;
/// assert_ne!(portico_store::etag(&changed), tag);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn etag(doc: &Document) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    // Writing into a hasher cannot fail, and a map of JSON values always serializes.
    if serde_json::to_writer(HashWriter(&mut hasher), doc).is_err() {
        return String::new();
    }
    let digest = hasher.finalize();
    hex::encode(&digest[..16])
}

/// The entity tag of a document given as its compact JSON text: [`etag`] of the document that
/// text encodes, computed from the text itself (for a reply that sends stored text as it is).
pub fn etag_of_json(text: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text);
    hex::encode(&digest[..16])
}

/// Feeds `serde_json`'s output straight into a hasher, without an intermediate buffer.
struct HashWriter<'a>(&'a mut sha2::Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// True when `text` (a stored document read as text, to be sent as it is) is one JSON object;
/// checked without building it. Backends that answer pages from stored text use it to refuse a
/// row changed behind their back.
pub(crate) fn is_object_text(text: &str) -> bool {
    text.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    #[test]
    fn new_ids_go_first() {
        let (id, d) = prepare_insert(doc(json!({"a": 1, "b": 2}))).unwrap_or_default();
        assert_eq!(id.len(), 17);
        assert_eq!(d.keys().collect::<Vec<_>>(), ["_id", "a", "b"]);
        assert_eq!(document_id(&d), Some(id.as_str()));
    }

    #[test]
    fn given_ids_are_kept_and_checked() {
        let (id, _) = prepare_insert(doc(json!({"a": 1, "_id": "x"}))).unwrap_or_default();
        assert_eq!(id, "x");
        for bad in [json!({"_id": 5}), json!({"_id": ""}), json!({"$set": {}})] {
            assert!(matches!(
                prepare_insert(doc(bad)),
                Err(Error::InvalidDocument(_))
            ));
        }
    }

    #[test]
    fn long_ids_and_large_documents_are_refused() {
        let id = "é".repeat(MAX_ID_BYTES / 2);
        assert!(prepare_insert(doc(json!({"_id": id}))).is_ok());
        let id = format!("{id}x");
        assert!(matches!(
            prepare_insert(doc(json!({"_id": id}))),
            Err(Error::IdTooLong {
                len: 513,
                limit: 512
            })
        ));
        // `{"_id":"x","a":"..."}`: 18 bytes around the string.
        let fits = "a".repeat(MAX_DOCUMENT_BYTES - 18);
        assert!(prepare_insert(doc(json!({"_id": "x", "a": fits}))).is_ok());
        let over = "a".repeat(MAX_DOCUMENT_BYTES - 17);
        assert!(matches!(
            prepare_insert(doc(json!({"_id": "x", "a": over}))),
            Err(Error::DocumentTooLarge { size, limit: MAX_DOCUMENT_BYTES }) if size == MAX_DOCUMENT_BYTES + 1
        ));
    }
}
