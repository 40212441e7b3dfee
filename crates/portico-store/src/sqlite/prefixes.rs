//! Kept counts of a compound sorted index's key prefixes, so that the total of a list that
//! pins the index's first fields by equality is one row read, not a count of its entries.
//!
//! The list an app shows first is often "my open tasks, newest first": equality on a prefix of
//! an index (`["ownerId", "status", "-createdAt"]`) and its order on the rest. Its page reads
//! `limit` entries however large the collection grows, but its total counted every matching
//! entry (about 70 ns each: 9 ms for a city of 125,000 documents). For every sorted index over
//! two or more fields, Portico keeps, per value of each proper prefix of its
//! keys (`ownerId`; `ownerId, status`), how many documents have an entry with that prefix. The
//! counts change in the transaction of every write that changes the index's entries, so they
//! are exactly what a count of entries would find.
//!
//! A single-field index keeps none (that count would be one row per distinct value, as many as
//! the index's entries for a field like `email`); nor does a range (`$gte`), which no kept
//! count can answer: those totals are still counted.
//!
//! The counts are rows of `portico_counts`, beside the collections' own, keyed by a blob (the
//! index's table name, a zero byte, the encoded prefix) where a collection's row is keyed by its
//! name as text: SQLite never finds a blob equal to a text, so the two kinds never meet, and
//! while a collection's prefixes are few they share the page of its count, which every insert
//! writes anyway (a table of their own cost inserts a page more: measured 0.60x to 0.53x of an
//! insert without indexes, for the benchmark's three indexes).
//!
//! Each index has a marker row (an empty prefix) written with its table. A count is used only
//! when the marker is there; a database whose compound indexes were made before the counts
//! existed gets them computed once, when opened (see [`build_missing`]).

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use crate::Result;
use crate::index_plan::{
    IndexPlan, SortedIndex, keeps_prefix_counts as counted, pinned_prefix, prefix_changes,
};

/// The key of a prefix's row in `portico_counts`: the index's table name, a zero byte, the
/// encoded prefix (`index_plan::encode_prefix`; nothing for the marker).
fn key(table: &str, prefix: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(table.len() + 1 + prefix.len());
    out.extend_from_slice(table.as_bytes());
    out.push(0);
    out.extend_from_slice(prefix);
    out
}

/// The keys of every row of the index whose table is `table` lie in `[marker, end)`: the
/// marker (the least of them), and the end past the last.
fn key_range(table: &str) -> (Vec<u8>, Vec<u8>) {
    let mut end = table.as_bytes().to_vec();
    end.push(1);
    (key(table, &[]), end)
}

/// Writes the marker of a new, empty `index` (call in the transaction that made its table).
pub(crate) fn start(conn: &Connection, index: &SortedIndex) -> Result<()> {
    if counted(index) {
        conn.prepare_cached("INSERT OR REPLACE INTO portico_counts (name, n) VALUES (?1, 0)")?
            .execute(params![key(&index.table, &[])])?;
    }
    Ok(())
}

/// Forgets the counts of `index`, its marker included (its table is dropped).
pub(crate) fn forget(conn: &Connection, table: &str) -> Result<()> {
    let (marker, end) = key_range(table);
    conn.prepare_cached("DELETE FROM portico_counts WHERE name >= ?1 AND name < ?2")?
        .execute(params![marker, end])?;
    Ok(())
}

/// Sets every count of `index` to zero (its entries were all removed), keeping the marker.
pub(crate) fn clear(conn: &Connection, index: &SortedIndex) -> Result<()> {
    if counted(index) {
        let (marker, end) = key_range(&index.table);
        conn.prepare_cached("DELETE FROM portico_counts WHERE name > ?1 AND name < ?2")?
            .execute(params![marker, end])?;
    }
    Ok(())
}

/// Changes the counts of `index` for one document whose entries were `old` and are now `new`
/// (each a set of key rows). A document counts once per distinct prefix, however many entries
/// share it (an array in a later field).
pub(crate) fn update(
    conn: &Connection,
    index: &SortedIndex,
    old: &BTreeSet<Vec<Vec<u8>>>,
    new: &BTreeSet<Vec<Vec<u8>>>,
) -> Result<()> {
    for (prefix, change) in prefix_changes(index, old, new) {
        let row = key(&index.table, &prefix);
        if change > 0 {
            conn.prepare_cached(
                "INSERT INTO portico_counts (name, n) VALUES (?1, 1) \
                 ON CONFLICT (name) DO UPDATE SET n = n + 1",
            )?
            .execute(params![row])?;
            continue;
        }
        let left: Option<i64> = conn
            .prepare_cached("UPDATE portico_counts SET n = n - 1 WHERE name = ?1 RETURNING n")?
            .query_row(params![row], |r| r.get(0))
            .optional()?;
        if left.is_some_and(|n| n <= 0) {
            conn.prepare_cached("DELETE FROM portico_counts WHERE name = ?1")?
                .execute(params![row])?;
        }
    }
    Ok(())
}

/// The kept number of documents in `plan`'s range, when `plan` pins a proper prefix of
/// `index` by equality and nothing else and the counts are kept; `None` otherwise (count the
/// entries). Only for a covered plan: then those documents are exactly the matches.
pub(crate) fn count(
    conn: &Connection,
    index: &SortedIndex,
    plan: &IndexPlan,
) -> Result<Option<u64>> {
    let Some(prefix) = pinned_prefix(index, plan) else {
        return Ok(None);
    };
    let marker = key(&index.table, &[]);
    let mut stmt =
        conn.prepare_cached("SELECT name, n FROM portico_counts WHERE name IN (?1, ?2)")?;
    let mut rows = stmt.query(params![marker, key(&index.table, &prefix)])?;
    let (mut marked, mut n) = (false, 0i64);
    while let Some(row) = rows.next()? {
        if row.get::<_, Vec<u8>>(0)? == marker {
            marked = true;
        } else {
            n = row.get(1)?;
        }
    }
    Ok(marked.then(|| u64::try_from(n).unwrap_or(0)))
}

/// Computes the counts of every compound sorted index without a marker (made before the
/// counts were kept), from its entries. Call inside the transaction that opens the file.
pub(crate) fn build_missing(conn: &Connection, indexes: &[SortedIndex]) -> Result<()> {
    for index in indexes.iter().filter(|i| counted(i)) {
        let marked = conn
            .prepare_cached("SELECT 1 FROM portico_counts WHERE name = ?1")?
            .exists(params![key(&index.table, &[])])?;
        if marked {
            continue;
        }
        forget(conn, &index.table)?;
        start(conn, index)?;
        let fields = index.spec.fields.len();
        let columns: Vec<String> = (0..fields).map(|i| format!("k{i}")).collect();
        let mut stmt = conn.prepare(&format!(
            "SELECT DISTINCT id, {} FROM {} ORDER BY id",
            columns.join(", "),
            index.table
        ))?;
        let mut rows = stmt.query([])?;
        let mut current: Option<(String, BTreeSet<Vec<Vec<u8>>>)> = None;
        let empty = BTreeSet::new();
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            let keys = (1..=fields)
                .map(|i| row.get::<_, Vec<u8>>(i))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            match &mut current {
                Some((seen, entries)) if *seen == id => {
                    entries.insert(keys);
                }
                _ => {
                    if let Some((_, entries)) = current.take() {
                        update(conn, index, &empty, &entries)?;
                    }
                    current = Some((id, BTreeSet::from([keys])));
                }
            }
        }
        if let Some((_, entries)) = current.take() {
            update(conn, index, &empty, &entries)?;
        }
    }
    Ok(())
}
