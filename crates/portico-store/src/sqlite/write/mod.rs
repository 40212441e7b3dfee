//! Writing: insert, update, remove, indexes and collections, each in one `BEGIN IMMEDIATE`
//! transaction on the writer connection.
//!
//! `BEGIN IMMEDIATE` takes SQLite's write lock before the first read, so the read half of a
//! read-modify-write sees the latest committed state and nobody can commit in between: two
//! concurrent `$inc`s never both read the old value, also when another process writes the same
//! file. A failing step returns before `commit`, and dropping the transaction rolls it back, so a
//! multi-document update whose modifier fails on the third document changes nothing.

mod batch;

pub(crate) use batch::batch;

use std::borrow::Cow;
use std::ops::ControlFlow;

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::error::is_unique_violation;
use super::index::{self, Indexes, update_rows};
use super::plan::{for_each_candidate, parse_doc, plan};
use super::schema::{self, collection_exists, collection_table, index_table, indexed_paths};
use crate::{Document, Error, IndexSpec, Result, Selector, Update, UpdateOptions, UpdateResult};

/// Starts a write transaction that holds the write lock from its first statement.
pub(crate) fn begin(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

/// Refuses the empty collection name, as every backend does. Any other name is safe: see
/// [`schema`] for how names become tables.
pub(crate) fn check_name(collection: &str) -> Result<()> {
    if collection.is_empty() {
        return Err(Error::InvalidName(
            "a collection name must not be empty".into(),
        ));
    }
    Ok(())
}

/// Inserts many documents in one transaction: all of them, or none when one fails.
pub(crate) fn insert_many(
    conn: &mut Connection,
    collection: &str,
    docs: impl IntoIterator<Item = Document>,
) -> Result<Vec<String>> {
    check_name(collection)?;
    let tx = begin(conn)?;
    schema::ensure_collection(&tx, collection)?;
    let mut indexes = index::indexes(&tx, collection)?;
    let ids = docs
        .into_iter()
        .map(|doc| insert_in(&tx, collection, &mut indexes, doc))
        .collect::<Result<Vec<_>>>()?;
    schema::add_to_count(&tx, collection, count_delta(ids.len()))?;
    tx.commit()?;
    Ok(ids)
}

/// Inserts every document of `batches` in one transaction, rolled back at the first error (of
/// a batch or of a document); see [`crate::Store::insert_stream`].
pub(crate) fn insert_stream(
    conn: &mut Connection,
    collection: &str,
    batches: crate::DocumentBatches,
) -> Result<u64> {
    check_name(collection)?;
    // A stream is a bulk load: ids arrive in any order, so the rows land all over the table's
    // B-tree, and with SQLite's default 2 MB page cache most inserts re-read pages the cache
    // just dropped. A larger cache for the load, put back after, bounds that memory.
    let previous: i64 = conn.pragma_query_value(None, "cache_size", |row| row.get(0))?;
    conn.pragma_update(None, "cache_size", BULK_CACHE_KIB)?;
    let loaded = insert_stream_in(conn, collection, batches);
    let restored = conn.pragma_update(None, "cache_size", previous);
    let n = loaded?;
    restored?;
    Ok(n)
}

/// The page cache of a bulk load, in KiB (SQLite's negative `cache_size`): 192 MiB.
const BULK_CACHE_KIB: i64 = -192 * 1024;

fn insert_stream_in(
    conn: &mut Connection,
    collection: &str,
    batches: crate::DocumentBatches,
) -> Result<u64> {
    let tx = begin(conn)?;
    schema::ensure_collection(&tx, collection)?;
    let mut indexes = index::indexes(&tx, collection)?;
    let mut n = 0u64;
    for batch in batches {
        for doc in batch? {
            insert_in(&tx, collection, &mut indexes, doc)?;
            n += 1;
        }
    }
    schema::add_to_count(&tx, collection, count_delta(n))?;
    tx.commit()?;
    Ok(n)
}

/// `n` documents as a change of the stored count.
fn count_delta<N: TryInto<i64>>(n: N) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// Inserts `doc` and its index rows inside an open transaction.
pub(crate) fn insert_in(
    conn: &Connection,
    collection: &str,
    indexes: &mut Indexes,
    doc: Document,
) -> Result<String> {
    insert_keeping(conn, collection, indexes, doc, false).map(|(id, _)| id)
}

/// [`insert_in`], giving the document's stored JSON text back when `keep` is set.
///
/// Memory: the document is held once as a tree and once as text; the tree is dropped once
/// encoded unless index rows need it, and SQLite copies the text when it is bound, so ours is
/// dropped then unless the caller wants it (a large one is read back afterwards instead). A
/// large document costs about twice its text at the peak (SQLite's copy and the row it builds).
pub(crate) fn insert_keeping(
    conn: &Connection,
    collection: &str,
    indexes: &mut Indexes,
    doc: Document,
    keep: bool,
) -> Result<(String, Option<String>)> {
    let (id, doc) = crate::document::prepare_insert_unsized(doc)?;
    let text = crate::document::encode(&doc)?;
    let doc = (!indexes.is_empty()).then_some(doc);
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO {} (id, doc) VALUES (?1, ?2)",
        collection_table(collection)
    ))?;
    insert.raw_bind_parameter(1, id.as_str())?;
    insert.raw_bind_parameter(2, text.as_str())?;
    // A large text is not held while SQLite writes it (SQLite has copied it when it was bound,
    // and builds the row as a second copy): it is read back afterwards instead, so the peak is
    // two copies of it, not three.
    let read_back = keep && text.len() > READ_BACK_BYTES;
    let text = (keep && !read_back).then_some(text);
    let inserted = insert.raw_execute();
    // SQLite's copy of the text goes too.
    insert.clear_bindings();
    drop(insert);
    match inserted {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => {
            return Err(Error::DuplicateId {
                collection: collection.to_string(),
                id,
            });
        }
        Err(e) => return Err(e.into()),
    }
    if let Some(doc) = &doc {
        update_rows(conn, collection, indexes, &id, None, Some(doc))?;
    }
    let text = if read_back {
        let mut stored = conn.prepare_cached(&format!(
            "SELECT doc FROM {} WHERE id = ?1",
            collection_table(collection)
        ))?;
        Some(stored.query_row([id.as_str()], |row| row.get::<_, String>(0))?)
    } else {
        text
    };
    Ok((id, text))
}

