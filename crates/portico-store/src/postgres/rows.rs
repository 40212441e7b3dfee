//! Rows: statement parameters, decoding a candidate row, and reading candidates through a
//! portal (a cursor inside a transaction) [`BATCH`] rows at a time, shared by the readers
//! (`query.rs`, `sorted.rs`) and the writers.

use std::ops::ControlFlow;

use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use super::error::corrupt;
use crate::{Document, Result};

/// Rows fetched from a portal per round trip: large enough that the round trips cost little
/// next to decoding the documents, small enough to hold little memory.
pub(crate) const BATCH: i32 = 256;

/// A statement parameter.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// The parameters as the driver takes them.
pub(crate) fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// Decodes the `(id, doc)` of a candidate row.
pub(crate) fn decode(collection: &str, row: &Row) -> Result<(String, Document)> {
    let id: String = row.try_get(0)?;
    let text: &str = row.try_get(1)?;
    let doc = serde_json::from_str(text).map_err(|e| corrupt(collection, &id, &e))?;
    Ok((id, doc))
}

/// Calls `visit` with each candidate of the SQL, in order, until it breaks, reading through a
/// portal inside the transaction `tx`.
pub(crate) async fn for_each_in_tx(
    tx: &Transaction<'_>,
    collection: &str,
    (sql, params): (String, Vec<Param>),
    visit: impl FnMut(String, Document) -> Result<ControlFlow<()>> + Send,
) -> Result<()> {
    let stmt = tx.prepare_cached(&sql).await?;
    through_portal(tx, collection, &stmt, &params, visit).await
}

pub(crate) async fn through_portal(
    tx: &Transaction<'_>,
    collection: &str,
    stmt: &Statement,
    params: &[Param],
    visit: impl FnMut(String, Document) -> Result<ControlFlow<()>> + Send,
) -> Result<()> {
    let portal = tx.bind(stmt, &refs(params)).await?;
    read_portal(tx, collection, &portal, visit).await
}

/// Calls `visit` with the rows of `portal`, [`BATCH`] at a time, until it breaks.
pub(crate) async fn read_portal(
    tx: &Transaction<'_>,
    collection: &str,
    portal: &tokio_postgres::Portal,
    mut visit: impl FnMut(String, Document) -> Result<ControlFlow<()>> + Send,
) -> Result<()> {
    loop {
        let rows = tx.query_portal(portal, BATCH).await?;
        let done = rows.len() < usize::try_from(BATCH).unwrap_or(usize::MAX);
        for row in &rows {
            let (id, doc) = decode(collection, row)?;
            if visit(id, doc)?.is_break() {
                return Ok(());
            }
        }
        if done {
            return Ok(());
        }
    }
}
