//! Candidates: how SQL narrows the documents a selector may match, before the reference matcher
//! decides.
//!
//! A primary-key lookup when the selector pins `_id`; an index table when it requires
//! `path == scalar` on an indexed path; otherwise a scan in `_id` order, where SQLite skips the
//! rows whose stored text cannot hold a required string. Narrowing may keep too many
//! candidates, never too few: every one is then checked with [`crate::Selector::matches`].

use std::ops::ControlFlow;

use rusqlite::Connection;
use rusqlite::types::{Value as SqlValue, ValueRef};
use serde_json::Value;

use super::error::corrupt;
use super::index::value_key;
use super::schema::{collection_table, index_table};
use crate::{Document, Result, Selector};

/// Where the candidates of a selector come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// The one document with this `_id`.
    Id(String),
    /// The documents with one of these `_id`s (`{"_id": {"$in": [...]}}`), by primary key.
    Ids(Vec<String>),
    /// The documents whose index on `path` holds `key`, in `_id` order.
    Index {
        /// The indexed path.
        path: String,
        /// The index key of the required value.
        key: String,
    },
    /// The documents whose stored JSON text contains every one of `needles` and whose top-level
    /// fields hold the `numbers` (or an array there), in `_id` order.
    ///
    /// A document where `path == "text"` holds contains the JSON string `"text"` in its stored
    /// form, because documents are only ever written by `serde_json`, which writes a given string
    /// the same way every time; likewise `true` and `false`. So SQLite's `instr` can drop most
    /// non-matching rows of a scan before they are decoded, which is where a scan spends its time.
    ///
    /// Numbers are not looked for as text (`1` may be stored as `1.0`); for a top-level field,
    /// SQLite's `json_extract` compares them by value instead, keeping any document where the
    /// field is an array (whose elements the matcher looks at). Only integers below 2^53 are used,
    /// where SQLite's exact integer/real comparison and the matcher's agree.
    Scan {
        /// JSON texts the document must contain.
        needles: Vec<String>,
        /// (SQLite JSON path of a top-level field, the number it must equal).
        numbers: Vec<(String, serde_json::Number)>,
        /// (SQLite JSON path of a top-level field, the length of the array it must hold).
        ///
        /// `{"a": {"$size": 3}}` over documents with huge arrays would otherwise decode every
        /// one of them (some 50x their text in memory) to look at one length; SQLite counts the
        /// elements in its own compact form of the text instead, and only the documents that
        /// pass are decoded.
        sizes: Vec<(String, usize)>,
    },
    /// Every document in `_id` order, `limit` rows (-1: all) after `offset`, both done by SQLite;
    /// for a selector that matches everything.
    Page {
        /// Rows to read at most; -1 for no limit.
        limit: i64,
        /// Rows to pass over first.
        offset: i64,
    },
}

/// The cheapest way to find the candidates of `selector` in `collection`.
pub(crate) fn plan(conn: &Connection, collection: &str, selector: &Selector) -> Result<Plan> {
    if let Some(id) = selector.id_equality() {
        return Ok(Plan::Id(id.to_owned()));
    }
    if let Some(ids) = selector.id_set() {
        return Ok(Plan::Ids(ids.into_iter().map(str::to_owned).collect()));
    }
    let mut sizes: Vec<(String, usize)> = selector
        .sizes()
        .into_iter()
        .filter_map(|(path, n)| Some((top_level_json_path(path)?, n)))
        .collect();
    sizes.dedup();
    let equalities = selector.equalities();
    if equalities.is_empty() {
        return Ok(Plan::Scan {
            needles: Vec::new(),
            numbers: Vec::new(),
            sizes,
        });
    }
    let kept = super::index::cached(conn, collection)?;
    let paths = &kept.paths;
    for &(path, value) in &equalities {
        // `{path: null}` also matches documents without the field, which have no index row.
        if value.is_null() || !paths.iter().any(|p| p == path) {
            continue;
        }
        if let Some(key) = value_key(value) {
            return Ok(Plan::Index {
                path: path.to_owned(),
                key,
            });
        }
    }
    let mut needles: Vec<String> = equalities
        .iter()
        .filter(|(_, value)| value.is_string() || value.is_boolean())
        .filter_map(|(_, value)| serde_json::to_string(value).ok())
        .collect();
    needles.sort();
    needles.dedup();
    let mut numbers: Vec<(String, serde_json::Number)> = equalities
        .iter()
        .filter_map(|&(path, value)| match value {
            Value::Number(n) if exact_in_sqlite(n) => Some((top_level_json_path(path)?, n.clone())),
            _ => None,
        })
        .collect();
    numbers.dedup();
    Ok(Plan::Scan {
        needles,
        numbers,
        sizes,
    })
}

