//! Writing: insert, update, remove, indexes and collections, each in one transaction.
//!
//! Every write of documents first takes the collection's `ROW EXCLUSIVE` lock (see
//! [`schema::lock_for_write`]), then reads the lists of indexes (equality and sorted), so it
//! maintains every index that exists when it commits, sorted ones still being filled included
//! (see [`ensure_sorted_index`]). An update reads its documents with `SELECT ... FOR UPDATE`: a
//! concurrent update of the same document (from this instance or another) waits for this one to
//! commit and then reads the new version, so two concurrent `$set`s of different fields both
//! land, and two `$inc`s both count. Each transaction is a [`WriteTx`] (see `write_tx.rs`): a
//! write records the changes it made and commits through [`WriteTx::commit`], which sends them
//! (the notification that also moves the change stamp) inside the transaction. A failing step
//! returns before `commit`; dropping the transaction rolls it back, so nothing of a failed
//! operation is written (or told).
//!
//! A collection is created on first write in its own short transaction (DDL serialised by an
//! advisory lock), then the write starts over; at most [`ATTEMPTS`] times, in case another
//! instance drops the collection in between.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use deadpool_postgres::{Client, GenericClient, Transaction};

use super::error::unique_violation_table;
use super::prefixes::PrefixDeltas;
use super::query::{Param, candidate_sql, for_each_in_tx, plan_for};
use super::schema::{self, Indexes, collection_table, index_table, indexed_paths};
use super::write_tx::WriteTx;
use crate::document::prepare_insert;
use crate::feed::{Change, ChangeKind};
use crate::index_key::keys;
use crate::index_plan::SortedIndex;
use crate::order_key;
use crate::value::split_path;
use crate::{Document, Error, IndexSpec, Result, Selector, Update, UpdateOptions, UpdateResult};

/// How many times a write starts over after creating its collection.
const ATTEMPTS: usize = 3;

/// Refuses names PostgreSQL cannot use, as every backend refuses the empty name.
pub(super) fn check_name(collection: &str) -> Result<()> {
    if collection.is_empty() {
        return Err(Error::InvalidName(
            "a collection name must not be empty".into(),
        ));
    }
    schema::check_text(collection, "a collection name")
}

fn gave_up(collection: &str) -> Error {
    Error::Backend(format!(
        "postgres: collection {collection:?} was dropped repeatedly while being written"
    ))
}

/// The SQL inserting a document: the exact text, and its `jsonb` copy unless the text holds a
/// NUL character (`\u0000`), which `jsonb` cannot store.
fn insert_sql(collection: &str) -> String {
    format!(
        "INSERT INTO {} (id, doc, body) VALUES ($1, $2::text, \
         CASE WHEN strpos($2::text, '\\u0000') = 0 THEN $2::text::jsonb END)",
        collection_table(collection)
    )
}

/// The SQL replacing a document's text (`$2`) and its `jsonb` copy by `_id` (`$1`), as
/// [`insert_sql`] writes them.
pub(super) fn update_sql(collection: &str) -> String {
    format!(
        "UPDATE {} SET doc = $2::text, \
         body = CASE WHEN strpos($2::text, '\\u0000') = 0 THEN $2::text::jsonb END \
         WHERE id = $1",
        collection_table(collection)
    )
}

/// Turns a unique violation of `collection`'s tables into [`Error::DuplicateId`] (the
/// collection's primary key) or [`Error::DuplicateKey`] (a unique index).
fn duplicate(e: tokio_postgres::Error, collection: &str, indexes: &Indexes, id: &str) -> Error {
    let Some(table) = unique_violation_table(&e) else {
        return e.into();
    };
    let quoted = format!("\"{table}\"");
    if quoted == collection_table(collection) {
        return Error::DuplicateId {
            collection: collection.to_string(),
            id: id.to_string(),
        };
    }
    match indexes
        .paths
        .iter()
        .find(|i| index_table(collection, &i.path) == quoted)
    {
        Some(index) => Error::DuplicateKey {
            collection: collection.to_string(),
            path: index.path.clone(),
        },
        None => e.into(),
    }
}

/// Checks a document for what PostgreSQL cannot store, then prepares it as every backend does.
pub(super) fn prepare(doc: Document) -> Result<(String, String, Document)> {
    let (id, doc) = prepare_insert(doc)?;
    if id.contains('\0') {
        return Err(Error::InvalidDocument(
            "_id must not contain a NUL character".into(),
        ));
    }
    let text = serde_json::to_string(&doc)
        .map_err(|e| Error::InvalidDocument(format!("cannot serialize document: {e}")))?;
    Ok((id, text, doc))
}

/// Inserts one prepared document and its index rows inside an open transaction.
pub(super) async fn insert_in(
    tx: &Transaction<'_>,
    collection: &str,
    indexes: &mut Indexes,
    (id, text, doc): &(String, String, Document),
) -> Result<()> {
    let stmt = tx.prepare_cached(&insert_sql(collection)).await?;
    tx.execute(&stmt, &[id, text])
        .await
        .map_err(|e| duplicate(e, collection, indexes, id))?;
    update_rows(tx, collection, indexes, id, None, Some(doc)).await
}

