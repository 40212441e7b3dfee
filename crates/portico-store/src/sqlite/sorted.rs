//! Reading through a sorted index (see [`crate::IndexSpec`] and [`crate::index_plan`]): the
//! candidates of a query come from a key range of the index's table, in the index's order when
//! that is the query's order, so a sorted page reads `skip + limit` entries instead of the
//! whole collection, and a covered query's total is a count of entries.

use std::collections::HashSet;
use std::sync::Arc;

use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;

use super::index::{Indexes, cached};
use super::plan::{not_text, parse_doc};
use super::schema::collection_table;
use crate::index_plan::{self, IndexPlan, KeyTerm, Order, SortedIndex, order_by};
pub(crate) use crate::index_plan::{Read, Rows};
use crate::paging::Page;
use crate::{Document, Query, Result, Selector};

/// The page (and, with `count`, the total) of `query` through the best sorted index of
/// `collection`, or `None` when no index helps. `text`: the caller wants stored texts (given
/// only for a query without projection).
pub(crate) fn read(
    conn: &Connection,
    collection: &str,
    query: &Query,
    text: bool,
    count: bool,
) -> Result<Option<Read>> {
    let Some((kept, plan)) = planned(conn, collection, &query.selector, query.sort.as_ref())?
    else {
        return Ok(None);
    };
    let index = &kept.sorted[plan.index];
    let text = text && query.projection.is_none();
    // Without a sort the page is the first matches in `_id` order. When the range is large,
    // reading the collection in `_id` order finds them sooner than sorting the range's ids;
    // the index still counts a covered total.
    if plan.order == Order::Id && query.sort.is_none() {
        let wanted = query.skip.saturating_add(query.limit.unwrap_or(u64::MAX));
        let budget = wanted.saturating_mul(4).saturating_add(1_000);
        if entries_over(conn, index, &plan, budget)? {
            if !plan.covered && count {
                // Every candidate is read for the count anyway: the range is still the fewest.
                return candidates(conn, collection, index, &plan, query, text, count).map(Some);
            }
            if !plan.covered {
                return Ok(None);
            }
            let total = if count {
                Some(count_entries(conn, index, &plan)?)
            } else {
                None
            };
            let docs = in_id_order(conn, collection, query)?;
            let rows = if text {
                Rows::Texts(crate::encode_all(&docs)?)
            } else {
                Rows::Docs(docs)
            };
            return Ok(Some(Read { rows, total }));
        }
    }
    let read = if plan.covered && (plan.order == Order::Index || query.sort.is_none()) {
        let total = if count {
            Some(covered_total(conn, collection, index, &plan, query)?)
        } else {
            None
        };
        covered_in_order(conn, collection, index, &plan, query, text, total)?
    } else {
        candidates(conn, collection, index, &plan, query, text, count)?
    };
    Ok(Some(read))
}

/// As [`read`] when the answer costs a few point reads, to be read on the caller's thread:
/// the plan is covered and in the index's order, the page is at most `rows` entries, and the
/// total (when `count`) is the collection's kept count, a kept prefix count (see
/// `prefixes.rs`) or at most `budget` entries. `None`
/// otherwise, and then the caller reads it with [`read`] in the blocking pool.
pub(crate) fn read_quick(
    conn: &mut Connection,
    collection: &str,
    query: &Query,
    text: bool,
    count: bool,
    (rows, budget): (u64, u64),
) -> Result<Option<Read>> {
    if query.skip.saturating_add(query.limit.unwrap_or(u64::MAX)) > rows {
        return Ok(None);
    }
    let Some((kept, plan)) = planned(conn, collection, &query.selector, query.sort.as_ref())?
    else {
        return Ok(None);
    };
    let index = &kept.sorted[plan.index];
    if !plan.covered || plan.order != Order::Index {
        return Ok(None);
    }
    let prefix_total = match count {
        true => super::prefixes::count(conn, index, &plan)?,
        false => None,
    };
    let total = match count {
        false => None,
        true if prefix_total.is_some() => prefix_total,
        true if query.selector.is_all() || index.multikey => {
            // Distinct documents of a multikey index: the range's entries bound them from
            // above.
            if !query.selector.is_all() && entries_over(conn, index, &plan, budget)? {
                return Ok(None);
            }
            Some(covered_total(conn, collection, index, &plan, query)?)
        }
        true => match count_within(conn, index, &plan, budget)? {
            Some(total) => Some(total),
            None => return Ok(None),
        },
    };
    let text = text && query.projection.is_none();
    covered_in_order(conn, collection, index, &plan, query, text, total).map(Some)
}

