//! Group commit of single inserts: concurrent inserts share one transaction.
//!
//! Each commit in WAL mode appends every page the transaction dirtied (the table's leaf, the
//! catalog row holding the count, index pages) to the WAL, and takes the write lock, the
//! thread hand-off and the `BEGIN`/`COMMIT` statements once. Under concurrent inserts, most of
//! a single insert's cost is that per-commit work. So inserts queue here, and whoever finds no
//! commit under way becomes the leader: it takes every queued insert, runs them in one
//! `BEGIN IMMEDIATE` transaction, each inside its own savepoint (a failing insert, a duplicate
//! `_id`, is rolled back alone and reported to its caller alone; the others go on), commits,
//! and only then answers each caller ([`acknowledge_committed`]). A caller is answered only
//! after the commit that holds its document, so every acknowledged insert is as durable as
//! before (see `pool.rs`).
//!
//! The leader first lets every other ready task run once (the requests that came in with it
//! queue their inserts), then runs that group on its own async worker when the writer is idle
//! and no other process holds SQLite's write lock: a commit in WAL mode with
//! `synchronous=NORMAL` waits on no disk sync, and the hand-off to the blocking pool cost more
//! than the group (an insert load run put the leader thread and the async worker in turn on
//! the CPU: a 1.3x worse p99 than the hand-written baseline). Inserts queued meanwhile, or a
//! busy writer, go to the blocking pool, where a leader repeats groups while inserts keep
//! arriving.
//!
//! When the commit itself fails, nothing of the group is written and every caller gets the
//! error. A lone insert is a group of one: one transaction, as before.

use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::pool::Pool;
use super::schema;
use super::write::{begin, check_name, insert_keeping};
use crate::{Document, Error, Result};

/// One queued insert and where its answer goes.
struct Job {
    collection: String,
    doc: Document,
    /// Whether the caller wants the document's stored JSON text.
    keep: bool,
    reply: oneshot::Sender<Result<Inserted>>,
}

/// An insert's answer: the `_id`, and the document's stored JSON text when it was asked for.
type Inserted = (String, Option<String>);

/// The queue of inserts waiting for a commit, and whether a leader is draining it.
#[derive(Default)]
pub(crate) struct InsertQueue {
    state: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    jobs: Vec<Job>,
    leader: bool,
}

impl std::fmt::Debug for InsertQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InsertQueue").finish_non_exhaustive()
    }
}

/// Most inserts in one transaction: bounds how long the first of a group waits for the last.
const MAX_GROUP: usize = 256;

impl InsertQueue {
    /// Inserts `doc` into `collection` in the next group commit; answers once it is committed,
    /// with the document's stored JSON text when `keep` is set.
    pub(crate) async fn insert(
        self: &Arc<Self>,
        pool: &Arc<Pool>,
        collection: &str,
        doc: Document,
        keep: bool,
    ) -> Result<Inserted> {
        check_name(collection)?;
        let (reply, answer) = oneshot::channel();
        let lead = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.jobs.push(Job {
                collection: collection.to_owned(),
                doc,
                keep,
                reply,
            });
            !std::mem::replace(&mut state.leader, true)
        };
        if lead {
            let queue = Arc::clone(self);
            let pool = Arc::clone(pool);
            // A task of its own, not awaited: the leader answers through the channels (also
            // the caller's own), and a caller that goes away cannot drop the leading.
            drop(tokio::spawn(async move {
                tokio::task::yield_now().await;
                if !queue.lead_inline(&pool) {
                    drop(tokio::task::spawn_blocking(move || queue.lead(&pool)));
                }
            }));
        }
        answer.await.unwrap_or_else(|_| {
            Err(Error::Backend(
                "sqlite: the insert was dropped before it committed".into(),
            ))
        })
    }

    /// Runs one group now, on the caller's thread, if the writer is idle and the write lock
    /// free; then steps down, or leaves the leading to the caller when inserts queued
    /// meanwhile. False, with nothing taken from the queue, when the writer or the lock is
    /// busy: the caller leads on the blocking pool, where waiting is harmless.
    ///
    /// The queue is not empty here: the insert that made this leader queued its job, and only
    /// a leader takes jobs. So `done` is empty exactly when nothing was taken.
    fn lead_inline(&self, pool: &Pool) -> bool {
        let _step_down_on_panic = StepDown(self);
        let mut done = Vec::new();
        let outcome = pool.try_write_now(|conn| {
            // Begun before any job is taken: a busy lock leaves the queue as it was.
            let tx = begin(conn)?;
            run_in(tx, self.take_group(), &mut done)
        });
        match outcome {
            None => return false,
            Some(_) if done.is_empty() => return false,
            Some(Ok(())) => acknowledge_committed(done),
            Some(Err(e)) => answer_failed(done, &e),
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.jobs.is_empty() {
            state.leader = false;
            true
        } else {
            false
        }
    }

    /// The next group: the queued inserts, at most [`MAX_GROUP`]. Empty when none are
    /// queued, and then the caller is no longer the leader (decided under the queue's lock,
    /// so an insert queued meanwhile starts a new one).
    fn take_group(&self) -> Vec<Job> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.jobs.is_empty() {
            state.leader = false;
        }
        let take = state.jobs.len().min(MAX_GROUP);
        state.jobs.drain(..take).collect()
    }

    /// Runs groups until the queue is empty, then steps down (under the queue's lock, so an
    /// insert queued meanwhile is either taken by this loop or starts a new leader).
    fn lead(&self, pool: &Pool) {
        let _step_down_on_panic = StepDown(self);
        loop {
            let jobs = self.take_group();
            if jobs.is_empty() {
                return;
            }
            let mut done = Vec::new();
            match pool.write(|conn| run_group(conn, jobs, &mut done)) {
                Ok(()) => acknowledge_committed(done),
                Err(e) => answer_failed(done, &e),
            }
        }
    }
}

