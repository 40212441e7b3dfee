//! Reading: `find`, `count` and `get` over the candidates [`super::plan`] chooses.
//!
//! Every candidate is decided by the reference matcher, so results are the memory backend's by
//! construction. Rows are read one at a time from the statement and dropped unless they are kept for the
//! answer, so memory stays bounded by `skip + limit` whatever the collection's size.

use std::ops::ControlFlow;

use rusqlite::types::ValueRef;
use rusqlite::{CachedStatement, Connection, Statement, params};

use super::error::corrupt;
use super::plan::{Plan, for_each_candidate, not_text, plan};
use super::schema::{collection_exists, collection_table, index_table, stored_count};
use super::sorted::{self, Read, Rows};
use crate::paging::Page;
use crate::{Document, Query, RelatedField, RelatedRead, Result, Selector};

/// Runs the read `f` on `collection`'s table, answering as for an empty collection when the
/// collection does not exist.
///
/// Reads do not look the collection up first: that would be a second statement (and read
/// transaction) on every point read. Only when the read fails (its table is missing) is the
/// catalog asked whether the collection exists; if it does, the failure was real.
fn or_missing<T: Default>(
    conn: &Connection,
    collection: &str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let result = f();
    missing_as_default(conn, collection, result)
}

/// [`or_missing`] of a result already had (by a read that needed the connection itself).
fn missing_as_default<T: Default>(
    conn: &Connection,
    collection: &str,
    result: Result<T>,
) -> Result<T> {
    match result {
        Ok(value) => Ok(value),
        Err(e) => {
            if collection_exists(conn, collection)? {
                Err(e)
            } else {
                Ok(T::default())
            }
        }
    }
}

/// The documents `query` asks for, sorted, skipped, limited and projected.
pub(crate) fn find(conn: &Connection, collection: &str, query: &Query) -> Result<Vec<Document>> {
    if query.limit == Some(0) {
        return Ok(Vec::new());
    }
    let through_index = or_missing(conn, collection, || {
        sorted::read(conn, collection, query, false, false)
    })?;
    if let Some(Read {
        rows: Rows::Docs(docs),
        ..
    }) = through_index
    {
        return Ok(docs);
    }
    crate::paging::check_sorted_window(query)?;
    let mut docs = or_missing(conn, collection, || matches(conn, collection, query))?;
    if let Some(projection) = &query.projection {
        docs = docs.iter().map(|doc| projection.apply(doc)).collect();
    }
    Ok(docs)
}

/// The page of `query` as stored texts and its total, read through a sorted index; `None` when
/// no index helps. Call inside a read transaction, so the total is the page's.
pub(crate) fn page_counted_sorted(
    conn: &Connection,
    collection: &str,
    query: &Query,
) -> Result<Option<(Vec<String>, u64)>> {
    let read = or_missing(conn, collection, || {
        sorted::read(conn, collection, query, true, true)
    })?;
    read.map(|read| Ok((read.rows.into_texts()?, read.total.unwrap_or(0))))
        .transpose()
}

/// [`page_counted_sorted`] when that is a few point reads (see [`sorted::read_quick`]
/// for `limits`); `None` otherwise.
pub(crate) fn page_counted_quick(
    conn: &mut Connection,
    collection: &str,
    query: &Query,
    limits: (u64, u64),
) -> Result<Option<(Vec<String>, u64)>> {
    let read = sorted::read_quick(conn, collection, query, true, true, limits);
    let read = missing_as_default(conn, collection, read)?;
    read.map(|read| Ok((read.rows.into_texts()?, read.total.unwrap_or(0))))
        .transpose()
}

/// The page of `query` as JSON texts and its total, in one pass over the candidates when no
/// sorted index serves it (each candidate decoded once, for the page and the count alike).
/// Call inside a read transaction, so the total is the page's.
///
/// # Errors
/// As [`find`] (a sorted window over the cap no index serves) and [`count`].
pub(crate) fn page_counted_any(
    conn: &Connection,
    collection: &str,
    query: &Query,
) -> Result<(Vec<String>, u64)> {
    if let Some(found) = page_counted_sorted(conn, collection, query)? {
        return Ok(found);
    }
    if query.selector.is_all() && query.sort.is_none() {
        let total = count(conn, collection, &query.selector)?;
        return Ok((crate::encode_all(&find(conn, collection, query)?)?, total));
    }
    crate::paging::check_sorted_window(query)?;
    let (docs, total) = or_missing(conn, collection, || {
        let plan = plan(conn, collection, &query.selector)?;
        let everything = Selector::all();
        let mut page = Page::new(&everything, query.sort.as_ref(), query.skip, query.limit);
        let (mut total, mut scanned) = (0u64, 0u64);
        let mut full = query.limit == Some(0);
        for_each_candidate(conn, collection, &plan, |_, doc| {
            scanned += 1;
            if query.selector.matches(&doc) {
                total += 1;
                if !full && page.offer(doc).is_break() {
                    full = true;
                }
            }
            Ok(ControlFlow::Continue(()))
        })?;
        crate::slow::note_query(collection, query, scanned);
        Ok((page.into_docs(), total))
    })?;
    let docs: Vec<Document> = match &query.projection {
        Some(p) => docs.iter().map(|d| p.apply(d)).collect(),
        None => docs,
    };
    Ok((crate::encode_all(&docs)?, total))
}