/// The total of a covered plan: the collection's kept count when the query selects every
/// document (one row, not every entry of the index), else the entries in the range.
fn covered_total(
    conn: &Connection,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    query: &Query,
) -> Result<u64> {
    if query.selector.is_all() {
        return Ok(super::schema::stored_count(conn, collection)?.unwrap_or(0));
    }
    count_entries(conn, index, plan)
}

/// The entries in the range of `plan` over an index without repeated documents, or `None` when
/// counting them takes longer than counting about `budget` entries does.
///
/// The count is a plain `count(*)`, SQLite's tight loop (three virtual machine steps an entry);
/// bounding it with a `LIMIT` on a subquery runs it as a co-routine, half as slow again. The
/// bound is kept by SQLite's progress handler instead, which stops the statement once it has
/// run more steps than `budget` entries take.
fn count_within(
    conn: &mut Connection,
    index: &SortedIndex,
    plan: &IndexPlan,
    budget: u64,
) -> Result<Option<u64>> {
    let steps = budget
        .saturating_mul(STEPS_PER_ENTRY)
        .saturating_add(STEPS_BESIDE);
    // Asked at least twice within the steps allowed, at most every PROGRESS_EVERY steps.
    let every = steps.div_ceil(2).clamp(1, PROGRESS_EVERY);
    let mut spent = 0u64;
    conn.progress_handler(
        i32::try_from(every).unwrap_or(1),
        Some(move || {
            spent += every;
            spent > steps
        }),
    )?;
    let (filter, args) = filter(plan);
    let counted = conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM {} AS x{filter}",
            index.table
        ))
        .and_then(|mut stmt| {
            stmt.query_row(rusqlite::params_from_iter(args.iter()), |row| {
                row.get::<_, i64>(0)
            })
        });
    conn.progress_handler(0, None::<fn() -> bool>)?;
    match counted {
        Ok(n) => Ok(Some(u64::try_from(n).unwrap_or(0))),
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::OperationInterrupted =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Virtual machine steps [`count_within`] allows an entry (a count takes three: the range's
/// end check, the count's step, the move to the next entry).
const STEPS_PER_ENTRY: u64 = 3;
/// Steps [`count_within`] allows beside the entries (opening and seeking).
const STEPS_BESIDE: u64 = 100;
/// Most steps between two calls of the progress handler in [`count_within`].
const PROGRESS_EVERY: u64 = 1_000;

/// How many documents match `selector`, counted in a sorted index when one holds exactly the
/// matches; `None` otherwise.
pub(crate) fn count(
    conn: &Connection,
    collection: &str,
    selector: &Selector,
) -> Result<Option<u64>> {
    match planned(conn, collection, selector, None)? {
        Some((kept, plan)) if plan.covered => {
            count_entries(conn, &kept.sorted[plan.index], &plan).map(Some)
        }
        _ => Ok(None),
    }
}

/// The collection's indexes and the plan of the best one for `selector` and `sort`; `None`
/// when no index helps.
fn planned(
    conn: &Connection,
    collection: &str,
    selector: &Selector,
    sort: Option<&crate::Sort>,
) -> Result<Option<(Arc<Indexes>, IndexPlan)>> {
    let kept = cached(conn, collection)?;
    Ok(index_plan::choose(selector, sort, &kept.sorted).map(|plan| (kept, plan)))
}

/// The WHERE clause of `plan` over the index table aliased `x`, and its parameters.
fn filter(plan: &IndexPlan) -> (String, Vec<SqlValue>) {
    let mut args = Vec::new();
    let mut param = |key: &[u8]| {
        args.push(SqlValue::Blob(key.to_vec()));
        format!("?{}", args.len())
    };
    // Equalities are written `IN (?n)`: with `= ?n` and an ORDER BY, SQLite re-prepares the
    // statement on every run (see `plan.rs`); `IN` with one value is the same search.
    let sql = index_plan::where_clause(plan, |column, term| match term {
        KeyTerm::Eq(key) => format!("{column} IN ({})", param(key)),
        KeyTerm::In(keys) => {
            let ps: Vec<String> = keys.iter().map(|k| param(k)).collect();
            format!("{column} IN ({})", ps.join(", "))
        }
        KeyTerm::Cmp(op, key) => format!("{column} {op} {}", param(key)),
    });
    (sql, args)
}

/// True when `plan`'s range holds more than about `budget` entries (the budget rounded up to
/// a power of two: each bound is a statement of its own, see [`entries_upto`]).
fn entries_over(
    conn: &Connection,
    index: &SortedIndex,
    plan: &IndexPlan,
    budget: u64,
) -> Result<bool> {
    let rounded = budget.checked_next_power_of_two().unwrap_or(u64::MAX);
    Ok(entries_upto(conn, index, plan, rounded)?.is_none())
}

/// The number of entries in `plan`'s range, or `None` when they are more than `budget`
/// (counted up to `budget + 1`).
fn entries_upto(
    conn: &Connection,
    index: &SortedIndex,
    plan: &IndexPlan,
    budget: u64,
) -> Result<Option<u64>> {
    // The bound is written into the statement: a bound LIMIT makes SQLite re-prepare the
    // statement on every run.
    let (filter, args) = filter(plan);
    let n: i64 = conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM (SELECT 1 FROM {} AS x{filter} LIMIT {})",
            index.table,
            budget.saturating_add(1).min(i64::MAX as u64)
        ))?
        .query_row(rusqlite::params_from_iter(args.iter()), |row| row.get(0))?;
    Ok(u64::try_from(n).ok().filter(|n| *n <= budget))
}

