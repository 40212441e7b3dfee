//! Kept counts of a compound sorted index's key prefixes, as on SQLite (see
//! `sqlite/prefixes.rs` for why): the total of a list pinning an index's first fields by
//! equality is a sum over a few rows, not a count of its entries.
//!
//! `portico_prefix_counts (name, prefix, slot, n)`: `name` is the index's table, `prefix` the
//! encoded prefix (the same encoding as SQLite's), and each count is spread over slots as the
//! collection counts are, so concurrent writers of one prefix rarely wait on one row.
//!
//! - **Writes** gather their changes in [`PrefixDeltas`] and apply them with one statement as
//!   the last step before their commit, in sorted order on one slot: every writer takes count
//!   rows in the same order and takes nothing after them, so they never deadlock on them.
//! - **A new index** is counted when it becomes ready: its fill runs beside writers, whose
//!   changes to the counts meanwhile are partial, so the step that marks it ready takes the
//!   collection's `SHARE` lock (waiting for the writers under way, holding new ones back),
//!   counts its entries per prefix afresh, writes the marker (an empty prefix) and marks it
//!   ready, in one transaction. Readers use a count only when the marker is there.
//! - **An index made before the counts** (no marker) is counted the same way when a store
//!   opens the database (`schema::count_unmarked_prefixes`).

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use deadpool_postgres::{GenericClient, Transaction};

use crate::Result;
pub(crate) use crate::index_plan::keeps_prefix_counts as counted;
use crate::index_plan::{SortedIndex, prefix_changes};

/// Slots a prefix's count is spread over.
const SLOTS: i32 = 8;

/// The table of kept counts.
pub(crate) const TABLE: &str = "CREATE TABLE IF NOT EXISTS portico_prefix_counts (
     name text COLLATE \"C\" NOT NULL,
     prefix bytea NOT NULL,
     slot integer NOT NULL,
     n bigint NOT NULL,
     PRIMARY KEY (name, prefix, slot)
 )";

/// `index_plan::encode_prefix` in SQL, of the first `len` key columns of an index table; `$2` is the leading
/// byte (the length).
fn prefix_sql(len: usize) -> String {
    let keys: Vec<String> = (0..len)
        .map(|i| format!("int4send(length(k{i})) || k{i}"))
        .collect();
    format!("$2::bytea || {}", keys.join(" || "))
}

/// The statement of [`PrefixDeltas::flush`].
const FLUSH: &str = "INSERT INTO portico_prefix_counts (name, prefix, slot, n) \
     SELECT u.name, u.prefix, $4, u.n \
     FROM unnest($1::text[], $2::bytea[], $3::bigint[]) AS u(name, prefix, n) \
     ON CONFLICT (name, prefix, slot) \
     DO UPDATE SET n = portico_prefix_counts.n + excluded.n";

/// The changes a write makes to prefix counts, applied by [`PrefixDeltas::flush`] just before
/// it commits.
#[derive(Debug, Default)]
pub(crate) struct PrefixDeltas {
    deltas: BTreeMap<(String, Vec<u8>), i64>,
}

impl PrefixDeltas {
    /// Records that one document's entries in `index` went from `old` to `new`: it leaves the
    /// prefixes only `old` has and joins those only `new` has (once per distinct prefix).
    pub(crate) fn add(
        &mut self,
        index: &SortedIndex,
        old: &BTreeSet<Vec<Vec<u8>>>,
        new: &BTreeSet<Vec<Vec<u8>>>,
    ) {
        for (prefix, change) in prefix_changes(index, old, new) {
            *self
                .deltas
                .entry((index.table.clone(), prefix))
                .or_default() += change;
        }
    }

    /// Takes in the changes `other` gathered.
    pub(crate) fn merge(&mut self, other: PrefixDeltas) {
        for (key, delta) in other.deltas {
            *self.deltas.entry(key).or_default() += delta;
        }
    }

    /// Prepares the statement of [`PrefixDeltas::flush`] on `client` when there is something
    /// to apply (at once when it holds it already), so that a later flush sends its statement
    /// on its first poll.
    pub(crate) async fn prepare(&self, client: &impl GenericClient) -> Result<()> {
        if self.deltas.values().any(|delta| *delta != 0) {
            client.prepare_cached(FLUSH).await?;
        }
        Ok(())
    }

