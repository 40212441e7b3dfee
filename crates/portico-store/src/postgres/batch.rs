//! [`crate::Store::batch`] for PostgreSQL: every write in one transaction, each matched row
//! locked (`FOR UPDATE`) as it is read. Other sessions see the state before the commit until it
//! happens, then all of it; a failing write returns before the commit, and dropping the
//! transaction rolls the earlier ones back.

use deadpool_postgres::{Client, Transaction};

use super::prefixes::PrefixDeltas;
use super::schema::{self, Indexes, collection_table};
use super::write::{insert_in, matching, prepare, update_rows, update_sql};
use super::write_tx::WriteTx;
use crate::{BatchError, BatchFailure, BatchOp, BatchOutcome, Error};

/// Applies `ops` in one transaction; see [`crate::Store::batch`].
pub(crate) async fn batch(
    client: &mut Client,
    ops: Vec<BatchOp>,
) -> Result<Vec<BatchOutcome>, BatchError> {
    // Tables are made before the transaction (DDL waits for other writers); a batch that then
    // fails leaves at most an empty collection behind.
    for (index, op) in ops.iter().enumerate() {
        if let BatchOp::Insert { collection, .. } = op {
            super::write::check_name(collection).map_err(|e| BatchError::new(index, e))?;
            schema::create_collection(client, collection)
                .await
                .map_err(|e| BatchError::new(index, e))?;
        }
    }
    let tx = WriteTx::begin(client)
        .await
        .map_err(|e| BatchError::new(0, e))?;
    let targets = crate::feed::batch_targets(&ops);
    let mut done = Vec::with_capacity(ops.len());
    // Every write's changes to prefix counts, applied once at the end (see `prefixes.rs`).
    let mut prefixes = PrefixDeltas::default();
    for (index, op) in ops.into_iter().enumerate() {
        let outcome = apply(&tx, op, &mut prefixes)
            .await
            .map_err(|failure| BatchError::new(index, failure))?;
        done.push(outcome);
    }
    let last = done.len().saturating_sub(1);
    // Sent by collection (see `write_tx.rs`): two batches never wait on each other's stamp
    // rows in opposite orders.
    for change in crate::feed::batch_changes(targets, &done) {
        tx.changed(change);
    }
    tx.commit(prefixes)
        .await
        .map_err(|e| BatchError::new(last, e))?;
    Ok(done)
}

/// The collection's indexes (its write lock taken) and the first document `selector` matches,
/// locked; no collection or no match is [`BatchFailure::NoMatch`].
async fn first_match(
    tx: &Transaction<'_>,
    collection: &str,
    selector: &crate::Selector,
) -> Result<(Indexes, String, crate::Document), BatchFailure> {
    let Some(indexes) = schema::lock_and_indexes(tx, collection).await? else {
        return Err(BatchFailure::NoMatch);
    };
    let (id, old) = matching(tx, collection, selector, false)
        .await?
        .into_iter()
        .next()
        .ok_or(BatchFailure::NoMatch)?;
    Ok((indexes, id, old))
}

async fn apply(
    tx: &Transaction<'_>,
    op: BatchOp,
    prefixes: &mut PrefixDeltas,
) -> Result<BatchOutcome, BatchFailure> {
    match op {
        BatchOp::Insert { collection, doc } => {
            let Some(mut indexes) = schema::lock_and_indexes(tx, &collection).await? else {
                return Err(Error::Backend(format!("collection {collection:?} vanished")).into());
            };
            let prepared = prepare(doc)?;
            insert_in(tx, &collection, &mut indexes, &prepared).await?;
            prefixes.merge(std::mem::take(&mut indexes.prefixes));
            schema::add_to_count(tx, &collection, 1).await?;
            Ok(BatchOutcome::Inserted(prepared.2))
        }
        BatchOp::Update {
            collection,
            selector,
            update,
        } => {
            let (mut indexes, id, old) = first_match(tx, &collection, &selector).await?;
            let new = match crate::modifier::apply_update(&old, &update, &id)? {
                None => old,
                Some((new, text)) => {
                    let stmt = tx
                        .prepare_cached(&update_sql(&collection))
                        .await
                        .map_err(Error::from)?;
                    tx.execute(&stmt, &[&id, &text])
                        .await
                        .map_err(Error::from)?;
                    update_rows(tx, &collection, &mut indexes, &id, Some(&old), Some(&new)).await?;
                    prefixes.merge(std::mem::take(&mut indexes.prefixes));
                    new
                }
            };
            Ok(BatchOutcome::Updated(new))
        }
        BatchOp::Remove {
            collection,
            selector,
        } => {
            let (mut indexes, id, old) = first_match(tx, &collection, &selector).await?;
            let sql = format!(
                "DELETE FROM {} WHERE id = $1",
                collection_table(&collection)
            );
            let stmt = tx.prepare_cached(&sql).await.map_err(Error::from)?;
            tx.execute(&stmt, &[&id]).await.map_err(Error::from)?;
            update_rows(tx, &collection, &mut indexes, &id, Some(&old), None).await?;
            prefixes.merge(std::mem::take(&mut indexes.prefixes));
            schema::add_to_count(tx, &collection, -1).await?;
            Ok(BatchOutcome::Removed(old))
        }
    }
}