/// The page of an unsorted `query` read from the collection in `_id` order (every document a
/// candidate, the matcher deciding), stopping once the page is full; projected.
fn in_id_order(conn: &Connection, collection: &str, query: &Query) -> Result<Vec<Document>> {
    let scan = super::plan::Plan::Scan {
        needles: Vec::new(),
        numbers: Vec::new(),
        sizes: Vec::new(),
    };
    let mut page = Page::of(query);
    super::plan::for_each_candidate(conn, collection, &scan, |_, doc| Ok(page.offer(doc)))?;
    let docs = page.into_docs();
    Ok(match &query.projection {
        Some(p) => docs.iter().map(|d| p.apply(d)).collect(),
        None => docs,
    })
}

/// The number of distinct documents in `plan`'s range.
fn count_entries(conn: &Connection, index: &SortedIndex, plan: &IndexPlan) -> Result<u64> {
    if let Some(n) = super::prefixes::count(conn, index, plan)? {
        return Ok(n);
    }
    let (filter, args) = filter(plan);
    let what = if index.multikey {
        "count(DISTINCT x.id)"
    } else {
        "count(*)"
    };
    let n: i64 = conn
        .prepare_cached(&format!("SELECT {what} FROM {} AS x{filter}", index.table))?
        .query_row(rusqlite::params_from_iter(args.iter()), |row| row.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The longest `skip` a covered page reads joined to its documents (see
/// [`covered_in_order`]).
const JOINED_SKIP: u64 = 64;

/// A covered plan read in its order: the index's, or `_id` order for a query without a sort
/// whose range is small (see [`read`]).
///
/// In `_id` order the page's ids are the range's first (sorted among the index's entries, each
/// document once), then its documents by primary key. In the index's order, a first page (a
/// short `skip`) of an index without repeated documents is one statement over the range joined
/// to the documents, read until the page is full; a later page reads ids from the index alone
/// first (the skipped ones never touch a document), then each document of the page by primary
/// key. No document outside the page is read.
fn covered_in_order(
    conn: &Connection,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    query: &Query,
    text: bool,
    total: Option<u64>,
) -> Result<Read> {
    let (filter, args) = filter(plan);
    let mut page = PageRows::new(collection, query, text);
    let place = (collection, index, filter.as_str());
    if plan.order == Order::Id {
        in_id_order_joined(conn, place, args, query, &mut page)?;
    } else if !index.multikey && query.skip <= JOINED_SKIP {
        first_page_joined(conn, place, &args, query, &mut page)?;
    } else {
        ids_then_documents(conn, place, &args, query, &mut page)?;
    }
    Ok(Read {
        rows: page.into_rows(),
        total,
    })
}

/// Where [`covered_in_order`]'s readers read: the collection, the index and the WHERE clause
/// of the plan over it.
type Place<'a> = (&'a str, &'a SortedIndex, &'a str);

/// [`covered_in_order`] in `_id` order: the range's first distinct ids (skipped and limited
/// in SQL), joined to their documents.
fn in_id_order_joined(
    conn: &Connection,
    (collection, index, filter): Place<'_>,
    mut args: Vec<SqlValue>,
    query: &Query,
    page: &mut PageRows<'_>,
) -> Result<()> {
    let n = args.len();
    args.push(SqlValue::Integer(
        query
            .limit
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX)),
    ));
    args.push(SqlValue::Integer(
        i64::try_from(query.skip).unwrap_or(i64::MAX),
    ));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT c.id, c.doc FROM (SELECT DISTINCT x.id AS id FROM {} AS x{filter} \
         ORDER BY x.id LIMIT ?{} OFFSET ?{}) AS p CROSS JOIN {} AS c ON c.id = p.id \
         ORDER BY p.id",
        index.table,
        n + 1,
        n + 2,
        collection_table(collection)
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        page.push(&id, row.get_ref(1)?)?;
    }
    Ok(())
}

