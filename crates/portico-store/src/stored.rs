//! A document as a read gives it ([`Stored`]): the compact JSON text a backend keeps, decoded
//! only when something needs to look inside it.

use std::borrow::Cow;

use crate::{Document, Error, Result};

/// A stored document on its way to a reply: its compact JSON text as the backend stores it
/// (SQLite and PostgreSQL), or the decoded document (the memory backend, a projected or
/// computed read). A reply that shows documents as they are stored embeds the text without
/// decoding it; a rule, hook or field rule that must look inside decodes it once
/// ([`Stored::into_document`]).
///
/// The text of a [`Stored::Text`] is one JSON object, and encodes the same document the
/// [`Stored::Document`] of it would hold: [`Stored::etag`] and [`Stored::text`] agree for both.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// The document's compact JSON text (one object), as stored.
    Text(String),
    /// The decoded document.
    Document(Document),
}

impl Stored {
    /// The document, decoding the text of a [`Stored::Text`].
    ///
    /// # Errors
    /// [`Error::Backend`] when the stored text is not a JSON object (a row changed behind the
    /// store's back).
    pub fn into_document(self) -> Result<Document> {
        match self {
            Stored::Document(doc) => Ok(doc),
            Stored::Text(text) => serde_json::from_str(&text).map_err(|e| {
                Error::Backend(format!("a stored document is not a JSON object: {e}"))
            }),
        }
    }

    /// The document's compact JSON text: the stored text as it is, or the document encoded.
    ///
    /// # Errors
    /// [`Error::Backend`] when a decoded document cannot be encoded (a map of JSON values
    /// always can; kept as an error rather than a panic). No size limit applies: the document
    /// is stored already, or is what a reply shows (related documents expanded into it).
    pub fn text(&self) -> Result<Cow<'_, str>> {
        match self {
            Stored::Text(text) => Ok(Cow::Borrowed(text)),
            Stored::Document(doc) => encode(doc).map(Cow::Owned),
        }
    }

    /// [`Stored::text`], owned.
    ///
    /// # Errors
    /// As [`Stored::text`].
    pub fn into_text(self) -> Result<String> {
        match self {
            Stored::Text(text) => Ok(text),
            Stored::Document(doc) => encode(&doc),
        }
    }

    /// The document's strong entity tag ([`crate::etag`]), from the text when it is kept.
    pub fn etag(&self) -> String {
        match self {
            Stored::Text(text) => crate::etag_of_json(text.as_bytes()),
            Stored::Document(doc) => crate::etag(doc),
        }
    }

    /// The length in bytes of the document's compact JSON text (a reply's size budget), counted
    /// without encoding a decoded document into memory.
    pub fn encoded_len(&self) -> usize {
        match self {
            Stored::Text(text) => text.len(),
            Stored::Document(doc) => {
                let mut counter = crate::document::ByteCounter(0);
                // Writing into a counter cannot fail, and a map of JSON values always encodes.
                let _ = serde_json::to_writer(&mut counter, doc);
                counter.0
            }
        }
    }

    /// True when the document is kept as its stored text (not decoded).
    pub fn is_text(&self) -> bool {
        matches!(self, Stored::Text(_))
    }
}

/// `doc`'s compact JSON text, in one pass (the store's `encode` for writes counts the bytes
/// against the document size limit first, a second pass a reply does not need).
fn encode(doc: &Document) -> Result<String> {
    serde_json::to_string(doc).map_err(|e| Error::Backend(format!("cannot encode a document: {e}")))
}

impl From<Document> for Stored {
    fn from(doc: Document) -> Stored {
        Stored::Document(doc)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc() -> Document {
        match json!({"_id": "a", "n": 1.5, "s": "é\"x", "tags": [1, 2]}) {
            serde_json::Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn text_and_document_agree() {
        let parsed = Stored::Document(doc());
        let text = Stored::Text(parsed.text().unwrap().into_owned());
        assert_eq!(parsed.etag(), text.etag());
        assert_eq!(parsed.encoded_len(), text.encoded_len());
        assert_eq!(text.clone().into_document().unwrap(), doc());
        assert!(text.is_text() && !parsed.is_text());
        assert_ne!(Stored::Text("{}".into()).etag(), text.etag());
    }

    #[test]
    fn broken_text_is_an_error_not_a_panic() {
        let err = Stored::Text("[1, 2".into()).into_document().unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
        assert!(Stored::Text("[1]".into()).into_document().is_err());
    }
}
