//! Reading through a sorted index (see [`crate::IndexSpec`] and [`crate::index_plan`]): the
//! candidates of a query come from a key range of the index's table, in the index's order when
//! that is the query's order, so a sorted page reads `skip + limit` entries instead of the
//! whole collection, and a covered query's total is a count of entries. As the SQLite
//! backend's `sorted.rs`, over PostgreSQL.
//!
//! Only ready indexes (filled, see `write.rs`) are used. The catalog (which indexes, which are
//! multikey) and the index are read in one snapshot: a read-only `REPEATABLE READ` transaction
//! that first locks the tables it may read (`ACCESS SHARE`, taken before the snapshot, so a
//! table it finds is the one the snapshot's catalog describes, not one dropped and made again
//! since), then reads the catalog, then the index. So a document written with several entries
//! for the first time cannot be counted twice by a read that took the catalog before that write
//! and the index after it. A table gone before the lock reads as "no index": the caller reads
//! without one.
//!
//! The tables to lock and the plan come from the catalog the store kept from its last read
//! ([`Catalog`]), so a read does not ask the catalog first; the catalog read in the snapshot
//! decides whether the answer stands (it is the one planned on) or the read is planned again.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};

use deadpool_postgres::{Client, Transaction};
use tokio_postgres::IsolationLevel;
use tokio_postgres::types::ToSql;

use super::error::is_undefined_table;
use super::rows::{Param, decode, for_each_in_tx};
use super::schema::{SORTED_INDEXES, collection_table, sorted_from_rows, sorted_indexes};
use crate::index_plan::{self, IndexPlan, KeyTerm, Order, SortedIndex, order_by};
pub(crate) use crate::index_plan::{Read, Rows};
use crate::paging::Page;
use crate::{Document, Query, Result, Selector, Sort};

/// False when no index can help: a selector matching everything without a sort (a plain page
/// in `_id` order), or one pinning `_id` without a sort (the primary key is best). Such reads
/// do not read the catalog.
fn may_help(selector: &Selector, sort: Option<&Sort>) -> bool {
    if sort.is_some() {
        return true;
    }
    !selector.is_all() && selector.id_equality().is_none() && selector.id_set().is_none()
}

/// The ready sorted indexes of each collection as last read, so that a read through an index
/// plans without asking the catalog first. Never trusted alone: every read through an index
/// reads the catalog again inside its snapshot and is planned again when that differs (see
/// [`read`]); a kept catalog with no index for a query is read again before the query is
/// given up to a scan (one round trip, beside the scan's cost).
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    kept: Mutex<HashMap<String, Arc<Vec<SortedIndex>>>>,
}

impl Catalog {
    /// The kept indexes of `collection`, when some were read.
    fn kept(&self, collection: &str) -> Option<Arc<Vec<SortedIndex>>> {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(collection)
            .cloned()
    }

    /// Keeps `indexes` as those of `collection`.
    fn keep(&self, collection: &str, indexes: Vec<SortedIndex>) -> Arc<Vec<SortedIndex>> {
        let indexes = Arc::new(indexes);
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(collection.to_owned(), indexes.clone());
        indexes
    }

    /// Forgets what was kept of `collection` (its indexes changed here).
    pub(crate) fn forget(&self, collection: &str) {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(collection);
    }

    /// The indexes of `collection` and a plan over them for `selector` and `sort`: from what
    /// is kept when that gives a plan, else read from the database (and kept).
    async fn plan(
        &self,
        client: &Client,
        collection: &str,
        selector: &Selector,
        sort: Option<&Sort>,
    ) -> Result<Option<(Arc<Vec<SortedIndex>>, IndexPlan)>> {
        if let Some(kept) = self.kept(collection)
            && let Some(plan) = index_plan::choose(selector, sort, &kept)
        {
            return Ok(Some((kept, plan)));
        }
        let read = self.keep(collection, sorted_indexes(client, collection, true).await?);
        Ok(index_plan::choose(selector, sort, &read).map(|plan| (read, plan)))
    }
}