/// A stored text longer than this is read back after its insert rather than held during it
/// (see [`insert_keeping`]).
const READ_BACK_BYTES: usize = 1 << 20;

/// The matching documents of `selector` with their ids, in `_id` order; at most one unless `multi`.
fn matching(
    conn: &Connection,
    collection: &str,
    selector: &Selector,
    multi: bool,
) -> Result<Vec<(String, Document)>> {
    let plan = plan(conn, collection, selector)?;
    let mut found = Vec::new();
    for_each_candidate(conn, collection, &plan, |id, doc| {
        if selector.matches(&doc) {
            found.push((id, doc));
            if !multi {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(found)
}

/// Updates (or upserts); see [`crate::Store::update`].
///
/// Memory: the last matching document is given the update (a modifier's values move into the
/// new document instead of being copied), and it is dropped once that document's text is
/// made, so while SQLite copies the text and builds the row, a replacement's document (or a
/// modifier's values) is no longer held when the caller gave up its own (see
/// [`crate::Store::update_owned`]). Without index rows to write, the old document goes before
/// the write too: a large document costs its text and SQLite's two copies, not a tree beside.
pub(crate) fn update(
    conn: &mut Connection,
    collection: &str,
    selector: &Selector,
    update: Update,
    options: UpdateOptions,
) -> Result<UpdateResult> {
    check_name(collection)?;
    let tx = begin(conn)?;
    let mut result = UpdateResult::default();
    // `None` once it has been applied to the last matching document.
    let mut update = Some(update);
    if collection_exists(&tx, collection)? {
        let mut indexes = index::indexes(&tx, collection)?;
        let found = matching(&tx, collection, selector, options.multi)?;
        result.matched = found.len() as u64;
        let last = found.len().saturating_sub(1);
        let mut write = tx.prepare_cached(&format!(
            "UPDATE {} SET doc = ?2 WHERE id = ?1",
            collection_table(collection)
        ))?;
        for (n, (id, old)) in found.into_iter().enumerate() {
            // The last document is given the update (a modifier's values move into it).
            let applied = match (n == last, &update) {
                (true, _) => update.take().map(Cow::Owned),
                (false, Some(update)) => Some(Cow::Borrowed(update)),
                (false, None) => None,
            };
            let Some(applied) = applied else { break };
            // An error returns here; the transaction is dropped and rolls back earlier documents.
            // As in `insert_keeping`: the new document is built only for index rows (without
            // them a replacement is encoded straight from the update), and our text is dropped
            // once SQLite has its copy.
            let Some((new, text)) = changed(&old, applied, &id, !indexes.is_empty())? else {
                continue;
            };
            // Only index rows need the old document.
            let old = new.is_some().then_some(old);
            write.raw_bind_parameter(1, id.as_str())?;
            write.raw_bind_parameter(2, text.as_str())?;
            drop(text);
            let written = write.raw_execute();
            write.clear_bindings();
            written?;
            if let Some(new) = &new {
                update_rows(&tx, collection, &mut indexes, &id, old.as_ref(), Some(new))?;
            }
            result.modified += 1;
        }
        drop(write);
    }
    // Nothing matched, so the update is still here.
    if let (0, true, Some(update)) = (result.matched, options.upsert, &update) {
        let doc = update.upsert_document(selector)?;
        schema::ensure_collection(&tx, collection)?;
        let mut indexes = index::indexes(&tx, collection)?;
        result.upserted_id = Some(insert_in(&tx, collection, &mut indexes, doc)?);
        schema::add_to_count(&tx, collection, 1)?;
    }
    tx.commit()?;
    Ok(result)
}

/// The update applied to `old` (whose `_id` is `id`): the new document when `tree` (for index
/// rows) and its text, or `None` when nothing changes. A given update is used up.
fn changed(
    old: &Document,
    update: Cow<'_, Update>,
    id: &str,
    tree: bool,
) -> Result<Option<(Option<Document>, String)>> {
    use crate::modifier::{
        apply_given_update, apply_given_update_text, apply_update, apply_update_text,
    };
    Ok(match (update, tree) {
        (Cow::Borrowed(update), false) => apply_update_text(old, update, id)?.map(|t| (None, t)),
        (Cow::Owned(update), false) => apply_given_update_text(old, update, id)?.map(|t| (None, t)),
        (Cow::Borrowed(update), true) => {
            apply_update(old, update, id)?.map(|(new, t)| (Some(new), t))
        }
        (Cow::Owned(update), true) => {
            apply_given_update(old, update, id)?.map(|(new, t)| (Some(new), t))
        }
    })
}

/// Removes the matching documents and their index rows; see [`crate::Store::remove`].
pub(crate) fn remove(conn: &mut Connection, collection: &str, selector: &Selector) -> Result<u64> {
    let tx = begin(conn)?;
    if !collection_exists(&tx, collection)? {
        return Ok(0);
    }
    let mut indexes = index::indexes(&tx, collection)?;
    let table = collection_table(collection);
    let removed = if selector.is_all() {
        for path in &indexes.paths {
            tx.execute_batch(&format!("DELETE FROM {}", index_table(collection, path)))?;
        }
        for sorted in &indexes.sorted {
            tx.execute_batch(&format!("DELETE FROM {}", sorted.table))?;
            super::prefixes::clear(&tx, sorted)?;
        }
        tx.execute(&format!("DELETE FROM {table}"), [])? as u64
    } else {
        let found = matching(&tx, collection, selector, true)?;
        let mut delete = tx.prepare_cached(&format!("DELETE FROM {table} WHERE id = ?1"))?;
        for (id, doc) in &found {
            delete.execute(params![id])?;
            update_rows(&tx, collection, &mut indexes, id, Some(doc), None)?;
        }
        found.len() as u64
    };
    schema::add_to_count(&tx, collection, -count_delta(removed))?;
    tx.commit()?;
    Ok(removed)
}

/// Creates the index on `path` and fills it from the stored documents; see
/// [`crate::Store::ensure_index`].
pub(crate) fn ensure_index(conn: &mut Connection, collection: &str, path: &str) -> Result<()> {
    check_name(collection)?;
    index::validate_path(path)?;
    let tx = begin(conn)?;
    schema::ensure_collection(&tx, collection)?;
    // `_id` is the primary key already.
    if path == "_id" || indexed_paths(&tx, collection)?.iter().any(|p| p == path) {
        tx.commit()?;
        return Ok(());
    }
    schema::create_index_table(&tx, collection, path)?;
    fill_index(&tx, collection, path)?;
    tx.commit()?;
    Ok(())
}

/// Makes the index on `path` unique, creating it first when missing; see
/// [`crate::Store::ensure_unique_index`]. When stored documents share a value, the transaction
/// rolls back: nothing changes.
pub(crate) fn ensure_unique_index(
    conn: &mut Connection,
    collection: &str,
    path: &str,
) -> Result<()> {
    check_name(collection)?;
    index::validate_path(path)?;
    if path == "_id" {
        return Ok(());
    }
    let tx = begin(conn)?;
    schema::ensure_collection(&tx, collection)?;
    if !indexed_paths(&tx, collection)?.iter().any(|p| p == path) {
        schema::create_index_table(&tx, collection, path)?;
        fill_index(&tx, collection, path)?;
    }
    match schema::make_unique(&tx, collection, path) {
        Ok(()) => {}
        Err(Error::Backend(_)) if has_shared_value(&tx, collection, path)? => {
            return Err(Error::DuplicateKey {
                collection: collection.to_string(),
                path: path.to_string(),
            });
        }
        Err(e) => return Err(e),
    }
    tx.commit()?;
    Ok(())
}

/// True when two documents share a non-null key in the index on `path`.
fn has_shared_value(conn: &Connection, collection: &str, path: &str) -> Result<bool> {
    Ok(conn
        .prepare(&format!(
            "SELECT 1 FROM {} WHERE value <> ?1 GROUP BY value HAVING count(*) > 1 LIMIT 1",
            index_table(collection, path)
        ))?
        .exists(params![crate::index_key::NULL_KEY])?)
}

/// Writes the index rows of `path` for every stored document.
fn fill_index(tx: &Connection, collection: &str, path: &str) -> Result<()> {
    let mut only = Indexes {
        paths: vec![path.to_string()],
        sorted: Vec::new(),
    };
    let mut stmt = tx.prepare(&format!(
        "SELECT id, doc FROM {}",
        collection_table(collection)
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let doc = parse_doc(collection, &id, row.get_ref(1)?)?;
        update_rows(tx, collection, &mut only, &id, None, Some(&doc))?;
    }
    Ok(())
}

/// Creates the sorted index `spec` and fills it from the stored documents, in one transaction
/// (a crash leaves no half-filled index); a unique spec also makes its field unique as
/// [`ensure_unique_index`] does. See [`crate::Store::ensure_sorted_index`].
pub(crate) fn ensure_sorted_index(
    conn: &mut Connection,
    collection: &str,
    spec: &IndexSpec,
) -> Result<()> {
    check_name(collection)?;
    if spec.unique
        && let Some(field) = spec.fields.first()
    {
        ensure_unique_index(conn, collection, &field.path)?;
    }
    let tx = begin(conn)?;
    schema::ensure_collection(&tx, collection)?;
    let name = schema::sorted_name(spec);
    let existing = schema::sorted_indexes(&tx, collection)?;
    if let Some(index) = existing
        .iter()
        .find(|i| schema::sorted_name(&i.spec) == name)
    {
        if spec.unique && !index.spec.unique {
            // Record the uniqueness the field now has.
            tx.prepare_cached(
                "UPDATE portico_sorted SET spec = ?3 WHERE collection = ?1 AND name = ?2",
            )?
            .execute(params![collection, name, spec.to_value().to_string()])?;
        }
        tx.commit()?;
        return Ok(());
    }
    let index = schema::create_sorted_table(&tx, collection, spec)?;
    let mut only = Indexes {
        paths: Vec::new(),
        sorted: vec![index],
    };
    let mut stmt = tx.prepare(&format!(
        "SELECT id, doc FROM {}",
        collection_table(collection)
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let doc = parse_doc(collection, &id, row.get_ref(1)?)?;
        update_rows(&tx, collection, &mut only, &id, None, Some(&doc))?;
    }
    drop(rows);
    drop(stmt);
    tx.commit()?;
    Ok(())
}

/// Drops the sorted index `spec`; false when there was none. See
/// [`crate::Store::drop_sorted_index`].
pub(crate) fn drop_sorted_index(
    conn: &mut Connection,
    collection: &str,
    spec: &IndexSpec,
) -> Result<bool> {
    let tx = begin(conn)?;
    let dropped = schema::drop_sorted(&tx, collection, spec)?;
    tx.commit()?;
    Ok(dropped)
}

/// Drops a collection with its indexes; see [`crate::Store::drop_collection`].
pub(crate) fn drop_collection(conn: &mut Connection, collection: &str) -> Result<()> {
    let tx = begin(conn)?;
    schema::drop_collection(&tx, collection)?;
    tx.commit()?;
    Ok(())
}