/// The stored JSON text of a page of the whole collection in `_id` order (`skip` rows passed
/// over, at most `limit`): the answer of [`find`] for a query without filter, sort or
/// projection, with no document decoded. Each text is checked to be one JSON object, so a row
/// changed behind our back is reported as [`find`] reports it, never sent as broken JSON.
pub(crate) fn page_json(
    conn: &Connection,
    collection: &str,
    skip: u64,
    limit: Option<u64>,
) -> Result<Vec<String>> {
    if limit == Some(0) {
        return Ok(Vec::new());
    }
    let table = collection_table(collection);
    or_missing(conn, collection, || {
        // A first page reads the table from its start and stops after `limit` rows, with no
        // parameters: bound LIMIT/OFFSET values make SQLite re-prepare the statement on every
        // run (measured: 13% of a list request spent in sqlite3Reprepare), so they are used
        // only for later pages, where SQLite passes over the skipped rows itself.
        let mut stmt;
        let mut rows = if skip == 0 {
            stmt = conn.prepare_cached(&format!("SELECT id, doc FROM {table} ORDER BY id"))?;
            stmt.query([])?
        } else {
            let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
            let offset = i64::try_from(skip).unwrap_or(i64::MAX);
            stmt = conn.prepare_cached(&format!(
                "SELECT id, doc FROM {table} ORDER BY id LIMIT ?1 OFFSET ?2"
            ))?;
            stmt.query(params![limit, offset])?
        };
        let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let mut out = Vec::new();
        while out.len() < limit
            && let Some(row) = rows.next()?
        {
            let ValueRef::Text(text) = row.get_ref(1)? else {
                let id: String = row.get(0)?;
                return Err(not_text(collection, &id));
            };
            let checked = std::str::from_utf8(text)
                .ok()
                .filter(|t| crate::document::is_object_text(t))
                .map(str::to_owned);
            match checked {
                Some(text) => out.push(text),
                None => {
                    let id: String = row.get(0)?;
                    return Err(crate::Error::Backend(format!(
                        "sqlite: stored document {id:?} of collection {collection:?} is not a JSON object"
                    )));
                }
            }
        }
        Ok(out)
    })
}

/// The answer to `query`, when that is quick to know: its candidates come from the primary key,
/// or from an index that holds at most `budget` entries for the value (counted in the index
/// alone, before any document is read). `Ok(None)` means "not quick": the caller runs [`find`]
/// elsewhere. The answer is the one [`find`] gives: matches in `_id` order, stably sorted,
/// skipped, limited, projected.
pub(crate) fn find_quick(
    conn: &mut Connection,
    collection: &str,
    query: &Query,
    budget: usize,
    sorted_rows: (u64, u64),
) -> Result<Option<Vec<Document>>> {
    if query.limit == Some(0) {
        return Ok(Some(Vec::new()));
    }
    let selector = &query.selector;
    // A sorted window over the cap is for the full read to refuse (or to serve through a
    // sorted index).
    if query.sort.is_some()
        && query.skip.saturating_add(query.limit.unwrap_or(0)) > crate::MAX_SORTED_WINDOW
    {
        return Ok(None);
    }
    // A missing collection reads as "not quick" too; the full read answers it.
    let found = (|| {
        // A short page through a sorted index, counting nothing.
        if let Some(read) = sorted::read_quick(conn, collection, query, false, false, sorted_rows)?
        {
            return read.rows.into_docs().map(Some);
        }
        let plan = plan(conn, collection, selector)?;
        match &plan {
            Plan::Id(_) => {}
            Plan::Ids(ids) if ids.len() <= budget => {}
            Plan::Ids(_) => return Ok(None),
            Plan::Index { path, key } => {
                // The bound is written into the statement: a bound LIMIT makes SQLite
                // re-prepare the statement on every run.
                let entries: i64 = conn
                    .prepare_cached(&format!(
                        "SELECT count(*) FROM (SELECT 1 FROM {} WHERE value = ?1 LIMIT {})",
                        index_table(collection, path),
                        budget.saturating_add(1)
                    ))?
                    .query_row(params![key], |row| row.get(0))?;
                if usize::try_from(entries).map_or(true, |e| e > budget) {
                    return Ok(None);
                }
            }
            Plan::Scan { .. } | Plan::Page { .. } => return Ok(None),
        }
        let page = collect(conn, collection, &plan, Page::of(query))?;
        Ok(Some(match &query.projection {
            Some(projection) => page.iter().map(|doc| projection.apply(doc)).collect(),
            None => page,
        }))
    })();
    missing_as_default(conn, collection, found)
}

