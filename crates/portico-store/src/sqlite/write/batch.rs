//! [`crate::Store::batch`] for SQLite: every write in one `BEGIN IMMEDIATE` transaction on the
//! writer connection. Readers (WAL) see the state before the commit until it happens, then all
//! of it; a failing write returns before the commit, and dropping the transaction rolls the
//! earlier ones back.

use rusqlite::{Connection, Transaction, params};

use super::{begin, check_name, insert_in, matching};
use crate::sqlite::index::{self, update_rows};
use crate::sqlite::schema::{self, collection_exists, collection_table};
use crate::{BatchError, BatchFailure, BatchOp, BatchOutcome, Error};

/// Applies `ops` in one transaction; see [`crate::Store::batch`].
pub(crate) fn batch(
    conn: &mut Connection,
    ops: Vec<BatchOp>,
) -> Result<Vec<BatchOutcome>, BatchError> {
    let tx = begin(conn).map_err(|e| BatchError::new(0, e))?;
    let mut done = Vec::with_capacity(ops.len());
    for (index, op) in ops.into_iter().enumerate() {
        done.push(apply(&tx, op).map_err(|failure| BatchError::new(index, failure))?);
    }
    let last = done.len().saturating_sub(1);
    tx.commit()
        .map_err(|e| BatchError::new(last, Error::from(e)))?;
    Ok(done)
}

fn apply(tx: &Transaction<'_>, op: BatchOp) -> Result<BatchOutcome, BatchFailure> {
    match op {
        BatchOp::Insert { collection, doc } => {
            check_name(&collection)?;
            schema::ensure_collection(tx, &collection)?;
            let mut indexes = index::indexes(tx, &collection)?;
            let (_, doc) = crate::prepare_insert(doc)?;
            insert_in(tx, &collection, &mut indexes, doc.clone())?;
            schema::add_to_count(tx, &collection, 1)?;
            Ok(BatchOutcome::Inserted(doc))
        }
        BatchOp::Update {
            collection,
            selector,
            update,
        } => {
            if !collection_exists(tx, &collection)? {
                return Err(BatchFailure::NoMatch);
            }
            let mut indexes = index::indexes(tx, &collection)?;
            let (id, old) = matching(tx, &collection, &selector, false)?
                .into_iter()
                .next()
                .ok_or(BatchFailure::NoMatch)?;
            let new = match crate::modifier::apply_update(&old, &update, &id)? {
                None => old,
                Some((new, text)) => {
                    tx.prepare_cached(&format!(
                        "UPDATE {} SET doc = ?2 WHERE id = ?1",
                        collection_table(&collection)
                    ))
                    .map_err(Error::from)?
                    .execute(params![id, text])
                    .map_err(Error::from)?;
                    update_rows(tx, &collection, &mut indexes, &id, Some(&old), Some(&new))?;
                    new
                }
            };
            Ok(BatchOutcome::Updated(new))
        }
        BatchOp::Remove {
            collection,
            selector,
        } => {
            if !collection_exists(tx, &collection)? {
                return Err(BatchFailure::NoMatch);
            }
            let mut indexes = index::indexes(tx, &collection)?;
            let (id, old) = matching(tx, &collection, &selector, false)?
                .into_iter()
                .next()
                .ok_or(BatchFailure::NoMatch)?;
            tx.prepare_cached(&format!(
                "DELETE FROM {} WHERE id = ?1",
                collection_table(&collection)
            ))
            .map_err(Error::from)?
            .execute(params![id])
            .map_err(Error::from)?;
            update_rows(tx, &collection, &mut indexes, &id, Some(&old), None)?;
            schema::add_to_count(tx, &collection, -1)?;
            Ok(BatchOutcome::Removed(old))
        }
    }
}
