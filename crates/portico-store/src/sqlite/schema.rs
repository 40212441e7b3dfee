//! The tables: a catalog of collections and indexes, one table per collection, one table per index.
//!
//! Collection names and index paths come from clients, so they never appear in SQL as written.
//! A table's name is a fixed prefix followed by the lowercase hex of the name's UTF-8 bytes
//! (`c_<hex::encode(collection)>` for documents, `x_<hex::encode(collection)>_<hex::encode(path)>` for an index; hex has
//! no `_`, so the split is unambiguous). Those names contain only `[a-z0-9_]`, so every
//! collection name a client can send is safe, two names never share a table, and the mapping
//! needs no lookup. The catalog keeps the original names for [`list_collections`] and to find a
//! collection's indexes.
//!
//! The catalog also keeps each collection's document count (`portico_counts`), changed in the
//! same transaction as every write that adds or removes documents, so counting a whole
//! collection is one row read instead of a scan of every document (many milliseconds at a
//! million). A file written before the counts existed gets them computed once, when opened.

use rusqlite::{Connection, OptionalExtension, params};

use crate::index_plan::SortedIndex;
use crate::{IndexSpec, Result};

/// Creates the catalog tables when missing.
pub(crate) fn init(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS portico_collections (
             name TEXT PRIMARY KEY NOT NULL
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS portico_indexes (
             collection TEXT NOT NULL,
             path TEXT NOT NULL,
             PRIMARY KEY (collection, path)
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS portico_sorted (
             collection TEXT NOT NULL,
             name TEXT NOT NULL,
             spec TEXT NOT NULL,
             multikey INTEGER NOT NULL DEFAULT 0,
             PRIMARY KEY (collection, name)
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS portico_counts (
             name TEXT PRIMARY KEY NOT NULL,
             n INTEGER NOT NULL
         ) WITHOUT ROWID;",
    )?;
    conn.execute_batch(SEARCH_CATALOG)?;
    conn.execute_batch(CATALOG_VERSION)?;
    // Files written before unique indexes existed: every index they have is a plain one.
    let has_unique_column = conn
        .prepare("SELECT 1 FROM pragma_table_info('portico_indexes') WHERE name = 'is_unique'")?
        .exists([])?;
    if !has_unique_column {
        conn.execute_batch(
            "ALTER TABLE portico_indexes ADD COLUMN is_unique INTEGER NOT NULL DEFAULT 0",
        )?;
    }
    // Collections created before the counts existed: count them once.
    let uncounted = conn
        .prepare(
            "SELECT name FROM portico_collections \
             WHERE name NOT IN (SELECT name FROM portico_counts)",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    for name in uncounted {
        let n: i64 = conn.query_row(
            &format!("SELECT COUNT(*) FROM {}", collection_table(&name)),
            [],
            |row| row.get(0),
        )?;
        conn.execute(
            "INSERT INTO portico_counts (name, n) VALUES (?1, ?2)",
            params![name, n],
        )?;
    }
    // Compound sorted indexes made before their prefix counts were kept: count them once.
    let sorted = conn
        .prepare("SELECT DISTINCT collection FROM portico_sorted")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    for collection in sorted {
        super::prefixes::build_missing(conn, &sorted_indexes(conn, &collection)?)?;
    }
    Ok(())
}

/// The version of the index catalogs: a one-row table whose number changes (to a random one)
/// with every change to `portico_indexes` or `portico_sorted`, by triggers, so that whatever
/// process or code path changes an index's record, a reader that kept the indexes it read
/// (see `index::cached`) sees that they may be stale. Random rather than counted: a database
/// restored from a backup, or another file at the same path, never shows a version the cache
/// knows for different indexes.
const CATALOG_VERSION: &str = "CREATE TABLE IF NOT EXISTS portico_catalog_version (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     version INTEGER NOT NULL
 );
 INSERT OR IGNORE INTO portico_catalog_version (id, version) VALUES (1, random());
 CREATE TRIGGER IF NOT EXISTS portico_indexes_insert AFTER INSERT ON portico_indexes
 BEGIN UPDATE portico_catalog_version SET version = random(); END;
 CREATE TRIGGER IF NOT EXISTS portico_indexes_update AFTER UPDATE ON portico_indexes
 BEGIN UPDATE portico_catalog_version SET version = random(); END;
 CREATE TRIGGER IF NOT EXISTS portico_indexes_delete AFTER DELETE ON portico_indexes
 BEGIN UPDATE portico_catalog_version SET version = random(); END;
 CREATE TRIGGER IF NOT EXISTS portico_sorted_insert AFTER INSERT ON portico_sorted
 BEGIN UPDATE portico_catalog_version SET version = random(); END;
 CREATE TRIGGER IF NOT EXISTS portico_sorted_update AFTER UPDATE ON portico_sorted
 BEGIN UPDATE portico_catalog_version SET version = random(); END;
 CREATE TRIGGER IF NOT EXISTS portico_sorted_delete AFTER DELETE ON portico_sorted
 BEGIN UPDATE portico_catalog_version SET version = random(); END;";

/// The version of the index catalogs (see [`CATALOG_VERSION`]); `None` when it cannot be read
/// (a file this Portico has not initialised yet): then nothing may be kept.
pub(crate) fn catalog_version(conn: &Connection) -> Option<i64> {
    conn.prepare_cached("SELECT version FROM portico_catalog_version WHERE id = 1")
        .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
        .ok()
}

/// The stored document count of `collection`; `None` when it does not exist.
pub(crate) fn stored_count(conn: &Connection, collection: &str) -> Result<Option<u64>> {
    let n: Option<i64> = conn
        .prepare_cached("SELECT n FROM portico_counts WHERE name = ?1")?
        .query_row(params![collection], |row| row.get(0))
        .optional()?;
    Ok(n.map(|n| u64::try_from(n).unwrap_or(0)))
}

/// Adds `delta` (negative for removals) to the stored count of `collection`. Call inside the
/// write transaction that inserted or removed the documents.
pub(crate) fn add_to_count(conn: &Connection, collection: &str, delta: i64) -> Result<()> {
    if delta != 0 {
        conn.prepare_cached("UPDATE portico_counts SET n = n + ?2 WHERE name = ?1")?
            .execute(params![collection, delta])?;
    }
    Ok(())
}

/// The quoted name of the table holding `collection`'s documents: `(id TEXT PRIMARY KEY, doc TEXT)`.
pub(crate) fn collection_table(collection: &str) -> String {
    format!("\"c_{}\"", hex::encode(collection))
}

/// The quoted name of the table indexing `collection` by `path`: `(value TEXT, id TEXT)`, primary
/// key `(value, id)`.
pub(crate) fn index_table(collection: &str, path: &str) -> String {
    format!("\"x_{}_{}\"", hex::encode(collection), hex::encode(path))
}

/// The name of the unique index over the `value` column of an index table; see [`make_unique`].
fn unique_index_name(collection: &str, path: &str) -> String {
    format!("\"u_{}_{}\"", hex::encode(collection), hex::encode(path))
}

/// Makes the index of `collection` on `path` (which exists) unique: a unique SQLite index over
/// its `value` column, leaving out the key of `null`, so that two documents holding one value at
/// `path` cannot both have their index row. Call inside a write transaction.
///
/// # Errors
/// A SQLite unique-constraint error when stored documents share a value already.
pub(crate) fn make_unique(conn: &Connection, collection: &str, path: &str) -> Result<()> {
    conn.execute_batch(&format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} (value) WHERE value <> '{}'",
        unique_index_name(collection, path),
        index_table(collection, path),
        crate::index_key::NULL_KEY,
    ))?;
    conn.prepare_cached(
        "UPDATE portico_indexes SET is_unique = 1 WHERE collection = ?1 AND path = ?2",
    )?
    .execute(params![collection, path])?;
    Ok(())
}

