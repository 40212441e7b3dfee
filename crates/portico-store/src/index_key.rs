//! Index keys shared by every backend's equality indexes.
//!
//! An index only narrows the candidates of a query; the reference matcher
//! ([`crate::Selector::matches`]) decides every returned document. So the keys must never miss a
//! match, while extra keys are harmless: [`value_key`] maps all numbers through `f64` (values that
//! compare equal always share a key), and [`keys`] collects the scalars of nested arrays too.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::{Document, lookup_path};

/// The key of `null`. A unique index ignores it: `null` is no value, like a missing field.
pub(crate) const NULL_KEY: &str = "n";

/// The index key of a scalar value; `None` for objects and arrays (which are not indexed).
pub(crate) fn value_key(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some(NULL_KEY.to_string()),
        Value::Bool(b) => Some(if *b { "b1" } else { "b0" }.to_string()),
        Value::Number(n) => {
            let f = n.as_f64()?;
            // -0.0 == 0.0, so they need one key.
            let f = if f == 0.0 { 0.0 } else { f };
            Some(format!("d{:016x}", f.to_bits()))
        }
        Value::String(s) => Some(format!("s{s}")),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// The keys a unique index on `path` holds for `doc`: [`keys`] without [`NULL_KEY`].
#[cfg_attr(not(feature = "memory"), allow(dead_code))]
pub(crate) fn unique_keys(doc: &Document, path: &str) -> BTreeSet<String> {
    let mut out = keys(doc, path);
    out.remove(NULL_KEY);
    out
}

/// The keys of `doc` for the index on `path`: every scalar at the path, also inside arrays.
pub(crate) fn keys(doc: &Document, path: &str) -> BTreeSet<String> {
    fn collect(value: &Value, out: &mut BTreeSet<String>) {
        match value {
            Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
            Value::Object(_) => {}
            scalar => {
                if let Some(key) = value_key(scalar) {
                    out.insert(key);
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for value in lookup_path(doc, path) {
        collect(value, &mut out);
    }
    out
}