/// Documents [`insert_many`] writes per statement: one round trip for the documents and one per
/// index, instead of one per document (an import of 1M documents took minutes row by row).
const CHUNK: usize = 1000;

/// Inserts `chunk` with one statement per table, inside a savepoint. When a statement fails (a
/// duplicate `_id` or unique key, say), the savepoint is rolled back and the chunk inserted row
/// by row, which names the offending document exactly; the error then aborts the whole batch.
async fn insert_chunk(
    tx: &mut Transaction<'_>,
    collection: &str,
    indexes: &mut Indexes,
    chunk: &[(String, String, Document)],
) -> Result<()> {
    let savepoint = tx.savepoint("portico_chunk").await?;
    // A sorted index marked multikey in the savepoint is not marked once it is rolled back.
    let multikey: Vec<bool> = indexes.sorted.iter().map(|i| i.multikey).collect();
    match insert_rows(&savepoint, collection, indexes, chunk).await {
        Ok(()) => savepoint.commit().await?,
        Err(_) => {
            savepoint.rollback().await?;
            for (index, was) in indexes.sorted.iter_mut().zip(multikey) {
                index.multikey = was;
            }
            for doc in chunk {
                insert_in(tx, collection, indexes, doc).await?;
            }
        }
    }
    Ok(())
}

/// The statements of [`insert_chunk`]: every document of `chunk`, then each index's rows.
async fn insert_rows(
    tx: &Transaction<'_>,
    collection: &str,
    indexes: &mut Indexes,
    chunk: &[(String, String, Document)],
) -> Result<()> {
    let stmt = tx
        .prepare_cached(&format!(
            "INSERT INTO {} (id, doc, body) \
             SELECT i, t, CASE WHEN strpos(t, '\\u0000') = 0 THEN t::jsonb END \
             FROM unnest($1::text[], $2::text[]) AS u(i, t)",
            collection_table(collection)
        ))
        .await?;
    let ids: Vec<&str> = chunk.iter().map(|(id, _, _)| id.as_str()).collect();
    let texts: Vec<&str> = chunk.iter().map(|(_, text, _)| text.as_str()).collect();
    tx.execute(&stmt, &[&ids, &texts]).await?;
    let docs: Vec<(&str, &Document)> = chunk
        .iter()
        .map(|(id, _, doc)| (id.as_str(), doc))
        .collect();
    insert_index_rows(tx, collection, indexes, &docs).await
}

