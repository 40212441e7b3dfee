//! Documents: ordered JSON objects with a string `_id`.

/// A document: a JSON object whose field order is kept. Stored documents always hold a string `_id`.
pub type Document = serde_json::Map<String, serde_json::Value>;

/// The document's `_id` when it is a string.
pub fn document_id(doc: &Document) -> Option<&str> {
    doc.get("_id").and_then(serde_json::Value::as_str)
}