/// True when `collection` exists.
pub(crate) fn collection_exists(conn: &Connection, collection: &str) -> Result<bool> {
    let found = conn
        .prepare_cached("SELECT 1 FROM portico_collections WHERE name = ?1")?
        .query_row(params![collection], |_| Ok(()))
        .optional()?;
    Ok(found.is_some())
}

/// Creates `collection` when missing. Call inside a write transaction.
pub(crate) fn ensure_collection(conn: &Connection, collection: &str) -> Result<()> {
    if collection_exists(conn, collection)? {
        return Ok(());
    }
    // WITHOUT ROWID: the rows live in the primary-key B-tree itself, ordered by `id`. A lookup
    // by id is one tree descent instead of two (key index, then rowid table), which keeps
    // get-by-id flat as the collection grows (at a million documents the leaves no longer fit
    // in the page cache, and every descent costs a page read); and scans in `_id` order, the
    // natural order of `find`, read the table sequentially.
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {} (id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL) \
         WITHOUT ROWID",
        collection_table(collection)
    ))?;
    conn.prepare_cached("INSERT INTO portico_collections (name) VALUES (?1)")?
        .execute(params![collection])?;
    conn.prepare_cached("INSERT OR REPLACE INTO portico_counts (name, n) VALUES (?1, 0)")?
        .execute(params![collection])?;
    Ok(())
}