/// The rows of every index (not unique: a duplicate value is not checked) for the new documents
/// `docs` (`_id`, document), one statement per index.
///
/// # Errors
/// [`Error::InvalidDocument`] for a document giving a sorted index more than
/// [`crate::MAX_INDEX_ENTRIES`] entries (checked before anything is written).
pub(super) async fn insert_index_rows(
    tx: &impl GenericClient,
    collection: &str,
    indexes: &mut Indexes,
    docs: &[(&str, &Document)],
) -> Result<()> {
    let mut entries = Vec::with_capacity(indexes.sorted.len());
    let none = BTreeSet::new();
    for index in &indexes.sorted {
        let mut rows: Vec<(&str, Vec<Vec<u8>>)> = Vec::with_capacity(docs.len());
        let mut multikey = false;
        for (id, doc) in docs {
            let doc_rows = sorted_entries(index, doc)?;
            multikey |= doc_rows.len() > 1;
            if super::prefixes::counted(index) {
                let set: BTreeSet<Vec<Vec<u8>>> = doc_rows.iter().cloned().collect();
                indexes.prefixes.add(index, &none, &set);
            }
            rows.extend(doc_rows.into_iter().map(|row| (*id, row)));
        }
        entries.push((rows, multikey));
    }
    for (index, (rows, multikey)) in indexes.sorted.iter_mut().zip(entries) {
        insert_sorted_rows(tx, index, &rows).await?;
        if multikey && !index.multikey {
            schema::set_multikey(tx, collection, &index.spec).await?;
            index.multikey = true;
        }
    }
    for index in &indexes.paths {
        let rows: Vec<(String, &str)> = docs
            .iter()
            .flat_map(|(id, doc)| {
                keys(doc, &index.path)
                    .into_iter()
                    .map(move |key| (key, *id))
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let values: Vec<&[u8]> = rows.iter().map(|(key, _)| key.as_bytes()).collect();
        let owners: Vec<&str> = rows.iter().map(|(_, id)| *id).collect();
        let stmt = tx
            .prepare_cached(&format!(
                "INSERT INTO {} (value, id) SELECT * FROM unnest($1::bytea[], $2::text[]) \
                 ON CONFLICT (value, id) DO NOTHING",
                index_table(collection, &index.path)
            ))
            .await?;
        tx.execute(&stmt, &[&values, &owners]).await?;
    }
    Ok(())
}

/// Writes the index rows of a document: removes the keys `old` had and `new` has not, adds the
/// keys `new` has and `old` had not (`None`: insert or removal). A key another document holds in
/// a unique index is [`Error::DuplicateKey`].
///
/// # Errors
/// As [`insert_index_rows`]; a document with too many entries is refused before anything is
/// written.
pub(super) async fn update_rows(
    tx: &Transaction<'_>,
    collection: &str,
    indexes: &mut Indexes,
    id: &str,
    old: Option<&Document>,
    new: Option<&Document>,
) -> Result<()> {
    let mut changes = Vec::with_capacity(indexes.sorted.len());
    for index in &indexes.sorted {
        let rows = |doc: Option<&Document>| -> Result<BTreeSet<Vec<Vec<u8>>>> {
            match doc {
                None => Ok(BTreeSet::new()),
                Some(doc) => Ok(sorted_entries(index, doc)?.into_iter().collect()),
            }
        };
        changes.push((rows(old)?, rows(new)?));
    }
    for (index, (old_rows, new_rows)) in indexes.sorted.iter_mut().zip(changes) {
        indexes.prefixes.add(index, &old_rows, &new_rows);
        update_sorted_rows(tx, collection, index, id, &old_rows, &new_rows).await?;
    }
    for index in &indexes.paths {
        let old_keys = old.map(|d| keys(d, &index.path)).unwrap_or_default();
        let new_keys = new.map(|d| keys(d, &index.path)).unwrap_or_default();
        let table = index_table(collection, &index.path);
        let stale: Vec<&[u8]> = old_keys
            .difference(&new_keys)
            .map(|k| k.as_bytes())
            .collect();
        if !stale.is_empty() {
            let stmt = tx
                .prepare_cached(&format!(
                    "DELETE FROM {table} WHERE id = $1 AND value = ANY($2)"
                ))
                .await?;
            tx.execute(&stmt, &[&id, &stale]).await?;
        }
        let added: Vec<&[u8]> = new_keys
            .difference(&old_keys)
            .map(|k| k.as_bytes())
            .collect();
        if !added.is_empty() {
            // Only a row that exists already is ignored; a unique index's violation is an error.
            let stmt = tx
                .prepare_cached(&format!(
                    "INSERT INTO {table} (value, id) SELECT v, $1 FROM unnest($2::bytea[]) AS v \
                     ON CONFLICT (value, id) DO NOTHING"
                ))
                .await?;
            tx.execute(&stmt, &[&id, &added])
                .await
                .map_err(|e| duplicate(e, collection, indexes, id))?;
        }
    }
    Ok(())
}

/// The entries `doc` gives the sorted `index` (see [`order_key::entries`]).
///
/// # Errors
/// [`Error::InvalidDocument`] when there would be more than [`crate::MAX_INDEX_ENTRIES`].
pub(super) fn sorted_entries(index: &SortedIndex, doc: &Document) -> Result<Vec<Vec<Vec<u8>>>> {
    order_key::entries(doc, &index.parts).ok_or_else(|| too_many_entries(&index.spec))
}

/// The refusal of a document with too many values for a sorted index.
fn too_many_entries(spec: &IndexSpec) -> Error {
    Error::InvalidDocument(format!(
        "the document holds too many values for the index {spec}: every combination of its \
         fields' values is an entry, and a document may give an index at most {} (an index \
         over two fields should have at most one of them hold a large array)",
        crate::MAX_INDEX_ENTRIES
    ))
}

/// The key columns of a sorted index as SQL: `k0, k1, ...`.
fn key_columns(index: &SortedIndex) -> Vec<String> {
    (0..index.spec.fields.len())
        .map(|i| format!("k{i}"))
        .collect()
}

/// Inserts `rows` (`_id`, one key per field) into the table of the sorted `index` with one
/// statement; rows present already are left as they are.
pub(super) async fn insert_sorted_rows(
    client: &impl GenericClient,
    index: &SortedIndex,
    rows: &[(&str, Vec<Vec<u8>>)],
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let n = index.spec.fields.len();
    let columns = key_columns(index);
    let arrays: Vec<String> = (0..n).map(|i| format!("${}::bytea[]", i + 1)).collect();
    let stmt = client
        .prepare_cached(&format!(
            "INSERT INTO {} ({}, id) SELECT * FROM unnest({}, ${}::text[]) ON CONFLICT DO NOTHING",
            index.table,
            columns.join(", "),
            arrays.join(", "),
            n + 1
        ))
        .await?;
    let keys: Vec<Vec<&[u8]>> = (0..n)
        .map(|i| rows.iter().map(|(_, row)| row[i].as_slice()).collect())
        .collect();
    let ids: Vec<&str> = rows.iter().map(|(id, _)| *id).collect();
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = keys
        .iter()
        .map(|k| k as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect();
    params.push(&ids);
    client.execute(&stmt, &params).await?;
    Ok(())
}

/// [`update_rows`] for one sorted index: the rows `old_rows` has and `new_rows` has not are
/// deleted, the others added; the index is marked multikey when the document now gives it
/// several.
async fn update_sorted_rows(
    tx: &Transaction<'_>,
    collection: &str,
    index: &mut SortedIndex,
    id: &str,
    old_rows: &BTreeSet<Vec<Vec<u8>>>,
    new_rows: &BTreeSet<Vec<Vec<u8>>>,
) -> Result<()> {
    if old_rows == new_rows {
        return Ok(());
    }
    let n = index.spec.fields.len();
    let stale: Vec<&Vec<Vec<u8>>> = old_rows.difference(new_rows).collect();
    if !stale.is_empty() {
        let columns = key_columns(index);
        let arrays: Vec<String> = (0..n).map(|i| format!("${}::bytea[]", i + 2)).collect();
        let same: Vec<String> = columns.iter().map(|c| format!("x.{c} = u.{c}")).collect();
        let stmt = tx
            .prepare_cached(&format!(
                "DELETE FROM {} AS x USING unnest({}) AS u({}) WHERE x.id = $1::text AND {}",
                index.table,
                arrays.join(", "),
                columns.join(", "),
                same.join(" AND ")
            ))
            .await?;
        let keys: Vec<Vec<&[u8]>> = (0..n)
            .map(|i| stale.iter().map(|row| row[i].as_slice()).collect())
            .collect();
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&id];
        params.extend(
            keys.iter()
                .map(|k| k as &(dyn tokio_postgres::types::ToSql + Sync)),
        );
        tx.execute(&stmt, &params).await?;
    }
    let added: Vec<(&str, Vec<Vec<u8>>)> = new_rows
        .difference(old_rows)
        .map(|row| (id, row.clone()))
        .collect();
    insert_sorted_rows(tx, index, &added).await?;
    if new_rows.len() > 1 && !index.multikey {
        schema::set_multikey(tx, collection, &index.spec).await?;
        index.multikey = true;
    }
    Ok(())
}

/// Inserts documents in one transaction, all or none; see [`crate::Store::insert_many`].
pub(crate) async fn insert_many(
    client: &mut Client,
    collection: &str,
    docs: Vec<Document>,
) -> Result<Vec<String>> {
    check_name(collection)?;
    let prepared = docs.into_iter().map(prepare).collect::<Result<Vec<_>>>()?;
    for attempt in 1..=ATTEMPTS {
        match insert_many_once(client, collection, &prepared).await {
            Ok(Some(ids)) => return Ok(ids),
            Ok(None) => schema::create_collection(client, collection).await?,
            // Chosen as a deadlock's victim (two inserts of one unique value wait on each
            // other's rows): nothing was written; run it again.
            Err(e) if super::error::is_retryable(&e) && attempt < ATTEMPTS => {}
            Err(e) => return Err(e),
        }
    }
    Err(gave_up(collection))
}

/// One try of [`insert_many`]: `Ok(None)` when the collection does not exist (nothing done).
async fn insert_many_once(
    client: &mut Client,
    collection: &str,
    prepared: &[(String, String, Document)],
) -> Result<Option<Vec<String>>> {
    let mut tx = WriteTx::begin(client).await?;
    let Some(mut indexes) = schema::lock_and_indexes(&tx, collection).await? else {
        return Ok(None);
    };
    let ids: Vec<String> = prepared.iter().map(|(id, _, _)| id.clone()).collect();
    tx.changed(Change::documents(
        collection,
        ids.clone(),
        ChangeKind::Insert,
    ));
    if let [doc] = prepared {
        if !indexes.is_empty() {
            // The index rows first: an insert waiting on another's unique value must not
            // hold a count or stamp slot that one wants (a deadlock).
            insert_in(&tx, collection, &mut indexes, doc).await?;
        }
        // The document (without indexes), the count and the notification in one round
        // trip; a refused insert's error comes first (the others' are then only the
        // aborted transaction).
        tx.notify_with(async {
            let (inserted, counted) = tokio::join!(
                async {
                    if indexes.is_empty() {
                        insert_in(&tx, collection, &mut indexes, doc).await?;
                    }
                    Ok::<(), Error>(())
                },
                schema::add_to_count(&tx, collection, 1),
            );
            inserted?;
            counted
        })
        .await?;
    } else {
        for chunk in prepared.chunks(CHUNK) {
            insert_chunk(&mut tx, collection, &mut indexes, chunk).await?;
        }
        schema::add_to_count(&tx, collection, count_delta(prepared.len())).await?;
    }
    tx.commit(indexes.prefixes).await?;
    Ok(Some(ids))
}

/// Inserts every document of `batches` in one transaction, in chunks as [`insert_many`] does,
/// rolled back at the first error; see [`crate::Store::insert_stream`]. The iterator may block
/// (a channel from a reader thread): each batch is taken on tokio's blocking pool.
pub(crate) async fn insert_stream(
    client: &mut Client,
    collection: &str,
    batches: crate::DocumentBatches,
) -> Result<u64> {
    check_name(collection)?;
    let mut batches = Some(batches);
    for _ in 0..ATTEMPTS {
        let mut tx = WriteTx::begin(client).await?;
        let Some(mut indexes) = schema::lock_and_indexes(&tx, collection).await? else {
            drop(tx);
            schema::create_collection(client, collection).await?;
            continue;
        };
        let mut n = 0u64;
        while let Some(mut rest) = batches.take() {
            let (rest, next) = tokio::task::spawn_blocking(move || {
                let next = rest.next();
                (rest, next)
            })
            .await
            .map_err(|e| Error::Backend(format!("reading the stream stopped: {e}")))?;
            let Some(batch) = next else {
                break;
            };
            batches = Some(rest);
            let prepared = batch?
                .into_iter()
                .map(prepare)
                .collect::<Result<Vec<_>>>()?;
            for chunk in prepared.chunks(CHUNK) {
                insert_chunk(&mut tx, collection, &mut indexes, chunk).await?;
            }
            n += prepared.len() as u64;
        }
        schema::add_to_count(&tx, collection, count_delta(n)).await?;
        // Which ids is not kept (a stream may be millions): listeners re-read the collection.
        tx.changed(Change::documents(
            collection,
            Vec::new(),
            ChangeKind::Insert,
        ));
        tx.commit(indexes.prefixes).await?;
        return Ok(n);
    }
    Err(gave_up(collection))
}

/// `n` documents as a change of the stored count.
fn count_delta<N: TryInto<i64>>(n: N) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The matching documents of `selector`, locked, in `_id` order; at most one unless `multi`.
pub(super) async fn matching(
    tx: &Transaction<'_>,
    collection: &str,
    selector: &Selector,
    multi: bool,
) -> Result<Vec<(String, Document)>> {
    let plan = plan_for(tx, collection, selector).await?;
    let mut found = Vec::new();
    let sql: (String, Vec<Param>) = candidate_sql(collection, &plan, None, true);
    for_each_in_tx(tx, collection, sql, |id, doc| {
        if selector.matches(&doc) {
            found.push((id, doc));
            if !multi {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    })
    .await?;
    Ok(found)
}

/// Updates (or upserts); see [`crate::Store::update`].
pub(crate) async fn update(
    client: &mut Client,
    collection: &str,
    selector: &Selector,
    update: &Update,
    options: UpdateOptions,
) -> Result<UpdateResult> {
    check_name(collection)?;
    for _ in 0..ATTEMPTS {
        let tx = WriteTx::begin(client).await?;
        let Some(mut indexes) = schema::lock_and_indexes(&tx, collection).await? else {
            drop(tx);
            if !options.upsert {
                return Ok(UpdateResult::default());
            }
            schema::create_collection(client, collection).await?;
            continue;
        };
        let found = matching(&tx, collection, selector, options.multi).await?;
        let mut result = UpdateResult {
            matched: found.len() as u64,
            ..UpdateResult::default()
        };
        let write_sql = update_sql(collection);
        let mut changed = Vec::new();
        for (id, old) in found {
            // An error returns here; the transaction is dropped and rolls back earlier documents.
            let Some((new, text)) = crate::modifier::apply_update(&old, update, &id)? else {
                continue;
            };
            let stmt = tx.prepare_cached(&write_sql).await?;
            tx.execute(&stmt, &[&id, &text]).await?;
            update_rows(&tx, collection, &mut indexes, &id, Some(&old), Some(&new)).await?;
            result.modified += 1;
            changed.push(id);
        }
        if result.matched == 0 && options.upsert {
            let doc = prepare(update.upsert_document(selector)?)?;
            insert_in(&tx, collection, &mut indexes, &doc).await?;
            schema::add_to_count(&tx, collection, 1).await?;
            changed.push(doc.0.clone());
            result.upserted_id = Some(doc.0);
        }
        if !changed.is_empty() {
            tx.changed(Change::documents(collection, changed, ChangeKind::Update));
        }
        tx.commit(indexes.prefixes).await?;
        return Ok(result);
    }
    Err(gave_up(collection))
}

/// Removes the matching documents and their index rows; see [`crate::Store::remove`].
pub(crate) async fn remove(
    client: &mut Client,
    collection: &str,
    selector: &Selector,
) -> Result<u64> {
    let tx = WriteTx::begin(client).await?;
    let Some(mut indexes) = schema::lock_and_indexes(&tx, collection).await? else {
        return Ok(0);
    };
    let table = collection_table(collection);
    let mut ids = Vec::new();
    let removed = if selector.is_all() {
        // The documents first: that waits for a sorted index's fill holding some of them
        // (`FOR SHARE`), whose entries the deletes of the index tables then see.
        let removed = tx.execute(&format!("DELETE FROM {table}"), &[]).await?;
        for index in &indexes.paths {
            tx.batch_execute(&format!(
                "DELETE FROM {}",
                index_table(collection, &index.path)
            ))
            .await?;
        }
        for index in &indexes.sorted {
            tx.batch_execute(&format!("DELETE FROM {}", index.table))
                .await?;
            super::prefixes::clear(&tx, index).await?;
        }
        removed
    } else {
        let found = matching(&tx, collection, selector, true).await?;
        let stmt = tx
            .prepare_cached(&format!("DELETE FROM {table} WHERE id = $1"))
            .await?;
        for (id, doc) in &found {
            tx.execute(&stmt, &[id]).await?;
            update_rows(&tx, collection, &mut indexes, id, Some(doc), None).await?;
        }
        ids = found.into_iter().map(|(id, _)| id).collect();
        ids.len() as u64
    };
    schema::add_to_count(&tx, collection, -count_delta(removed)).await?;
    if removed > 0 {
        // Removing everything names no ids: any document of the collection went.
        tx.changed(Change::documents(collection, ids, ChangeKind::Remove));
    }
    tx.commit(indexes.prefixes).await?;
    Ok(removed)
}

/// Creates the index on `path` (unique when asked) and fills it from the stored documents; see
/// [`crate::Store::ensure_index`] and [`crate::Store::ensure_unique_index`].
///
/// It holds the collection's `SHARE` lock: writers that started before finish first (their
/// documents are then visible to the fill), writers that come later wait and then see the index.
pub(crate) async fn ensure_index(
    client: &mut Client,
    collection: &str,
    path: &str,
    unique: bool,
) -> Result<()> {
    check_name(collection)?;
    split_path(path).map_err(|e| Error::InvalidName(format!("index path: {e}")))?;
    schema::check_text(path, "an index path")?;
    schema::create_collection(client, collection).await?;
    // `_id` is the primary key already.
    if path == "_id" {
        return Ok(());
    }
    let tx = WriteTx::begin(client).await?;
    schema::lock_ddl(&tx, collection).await?;
    tx.batch_execute(&format!(
        "LOCK TABLE {} IN SHARE MODE",
        collection_table(collection)
    ))
    .await?;
    let existing = indexed_paths(&*tx, collection).await?;
    let current = existing.iter().find(|i| i.path == path);
    if current.is_some_and(|i| i.unique || !unique) {
        return Ok(());
    }
    if current.is_none() {
        schema::create_index_table(&tx, collection, path).await?;
        fill_index(&tx, collection, path).await?;
    }
    if unique {
        schema::make_unique(&tx, collection, path).await?;
    }
    // No document changed: nothing to tell.
    tx.commit(PrefixDeltas::default()).await?;
    Ok(())
}

/// Writes the index rows of `path` for every stored document, a batch of documents at a time.
async fn fill_index(tx: &Transaction<'_>, collection: &str, path: &str) -> Result<()> {
    let mut values: Vec<Vec<u8>> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let sql = (
        format!("SELECT id, doc FROM {}", collection_table(collection)),
        Vec::new(),
    );
    let stmt = tx
        .prepare_cached(&format!(
            "INSERT INTO {} (value, id) SELECT * FROM unnest($1::bytea[], $2::text[]) \
             ON CONFLICT (value, id) DO NOTHING",
            index_table(collection, path)
        ))
        .await?;
    // The keys are gathered first and written in large batches (one statement per 10,000
    // keys); they are far smaller than the documents, which are read a batch at a time.
    for_each_in_tx(tx, collection, sql, |id, doc| {
        for key in keys(&doc, path) {
            values.push(key.into_bytes());
            ids.push(id.clone());
        }
        Ok(ControlFlow::Continue(()))
    })
    .await?;
    for (values, ids) in values.chunks(10_000).zip(ids.chunks(10_000)) {
        tx.execute(&stmt, &[&values, &ids]).await?;
    }
    Ok(())
}

/// Documents one transaction of a sorted index's fill reads (and locks `FOR SHARE`).
const FILL_BATCH: i64 = 1000;

/// Times a fill's batch starts over after losing a deadlock to a writer.
const FILL_ATTEMPTS: usize = 5;

/// Creates the sorted index `spec` and fills it from the stored documents without holding
/// writers back for the fill; see [`crate::Store::ensure_sorted_index`]. A unique spec first
/// makes its field unique as [`ensure_index`] does.
///
/// 1. A short transaction (the collection's DDL advisory lock, then its `SHARE` lock, which
///    waits for the writers under way and holds back new ones until it commits) creates the
///    empty table and the catalog row, not ready. Every writer from then on sees the row (it
///    reads the catalog after taking its `ROW EXCLUSIVE` lock) and keeps the index.
/// 2. The fill reads the documents in `_id` order, [`FILL_BATCH`] per transaction, each batch
///    `FOR SHARE`: an update or removal of those documents under way is waited for (and the
///    batch reads what it wrote), one coming later waits for the batch to commit (and then
///    sees its entries when it removes the old ones). The entries are inserted with
///    `ON CONFLICT DO NOTHING`: a writer may have inserted them already.
/// 3. The catalog row is marked ready (and multikey when a document gave several entries);
///    only then do reads use the index.
///
/// One fill of an index runs at a time (a session advisory lock of the index, held by the
/// connection that fills it): a second caller, from this instance or another, waits for it and
/// then finds the index ready, a no-op. An index not ready with no fill running (its instance
/// died half way) is filled again by the next call, which is harmless (inserts skip the rows
/// present). A stored document with too many entries drops the index again and is refused.
///
/// Run it on a task of its own (as the store does): dropped half way, the advisory lock would
/// stay with the pooled connection.
pub(crate) async fn ensure_sorted_index(
    client: &mut Client,
    collection: &str,
    spec: &IndexSpec,
) -> Result<()> {
    check_name(collection)?;
    schema::check_text(&schema::sorted_name(spec), "an index path")?;
    if spec.unique
        && let Some(field) = spec.fields.first()
    {
        ensure_index(client, collection, &field.path, true).await?;
    }
    schema::create_collection(client, collection).await?;
    let tx = WriteTx::begin(client).await?;
    schema::lock_ddl(&tx, collection).await?;
    match schema::sorted_entry(&*tx, collection, spec).await? {
        Some((stored, ready)) => {
            if spec.unique && !stored.unique {
                // Record the uniqueness the field now has.
                tx.execute(
                    "UPDATE portico_sorted SET spec = $3 WHERE collection = $1 AND name = $2",
                    &[
                        &collection,
                        &schema::sorted_name(spec),
                        &spec.to_value().to_string(),
                    ],
                )
                .await?;
            }
            tx.commit(PrefixDeltas::default()).await?;
            if ready {
                return Ok(());
            }
        }
        None => {
            tx.batch_execute(&format!(
                "LOCK TABLE {} IN SHARE MODE",
                collection_table(collection)
            ))
            .await?;
            schema::create_sorted_table(&tx, collection, spec).await?;
            tx.commit(PrefixDeltas::default()).await?;
        }
    }
    // One fill at a time per index, across instances: a session advisory lock, waited for by
    // a second caller, which then finds the index ready. The lock goes with the connection if
    // the instance dies; the caller runs this on a task of its own, so it cannot be dropped
    // half way with the lock held.
    let name = schema::sorted_name(spec);
    let key = "SELECT pg_advisory_lock(hashtextextended('portico:sorted:' || $1 || ':' || $2, 0))";
    client.execute(key, &[&collection, &name]).await?;
    let filled = match schema::sorted_entry(&*client, collection, spec).await {
        Ok(Some((_, true))) => Ok(()),
        Ok(Some((_, false))) => fill_sorted(client, collection, spec).await,
        Ok(None) => Err(Error::Backend(format!(
            "postgres: the index {spec} of collection {collection:?} was dropped while it was \
             being made"
        ))),
        Err(e) => Err(e),
    };
    let unlock =
        "SELECT pg_advisory_unlock(hashtextextended('portico:sorted:' || $1 || ':' || $2, 0))";
    let unlocked = client.execute(unlock, &[&collection, &name]).await;
    filled?;
    unlocked?;
    Ok(())
}

/// Step 2 and 3 of [`ensure_sorted_index`].
async fn fill_sorted(client: &mut Client, collection: &str, spec: &IndexSpec) -> Result<()> {
    let index = SortedIndex {
        parts: spec.split_paths(),
        table: schema::sorted_table(collection, spec),
        spec: spec.clone(),
        multikey: false,
    };
    let table = collection_table(collection);
    let first = format!("SELECT id, doc FROM {table} ORDER BY id LIMIT {FILL_BATCH} FOR SHARE");
    let next = format!(
        "SELECT id, doc FROM {table} WHERE id > $1 ORDER BY id LIMIT {FILL_BATCH} FOR SHARE"
    );
    let mut last: Option<String> = None;
    let mut multikey = false;
    loop {
        let mut attempts = 0;
        let filled = loop {
            match fill_batch(client, collection, &index, (&first, &next), last.as_deref()).await {
                Err(Fill::Retry(_)) if attempts + 1 < FILL_ATTEMPTS => attempts += 1,
                Err(Fill::Retry(e) | Fill::Failed(e)) => {
                    if matches!(e, Error::InvalidDocument(_)) {
                        drop_sorted_index(client, collection, spec).await?;
                    }
                    return Err(e);
                }
                Ok(filled) => break filled,
            }
        };
        let Some((id, multi)) = filled else {
            break;
        };
        last = Some(id);
        multikey |= multi;
    }
    // Ready, with its prefix counts taken afresh while no writer changes its entries (see
    // `prefixes.rs`).
    let tx = WriteTx::begin(client).await?;
    schema::lock_ddl(&tx, collection).await?;
    tx.batch_execute(&format!("LOCK TABLE {table} IN SHARE MODE"))
        .await?;
    super::prefixes::recount(&tx, &index).await?;
    let marked = tx
        .execute(
            "UPDATE portico_sorted SET ready = true, multikey = multikey OR $3 \
             WHERE collection = $1 AND name = $2",
            &[&collection, &schema::sorted_name(spec), &multikey],
        )
        .await?;
    // The counts were taken afresh above; no document changed.
    tx.commit(PrefixDeltas::default()).await?;
    if marked == 0 {
        return Err(Error::Backend(format!(
            "postgres: the index {spec} of collection {collection:?} was dropped while it was \
             being filled"
        )));
    }
    Ok(())
}

/// Why a batch of a fill failed.
enum Fill {
    /// A deadlock with a writer (PostgreSQL aborted the batch): start it over.
    Retry(Error),
    /// Anything else.
    Failed(Error),
}

impl From<tokio_postgres::Error> for Fill {
    fn from(e: tokio_postgres::Error) -> Self {
        let retry = e.code().is_some_and(|c| {
            *c == tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || *c == tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
        });
        if retry {
            Fill::Retry(e.into())
        } else {
            Fill::Failed(e.into())
        }
    }
}

impl From<Error> for Fill {
    fn from(e: Error) -> Self {
        Fill::Failed(e)
    }
}

impl Fill {
    /// Beginning or committing a batch's transaction failed with `e`: a deadlock or a
    /// serialization failure starts it over, as PostgreSQL's error itself would.
    fn of(e: Error) -> Fill {
        if super::error::is_retryable(&e) {
            Fill::Retry(e)
        } else {
            Fill::Failed(e)
        }
    }
}

/// One transaction of a fill: the entries of the next [`FILL_BATCH`] documents after `last`
/// (`_id` order). The last `_id` read and whether a document gave several entries; `None` when
/// no document is left.
async fn fill_batch(
    client: &mut Client,
    collection: &str,
    index: &SortedIndex,
    (first, next): (&str, &str),
    last: Option<&str>,
) -> std::result::Result<Option<(String, bool)>, Fill> {
    let tx = WriteTx::begin(client).await.map_err(Fill::of)?;
    let rows = match last {
        None => tx.query(first, &[]).await?,
        Some(id) => tx.query(next, &[&id]).await?,
    };
    let mut docs = Vec::with_capacity(rows.len());
    for row in &rows {
        docs.push(super::query::decode(collection, row)?);
    }
    let Some((last_id, _)) = docs.last() else {
        tx.commit(PrefixDeltas::default()).await.map_err(Fill::of)?;
        return Ok(None);
    };
    let last_id = last_id.clone();
    let mut entries: Vec<(&str, Vec<Vec<u8>>)> = Vec::new();
    let mut multikey = false;
    for (id, doc) in &docs {
        let rows = sorted_entries(index, doc)?;
        multikey |= rows.len() > 1;
        entries.extend(rows.into_iter().map(|row| (id.as_str(), row)));
    }
    for chunk in entries.chunks(10_000) {
        insert_sorted_rows(&*tx, index, chunk).await?;
    }
    // No document changed (a fill writes index entries only).
    tx.commit(PrefixDeltas::default()).await.map_err(Fill::of)?;
    Ok(Some((last_id, multikey)))
}

/// Drops the sorted index `spec`; false when there was none. See
/// [`crate::Store::drop_sorted_index`]. It takes the collection's `SHARE` lock for a moment, as
/// creating one does: a writer that read the catalog before must not find the table gone.
pub(crate) async fn drop_sorted_index(
    client: &mut Client,
    collection: &str,
    spec: &IndexSpec,
) -> Result<bool> {
    if collection.contains('\0') {
        return Ok(false);
    }
    let tx = WriteTx::begin(client).await?;
    schema::lock_ddl(&tx, collection).await?;
    let locked = tx
        .batch_execute(&format!(
            "LOCK TABLE {} IN SHARE MODE",
            collection_table(collection)
        ))
        .await;
    match locked {
        Ok(()) => {}
        Err(e) if super::error::is_undefined_table(&e) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    let dropped = schema::drop_sorted(&tx, collection, spec).await?;
    tx.commit(PrefixDeltas::default()).await?;
    Ok(dropped)
}

/// Drops a collection with its indexes; see [`crate::Store::drop_collection`].
pub(crate) async fn drop_collection(client: &mut Client, collection: &str) -> Result<()> {
    if collection.contains('\0') {
        return Ok(());
    }
    let tx = WriteTx::begin(client).await?;
    schema::lock_ddl(&tx, collection).await?;
    schema::drop_collection(&tx, collection).await?;
    tx.changed(Change::Resync {
        collection: Some(collection.into()),
    });
    tx.commit(PrefixDeltas::default()).await?;
    Ok(())
}