/// Only integers below 2^53 in magnitude narrow a scan. SQLite reads a stored number's text
/// with its own float parser, which is not guaranteed to round a long fraction
/// (`2.8535563002202693e-175`) to the same `f64` as the matcher's exact decimal comparison
/// would need; an integer below 2^53 is exact for both, and any stored spelling of it (`7`,
/// `7.0`, `70e-1`) reads as that value in SQLite too. A big integer (`18446744073709551617`)
/// reads as a rounded real, so it is left to the matcher as well.
fn exact_in_sqlite(n: &serde_json::Number) -> bool {
    const EXACT: i64 = 1 << 53;
    n.as_i64().is_some_and(|i| i.abs() < EXACT)
}

/// The SQLite JSON path of a top-level field (`$."name"`), or `None` for a dotted path or a name
/// the path syntax cannot quote.
fn top_level_json_path(path: &str) -> Option<String> {
    if path.is_empty() || path.contains(['.', '"', '\\']) {
        return None;
    }
    Some(format!("$.\"{path}\""))
}

/// A number [`exact_in_sqlite`] accepted, as a SQLite integer.
fn sql_number(n: &serde_json::Number) -> SqlValue {
    n.as_i64().map_or(SqlValue::Null, SqlValue::Integer)
}

/// Calls `visit` with each candidate of `plan`, in `_id` order, until it breaks.
pub(crate) fn for_each_candidate(
    conn: &Connection,
    collection: &str,
    plan: &Plan,
    mut visit: impl FnMut(String, Document) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let table = collection_table(collection);
    // An equality on an indexed column is written `IN (?1)`: with `= ?1` and an ORDER BY,
    // SQLite re-prepares the statement on every run after a new binding (measured with
    // `sqlite3_stmt_status(SQLITE_STMTSTATUS_REPREPARE)`: every login-token lookup paid a
    // parse and plan); `IN` with one value is planned as the same equality search.
    let (sql, args): (String, Vec<SqlValue>) = match plan {
        Plan::Id(id) => (
            format!("SELECT id, doc FROM {table} WHERE id = ?1"),
            vec![SqlValue::Text(id.clone())],
        ),
        Plan::Ids(ids) => (
            // One parameter, the ids as a JSON array, whatever their number.
            format!(
                "SELECT id, doc FROM {table} WHERE id IN (SELECT value FROM json_each(?1)) \
                 ORDER BY id"
            ),
            vec![SqlValue::Text(
                serde_json::to_string(ids).map_err(|e| crate::Error::Backend(e.to_string()))?,
            )],
        ),
        Plan::Index { path, key } => (
            format!(
                "SELECT c.id, c.doc FROM {index} AS x JOIN {table} AS c ON c.id = x.id \
                 WHERE x.value IN (?1) ORDER BY x.id",
                index = index_table(collection, path)
            ),
            vec![SqlValue::Text(key.clone())],
        ),
        Plan::Scan {
            needles,
            numbers,
            sizes,
        } => {
            let mut filter = Vec::new();
            let mut args = Vec::new();
            for needle in needles {
                args.push(SqlValue::Text(needle.clone()));
                filter.push(format!("instr(doc, ?{}) > 0", args.len()));
            }
            for (json_path, number) in numbers {
                args.push(SqlValue::Text(json_path.clone()));
                let p = args.len();
                args.push(sql_number(number));
                let v = args.len();
                filter.push(format!(
                    "(json_type(doc, ?{p}) = 'array' OR json_extract(doc, ?{p}) = ?{v})"
                ));
            }
            for (json_path, n) in sizes {
                args.push(SqlValue::Text(json_path.clone()));
                let p = args.len();
                args.push(SqlValue::Integer(i64::try_from(*n).unwrap_or(i64::MAX)));
                let v = args.len();
                filter.push(format!(
                    "(json_type(doc, ?{p}) = 'array' AND json_array_length(doc, ?{p}) = ?{v})"
                ));
            }
            let filter = if filter.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", filter.join(" AND "))
            };
            (
                format!("SELECT id, doc FROM {table}{filter} ORDER BY id"),
                args,
            )
        }
        Plan::Page { limit, offset } => (
            format!("SELECT id, doc FROM {table} ORDER BY id LIMIT ?1 OFFSET ?2"),
            vec![SqlValue::Integer(*limit), SqlValue::Integer(*offset)],
        ),
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let doc = parse_doc(collection, &id, row.get_ref(1)?)?;
        if visit(id, doc)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// Decodes a stored document.
pub(crate) fn parse_doc(collection: &str, id: &str, value: ValueRef<'_>) -> Result<Document> {
    match value {
        ValueRef::Text(text) => {
            serde_json::from_slice(text).map_err(|e| corrupt(collection, id, &e))
        }
        _ => Err(not_text(collection, id)),
    }
}

pub(crate) fn not_text(collection: &str, id: &str) -> crate::Error {
    crate::Error::Backend(format!(
        "sqlite: stored document {id:?} of collection {collection:?} is not text"
    ))
}