/// The first document matching `selector`, when that is quick to know: its candidates come from
/// the primary key or an index, and a match (or their end) comes within the first `budget`
/// candidates. `Ok(None)` means "not quick": the caller runs the full [`find`] elsewhere.
pub(crate) fn find_first_quick(
    conn: &Connection,
    collection: &str,
    selector: &Selector,
    budget: usize,
) -> Result<Option<Option<Document>>> {
    // A missing collection reads as "not quick" too; the full read answers it.
    or_missing(conn, collection, || {
        let plan = plan(conn, collection, selector)?;
        if matches!(plan, Plan::Scan { .. } | Plan::Page { .. }) {
            return Ok(None);
        }
        let mut seen = 0usize;
        let mut answer = Some(None);
        for_each_candidate(conn, collection, &plan, |_, doc| {
            if selector.matches(&doc) {
                answer = Some(Some(doc));
                return Ok(ControlFlow::Break(()));
            }
            seen += 1;
            if seen >= budget {
                answer = None;
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(answer)
    })
}

/// Matching documents in `_id` order after skipping `skip`, stopping once `limit` are found;
/// or, with a sort, in its order (ties in `_id` order), keeping only the best `skip + limit`.
fn matches(conn: &Connection, collection: &str, query: &Query) -> Result<Vec<Document>> {
    let selector = &query.selector;
    if selector.is_all() && query.sort.is_none() {
        // Every row matches: let SQLite skip and stop, without decoding the skipped documents.
        let limit = query
            .limit
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let offset = i64::try_from(query.skip).unwrap_or(i64::MAX);
        let plan = Plan::Page { limit, offset };
        return collect(conn, collection, &plan, Page::new(selector, None, 0, None));
    }
    let plan = plan(conn, collection, selector)?;
    let mut scanned = 0u64;
    let docs = collect_counted(conn, collection, &plan, Page::of(query), &mut scanned)?;
    crate::slow::note_query(collection, query, scanned);
    Ok(docs)
}

/// Offers the candidates of `plan` to `page` until it is full, and gives its documents.
fn collect(
    conn: &Connection,
    collection: &str,
    plan: &Plan,
    page: Page<'_>,
) -> Result<Vec<Document>> {
    collect_counted(conn, collection, plan, page, &mut 0)
}

/// [`collect`], adding to `scanned` the number of candidates decoded.
fn collect_counted(
    conn: &Connection,
    collection: &str,
    plan: &Plan,
    mut page: Page<'_>,
    scanned: &mut u64,
) -> Result<Vec<Document>> {
    for_each_candidate(conn, collection, plan, |_, doc| {
        *scanned += 1;
        Ok(page.offer(doc))
    })?;
    Ok(page.into_docs())
}

/// How many documents match `selector`.
pub(crate) fn count(conn: &Connection, collection: &str, selector: &Selector) -> Result<u64> {
    or_missing(conn, collection, || {
        count_existing(conn, collection, selector)
    })
}

fn count_existing(conn: &Connection, collection: &str, selector: &Selector) -> Result<u64> {
    if selector.is_all() {
        // The catalog keeps the count: one row, whatever the collection's size.
        return Ok(stored_count(conn, collection)?.unwrap_or(0));
    }
    // A sorted index holding exactly the matches counts its entries.
    if let Some(n) = sorted::count(conn, collection, selector)? {
        return Ok(n);
    }
    let plan = plan(conn, collection, selector)?;
    let mut n = 0u64;
    let mut scanned = 0u64;
    for_each_candidate(conn, collection, &plan, |_, doc| {
        scanned += 1;
        if selector.matches(&doc) {
            n += 1;
        }
        Ok(ControlFlow::Continue(()))
    })?;
    crate::slow::note(collection, selector, None, scanned);
    Ok(n)
}

/// The document with `_id == id`: one primary-key lookup.
pub(crate) fn get(conn: &Connection, collection: &str, id: &str) -> Result<Option<Document>> {
    or_missing(conn, collection, || get_existing(conn, collection, id))
}

/// Runs `f` inside one read transaction on `conn` (a reader): every statement of `f` sees one
/// snapshot, and the WAL read lock is taken once. The transaction ends with `f`, committed
/// (nothing was written) or rolled back when `f` failed.
pub(crate) fn in_read_transaction<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Connection) -> Result<T>,
) -> Result<T> {
    conn.prepare_cached("BEGIN")?.execute([])?;
    let result = f(conn);
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = conn
        .prepare_cached(end)
        .and_then(|mut stmt| stmt.execute([]));
    if !conn.is_autocommit() {
        // The end failed: a reader must never be left inside a transaction (it would pin its
        // snapshot), so roll back whatever happened.
        let _ = conn.execute_batch("ROLLBACK");
    }
    let value = result?;
    ended?;
    Ok(value)
}

/// The documents each of `related` names in `page` (stored texts, see
/// [`crate::Store::find_page`]), read by primary key as stored text: at most
/// `budget` ids in all, the first ones of each relation (the caller reads the others).
pub(crate) fn related_json(
    conn: &Connection,
    page: &[String],
    related: &[RelatedField],
    budget: usize,
) -> Result<Vec<RelatedRead>> {
    let mut left = budget;
    let mut reads = Vec::with_capacity(related.len());
    for follow in related {
        let ids = crate::related_ids_of_texts(page, &follow.field, follow.max_ids.min(left));
        left -= ids.len();
        let mut read = RelatedRead {
            field: follow.field.clone(),
            ..RelatedRead::default()
        };
        if !ids.is_empty() {
            // One prepared statement, run for each id (not a `format!`, a cache lookup and a
            // reset per id): a page's relation names up to 20 documents, and that per-id
            // statement handling was a third of these reads in a profile of an expanded list.
            let collection = follow.collection.as_str();
            read.texts = or_missing(conn, collection, || {
                let mut stmt = by_id(conn, collection)?;
                let mut texts = Vec::with_capacity(ids.len());
                for id in &ids {
                    let text = read_stored_with(&mut stmt, collection, id, |text| {
                        json_object_text(text, collection, id)
                    })?;
                    if let Some(text) = text {
                        texts.push((id.clone(), text));
                    }
                }
                Ok(texts)
            })?;
        }
        read.ids = ids;
        reads.push(read);
    }
    Ok(reads)
}

/// The stored text of document `id` handed to `read`: `None` when there is no such row, an
/// error when the row holds something other than text. One primary-key lookup.
fn read_stored<T>(
    conn: &Connection,
    collection: &str,
    id: &str,
    read: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Option<T>> {
    let mut stmt = by_id(conn, collection)?;
    read_stored_with(&mut stmt, collection, id, read)
}

/// The statement that reads one stored document of `collection` by id ([`read_stored_with`]).
fn by_id<'c>(conn: &'c Connection, collection: &str) -> Result<CachedStatement<'c>> {
    Ok(conn.prepare_cached(&format!(
        "SELECT doc FROM {} WHERE id = ?1",
        collection_table(collection)
    ))?)
}

