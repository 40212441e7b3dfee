//! Field projections.

use serde_json::Value;

use crate::{Document, Result};

/// A parsed projection: inclusion (`{"a": 1}`) or exclusion (`{"secret": 0}`) of dotted paths.
/// `_id` is included unless excluded explicitly.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    // SKELETON: the store work chooses the representation.
    _private: (),
}

impl Projection {
    /// Parses a projection object.
    ///
    /// # Errors
    /// [`crate::Error::InvalidProjection`] when inclusion and exclusion are mixed (other than `_id`).
    pub fn parse(value: &Value) -> Result<Projection> {
        todo!("store: Projection::parse {value}")
    }

    /// Parses a comma list of field names to include, such as `title,author.name`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidProjection`] for an empty name.
    pub fn parse_list(spec: &str) -> Result<Projection> {
        todo!("store: Projection::parse_list {spec}")
    }

    /// Returns the projected copy of `doc`.
    pub fn apply(&self, doc: &Document) -> Document {
        todo!("store: Projection::apply {doc:?}")
    }
}