/// [`covered_in_order`]'s first page of an index without repeated documents: the range
/// joined to the documents, read until the page is full.
fn first_page_joined(
    conn: &Connection,
    (collection, index, filter): Place<'_>,
    args: &[SqlValue],
    query: &Query,
    page: &mut PageRows<'_>,
) -> Result<()> {
    let limit = query.limit.unwrap_or(u64::MAX);
    // The statement `candidates` runs for this plan too (one cached statement).
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT x.id, c.doc FROM {} AS x CROSS JOIN {} AS c ON c.id = x.id{filter} \
         ORDER BY {}",
        index.table,
        collection_table(collection),
        order_by(index, Order::Index)
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    let mut skipped = 0u64;
    while page.len() < limit
        && let Some(row) = rows.next()?
    {
        if skipped < query.skip {
            skipped += 1;
            continue;
        }
        // The id only names the row in an error: not copied.
        let id = match row.get_ref(0)? {
            rusqlite::types::ValueRef::Text(id) => String::from_utf8_lossy(id),
            _ => "".into(),
        };
        page.push(&id, row.get_ref(1)?)?;
    }
    Ok(())
}

/// [`covered_in_order`]'s later page (or any page of a multikey index): the page's ids from
/// the index alone (each document once; the skipped ones never touch a document), then each
/// document by primary key.
fn ids_then_documents(
    conn: &Connection,
    (collection, index, filter): Place<'_>,
    args: &[SqlValue],
    query: &Query,
    page: &mut PageRows<'_>,
) -> Result<()> {
    let limit = query.limit.unwrap_or(u64::MAX);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT x.id FROM {} AS x{filter} ORDER BY {}",
        index.table,
        order_by(index, Order::Index)
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut skipped = 0u64;
    let mut ids = Vec::new();
    while (ids.len() as u64) < limit
        && let Some(row) = rows.next()?
    {
        let id: String = row.get(0)?;
        if index.multikey && !seen.insert(id.clone()) {
            continue;
        }
        if skipped < query.skip {
            skipped += 1;
            continue;
        }
        ids.push(id);
    }
    drop(rows);
    drop(stmt);
    let mut by_id = conn.prepare_cached(&format!(
        "SELECT doc FROM {} WHERE id = ?1",
        collection_table(collection)
    ))?;
    for id in &ids {
        let mut rows = by_id.query([id])?;
        // An entry without its document cannot be: both are written in one transaction.
        let Some(row) = rows.next()? else {
            return Err(crate::Error::Backend(format!(
                "sqlite: the index {} of collection {collection:?} names a missing document {id:?}",
                index.spec
            )));
        };
        page.push(id, row.get_ref(0)?)?;
    }
    Ok(())
}

