//! Full-text search on SQLite: an FTS5 table per searched collection, one column per field.
//!
//! The collection's table has no rowid (see `schema.rs`), and an FTS5 table is keyed by one, so
//! a small table `k_<hex>` gives each document a rowid (`rid`, by `_id`). Triggers on the
//! collection's table keep both in step inside every write's own transaction: an insert adds
//! the document's text, an update replaces it, a delete removes it. So no write path (single
//! writes, batches, streamed imports, another process writing the file) can leave the index
//! behind. A field's text is every string it holds (`json_tree`, through arrays and objects).
//! The tokenizer is `unicode61` without removing diacritics: words are runs of letters and
//! digits, compared without case.

use rusqlite::{Connection, OptionalExtension, params};

use super::plan::parse_doc;
use super::schema::{
    SEARCH_CATALOG, collection_exists, collection_table, drop_search, ensure_collection,
    search_tables, search_trigger,
};
use super::write::{begin, check_name};
use crate::search::{Pager, Search, check_fields, project};
use crate::{Document, Error, Result};

/// The fields the index of `collection` covers, when it has one.
pub(crate) fn stored_fields(conn: &Connection, collection: &str) -> Result<Option<Vec<String>>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT fields FROM portico_search WHERE collection = ?1")?
        .query_row(params![collection], |row| row.get(0))
        .optional()?;
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| Error::Backend(format!("sqlite: search catalog of {collection:?}: {e}")))
    })
    .transpose()
}

/// The SQL value of the text of `field` in the document `doc` (`NEW.doc`, `c.doc`): its
/// strings joined. The field was checked: letters, digits, `_` and `-` only.
fn text_of(field: &str, doc: &str) -> String {
    format!(
        "(SELECT group_concat(value, ' ') FROM json_tree({doc}, '$.\"{field}\"') WHERE type = 'text')"
    )
}

/// [`text_of`] each field, comma separated.
fn texts(fields: &[String], doc: &str) -> String {
    fields
        .iter()
        .map(|f| text_of(f, doc))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Makes the index of `collection` cover `fields` (see [`crate::Store::ensure_search`]).
pub(crate) fn ensure(conn: &mut Connection, collection: &str, fields: &[String]) -> Result<()> {
    check_name(collection)?;
    check_fields(fields)?;
    let tx = begin(conn)?;
    tx.execute_batch(SEARCH_CATALOG)?;
    ensure_collection(&tx, collection)?;
    if stored_fields(&tx, collection)?.as_deref() == Some(fields) {
        tx.commit()?;
        return Ok(());
    }
    drop_search(&tx, collection)?;
    let table = collection_table(collection);
    let (fts, keys) = search_tables(collection);
    let columns: Vec<String> = (0..fields.len()).map(|i| format!("f{i}")).collect();
    let columns = columns.join(", ");
    let sets: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| format!("f{i} = {}", text_of(f, "NEW.doc")))
        .collect();
    tx.execute_batch(&format!(
        "CREATE TABLE {keys} (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
         CREATE VIRTUAL TABLE {fts} USING fts5({columns}, tokenize = 'unicode61 remove_diacritics 0');
         INSERT INTO {keys} (id) SELECT id FROM {table} ORDER BY id;
         INSERT INTO {fts} (rowid, {columns})
             SELECT k.rid, {fill} FROM {keys} AS k JOIN {table} AS c ON c.id = k.id;
         CREATE TRIGGER {ins} AFTER INSERT ON {table} BEGIN
             INSERT INTO {keys} (id) VALUES (NEW.id);
             INSERT INTO {fts} (rowid, {columns})
                 VALUES ((SELECT rid FROM {keys} WHERE id = NEW.id), {new});
         END;
         CREATE TRIGGER {upd} AFTER UPDATE OF doc ON {table} BEGIN
             UPDATE {fts} SET {sets} WHERE rowid = (SELECT rid FROM {keys} WHERE id = OLD.id);
         END;
         CREATE TRIGGER {del} AFTER DELETE ON {table} BEGIN
             DELETE FROM {fts} WHERE rowid = (SELECT rid FROM {keys} WHERE id = OLD.id);
             DELETE FROM {keys} WHERE id = OLD.id;
         END;",
        fill = texts(fields, "c.doc"),
        new = texts(fields, "NEW.doc"),
        sets = sets.join(", "),
        ins = search_trigger(collection, "ins"),
        upd = search_trigger(collection, "upd"),
        del = search_trigger(collection, "del"),
    ))?;
    let listed = serde_json::to_string(fields).map_err(|e| Error::Backend(e.to_string()))?;
    tx.prepare_cached("INSERT INTO portico_search (collection, fields) VALUES (?1, ?2)")?
        .execute(params![collection, listed])?;
    tx.commit()?;
    Ok(())
}

/// The answer to `search` over `collection` (see [`crate::Store::search`]).
pub(crate) fn search(
    conn: &Connection,
    collection: &str,
    search: &Search,
) -> Result<(Vec<Document>, u64)> {
    check_fields(&search.fields)?;
    let words = search.words()?;
    let has_catalog = conn
        .prepare_cached(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'portico_search'",
        )?
        .exists([])?;
    let stored = if has_catalog {
        stored_fields(conn, collection)?
    } else {
        None
    };
    match stored {
        Some(fields) if fields == search.fields => {}
        _ if !collection_exists(conn, collection)? => return Ok((Vec::new(), 0)),
        _ => {
            return Err(Error::Backend(format!(
                "sqlite: collection {collection:?} has no search index over {:?}",
                search.fields
            )));
        }
    }
    if words.is_empty() {
        return Ok((Vec::new(), 0));
    }
    // Each word a quoted FTS5 string (the words are runs of letters and digits, so no quote
    // is inside): every one is required, and no operator or column filter can be sent.
    let expr: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    let expr = expr.join(" ");
    let table = collection_table(collection);
    let (fts, keys) = search_tables(collection);
    let ranked = format!(
        "SELECT c.id, c.doc FROM {fts} JOIN {keys} AS k ON k.rid = {fts}.rowid \
         JOIN {table} AS c ON c.id = k.id WHERE {fts} MATCH ?1 ORDER BY {fts}.rank, c.id"
    );
    if search.selector.is_all() {
        let total: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM {fts} WHERE {fts} MATCH ?1"))?
            .query_row(params![expr], |row| row.get(0))?;
        let limit = search
            .limit
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let offset = i64::try_from(search.skip).unwrap_or(i64::MAX);
        let mut stmt = conn.prepare_cached(&format!("{ranked} LIMIT ?2 OFFSET ?3"))?;
        let mut rows = stmt.query(params![expr, limit, offset])?;
        let mut docs = Vec::new();
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            docs.push(parse_doc(collection, &id, row.get_ref(1)?)?);
        }
        return Ok((project(search, docs), u64::try_from(total).unwrap_or(0)));
    }
    let mut stmt = conn.prepare_cached(&ranked)?;
    let mut rows = stmt.query(params![expr])?;
    let mut pager = Pager::new(search);
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        pager.offer(parse_doc(collection, &id, row.get_ref(1)?)?);
    }
    Ok(pager.finish())
}
