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

use rusqlite::{Connection, params};

use super::error::is_unique_violation;
use super::schema::index_table;
pub(crate) use crate::index_key::{keys, value_key};
use crate::value::split_path;
use crate::{Document, Error, Result};

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
            // Only a row that exists already is ignored; a unique index's violation is an error.
            let mut insert = conn.prepare_cached(&format!(
                "INSERT INTO {table} (value, id) VALUES (?1, ?2) \
                 ON CONFLICT (value, id) DO NOTHING"
            ))?;
            for key in added {
                match insert.execute(params![key, id]) {
                    Ok(_) => {}
                    Err(e) if is_unique_violation(&e) => {
                        return Err(Error::DuplicateKey {
                            collection: collection.to_string(),
                            path: path.clone(),
                        });
                    }
                    Err(e) => return Err(e.into()),
                }
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