    /// Applies the changes in one statement, on one slot, in sorted order; call as the last
    /// statement before the commit.
    pub(crate) async fn flush(&mut self, client: &impl GenericClient) -> Result<()> {
        let changes: Vec<((String, Vec<u8>), i64)> = std::mem::take(&mut self.deltas)
            .into_iter()
            .filter(|(_, delta)| *delta != 0)
            .collect();
        if changes.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = changes.iter().map(|((name, _), _)| name.as_str()).collect();
        let prefixes: Vec<&[u8]> = changes.iter().map(|((_, p), _)| p.as_slice()).collect();
        let deltas: Vec<i64> = changes.iter().map(|(_, d)| *d).collect();
        let slot: i32 = rand::random_range(0..SLOTS);
        let stmt = client.prepare_cached(FLUSH).await?;
        client
            .execute(&stmt, &[&names, &prefixes, &deltas, &slot])
            .await?;
        Ok(())
    }
}

/// Counts the entries of `index` per prefix afresh and writes its marker. Call inside a
/// transaction holding the collection's `SHARE` lock (no writer changes the entries meanwhile).
pub(crate) async fn recount(tx: &Transaction<'_>, index: &SortedIndex) -> Result<()> {
    if !counted(index) {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM portico_prefix_counts WHERE name = $1",
        &[&index.table],
    )
    .await?;
    for len in 1..index.spec.fields.len() {
        let columns: Vec<String> = (0..len).map(|i| format!("k{i}")).collect();
        let sql = format!(
            "INSERT INTO portico_prefix_counts (name, prefix, slot, n) \
             SELECT $1, {}, 0, count(DISTINCT id) FROM {} GROUP BY {}",
            prefix_sql(len),
            index.table,
            columns.join(", ")
        );
        let lead = vec![u8::try_from(len).unwrap_or(u8::MAX)];
        tx.execute(&sql, &[&index.table, &lead]).await?;
    }
    tx.execute(
        "INSERT INTO portico_prefix_counts (name, prefix, slot, n) VALUES ($1, '\\x', 0, 0)",
        &[&index.table],
    )
    .await?;
    Ok(())
}

/// Sets every count of `index` to zero (its entries were all removed), keeping the marker.
pub(crate) async fn clear(tx: &Transaction<'_>, index: &SortedIndex) -> Result<()> {
    if counted(index) {
        tx.execute(
            "DELETE FROM portico_prefix_counts WHERE name = $1 AND prefix <> '\\x'",
            &[&index.table],
        )
        .await?;
    }
    Ok(())
}

/// Forgets the counts of the index whose table is `table`, its marker included.
pub(crate) async fn forget(tx: &Transaction<'_>, table: &str) -> Result<()> {
    tx.execute(
        "DELETE FROM portico_prefix_counts WHERE name = $1",
        &[&table],
    )
    .await?;
    Ok(())
}

/// The SQL of a total read from the kept counts of the index `$name` and prefix `$prefix`
/// (placeholders as given) when its marker is there, else `counted` (a scalar subquery
/// counting its entries). PostgreSQL runs only the branch it takes.
pub(crate) fn total_sql(name: &str, prefix: &str, counted: &str) -> String {
    format!(
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM portico_prefix_counts \
         WHERE name = {name} AND prefix = '\\x' AND slot = 0) \
         THEN (SELECT coalesce(sum(n), 0)::bigint FROM portico_prefix_counts \
         WHERE name = {name} AND prefix = {prefix}) ELSE ({counted}) END"
    )
}

/// True when `index` has its marker (its counts are kept).
pub(crate) async fn marked(client: &impl GenericClient, index: &SortedIndex) -> Result<bool> {
    Ok(client
        .query_opt(
            "SELECT 1 FROM portico_prefix_counts \
             WHERE name = $1 AND prefix = '\\x' AND slot = 0",
            &[&index.table],
        )
        .await?
        .is_some())
}
