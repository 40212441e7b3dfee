//! Reading: candidates of a [`Plan`] read from PostgreSQL and decided by the reference matcher;
//! `find`, `count` and `get` on top.
//!
//! Rows arrive a batch at a time and are dropped unless kept for the answer, so memory stays
//! bounded by `skip + limit` (plus one batch) whatever the collection's size: a scan reads through
//! a portal (a cursor inside a transaction) a batch of rows at a time, and stops as soon as the
//! answer is complete. Lookups through the primary key or an index read their few rows in one
//! round trip, without a transaction.

use std::ops::ControlFlow;
use std::pin::pin;

use deadpool_postgres::{Client, GenericClient};
use futures::TryStreamExt;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use super::error::{corrupt, is_undefined_table};
use super::plan::{Plan, may_use_index, plan};
pub(crate) use super::rows::{Param, decode, for_each_in_tx};
use super::rows::{read_portal, refs};
use super::schema::{IndexedPath, collection_table, index_table, indexed_paths, stored_count};
use crate::paging::Page;
use crate::{Document, Query, RelatedField, RelatedRead, Result, Selector};

/// The SQL and parameters reading the candidates of `plan` (`id`, `doc`) in `_id` order.
/// `page` (limit, offset) is applied by PostgreSQL, for a plan whose candidates all match.
/// `for_update` locks the rows for the rest of the transaction.
pub(crate) fn candidate_sql(
    collection: &str,
    plan: &Plan,
    page: Option<(Option<i64>, i64)>,
    for_update: bool,
) -> (String, Vec<Param>) {
    let table = collection_table(collection);
    let (mut sql, mut params): (String, Vec<Param>) = match plan {
        Plan::Id(id) => (
            format!("SELECT id, doc FROM {table} WHERE id = $1"),
            vec![Box::new(id.clone())],
        ),
        Plan::Ids(ids) => (
            format!("SELECT id, doc FROM {table} WHERE id = ANY($1) ORDER BY id"),
            vec![Box::new(ids.clone())],
        ),
        Plan::Index { path, key } => (
            format!(
                "SELECT c.id, c.doc FROM {index} AS x JOIN {table} AS c ON c.id = x.id \
                 WHERE x.value = $1 ORDER BY x.id",
                index = index_table(collection, path)
            ),
            vec![Box::new(key.clone())],
        ),
        Plan::Scan { filter: None } => (format!("SELECT id, doc FROM {table} ORDER BY id"), vec![]),
        Plan::Scan {
            filter: Some((path, vars)),
        } => (
            format!(
                "SELECT id, doc FROM {table} WHERE body IS NULL OR \
                 jsonb_path_match(body, $1::text::jsonpath, $2::text::jsonb, true) IS NOT FALSE \
                 ORDER BY id"
            ),
            vec![Box::new(path.clone()), Box::new(vars.clone())],
        ),
    };
    if let Some((limit, offset)) = page {
        let n = params.len();
        sql.push_str(&format!(" LIMIT ${} OFFSET ${}", n + 1, n + 2));
        params.push(Box::new(limit));
        params.push(Box::new(offset));
    }
    if for_update {
        sql.push_str(if matches!(plan, Plan::Index { .. }) {
            " FOR UPDATE OF c"
        } else {
            " FOR UPDATE"
        });
    }
    (sql, params)
}