/// [`read_stored`] with the statement of [`by_id`] already prepared (one for many ids).
fn read_stored_with<T>(
    stmt: &mut Statement<'_>,
    collection: &str,
    id: &str,
    read: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Option<T>> {
    let mut rows = stmt.query(params![id])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    match row.get_ref(0)? {
        ValueRef::Text(text) => read(text).map(Some),
        _ => Err(not_text(collection, id)),
    }
}

/// The document `id` as its stored JSON text (checked to be one JSON object, without building
/// it), or `None`.
pub(crate) fn get_json(conn: &Connection, collection: &str, id: &str) -> Result<Option<String>> {
    or_missing(conn, collection, || {
        read_stored(conn, collection, id, |text| {
            json_object_text(text, collection, id)
        })
    })
}

/// Stored bytes as one JSON object's text, or the error that document `id` of `collection`
/// holds something else.
fn json_object_text(text: &[u8], collection: &str, id: &str) -> Result<String> {
    std::str::from_utf8(text)
        .ok()
        .filter(|t| crate::document::is_object_text(t))
        .map(str::to_owned)
        .ok_or_else(|| not_text(collection, id))
}

fn get_existing(conn: &Connection, collection: &str, id: &str) -> Result<Option<Document>> {
    read_stored(conn, collection, id, |text| {
        serde_json::from_slice::<Document>(text).map_err(|e| corrupt(collection, id, &e))
    })
}