/// How many times a read through an index is planned again when the catalog read in its
/// snapshot differs from the one it was planned on (an index made, filled or dropped
/// meanwhile) before it reads as the slower general path does.
const REPLANS: usize = 3;

/// The second parameter of [`SORTED_INDEXES`] for reads: ready indexes only.
const READY_ONLY: bool = true;

/// The page (and, with `count`, the total) of `query` through the best ready sorted index of
/// `collection`, read in one snapshot; `None` when no index helps. `text`: the caller wants
/// stored texts (given only for a query without projection).
///
/// The common list (a first page in the order of an index that holds exactly the matches) is
/// one round trip: the transaction's start and locks, the catalog, the total, the page and
/// the commit are sent together, planned on the kept catalog, and the answer is used only
/// when the catalog read in the snapshot is the one planned on.
pub(crate) async fn read(
    client: &mut Client,
    catalog: &Catalog,
    collection: &str,
    query: &Query,
    text: bool,
    count: bool,
) -> Result<Option<Read>> {
    let sort = query.sort.as_ref();
    if !may_help(&query.selector, sort) {
        return Ok(None);
    }
    let text = text && query.projection.is_none();
    for _ in 0..REPLANS {
        let Some((indexes, plan)) = catalog
            .plan(client, collection, &query.selector, sort)
            .await?
        else {
            return Ok(None);
        };
        let index = &indexes[plan.index];
        if !(plan.covered && plan.order == Order::Index && joined(index, query)) {
            break;
        }
        let (filter, args, n) = paged_filter(&plan, query);
        let page = joined_page_sql(collection, index, &filter, n);
        let total = count.then(|| total_sql(collection, index, &plan, &query.selector));
        match in_one_trip(client, collection, &indexes, &page, &args, total).await? {
            Trip::Done { rows, total } => {
                let rows = page_rows(collection, &rows, query, text)?;
                return Ok(Some(Read { rows, total }));
            }
            Trip::Changed(read) => {
                catalog.keep(collection, read);
            }
            Trip::Gone => catalog.forget(collection),
        }
    }
    let Some((tx, indexes, plan)) =
        snapshot(client, catalog, collection, &query.selector, sort).await?
    else {
        return Ok(None);
    };
    let index = &indexes[plan.index];
    let read = if plan.covered && plan.order == Order::Index {
        covered_in_order(&tx, collection, index, &plan, query, text, count).await?
    } else {
        candidates(&tx, collection, index, &plan, query, text, count).await?
    };
    tx.commit().await?;
    Ok(Some(read))
}

/// How many documents match `selector`, counted in a ready sorted index when one holds exactly
/// the matches; `None` otherwise. One round trip, as [`read`]'s common list.
pub(crate) async fn count(
    client: &mut Client,
    catalog: &Catalog,
    collection: &str,
    selector: &Selector,
) -> Result<Option<u64>> {
    if !may_help(selector, None) {
        return Ok(None);
    }
    for _ in 0..REPLANS {
        let Some((indexes, plan)) = catalog.plan(client, collection, selector, None).await? else {
            return Ok(None);
        };
        if !plan.covered {
            return Ok(None);
        }
        let total = total_sql(collection, &indexes[plan.index], &plan, selector);
        match in_one_trip(client, collection, &indexes, "", &[], Some(total)).await? {
            Trip::Done { total, .. } => return Ok(total),
            Trip::Changed(read) => {
                catalog.keep(collection, read);
            }
            Trip::Gone => catalog.forget(collection),
        }
    }
    let Some((tx, indexes, plan)) = snapshot(client, catalog, collection, selector, None).await?
    else {
        return Ok(None);
    };
    if !plan.covered {
        return Ok(None);
    }
    let n = count_matches(&tx, collection, &indexes[plan.index], &plan, selector).await?;
    tx.commit().await?;
    Ok(Some(n))
}

/// What [`in_one_trip`] found.
enum Trip {
    /// The catalog in the snapshot was the one planned on: the page's rows (none when no page
    /// was asked) and the total (when asked).
    Done {
        rows: Vec<tokio_postgres::Row>,
        total: Option<u64>,
    },
    /// The catalog in the snapshot differs (these are its ready indexes): plan again.
    Changed(Vec<SortedIndex>),
    /// A table planned on is gone: read the catalog again.
    Gone,
}