/// The indexed paths of `collection`, sorted.
pub(crate) fn indexed_paths(conn: &Connection, collection: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT path FROM portico_indexes WHERE collection IN (?1) ORDER BY path",
    )?;
    let paths = stmt
        .query_map(params![collection], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(paths)
}

/// Creates the (empty) index table for `path` and records it in the catalog. Call inside a write
/// transaction, after checking that the index does not exist.
pub(crate) fn create_index_table(conn: &Connection, collection: &str, path: &str) -> Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {} (
             value TEXT NOT NULL,
             id TEXT NOT NULL,
             PRIMARY KEY (value, id)
         ) WITHOUT ROWID",
        index_table(collection, path)
    ))?;
    conn.prepare_cached("INSERT INTO portico_indexes (collection, path) VALUES (?1, ?2)")?
        .execute(params![collection, path])?;
    Ok(())
}

/// The quoted name of the table of the sorted index `spec` of `collection`:
/// `o_<hex(collection)>_<hex(fields as written)>`, columns `k0..kN` (order keys, see
/// [`crate::order_key`]) and `id`, primary key in the index's order.
pub(crate) fn sorted_table(collection: &str, spec: &IndexSpec) -> String {
    format!(
        "\"o_{}_{}\"",
        hex::encode(collection),
        hex::encode(sorted_name(spec))
    )
}

/// The catalog name of a sorted index: its fields as written (`ownerId,-createdAt`); a unique
/// index and a plain one over the same fields are one index.
pub(crate) fn sorted_name(spec: &IndexSpec) -> String {
    spec.fields_name()
}

/// The sorted indexes of `collection`, in catalog (name) order.
pub(crate) fn sorted_indexes(conn: &Connection, collection: &str) -> Result<Vec<SortedIndex>> {
    let mut stmt = conn.prepare_cached(
        "SELECT spec, multikey FROM portico_sorted WHERE collection IN (?1) ORDER BY name",
    )?;
    let rows = stmt
        .query_map(params![collection], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter()
        .map(|(text, multikey)| {
            let spec = serde_json::from_str(&text)
                .map_err(|e| crate::Error::Backend(format!("sqlite: index {text:?}: {e}")))
                .and_then(|v| IndexSpec::parse(&v))?;
            Ok(SortedIndex {
                parts: spec.split_paths(),
                table: sorted_table(collection, &spec),
                spec,
                multikey: multikey != 0,
            })
        })
        .collect()
}

/// Creates the (empty) table of the sorted index `spec` and records it in the catalog. Call
/// inside a write transaction, after checking that the index does not exist.
pub(crate) fn create_sorted_table(
    conn: &Connection,
    collection: &str,
    spec: &IndexSpec,
) -> Result<SortedIndex> {
    let columns: Vec<String> = (0..spec.fields.len())
        .map(|i| format!("k{i} BLOB NOT NULL"))
        .collect();
    let key = crate::index_plan::key_columns(spec, "");
    let table = sorted_table(collection, spec);
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {table} ({}, id TEXT NOT NULL, PRIMARY KEY ({}, id)) \
         WITHOUT ROWID",
        columns.join(", "),
        key
    ))?;
    conn.prepare_cached(
        "INSERT INTO portico_sorted (collection, name, spec, multikey) VALUES (?1, ?2, ?3, 0)",
    )?
    .execute(params![
        collection,
        sorted_name(spec),
        spec.to_value().to_string()
    ])?;
    let index = SortedIndex {
        parts: spec.split_paths(),
        table,
        spec: spec.clone(),
        multikey: false,
    };
    super::prefixes::start(conn, &index)?;
    Ok(index)
}

/// Records that the sorted index `name` of `collection` holds several entries for a document.
/// Call inside the write transaction that wrote them.
pub(crate) fn set_multikey(conn: &Connection, collection: &str, spec: &IndexSpec) -> Result<()> {
    conn.prepare_cached(
        "UPDATE portico_sorted SET multikey = 1 WHERE collection = ?1 AND name = ?2",
    )?
    .execute(params![collection, sorted_name(spec)])?;
    Ok(())
}