/// Calls `visit` with each candidate of `selector` in `_id` order until it breaks; nothing when
/// the collection does not exist. Index and primary-key plans read in one statement, scans
/// through a portal in a read-only transaction. `page` is for a selector matching everything.
///
/// Reads do not look the collection up first (one more round trip on every read): preparing the
/// statement fails when its table is missing, and that reads as an empty collection. Nor, for a
/// selector with one equality, the list of indexes: the index table is read directly, and a
/// missing one means a scan. This is sound because an index table becomes visible only in the
/// transaction that fills it (`ensure_index`), so one that exists is complete.
pub(crate) async fn for_each_candidate(
    client: &mut Client,
    collection: &str,
    selector: &Selector,
    page: Option<(Option<i64>, i64)>,
    mut visit: impl FnMut(String, Document) -> Result<ControlFlow<()>> + Send,
) -> Result<()> {
    let guessed = guessed_plan(selector);
    let mut plan = match &guessed {
        Some(plan) => plan.clone(),
        None => plan_for(&*client, collection, selector).await?,
    };
    let (stmt, params) = loop {
        let (sql, params) = candidate_sql(collection, &plan, page, false);
        match client.prepare_cached(&sql).await {
            Ok(stmt) => break (stmt, params),
            Err(e) if is_undefined_table(&e) && matches!(plan, Plan::Index { .. }) => {
                plan = scan_plan(selector);
            }
            Err(e) if is_undefined_table(&e) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    };
    if matches!(plan, Plan::Scan { .. }) {
        return scan(client, collection, &stmt, &params, visit).await;
    }
    let rows = match client.query_raw(&stmt, refs(&params)).await {
        Ok(rows) => rows,
        // An index dropped since the statement was prepared: scan instead.
        Err(e) if is_undefined_table(&e) && matches!(plan, Plan::Index { .. }) => {
            let (sql, params) = candidate_sql(collection, &scan_plan(selector), None, false);
            let stmt = match client.prepare_cached(&sql).await {
                Ok(stmt) => stmt,
                Err(e) if is_undefined_table(&e) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            return scan(client, collection, &stmt, &params, visit).await;
        }
        Err(e) if is_undefined_table(&e) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut rows = pin!(rows);
    // Dropping the stream early leaves the rest of the rows for the connection to discard.
    while let Some(row) = rows.try_next().await? {
        let (id, doc) = decode(collection, &row)?;
        if visit(id, doc)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// Runs a scan's statement through a portal in a read-only transaction. A statement prepared
/// while the collection existed fails to bind once it is dropped: that reads as empty.
async fn scan(
    client: &mut Client,
    collection: &str,
    stmt: &Statement,
    params: &[Param],
    visit: impl FnMut(String, Document) -> Result<ControlFlow<()>> + Send,
) -> Result<()> {
    let tx = client.build_transaction().read_only(true).start().await?;
    let portal = match tx.bind(stmt, &refs(params)).await {
        Ok(portal) => portal,
        Err(e) if is_undefined_table(&e) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    read_portal(&tx, collection, &portal, visit).await?;
    tx.commit().await?;
    Ok(())
}

/// The plan of a selector whose candidates can be found without reading the list of indexes:
/// a primary-key lookup, or the index of its one equality (when that index exists; see
/// [`for_each_candidate`]).
fn guessed_plan(selector: &Selector) -> Option<Plan> {
    if let Some(id) = selector.id_equality() {
        return Some(Plan::Id(id.to_owned()));
    }
    if let Some(ids) = selector.id_set() {
        return Some(Plan::Ids(ids.into_iter().map(str::to_owned).collect()));
    }
    match selector.equalities().as_slice() {
        [(path, _)] => match plan(
            selector,
            &[IndexedPath {
                path: (*path).to_owned(),
                unique: false,
            }],
        ) {
            plan @ Plan::Index { .. } => Some(plan),
            _ => None,
        },
        _ => None,
    }
}

/// The plan of `selector` on a collection without indexes.
fn scan_plan(selector: &Selector) -> Plan {
    plan(selector, &[])
}

/// The plan for `selector`, reading the collection's indexes only when one could be used.
pub(crate) async fn plan_for(
    client: &impl GenericClient,
    collection: &str,
    selector: &Selector,
) -> Result<Plan> {
    let indexes = if selector.id_equality().is_none() && may_use_index(selector) {
        indexed_paths(client, collection).await?
    } else {
        Vec::new()
    };
    Ok(plan(selector, &indexes))
}

/// The documents `query` asks for, sorted, skipped, limited and projected: through a sorted
/// index when one helps (see `sorted.rs`), else from the candidates of the selector. `None`
/// when no index serves the sort and its window is over [`crate::MAX_SORTED_WINDOW`]: the
/// caller refuses it (outside a replica's read, which must not count it as the replica's
/// failure).
pub(crate) async fn find(
    client: &mut Client,
    catalog: &super::sorted::Catalog,
    collection: &str,
    query: &Query,
) -> Result<Option<Vec<Document>>> {
    if query.limit == Some(0) {
        return Ok(Some(Vec::new()));
    }
    if let Some(read) =
        super::sorted::read(client, catalog, collection, query, false, false).await?
        && let super::sorted::Rows::Docs(docs) = read.rows
    {
        return Ok(Some(docs));
    }
    if crate::paging::check_sorted_window(query).is_err() {
        return Ok(None);
    }
    find_candidates(client, collection, query).await.map(Some)
}

/// [`find`] without a sorted index: the candidates of the selector, decided by the matcher.
async fn find_candidates(
    client: &mut Client,
    collection: &str,
    query: &Query,
) -> Result<Vec<Document>> {
    let selector = &query.selector;
    let skip = query.skip;
    let mut docs = Vec::new();
    match &query.sort {
        None if selector.is_all() => {
            // Every row matches: PostgreSQL skips and stops, without sending skipped documents.
            let limit = query.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
            let page = Some((limit, i64::try_from(skip).unwrap_or(i64::MAX)));
            for_each_candidate(client, collection, selector, page, |_, doc| {
                docs.push(doc);
                Ok(ControlFlow::Continue(()))
            })
            .await?;
        }
        _ => {
            let mut page = Page::of(query);
            for_each_candidate(client, collection, selector, None, |_, doc| {
                Ok(page.offer(doc))
            })
            .await?;
            docs = page.into_docs();
        }
    }
    if let Some(projection) = &query.projection {
        docs = docs.iter().map(|doc| projection.apply(doc)).collect();
    }
    Ok(docs)
}

/// The page of `query` as JSON texts and its total (a query that is not a plain page; see
/// [`crate::Store::find_page`]): through a sorted index in one snapshot when one helps,
/// else counted and read from the candidates (the catalog read once for both). `None` as for
/// [`find`].
pub(crate) async fn find_json_counted(
    client: &mut Client,
    catalog: &super::sorted::Catalog,
    collection: &str,
    query: &Query,
) -> Result<Option<(Vec<String>, u64)>> {
    if let Some(read) = super::sorted::read(client, catalog, collection, query, true, true).await? {
        let texts = read.rows.into_texts()?;
        return Ok(Some((texts, read.total.unwrap_or(0))));
    }
    if crate::paging::check_sorted_window(query).is_err() {
        return Ok(None);
    }
    // No index helps the selector and sort, so none counts the selector alone either.
    let total = if query.selector.is_all() {
        stored_count(client, collection).await?
    } else {
        count_candidates(client, collection, &query.selector).await?
    };
    let page = if query.limit == Some(0) {
        Vec::new()
    } else {
        crate::encode_all(&find_candidates(client, collection, query).await?)?
    };
    Ok(Some((page, total)))
}

/// A page of the whole collection in `_id` order as the stored JSON text, with no document
/// decoded and encoded again (see [`crate::Store::find_page`]). Each text is checked to be one
/// JSON object, without building it.
pub(crate) async fn page_json(
    client: &Client,
    collection: &str,
    skip: u64,
    limit: Option<u64>,
) -> Result<Vec<String>> {
    if limit == Some(0) {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, doc FROM {} ORDER BY id LIMIT $1 OFFSET $2",
        collection_table(collection)
    );
    let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    let offset = i64::try_from(skip).unwrap_or(i64::MAX);
    let Some(rows) = rows_if_table(client, &sql, &[&limit, &offset]).await? else {
        return Ok(Vec::new());
    };
    rows.iter()
        .map(|row| object_text(row, collection, 0, 1))
        .collect()
}

/// [`page_json`] and the kept count of the whole collection, read by ONE statement: one round
/// trip and one snapshot, so the total is the one the page was cut from (the two reads of the
/// trait's default are two round trips, each with its own snapshot). The count is the outer
/// row, so an empty page still brings it.
pub(crate) async fn page_json_counted(
    client: &Client,
    collection: &str,
    skip: u64,
    limit: Option<u64>,
) -> Result<(Vec<String>, u64)> {
    if limit == Some(0) {
        return Ok((Vec::new(), stored_count(client, collection).await?));
    }
    let sql = format!(
        "SELECT c.n, p.id, p.doc \
         FROM (SELECT coalesce(sum(n), 0)::bigint AS n FROM portico_counts WHERE name = $3) c \
         LEFT JOIN LATERAL (SELECT id, doc FROM {} ORDER BY id LIMIT $1 OFFSET $2) p ON true \
         ORDER BY p.id",
        collection_table(collection)
    );
    let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    let offset = i64::try_from(skip).unwrap_or(i64::MAX);
    let rows = match client.prepare_cached(&sql).await {
        Ok(stmt) => client.query(&stmt, &[&limit, &offset, &collection]).await,
        Err(e) => Err(e),
    };
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) if is_undefined_table(&e) => {
            return Ok((Vec::new(), stored_count(client, collection).await?));
        }
        Err(e) => return Err(e.into()),
    };
    let total = match rows.first() {
        Some(row) => u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0),
        None => 0,
    };
    let mut page = Vec::with_capacity(rows.len());
    for row in &rows {
        // An empty page is the count's row alone, with no document.
        if row.try_get::<_, Option<&str>>(2)?.is_some() {
            page.push(object_text(row, collection, 1, 2)?);
        }
    }
    Ok((page, total))
}

/// [`page_json_counted`] and, in the same statement, the documents each of `related` names in
/// the page's documents (see [`crate::Store::find_page`]): one round trip and
/// one snapshot for a list page, its total and its related documents. The ids are read from
/// the page's `jsonb` copies (a document without one, holding `\u0000`, gives none: the caller
/// reads what was not looked up); each relation's distinct ids are cut to its `max_ids` in page
/// order, then array order, and looked up by primary key. `None` when a related collection's
/// table does not exist (the caller reads the page alone).
pub(crate) async fn page_json_counted_related(
    client: &Client,
    collection: &str,
    skip: u64,
    limit: Option<u64>,
    related: &[RelatedField],
) -> Result<Option<(Vec<String>, u64, Vec<RelatedRead>)>> {
    let mut params: Vec<Param> = vec![
        Box::new(limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX))),
        Box::new(i64::try_from(skip).unwrap_or(i64::MAX)),
        Box::new(collection.to_owned()),
    ];
    // The page's limit and offset are sub-selects: PostgreSQL then estimates the same plan
    // whatever they are and keeps it for the prepared statement (a generic plan), where a
    // plain `LIMIT $1 OFFSET $2` makes it plan every execution again (custom plans), which
    // costs this statement more than running it.
    let mut ctes = format!(
        "WITH p AS (SELECT id, doc, body FROM {} ORDER BY id \
         LIMIT (SELECT $1::bigint) OFFSET (SELECT $2::bigint))",
        collection_table(collection)
    );
    let mut parts = String::from(
        "SELECT 0 AS k, c.n, p.id, p.doc \
         FROM (SELECT coalesce(sum(n), 0)::bigint AS n FROM portico_counts WHERE name = $3) c \
         LEFT JOIN p ON true",
    );
    for (k, follow) in related.iter().enumerate() {
        let (field, max) = (params.len() + 1, params.len() + 2);
        params.push(Box::new(follow.field.clone()));
        params.push(Box::new(i64::try_from(follow.max_ids).unwrap_or(i64::MAX)));
        // The first occurrence of each id (a string, or a string of an array), then the
        // first `max` of them in page order.
        ctes.push_str(&format!(
            ", r{k} AS (SELECT x.id FROM (\
               SELECT DISTINCT ON (v.id) v.id, p.id AS pid, v.pos FROM p CROSS JOIN LATERAL (\
                 SELECT (p.body ->> ${field}::text) COLLATE \"C\" AS id, 0::bigint AS pos \
                 WHERE jsonb_typeof(p.body -> ${field}::text) = 'string' \
                 UNION ALL \
                 SELECT (e.v #>> '{{}}') COLLATE \"C\", e.n FROM jsonb_array_elements(\
                   CASE WHEN jsonb_typeof(p.body -> ${field}::text) = 'array' \
                   THEN p.body -> ${field}::text ELSE '[]'::jsonb END\
                 ) WITH ORDINALITY AS e(v, n) WHERE jsonb_typeof(e.v) = 'string'\
               ) v ORDER BY v.id, p.id, v.pos\
             ) x ORDER BY x.pid, x.pos LIMIT ${max})"
        ));
        parts.push_str(&format!(
            " UNION ALL SELECT {one}, NULL, r{k}.id, t.doc FROM r{k} \
             LEFT JOIN {table} t ON t.id = r{k}.id",
            one = k + 1,
            table = collection_table(&follow.collection)
        ));
    }
    let sql = format!("{ctes} {parts} ORDER BY 1, 3");
    let Some(rows) = rows_if_table(client, &sql, &refs(&params)).await? else {
        return Ok(None);
    };
    let mut total = 0;
    let mut page = Vec::new();
    let mut reads: Vec<RelatedRead> = related
        .iter()
        .map(|follow| RelatedRead {
            field: follow.field.clone(),
            ..RelatedRead::default()
        })
        .collect();
    for row in &rows {
        let k: i32 = row.try_get(0)?;
        if k == 0 {
            total = u64::try_from(row.try_get::<_, i64>(1)?).unwrap_or(0);
            // An empty page is the count's row alone, with no document.
            if row.try_get::<_, Option<&str>>(3)?.is_some() {
                page.push(object_text(row, collection, 2, 3)?);
            }
            continue;
        }
        let index = usize::try_from(k - 1).unwrap_or(usize::MAX);
        let (Some(read), Some(follow)) = (reads.get_mut(index), related.get(index)) else {
            continue;
        };
        let id: String = row.try_get(2)?;
        if let Some(text) = row.try_get::<_, Option<&str>>(3)? {
            let text = checked_object_text(text, &follow.collection, || Ok(id.clone()))?;
            read.texts.push((id.clone(), text));
        }
        read.ids.push(id);
    }
    Ok(Some((page, total, reads)))
}

/// The stored documents among `ids`, as `(id, text)` (each checked to be one JSON object): one
/// primary-key read; none when the collection does not exist.
pub(crate) async fn texts_by_id(
    client: &Client,
    collection: &str,
    ids: &[String],
) -> Result<Vec<(String, String)>> {
    let sql = format!(
        "SELECT id, doc FROM {} WHERE id = ANY($1)",
        collection_table(collection)
    );
    let Some(rows) = rows_if_table(client, &sql, &[&ids]).await? else {
        return Ok(Vec::new());
    };
    rows.iter()
        .map(|row| {
            let id: String = row.try_get(0)?;
            let text = object_text(row, collection, 0, 1)?;
            Ok((id, text))
        })
        .collect()
}

/// Column `doc` of `row` (a stored document) as text checked to be one JSON object, without
/// building it; column `id` is its id, for the error.
fn object_text(row: &Row, collection: &str, id: usize, doc: usize) -> Result<String> {
    checked_object_text(row.try_get(doc)?, collection, || Ok(row.try_get(id)?))
}

/// `text` (stored document `id`, asked for only to report a bad one) checked to be one JSON
/// object, without building it.
fn checked_object_text(
    text: &str,
    collection: &str,
    id: impl FnOnce() -> Result<String>,
) -> Result<String> {
    if crate::document::is_object_text(text) {
        return Ok(text.to_owned());
    }
    let id = id()?;
    Err(crate::Error::Backend(format!(
        "postgres: stored document {id:?} of collection {collection:?} is not a JSON object"
    )))
}

/// How many documents match `selector`; the whole collection's count is read from the catalog.
pub(crate) async fn count(
    client: &mut Client,
    catalog: &super::sorted::Catalog,
    collection: &str,
    selector: &Selector,
) -> Result<u64> {
    if selector.is_all() {
        return stored_count(client, collection).await;
    }
    // A sorted index holding exactly the matches counts its entries.
    if let Some(n) = super::sorted::count(client, catalog, collection, selector).await? {
        return Ok(n);
    }
    count_candidates(client, collection, selector).await
}

/// [`count`] of a selector that is not everything, without a sorted index.
async fn count_candidates(
    client: &mut Client,
    collection: &str,
    selector: &Selector,
) -> Result<u64> {
    let mut n = 0u64;
    for_each_candidate(client, collection, selector, None, |_, doc| {
        if selector.matches(&doc) {
            n += 1;
        }
        Ok(ControlFlow::Continue(()))
    })
    .await?;
    Ok(n)
}

/// The row of document `id` (its stored text in column 0), or `None` when there is none or the
/// collection has no table: one primary-key lookup, one round trip.
async fn stored_row(
    client: &Client,
    collection: &str,
    id: &str,
) -> Result<Option<tokio_postgres::Row>> {
    let sql = format!(
        "SELECT doc FROM {} WHERE id = $1",
        collection_table(collection)
    );
    let row = match client.prepare_cached(&sql).await {
        Ok(stmt) => client.query_opt(&stmt, &[&id]).await,
        Err(e) => Err(e),
    };
    match row {
        Ok(row) => Ok(row),
        Err(e) if is_undefined_table(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The document `id` as its stored JSON text (checked to be one JSON object), or `None`.
pub(crate) async fn get_json(
    client: &Client,
    collection: &str,
    id: &str,
) -> Result<Option<String>> {
    let Some(row) = stored_row(client, collection, id).await? else {
        return Ok(None);
    };
    checked_object_text(row.try_get(0)?, collection, || Ok(id.to_owned())).map(Some)
}

/// The document with `_id == id`: one primary-key lookup, one round trip.
pub(crate) async fn get(client: &Client, collection: &str, id: &str) -> Result<Option<Document>> {
    let Some(row) = stored_row(client, collection, id).await? else {
        return Ok(None);
    };
    let text: &str = row.try_get(0)?;
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| corrupt(collection, id, &e))
}

/// The rows of `sql` (prepared once per connection) with `params`; `None` when a collection's
/// table it reads does not exist yet (a collection never written reads as empty).
async fn rows_if_table(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Vec<Row>>> {
    let rows = match client.prepare_cached(sql).await {
        Ok(stmt) => client.query(&stmt, params).await,
        Err(e) => Err(e),
    };
    match rows {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if is_undefined_table(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