/// The statement (and parameters, numbered from `$1`) that counts the matches of a covered
/// plan: the collection's kept count when the selector is everything, the kept count of a
/// prefix the plan pins (see `prefixes.rs`), else the index's entries in the plan's range
/// (distinct documents when multikey).
fn total_sql(
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    selector: &Selector,
) -> (String, Vec<Param>) {
    if selector.is_all() {
        // The whole collection: its kept count (a few slot rows), not every entry of the index.
        return (
            "SELECT coalesce(sum(n), 0)::bigint FROM portico_counts WHERE name = $1".to_owned(),
            vec![Box::new(collection.to_owned())],
        );
    }
    let (filter, mut args) = filter(plan);
    let what = if index.multikey {
        "count(DISTINCT x.id)"
    } else {
        "count(*)"
    };
    let counted = format!("SELECT {what}::bigint FROM {} AS x{filter}", index.table);
    match index_plan::pinned_prefix(index, plan) {
        // A pinned prefix: its kept count, or the count above while it has none.
        Some(prefix) => {
            let sql = super::prefixes::total_sql(
                &format!("${}::text", args.len() + 1),
                &format!("${}::bytea", args.len() + 2),
                &counted,
            );
            args.push(Box::new(index.table.clone()));
            args.push(Box::new(prefix));
            (sql, args)
        }
        None => (counted, args),
    }
}

/// A read-only `REPEATABLE READ` transaction sent in one write and answered in one round trip:
/// its start with the locks of the collection's table and of every table of `indexes`
/// (`ACCESS SHARE`, taken before the snapshot), the catalog (which takes the snapshot), the
/// total's statement, the page's statement (unless empty) and the commit. The statements are
/// prepared first (cached on the connection after the first time), so nothing waits between
/// them; a statement after a failed one fails too, and the commit then rolls back.
async fn in_one_trip(
    client: &Client,
    collection: &str,
    indexes: &[SortedIndex],
    page: &str,
    args: &[Param],
    total: Option<(String, Vec<Param>)>,
) -> Result<Trip> {
    let listed = client.prepare_cached(SORTED_INDEXES).await?;
    let page_stmt = if page.is_empty() {
        None
    } else {
        Some(client.prepare_cached(page).await?)
    };
    let total_stmt = match &total {
        Some((sql, _)) => Some(client.prepare_cached(sql).await?),
        None => None,
    };
    let tables: Vec<&str> = indexes.iter().map(|i| i.table.as_str()).collect();
    let begin = format!(
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; LOCK TABLE {}, {} IN ACCESS SHARE MODE",
        collection_table(collection),
        tables.join(", ")
    );
    let catalog_args: [&(dyn ToSql + Sync); 2] = [&collection, &READY_ONLY];
    let no_args: Vec<Param> = Vec::new();
    let total_args = total.as_ref().map_or(&no_args, |(_, a)| a);
    // `biased`: polled once each in this order, so the requests go out in this order (each
    // is sent when first polled).
    let (began, listed, total, rows, ended) = tokio::join!(
        biased;
        client.batch_execute(&begin),
        client.query(&listed, &catalog_args),
        async {
            match &total_stmt {
                Some(stmt) => client.query_one(stmt, &refs(total_args)).await.map(Some),
                None => Ok(None),
            }
        },
        async {
            match &page_stmt {
                Some(stmt) => client.query(stmt, &refs(args)).await,
                None => Ok(Vec::new()),
            }
        },
        client.batch_execute("COMMIT"),
    );
    match began {
        Ok(()) => {}
        Err(e) if is_undefined_table(&e) => return Ok(Trip::Gone),
        Err(e) => return Err(e.into()),
    }
    let listed = sorted_from_rows(collection, &listed?)?;
    if listed != indexes {
        return Ok(Trip::Changed(listed));
    }
    let total = match total? {
        Some(row) => Some(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0)),
        None => None,
    };
    let rows = rows?;
    ended?;
    Ok(Trip::Done { rows, total })
}

