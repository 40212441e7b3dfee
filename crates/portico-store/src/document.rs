//! Documents: ordered JSON objects with a string `_id`.

use serde_json::Value;

use crate::{Error, Result, new_id};

/// A document: a JSON object whose field order is kept. Stored documents always hold a string `_id`.
pub type Document = serde_json::Map<String, serde_json::Value>;

/// The document's `_id` when it is a string.
pub fn document_id(doc: &Document) -> Option<&str> {
    doc.get("_id").and_then(serde_json::Value::as_str)
}

/// Readies a document for insertion: checks its `_id` (a non-empty string when present) and its
/// top-level field names (none may start with `$`), and gives it a new random `_id` in first
/// position when it has none. Returns the id and the document to store.
///
/// Backends call this so every backend accepts and refuses the same documents.
///
/// # Errors
/// [`Error::InvalidDocument`] naming the problem.
pub fn prepare_insert(mut doc: Document) -> Result<(String, Document)> {
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
            let mut out = Document::new();
            if let Some(v) = doc.shift_remove("_id") {
                out.insert("_id".to_string(), v);
            }
            debug_assert_eq!(out.len() + doc.len(), len);
            out.extend(doc);
            Ok((id, out))
        }
    }
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
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
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
}
