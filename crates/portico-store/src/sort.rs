//! Sort specifications.

use std::cmp::Ordering;

use serde_json::Value;

use crate::{Document, Result};

/// A parsed sort: a list of (dotted path, ascending) keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sort {
    keys: Vec<(String, bool)>,
}

impl Sort {
    /// Parses `{"a": 1, "b.c": -1}` or `[["a", "asc"], ["b", "desc"]]`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] naming the problem.
    pub fn parse(value: &Value) -> Result<Sort> {
        todo!("store: Sort::parse {value}")
    }

    /// Parses a comma list such as `-created,title` (a leading `-` means descending).
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] for an empty key or a bad path.
    pub fn parse_list(spec: &str) -> Result<Sort> {
        todo!("store: Sort::parse_list {spec}")
    }

    /// The keys: (dotted path, ascending).
    pub fn keys(&self) -> &[(String, bool)] {
        &self.keys
    }

    /// Compares two documents by this sort (ties keep their order: a stable sort is expected).
    pub fn compare(&self, a: &Document, b: &Document) -> Ordering {
        todo!("store: Sort::compare {a:?} {b:?}")
    }
}