/// The snapshot a read through an index runs in, the ready indexes it sees and the plan over
/// them; `None` (nothing left open) when no index helps: a read-only `REPEATABLE READ`
/// transaction that locks the collection's table and the tables of the indexes `catalog`
/// planned on, then reads the catalog again in its snapshot (kept for the next read) and plans
/// over the indexes it locked.
async fn snapshot<'c>(
    client: &'c mut Client,
    catalog: &Catalog,
    collection: &str,
    selector: &Selector,
    sort: Option<&Sort>,
) -> Result<Option<(Transaction<'c>, Vec<SortedIndex>, IndexPlan)>> {
    let Some((first, _)) = catalog.plan(client, collection, selector, sort).await? else {
        return Ok(None);
    };
    let tables: Vec<String> = first.iter().map(|i| i.table.clone()).collect();
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let lock = format!(
        "LOCK TABLE {}, {} IN ACCESS SHARE MODE",
        collection_table(collection),
        tables.join(", ")
    );
    // Pipelined: the lock is taken before the catalog's statement takes the snapshot.
    let (locked, indexes) = tokio::join!(
        biased;
        tx.batch_execute(&lock),
        sorted_indexes(&tx, collection, true)
    );
    match locked {
        Ok(()) => {}
        // Dropped since the catalog was read: read without the index (and read the catalog
        // again next time).
        Err(e) if is_undefined_table(&e) => {
            catalog.forget(collection);
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    }
    let indexes = indexes?;
    if indexes != *first {
        catalog.keep(collection, indexes.clone());
    }
    let indexes: Vec<SortedIndex> = indexes
        .into_iter()
        .filter(|i| tables.contains(&i.table))
        .collect();
    match index_plan::choose(selector, sort, &indexes) {
        Some(plan) => Ok(Some((tx, indexes, plan))),
        None => Ok(None),
    }
}

/// The WHERE clause of `plan` over the index table aliased `x`, and its parameters (numbered
/// from `$1`).
fn filter(plan: &IndexPlan) -> (String, Vec<Param>) {
    let mut args: Vec<Param> = Vec::new();
    let sql = index_plan::where_clause(plan, |column, term| {
        let (op, key) = match term {
            KeyTerm::In(keys) => {
                args.push(Box::new(keys.to_vec()));
                return format!("{column} = ANY(${}::bytea[])", args.len());
            }
            KeyTerm::Eq(key) => ("=", key),
            KeyTerm::Cmp(op, key) => (op, key),
        };
        args.push(Box::new(key.to_vec()));
        format!("{column} {op} ${}::bytea", args.len())
    });
    (sql, args)
}

fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// The number of documents a covered `plan` holds (see [`total_sql`]).
async fn count_matches(
    tx: &Transaction<'_>,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    selector: &Selector,
) -> Result<u64> {
    let (sql, args) = total_sql(collection, index, plan, selector);
    let stmt = tx.prepare_cached(&sql).await?;
    let n: i64 = tx.query_one(&stmt, &refs(&args)).await?.try_get(0)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// A covered plan read in the index's order: the page's ids from the index alone (the skipped
/// ones never touch a document; PostgreSQL skips them itself unless the index is multikey,
/// when the ids stream through a portal and repeats are left out here), then the page's
/// documents by primary key in one statement.
async fn covered_in_order(
    tx: &Transaction<'_>,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    query: &Query,
    text: bool,
    count: bool,
) -> Result<Read> {
    let total = async {
        Ok::<_, crate::Error>(if count {
            Some(count_matches(tx, collection, index, plan, &query.selector).await?)
        } else {
            None
        })
    };
    // The count and the page are sent together (pipelined on the connection): one round trip
    // for both instead of one each.
    let (total, rows) = tokio::try_join!(
        total,
        covered_page(tx, collection, index, plan, query, text)
    )?;
    Ok(Read { rows, total })
}

/// The page of [`covered_in_order`]. A first page (a short `skip`) of an index without
/// repeated documents is one statement joining the index's range to the documents; a later
/// page reads its ids from the index first, so the skipped entries never touch a document.
async fn covered_page(
    tx: &Transaction<'_>,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    query: &Query,
    text: bool,
) -> Result<Rows> {
    if joined(index, query) {
        let (filter, args, n) = paged_filter(plan, query);
        let stmt = tx
            .prepare_cached(&joined_page_sql(collection, index, &filter, n))
            .await?;
        let rows = tx.query(&stmt, &refs(&args)).await?;
        return page_rows(collection, &rows, query, text);
    }
    let (filter, args) = filter(plan);
    let order = order_by(index, Order::Index);
    let mut ids: Vec<String> = Vec::new();
    if query.limit == Some(0) {
        // Nothing to read.
    } else if index.multikey {
        let stmt = tx
            .prepare_cached(&format!(
                "SELECT x.id FROM {} AS x{filter} ORDER BY {order}",
                index.table
            ))
            .await?;
        let portal = tx.bind(&stmt, &refs(&args)).await?;
        let limit = query.limit.unwrap_or(u64::MAX);
        let mut seen: HashSet<String> = HashSet::new();
        let mut skipped = 0u64;
        'read: loop {
            let rows = tx.query_portal(&portal, 1024).await?;
            let done = rows.len() < 1024;
            for row in rows {
                let id: String = row.try_get(0)?;
                if !seen.insert(id.clone()) {
                    continue;
                }
                if skipped < query.skip {
                    skipped += 1;
                    continue;
                }
                ids.push(id);
                if ids.len() as u64 >= limit {
                    break 'read;
                }
            }
            if done {
                break;
            }
        }
    } else {
        let (filter, args, n) = paged_filter(plan, query);
        let stmt = tx
            .prepare_cached(&format!(
                "SELECT x.id FROM {} AS x{filter} ORDER BY {order} LIMIT ${} OFFSET ${}",
                index.table,
                n + 1,
                n + 2
            ))
            .await?;
        for row in tx.query(&stmt, &refs(&args)).await? {
            ids.push(row.try_get(0)?);
        }
    }
    if !ids.is_empty() {
        let stmt = tx
            .prepare_cached(&format!(
                "SELECT c.id, c.doc FROM unnest($1::text[]) WITH ORDINALITY AS u(id, n) \
                 JOIN {} AS c ON c.id = u.id ORDER BY u.n",
                collection_table(collection)
            ))
            .await?;
        let rows = tx.query(&stmt, &[&ids]).await?;
        // An entry without its document cannot be: both are written in one transaction.
        if rows.len() != ids.len() {
            return Err(crate::Error::Backend(format!(
                "postgres: the index {} of collection {collection:?} names a missing document",
                index.spec
            )));
        }
        return page_rows(collection, &rows, query, text);
    }
    Ok(if text {
        Rows::Texts(Vec::new())
    } else {
        Rows::Docs(Vec::new())
    })
}

/// [`filter`] with the query's limit and skip as its next two parameters (`$n+1`, `$n+2`;
/// `n` returned).
fn paged_filter(plan: &IndexPlan, query: &Query) -> (String, Vec<Param>, usize) {
    let (filter, mut args) = filter(plan);
    let n = args.len();
    args.push(Box::new(
        query.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX)),
    ));
    args.push(Box::new(i64::try_from(query.skip).unwrap_or(i64::MAX)));
    (filter, args, n)
}

