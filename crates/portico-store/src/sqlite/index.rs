//! Index tables: for each indexed dotted path, every scalar value found at that path in each
//! document, as `(value, id)` rows.
//!
//! One table per path covers plain fields and paths through arrays alike (`emails.address`,
//! `services.resume.loginTokens.hashedToken`): a document with three values at the path has three
//! rows. The rows are written in the same transaction as the document, so an index never
//! disagrees with the data it indexes.
//!
//! An index only narrows the candidates of a query; the reference matcher
//! ([`crate::Selector::matches`]) still decides every returned document. So the keys must never
//! miss a match, while extra keys are harmless: [`value_key`] maps all numbers through `f64`
//! (values that compare equal always share a key), and [`keys`] collects the scalars of nested
//! arrays too.

use std::collections::BTreeSet;

use rusqlite::{Connection, params};
use serde_json::Value;

use super::schema::index_table;
use crate::value::split_path;
use crate::{Document, Error, Result, lookup_path};

/// Checks that `path` can be indexed: non-empty dotted parts, none starting with `$` (the rule
/// selectors apply to their paths).
///
/// # Errors
/// [`Error::InvalidName`] naming the problem.
pub(crate) fn validate_path(path: &str) -> Result<()> {
    split_path(path)
        .map(drop)
        .map_err(|e| Error::InvalidName(format!("index path: {e}")))
}

/// The index key of a scalar value; `None` for objects and arrays (which are not indexed).
pub(crate) fn value_key(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("n".to_string()),
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

/// Writes the index rows of a document: removes the keys `old` had and `new` has not, adds the
/// keys `new` has and `old` had not. `None` for `old` is an insert; `None` for `new` a removal.
/// Call inside the transaction that writes the document.
pub(crate) fn update_rows(
    conn: &Connection,
    collection: &str,
    paths: &[String],
    id: &str,
    old: Option<&Document>,
    new: Option<&Document>,
) -> Result<()> {
    for path in paths {
        let old_keys = old.map(|d| keys(d, path)).unwrap_or_default();
        let new_keys = new.map(|d| keys(d, path)).unwrap_or_default();
        let table = index_table(collection, path);
        let stale: Vec<&String> = old_keys.difference(&new_keys).collect();
        if !stale.is_empty() {
            let mut delete =
                conn.prepare_cached(&format!("DELETE FROM {table} WHERE value = ?1 AND id = ?2"))?;
            for key in stale {
                delete.execute(params![key, id])?;
            }
        }
        let added: Vec<&String> = new_keys.difference(&old_keys).collect();
        if !added.is_empty() {
            let mut insert = conn.prepare_cached(&format!(
                "INSERT OR IGNORE INTO {table} (value, id) VALUES (?1, ?2)"
            ))?;
            for key in added {
                insert.execute(params![key, id])?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_that_compare_equal_share_a_key() {
        assert_eq!(value_key(&json!(1)), value_key(&json!(1.0)));
        assert_eq!(value_key(&json!(0)), value_key(&json!(-0.0)));
        assert_ne!(value_key(&json!(1)), value_key(&json!("1")));
        assert_ne!(value_key(&json!(true)), value_key(&json!(1)));
        assert_ne!(value_key(&json!(null)), value_key(&json!("n")));
        assert_eq!(value_key(&json!([1])), None);
        assert_eq!(value_key(&json!({"a": 1})), None);
    }

    #[test]
    fn paths_are_validated() {
        assert!(validate_path("a.b.0.c").is_ok());
        for bad in ["", "a..b", ".a", "a.", "$where", "a.$b"] {
            assert!(
                matches!(validate_path(bad), Err(Error::InvalidName(_))),
                "{bad:?}"
            );
        }
    }
}