/// Clears the leader flag if the leader panics, so later inserts start a new one instead of
/// waiting for ever (the callers of the group being run get "dropped").
struct StepDown<'a>(&'a InsertQueue);

impl Drop for StepDown<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .leader = false;
        }
    }
}

/// Runs a group in one transaction, each insert in its own savepoint, filling `done` with each
/// caller and its answer. `Ok` once the transaction committed; an error when it could not
/// begin or commit, and then nothing of the group is written.
fn run_group(
    conn: &mut Connection,
    jobs: Vec<Job>,
    done: &mut Vec<(Job, Result<Inserted>)>,
) -> Result<()> {
    match begin(conn) {
        Ok(tx) => run_in(tx, jobs, done),
        Err(e) => {
            done.extend(jobs.into_iter().map(|job| (job, Err(same_error(&e)))));
            Err(e)
        }
    }
}

/// Runs `jobs` in the open transaction `tx`, each in its own savepoint, then commits; as
/// [`run_group`].
fn run_in(
    tx: rusqlite::Transaction<'_>,
    jobs: Vec<Job>,
    done: &mut Vec<(Job, Result<Inserted>)>,
) -> Result<()> {
    for mut job in jobs {
        let doc = std::mem::take(&mut job.doc);
        let result = one_insert(&tx, &job.collection, doc, job.keep);
        done.push((job, result));
    }
    tx.commit()?;
    Ok(())
}

/// One insert inside the group's transaction, in a savepoint: on failure only its own changes
/// are rolled back.
fn one_insert(conn: &Connection, collection: &str, doc: Document, keep: bool) -> Result<Inserted> {
    conn.prepare_cached("SAVEPOINT portico_insert")?
        .execute([])?;
    let result = (|| {
        schema::ensure_collection(conn, collection)?;
        let mut indexes = crate::sqlite::index::indexes(conn, collection)?;
        let inserted = insert_keeping(conn, collection, &mut indexes, doc, keep)?;
        schema::add_to_count(conn, collection, 1)?;
        Ok(inserted)
    })();
    if result.is_err() {
        conn.prepare_cached("ROLLBACK TO portico_insert")?
            .execute([])?;
    }
    conn.prepare_cached("RELEASE portico_insert")?.execute([])?;
    result
}

/// THE point where each insert of a group is committed: the transaction holding it has
/// committed, and its caller is answered now (an `_id`, or the error of that insert alone).
/// Anything that must follow a committed insert (a change notification) belongs here.
fn acknowledge_committed(done: Vec<(Job, Result<Inserted>)>) {
    for (job, result) in done {
        // A caller that went away no longer wants the answer; its insert is committed anyway.
        let _ = job.reply.send(result);
    }
}

/// Every caller of a group that did not commit gets the group's error: none of it is written.
fn answer_failed(done: Vec<(Job, Result<Inserted>)>, e: &Error) {
    for (job, _) in done {
        let _ = job.reply.send(Err(same_error(e)));
    }
}

/// A copy of `e` for each caller of a failed group (the store's errors are not `Clone`).
fn same_error(e: &Error) -> Error {
    Error::Backend(e.to_string())
}