/// The longest `skip` a page reads joined to its documents (see [`covered_page`]).
const JOINED_SKIP: u64 = 100;

/// Whether a page of `query` in the order of `index` is read joined to its documents: a first
/// page (a short `skip`, something to read) of an index without repeated documents.
fn joined(index: &SortedIndex, query: &Query) -> bool {
    !index.multikey && query.skip <= JOINED_SKIP && query.limit != Some(0)
}

/// The statement reading a [`joined`] page: the range's page first (its LIMIT and OFFSET are
/// parameters `$n+1`, `$n+2` after the filter's), then each document by primary key
/// (`LATERAL`): whatever the planner guesses for a LIMIT it does not know yet (a generic
/// plan), it never joins more than the page.
fn joined_page_sql(collection: &str, index: &SortedIndex, filter: &str, n: usize) -> String {
    let order = order_by(index, Order::Index);
    format!(
        "SELECT c.id, c.doc FROM (SELECT x.* FROM {} AS x{filter} ORDER BY {order} \
         LIMIT ${} OFFSET ${}) AS x CROSS JOIN LATERAL \
         (SELECT id, doc FROM {} WHERE id = x.id) AS c ORDER BY {order}",
        index.table,
        n + 1,
        n + 2,
        collection_table(collection),
    )
}

