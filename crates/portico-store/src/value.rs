//! Value comparison and path lookup shared by selectors, sort and modifiers.

use std::cmp::Ordering;

use serde_json::Value;

/// Type-bracketed total order over JSON values (null < numbers < strings < objects < arrays <
/// booleans, as the reference platform orders them); within a type, the natural order.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    todo!("store: compare_values {a} {b}")
}

/// The values found at a dotted `path` in `doc`, descending into arrays (array elements and
/// numeric path parts), as selector matching sees them.
pub fn lookup_path<'a>(doc: &'a serde_json::Map<String, Value>, path: &str) -> Vec<&'a Value> {
    todo!("store: lookup_path {doc:?} {path}")
}
