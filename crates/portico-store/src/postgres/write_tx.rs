//! The write transaction: how every write of the PostgreSQL backend ends.
//!
//! A write's changes must reach the other instances: the notification that tells them (and
//! moves the collection's change stamp, which their read caches check; see `feed.rs` and
//! `stamp.rs`) is sent inside the write's own transaction, so it is delivered, and the stamp
//! moves, exactly when the documents become visible. Rather than each write remembering to
//! send it, every write transaction is a [`WriteTx`]: the write records the changes it made
//! ([`WriteTx::changed`]) and [`WriteTx::commit`] is the only way to commit it, which sends
//! them first. The tokio-postgres transaction inside is private; the write reaches its
//! statements through `Deref`, which cannot move it out to commit it another way. Dropped
//! without `commit` (a failed step returned early), the transaction rolls back and nothing is
//! sent.
//!
//! `commit` does, in order: the notifications (one per change, by collection, so two writes
//! never take each other's stamp rows in opposite orders), the prefix counts (the last rows a
//! write takes, see `prefixes.rs`), `COMMIT`. The group commit (`group.rs`) cannot use a
//! [`WriteTx`]: it pipelines its own `BEGIN` with its first statements and its `COMMIT` with
//! its last, on a pooled connection, to stay at three round trips; it ends through
//! [`commit_group`], which sends its changes with the same [`send_changes`] and commits in
//! the same order. [`send_changes`] is the only caller of `feed::notify`.
//!
//! What follows a commit in the store (recording the write for read-your-writes with read
//! replicas) is done once per store call by `PostgresStore::recorded` (every write method goes
//! through it, most through `PostgresStore::write`), in the caller's task (its routing scope
//! is task-local, and some writes commit on a task of their own) and after the write's
//! connection went back to the pool (the record takes one).

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, PoisonError};

use deadpool_postgres::{Client, GenericClient, Transaction};

use super::feed;
use super::prefixes::PrefixDeltas;
use crate::Result;
use crate::feed::Change;

/// A write's transaction and the changes it made, committed only by [`WriteTx::commit`],
/// which sends the changes first (see the module docs).
pub(super) struct WriteTx<'a> {
    tx: Transaction<'a>,
    /// Changes recorded and not yet sent (a lock only so that [`WriteTx::notify_with`] can
    /// take them while the write's statements borrow the transaction).
    changes: Mutex<Vec<Change>>,
}

impl<'a> WriteTx<'a> {
    /// Begins a write transaction on `client`.
    pub(super) async fn begin(client: &'a mut Client) -> Result<WriteTx<'a>> {
        Ok(WriteTx {
            tx: client.transaction().await?,
            changes: Mutex::default(),
        })
    }

    /// Records a change the write made, sent when it commits.
    pub(super) fn changed(&self, change: Change) {
        self.lock().push(change);
    }

    /// Runs `work` (the write's last statements) with the changes recorded so far sent beside
    /// it, pipelined: one round trip for both. `work`'s error comes first (a notification's is
    /// then only the aborted transaction). [`WriteTx::commit`] sends what is recorded later.
    pub(super) async fn notify_with<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        let changes = std::mem::take(&mut *self.lock());
        let (done, sent) = tokio::join!(work, send_changes(&self.tx, changes));
        let done = done?;
        sent?;
        Ok(done)
    }

    /// Sends the changes not sent yet, applies `prefixes` (the write's changes to the prefix
    /// counts) and commits.
    pub(super) async fn commit(self, mut prefixes: PrefixDeltas) -> Result<()> {
        let changes = self
            .changes
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        send_changes(&self.tx, changes).await?;
        prefixes.flush(&self.tx).await?;
        self.tx.commit().await?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Change>> {
        self.changes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<'a> Deref for WriteTx<'a> {
    type Target = Transaction<'a>;

    fn deref(&self) -> &Transaction<'a> {
        &self.tx
    }
}

impl<'a> DerefMut for WriteTx<'a> {
    fn deref_mut(&mut self) -> &mut Transaction<'a> {
        &mut self.tx
    }
}

/// Sends `changes` inside the open transaction of `client`, by collection (see the module
/// docs): each moves its collection's stamp and is delivered when the transaction commits.
async fn send_changes(client: &impl GenericClient, mut changes: Vec<Change>) -> Result<()> {
    changes.sort_by(|a, b| a.collection().cmp(&b.collection()));
    for change in &changes {
        feed::notify(client, change).await?;
    }
    Ok(())
}

/// The end of a group commit's transaction (begun with a plain `BEGIN` on `client`, see
/// `group.rs`): its changes, its prefix counts and `COMMIT`, pipelined in that order in one
/// round trip. A failed statement aborts the transaction, and `COMMIT` then rolls it back
/// without an error: the statement's error is what tells.
pub(super) async fn commit_group(
    client: &Client,
    changes: Vec<Change>,
    prefixes: &mut PrefixDeltas,
) -> Result<()> {
    // The statements are prepared first (at once on a connection that holds them): a
    // statement still being prepared when the pipelined `COMMIT` goes out would run after it,
    // outside the transaction (the stamp moved and the change told after the documents, or
    // not at all if the connection broke in between).
    if !changes.is_empty() {
        feed::prepare_notify(client).await?;
    }
    prefixes.prepare(client).await?;
    let (notified, counted, committed) = tokio::join!(
        biased;
        send_changes(client, changes),
        prefixes.flush(client),
        client.batch_execute("COMMIT")
    );
    notified?;
    counted?;
    committed?;
    Ok(())
}