/// The page's rows `(id, doc)` as stored texts (checked to be JSON objects) or as documents
/// (projected).
fn page_rows(
    collection: &str,
    rows: &[tokio_postgres::Row],
    query: &Query,
    text: bool,
) -> Result<Rows> {
    if text {
        let mut texts = Vec::with_capacity(rows.len());
        for row in rows {
            let id: &str = row.try_get(0)?;
            let stored: &str = row.try_get(1)?;
            if !crate::document::is_object_text(stored) {
                return Err(crate::Error::Backend(format!(
                    "postgres: stored document {id:?} of collection {collection:?} is not \
                     a JSON object"
                )));
            }
            texts.push(stored.to_owned());
        }
        return Ok(Rows::Texts(texts));
    }
    let mut docs = Vec::with_capacity(rows.len());
    for row in rows {
        let (_, doc) = decode(collection, row)?;
        docs.push(match &query.projection {
            Some(p) => p.apply(&doc),
            None => doc,
        });
    }
    Ok(Rows::Docs(docs))
}

/// A plan whose candidates the matcher decides, or whose order is `_id` order: every
/// candidate in the range is read through a portal and decoded (until the page is full, unless
/// counting), and given to a [`Page`] (which sorts when the index's order is not the query's).
async fn candidates(
    tx: &Transaction<'_>,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    query: &Query,
    text: bool,
    count: bool,
) -> Result<Read> {
    let (filter, args) = filter(plan);
    let sql = format!(
        "SELECT x.id, c.doc FROM {} AS x JOIN {} AS c ON c.id = x.id{filter} ORDER BY {}",
        index.table,
        collection_table(collection),
        order_by(index, plan.order)
    );
    let everything = Selector::all();
    // In the index's order the page is cut as rows come (no sort); in `_id` order the page
    // sorts (or cuts, without a sort).
    let sort = match plan.order {
        Order::Index => None,
        Order::Id => query.sort.as_ref(),
    };
    let mut page = Page::new(&everything, sort, query.skip, query.limit);
    let mut full = query.limit == Some(0);
    let mut matched = 0u64;
    let mut seen: HashSet<String> = HashSet::new();
    let mut last_id: Option<String> = None;
    for_each_in_tx(tx, collection, (sql, args), |id, doc| {
        if index.multikey {
            let repeat = match plan.order {
                Order::Id => last_id.as_deref() == Some(id.as_str()),
                Order::Index => !seen.insert(id.clone()),
            };
            if repeat {
                return Ok(ControlFlow::Continue(()));
            }
            last_id = Some(id);
        }
        if !plan.covered && !query.selector.matches(&doc) {
            return Ok(ControlFlow::Continue(()));
        }
        matched += 1;
        if !full && page.offer(doc).is_break() {
            full = true;
        }
        if full && !count {
            return Ok(ControlFlow::Break(()));
        }
        Ok(ControlFlow::Continue(()))
    })
    .await?;
    let docs = page.into_docs();
    let docs: Vec<Document> = match &query.projection {
        Some(p) => docs.iter().map(|d| p.apply(d)).collect(),
        None => docs,
    };
    let rows = if text {
        Rows::Texts(crate::encode_all(&docs)?)
    } else {
        Rows::Docs(docs)
    };
    Ok(Read {
        rows,
        total: count.then_some(matched),
    })
}