/// Drops the sorted index `spec` of `collection`; false when it did not exist. Call inside a
/// write transaction.
pub(crate) fn drop_sorted(conn: &Connection, collection: &str, spec: &IndexSpec) -> Result<bool> {
    let removed = conn
        .prepare_cached("DELETE FROM portico_sorted WHERE collection = ?1 AND name = ?2")?
        .execute(params![collection, sorted_name(spec)])?;
    let table = sorted_table(collection, spec);
    conn.execute_batch(&format!("DROP TABLE IF EXISTS {table}"))?;
    super::prefixes::forget(conn, &table)?;
    Ok(removed > 0)
}

/// Drops `collection`, its indexes and its catalog entries. Call inside a write transaction.
pub(crate) fn drop_collection(conn: &Connection, collection: &str) -> Result<()> {
    drop_search(conn, collection)?;
    for index in sorted_indexes(conn, collection)? {
        drop_sorted(conn, collection, &index.spec)?;
    }
    for path in indexed_paths(conn, collection)? {
        conn.execute_batch(&format!(
            "DROP TABLE IF EXISTS {}",
            index_table(collection, &path)
        ))?;
    }
    conn.prepare_cached("DELETE FROM portico_indexes WHERE collection = ?1")?
        .execute(params![collection])?;
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS {}",
        collection_table(collection)
    ))?;
    conn.prepare_cached("DELETE FROM portico_collections WHERE name = ?1")?
        .execute(params![collection])?;
    conn.prepare_cached("DELETE FROM portico_counts WHERE name = ?1")?
        .execute(params![collection])?;
    Ok(())
}

/// The catalog of searched collections and their fields (a JSON array; see `search.rs`).
pub(crate) const SEARCH_CATALOG: &str = "CREATE TABLE IF NOT EXISTS portico_search (
     collection TEXT PRIMARY KEY NOT NULL,
     fields TEXT NOT NULL
 ) WITHOUT ROWID";

/// The quoted names of the full-text tables of `collection`: the FTS5 table (`s_<hex>`) and
/// the table giving each document its FTS5 rowid (`k_<hex>`).
pub(crate) fn search_tables(collection: &str) -> (String, String) {
    let hex = hex::encode(collection);
    (format!("\"s_{hex}\""), format!("\"k_{hex}\""))
}

/// The quoted name of a trigger keeping the full-text index of `collection` (`what`: `ins`,
/// `upd` or `del`).
pub(crate) fn search_trigger(collection: &str, what: &str) -> String {
    format!("\"t_{}_{what}\"", hex::encode(collection))
}

/// Drops the full-text index of `collection` (triggers, tables, catalog entry), when it has
/// one. Call inside a write transaction.
pub(crate) fn drop_search(conn: &Connection, collection: &str) -> Result<()> {
    conn.execute_batch(SEARCH_CATALOG)?;
    let (fts, keys) = search_tables(collection);
    let mut sql = String::new();
    for what in ["ins", "upd", "del"] {
        sql.push_str(&format!(
            "DROP TRIGGER IF EXISTS {};",
            search_trigger(collection, what)
        ));
    }
    sql.push_str(&format!(
        "DROP TABLE IF EXISTS {fts}; DROP TABLE IF EXISTS {keys};"
    ));
    conn.execute_batch(&sql)?;
    conn.prepare_cached("DELETE FROM portico_search WHERE collection = ?1")?
        .execute(params![collection])?;
    Ok(())
}

/// The names of all collections, sorted by their UTF-8 bytes (the order of Rust's `str`).
pub(crate) fn list_collections(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT name FROM portico_collections ORDER BY name")?;
    let names = stmt
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_hold_only_safe_characters() {
        for name in ["users", "x\"; DROP TABLE y; --", "", "ünï cödé", "a_b"] {
            let table = collection_table(name);
            let inner = &table[1..table.len() - 1];
            assert!(table.starts_with('"') && table.ends_with('"'));
            assert!(
                inner
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{table}"
            );
        }
    }

    #[test]
    fn distinct_names_get_distinct_tables() {
        assert_ne!(collection_table("a_b"), collection_table("a"));
        assert_ne!(index_table("a", "b_c"), index_table("a_b", "c"));
        assert_eq!(collection_table("ab"), "\"c_6162\"");
    }
}