/// The rows of a page as they are read: stored texts (checked to be JSON objects) or
/// documents (projected).
struct PageRows<'q> {
    collection: &'q str,
    query: &'q Query,
    rows: Rows,
}

impl<'q> PageRows<'q> {
    fn new(collection: &'q str, query: &'q Query, text: bool) -> Self {
        let rows = if text {
            Rows::Texts(Vec::new())
        } else {
            Rows::Docs(Vec::new())
        };
        PageRows {
            collection,
            query,
            rows,
        }
    }

    fn len(&self) -> u64 {
        match &self.rows {
            Rows::Texts(texts) => texts.len() as u64,
            Rows::Docs(docs) => docs.len() as u64,
        }
    }

    /// Adds the stored document `value` of `id`.
    fn push(&mut self, id: &str, value: rusqlite::types::ValueRef<'_>) -> Result<()> {
        match &mut self.rows {
            Rows::Texts(texts) => {
                let rusqlite::types::ValueRef::Text(bytes) = value else {
                    return Err(not_text(self.collection, id));
                };
                let checked = std::str::from_utf8(bytes)
                    .ok()
                    .filter(|t| crate::document::is_object_text(t))
                    .ok_or_else(|| not_text(self.collection, id))?;
                texts.push(checked.to_owned());
            }
            Rows::Docs(docs) => {
                let doc = parse_doc(self.collection, id, value)?;
                docs.push(match &self.query.projection {
                    Some(p) => p.apply(&doc),
                    None => doc,
                });
            }
        }
        Ok(())
    }

    fn into_rows(self) -> Rows {
        self.rows
    }
}

/// A plan whose candidates the matcher decides, or whose order is `_id` order: every
/// candidate in the range is read and decoded (until the page is full, unless counting), and
/// given to a [`Page`] (which sorts when the index's order is not the query's).
fn candidates(
    conn: &Connection,
    collection: &str,
    index: &SortedIndex,
    plan: &IndexPlan,
    query: &Query,
    text: bool,
    count: bool,
) -> Result<Read> {
    let (filter, args) = filter(plan);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT x.id, c.doc FROM {} AS x CROSS JOIN {} AS c ON c.id = x.id{filter} ORDER BY {}",
        index.table,
        collection_table(collection),
        order_by(index, plan.order)
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
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
    let mut scanned = 0u64;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        scanned += 1;
        if index.multikey {
            let repeat = match plan.order {
                Order::Id => last_id.as_deref() == Some(id.as_str()),
                Order::Index => !seen.insert(id.clone()),
            };
            if repeat {
                continue;
            }
            last_id = Some(id.clone());
        }
        let doc = parse_doc(collection, &id, row.get_ref(1)?)?;
        if !plan.covered && !query.selector.matches(&doc) {
            continue;
        }
        matched += 1;
        if !full && page.offer(doc).is_break() {
            full = true;
        }
        if full && !count {
            break;
        }
    }
    if !plan.covered {
        crate::slow::note_query(collection, query, scanned);
    }
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
