//! Modifiers (`$set`, `$inc`, ...) and whole-document replacement.

use serde_json::Value;

use crate::{Document, Result, Selector};

/// A parsed update: either a modifier or a replacement document.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    // SKELETON: the store work chooses the representation.
    _private: (),
}

impl Update {
    /// Parses an update. An object whose keys all start with `$` is a modifier; an object with no
    /// `$` key is a replacement; a mix is an error.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] naming the problem.
    pub fn parse(value: &Value) -> Result<Update> {
        todo!("store: Update::parse {value}")
    }

    /// The modifier `{"$set": fields}`, where dotted keys are nested paths.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] when a field name is not usable (empty, `$`-prefixed, `_id`).
    pub fn set(fields: Document) -> Result<Update> {
        todo!("store: Update::set {fields:?}")
    }

    /// A whole-document replacement (the stored `_id` is kept).
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] when a key starts with `$` or `_id` differs from the stored one.
    pub fn replace(doc: Document) -> Result<Update> {
        todo!("store: Update::replace {doc:?}")
    }

    /// True for a replacement, false for a modifier.
    pub fn is_replacement(&self) -> bool {
        todo!("store: Update::is_replacement")
    }

    /// The top-level field names the update may change (for allow/deny rules), sorted, no duplicates.
    pub fn field_names(&self) -> Vec<String> {
        todo!("store: Update::field_names")
    }

    /// Applies the update to `doc` in place. On error, `doc` is unchanged.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`]: `$inc` on a non-number, `$push` on a non-array, changing `_id`...
    pub fn apply(&self, doc: &mut Document) -> Result<()> {
        todo!("store: Update::apply {doc:?}")
    }

    /// The document an upsert inserts when nothing matches `selector`: the selector's equalities,
    /// then the update applied, with a new `_id` unless one is given.
    ///
    /// # Errors
    /// As [`Update::apply`].
    pub fn upsert_document(&self, selector: &Selector) -> Result<Document> {
        todo!("store: Update::upsert_document {selector:?}")
    }
}
