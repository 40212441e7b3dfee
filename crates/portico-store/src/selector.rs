//! Mongo-style selectors.

use serde_json::Value;

use crate::{Document, Result};

/// A parsed, validated selector. The default selector matches every document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selector {
    // SKELETON: the store work chooses the representation.
    _private: (),
}

impl Selector {
    /// Parses a selector from JSON (an object). A string is shorthand for `{"_id": string}`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSelector`] naming the problem (unknown operator, bad operand...).
    pub fn parse(value: &Value) -> Result<Selector> {
        todo!("store: Selector::parse {value}")
    }

    /// The selector that matches every document.
    pub fn all() -> Selector {
        Selector::default()
    }

    /// The selector `{"_id": id}`.
    pub fn by_id(id: &str) -> Selector {
        todo!("store: Selector::by_id {id}")
    }

    /// True when `doc` matches. This is the reference meaning of a selector for every backend.
    pub fn matches(&self, doc: &Document) -> bool {
        todo!("store: Selector::matches {doc:?}")
    }

    /// When the selector requires `_id` to equal one string, that string (for fast paths).
    pub fn id_equality(&self) -> Option<&str> {
        todo!("store: Selector::id_equality")
    }

    /// Top-level conditions of the form `path == scalar` (scalar: string, number, bool, null) that
    /// every matching document must satisfy; backends use them to narrow candidates by index.
    pub fn equalities(&self) -> Vec<(&str, &Value)> {
        todo!("store: Selector::equalities")
    }
}
