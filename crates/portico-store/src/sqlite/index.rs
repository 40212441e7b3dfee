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
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::schema::{self, index_table, indexed_paths, sorted_indexes};
pub(crate) use crate::index_key::{keys, value_key};
use crate::index_plan::SortedIndex;
use crate::order_key;
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

/// The indexes a write keeps: the equality indexes' paths and the sorted indexes.
#[derive(Debug, Default, Clone)]
pub(crate) struct Indexes {
    /// The paths of the equality indexes (`ensure_index`, `ensure_unique_index`).
    pub(crate) paths: Vec<String>,
    /// The sorted indexes (`ensure_sorted_index`); `multikey` is set here as the write sets it
    /// in the catalog.
    pub(crate) sorted: Vec<SortedIndex>,
}

impl Indexes {
    /// True when there is no index to keep (a write then needs no document tree).
    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.sorted.is_empty()
    }
}

/// The indexes of `collection`, to keep in a write (a copy: a write marks a sorted index
/// multikey in it as it does in the catalog).
pub(crate) fn indexes(conn: &Connection, collection: &str) -> Result<Indexes> {
    Ok(Indexes::clone(&*cached(conn, collection)?))
}

/// The indexes of `collection` as read from the catalog (see [`cached`]).
fn load(conn: &Connection, collection: &str) -> Result<Indexes> {
    Ok(Indexes {
        paths: indexed_paths(conn, collection)?,
        sorted: sorted_indexes(conn, collection)?,
    })
}

/// The indexes of each collection as last read, per database file, with the catalog version
/// they were read at.
type Kept = HashMap<String, HashMap<String, (i64, Arc<Indexes>)>>;

/// The most collections kept per file.
const KEPT_PER_FILE: usize = 1024;

/// See [`cached`].
static KEPT: LazyLock<Mutex<Kept>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The indexes of `collection`, read from the catalog only when it changed since they were
/// last read from this file: every list and write needs them, and reading and parsing the
/// catalog was a fifth of a sorted list's time (measured). The catalog's version (changed by
/// triggers with every change to it, by any process, see `schema::CATALOG_VERSION`) is read
/// in the caller's transaction, so what is returned is what that transaction would read.
pub(crate) fn cached(conn: &Connection, collection: &str) -> Result<Arc<Indexes>> {
    let (Some(file), Some(version)) = (
        conn.path().filter(|p| !p.is_empty()),
        schema::catalog_version(conn),
    ) else {
        return load(conn, collection).map(Arc::new);
    };
    let kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((at, indexes)) = kept.get(file).and_then(|of_file| of_file.get(collection))
        && *at == version
    {
        return Ok(Arc::clone(indexes));
    }
    drop(kept);
    let indexes = Arc::new(load(conn, collection)?);
    // Outside a transaction each statement has its own snapshot: keep what was read only when
    // the version did not change meanwhile (a new version is a new random number).
    if !conn.is_autocommit() || schema::catalog_version(conn) == Some(version) {
        let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
        let of_file = kept.entry(file.to_owned()).or_default();
        // Bounded: names a caller asks for need not exist (a miss is only a catalog read).
        if of_file.len() >= KEPT_PER_FILE {
            of_file.clear();
        }
        of_file.insert(collection.to_owned(), (version, Arc::clone(&indexes)));
    }
    Ok(indexes)
}

/// Writes the index rows of a document: removes the keys `old` had and `new` has not, adds the
/// keys `new` has and `old` had not. `None` for `old` is an insert; `None` for `new` a removal.
/// Call inside the transaction that writes the document.
///
/// # Errors
/// [`Error::DuplicateKey`] for a unique index's value taken; [`Error::InvalidDocument`] for a
/// document that would give a sorted index more than [`crate::MAX_INDEX_ENTRIES`] entries.
pub(crate) fn update_rows(
    conn: &Connection,
    collection: &str,
    indexes: &mut Indexes,
    id: &str,
    old: Option<&Document>,
    new: Option<&Document>,
) -> Result<()> {
    for path in &indexes.paths {
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
    for index in &mut indexes.sorted {
        update_sorted_rows(conn, collection, index, id, old, new)?;
    }
    Ok(())
}

/// [`update_rows`] for one sorted index.
fn update_sorted_rows(
    conn: &Connection,
    collection: &str,
    index: &mut SortedIndex,
    id: &str,
    old: Option<&Document>,
    new: Option<&Document>,
) -> Result<()> {
    let rows = |doc: Option<&Document>| -> Result<BTreeSet<Vec<Vec<u8>>>> {
        match doc {
            None => Ok(BTreeSet::new()),
            Some(doc) => match order_key::entries(doc, &index.parts) {
                Some(rows) => Ok(rows.into_iter().collect()),
                None => Err(too_many_entries(&index.spec)),
            },
        }
    };
    let old_rows = rows(old)?;
    let new_rows = rows(new)?;
    if old_rows == new_rows {
        return Ok(());
    }
    super::prefixes::update(conn, index, &old_rows, &new_rows)?;
    let n = index.spec.fields.len();
    let table = &index.table;
    let columns: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
    let stale: Vec<&Vec<Vec<u8>>> = old_rows.difference(&new_rows).collect();
    if !stale.is_empty() {
        let filter: Vec<String> = (0..n).map(|i| format!("k{i} = ?{}", i + 2)).collect();
        let mut delete = conn.prepare_cached(&format!(
            "DELETE FROM {table} WHERE id = ?1 AND {}",
            filter.join(" AND ")
        ))?;
        for row in stale {
            delete.raw_bind_parameter(1, id)?;
            for (i, k) in row.iter().enumerate() {
                delete.raw_bind_parameter(i + 2, k.as_slice())?;
            }
            delete.raw_execute()?;
        }
    }
    let added: Vec<&Vec<Vec<u8>>> = new_rows.difference(&old_rows).collect();
    if !added.is_empty() {
        let params: Vec<String> = (0..n).map(|i| format!("?{}", i + 2)).collect();
        let mut insert = conn.prepare_cached(&format!(
            "INSERT INTO {table} (id, {}) VALUES (?1, {}) ON CONFLICT DO NOTHING",
            columns.join(", "),
            params.join(", ")
        ))?;
        for row in added {
            insert.raw_bind_parameter(1, id)?;
            for (i, k) in row.iter().enumerate() {
                insert.raw_bind_parameter(i + 2, k.as_slice())?;
            }
            insert.raw_execute()?;
        }
    }
    if new_rows.len() > 1 && !index.multikey {
        schema::set_multikey(conn, collection, &index.spec)?;
        index.multikey = true;
    }
    Ok(())
}

/// The refusal of a document with too many values for a sorted index.
fn too_many_entries(spec: &crate::IndexSpec) -> Error {
    Error::InvalidDocument(format!(
        "the document holds too many values for the index {spec}: every combination of its \
         fields' values is an entry, and a document may give an index at most {} (an index \
         over two fields should have at most one of them hold a large array)",
        crate::MAX_INDEX_ENTRIES
    ))
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
