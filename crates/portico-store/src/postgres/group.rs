//! Group commit of single inserts on PostgreSQL: concurrent inserts share one transaction.
//!
//! A single insert alone is a transaction of its own: `BEGIN`, the collection's lock and index
//! list, the row with its count and notification, `COMMIT` (and the server's WAL flush): four
//! round trips and a flush for one document. Under concurrent inserts most of that is the same
//! for every document, so inserts queue here (per store, that is per instance). The first to
//! find no group under way starts a leader task, and so does one that finds
//! [`FURTHER_GROUP_AT`] inserts queued and fewer than [`LEADERS`] groups under way. A leader takes every
//! queued insert and, per collection, writes them in one transaction of three round trips
//! (`BEGIN` with the lock and the index list; the rows and the count in one statement; the
//! notification, which moves the change stamp, with `COMMIT`); only then is each caller
//! answered. So an acknowledged insert is committed, as before.
//!
//! A document whose `_id` exists already (or repeats within the group) is skipped by the
//! statement (`ON CONFLICT (id) DO NOTHING`) and its caller alone gets
//! [`Error::DuplicateId`]; the others commit. A collection with a unique index is not grouped
//! (a violation would abort the whole transaction), nor a group holding a document that a
//! sorted index refuses (too many entries): its inserts are handed back to their callers, each
//! running its own transaction as before. If the group's transaction fails, nothing of it is
//! written and every caller gets the error.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use deadpool_postgres::Pool;
use tokio::sync::oneshot;

use super::schema::{self, collection_table};
use super::{write, write_tx};
use crate::feed::{Change, ChangeKind};
use crate::{Document, Error, Result};

/// Most inserts in one transaction: bounds how long the first of a group waits for the last.
const MAX_GROUP: usize = 256;

/// Groups written at once (each on its own connection): while one waits for its commit, the
/// inserts that came meanwhile form the next, so a few concurrent inserts are not held back
/// behind each other's round trips.
const LEADERS: usize = 4;

/// Inserts queued that start a further group while one is under way. With none under way the
/// first insert starts one at once; otherwise inserts wait for a running leader to take them
/// after its commit (at most one group's transaction) unless this many are queued. So groups
/// keep about this size however the inserts are spread over instances: with a leader for
/// every queued insert, an instance given half the inserts would write twice the groups per
/// insert (half as large), each with its round trips and its WAL flush.
const FURTHER_GROUP_AT: usize = 8;

/// One queued insert: the prepared document and where its answer goes.
struct Job {
    collection: String,
    id: String,
    text: String,
    doc: Document,
    reply: oneshot::Sender<Answer>,
}

/// What a caller hears back.
enum Answer {
    /// Committed (`Ok`), or refused alone (a duplicate `_id`), or the group failed.
    Done(Result<()>),
    /// Not grouped (the collection has a unique index): insert it yourself.
    Alone(Document),
}

/// The queue of inserts waiting for a group commit, and whether a leader is draining it.
#[derive(Default)]
pub(crate) struct InsertQueue {
    state: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    jobs: Vec<Job>,
    /// Leader tasks running, at most [`LEADERS`].
    leaders: usize,
}

impl std::fmt::Debug for InsertQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InsertQueue").finish_non_exhaustive()
    }
}

impl InsertQueue {
    /// Inserts `doc` into `collection` in the next group commit; answers with the `_id` and the
    /// stored text once it is committed.
    pub(crate) async fn insert(
        self: &Arc<Self>,
        pool: &Pool,
        collection: &str,
        doc: Document,
    ) -> Result<(String, String)> {
        write::check_name(collection)?;
        let (id, text, doc) = write::prepare(doc)?;
        let (reply, answer) = oneshot::channel();
        let lead = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.jobs.push(Job {
                collection: collection.to_owned(),
                id: id.clone(),
                text: text.clone(),
                doc,
                reply,
            });
            let lead = state.leaders == 0
                || (state.leaders < LEADERS && state.jobs.len() >= FURTHER_GROUP_AT);
            state.leaders += usize::from(lead);
            lead
        };
        if lead {
            let queue = Arc::clone(self);
            let pool = pool.clone();
            // A task of its own: a caller that goes away cannot stop the others' commit.
            drop(tokio::spawn(async move {
                // Lets the requests that came in with this one queue their inserts first.
                tokio::task::yield_now().await;
                queue.lead(&pool).await;
            }));
        }
        match answer.await {
            Ok(Answer::Done(result)) => result.map(|()| (id, text)),
            Ok(Answer::Alone(doc)) => {
                let mut client = pool.get().await?;
                write::insert_many(&mut client, collection, vec![doc]).await?;
                Ok((id, text))
            }
            Err(_) => Err(Error::Backend(
                "postgres: the insert was dropped before it committed".into(),
            )),
        }
    }

    /// The next group: the queued inserts, at most [`MAX_GROUP`]. Empty when none are queued,
    /// and then the caller is no longer a leader (decided under the queue's lock, so an
    /// insert queued meanwhile starts a new one).
    fn take_group(&self) -> Vec<Job> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.jobs.is_empty() {
            state.leaders -= 1;
        }
        let take = state.jobs.len().min(MAX_GROUP);
        state.jobs.drain(..take).collect()
    }

    /// Runs groups until the queue is empty.
    async fn lead(&self, pool: &Pool) {
        let _step_down = StepDown(self);
        loop {
            let mut jobs = self.take_group();
            if jobs.is_empty() {
                return;
            }
            // One transaction per collection, in the order the first of each came.
            while let Some(first) = jobs.first() {
                let collection = first.collection.clone();
                let (same, rest): (Vec<Job>, Vec<Job>) =
                    jobs.into_iter().partition(|j| j.collection == collection);
                jobs = rest;
                run_group(pool, &collection, same).await;
            }
        }
    }
}

/// Counts a leader out if its task ends without stepping down (a panic), so later inserts
/// start a new leader instead of waiting for ever.
struct StepDown<'a>(&'a InsertQueue);

impl Drop for StepDown<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .leaders -= 1;
        }
    }
}

/// Writes `jobs` (all of `collection`) in one transaction and answers each caller.
async fn run_group(pool: &Pool, collection: &str, jobs: Vec<Job>) {
    // A repeated `_id` within the group is refused at once; the first one goes on.
    let mut seen = HashSet::with_capacity(jobs.len());
    let mut group = Vec::with_capacity(jobs.len());
    for job in jobs {
        if seen.insert(job.id.clone()) {
            group.push(job);
        } else {
            let error = duplicate(collection, &job.id);
            let _ = job.reply.send(Answer::Done(Err(error)));
        }
    }
    match write_group(pool, collection, &group).await {
        Ok(Written::Ids(inserted)) => {
            for job in group {
                let result = if inserted.contains(&job.id) {
                    Ok(())
                } else {
                    Err(duplicate(collection, &job.id))
                };
                let _ = job.reply.send(Answer::Done(result));
            }
        }
        Ok(Written::NotGrouped) => {
            for job in group {
                let _ = job.reply.send(Answer::Alone(job.doc));
            }
        }
        Err(e) => {
            for job in group {
                let _ = job.reply.send(Answer::Done(Err(same_error(&e))));
            }
        }
    }
}

/// What [`write_group`] did.
enum Written {
    /// Committed: the ids inserted (the others existed already).
    Ids(HashSet<String>),
    /// Nothing: the collection has a unique index.
    NotGrouped,
}

/// The group's transaction in three round trips: `BEGIN` with the collection's lock and index
/// list; the rows and the count in one statement (and the index rows, if any); the
/// notification (which moves the change stamp) with `COMMIT`.
async fn write_group(pool: &Pool, collection: &str, group: &[Job]) -> Result<Written> {
    for _ in 0..3 {
        let client = pool.get().await?;
        match in_transaction(&client, collection, group).await {
            Ok(Some(written)) => return Ok(written),
            Ok(None) => {
                if let Some(mut client) = rollback(client).await {
                    schema::create_collection(&mut client, collection).await?;
                }
            }
            Err(e) => {
                rollback(client).await;
                return Err(e);
            }
        }
    }
    Err(Error::Backend(format!(
        "postgres: collection {collection:?} was dropped repeatedly while being written"
    )))
}

/// Ends the transaction a failed group left open. A connection that cannot even roll back is
/// not given back to the pool (`None`).
async fn rollback(client: deadpool_postgres::Client) -> Option<deadpool_postgres::Client> {
    if client.batch_execute("ROLLBACK").await.is_err() {
        drop(deadpool_postgres::Object::take(client));
        return None;
    }
    Some(client)
}

/// [`write_group`]'s transaction, committed when it answers `Ok(Some)`; otherwise still open
/// (or aborted) for the caller to roll back. `Ok(None)`: the collection does not exist.
async fn in_transaction(
    client: &deadpool_postgres::Client,
    collection: &str,
    group: &[Job],
) -> Result<Option<Written>> {
    let table = collection_table(collection);
    let lock = format!("LOCK TABLE {table} IN ROW EXCLUSIVE MODE");
    // Pipelined: one round trip. A missing table fails the lock (the list then fails too).
    let (begun, locked, paths, sorted) = tokio::join!(
        client.batch_execute("BEGIN"),
        client.batch_execute(&lock),
        schema::indexed_paths(client, collection),
        schema::sorted_indexes(client, collection, false)
    );
    begun?;
    match locked {
        Err(e) if super::error::is_undefined_table(&e) => return Ok(None),
        other => other?,
    }
    let mut indexes = schema::Indexes {
        paths: paths?,
        sorted: sorted?,
        prefixes: Default::default(),
    };
    // A document refused by a sorted index (too many entries) must fail alone, not the group.
    let mut refused = false;
    let mut several = vec![false; indexes.sorted.len()];
    for (index, several) in indexes.sorted.iter().zip(&mut several) {
        for job in group {
            match write::sorted_entries(index, &job.doc) {
                Ok(rows) => *several |= rows.len() > 1,
                Err(_) => refused = true,
            }
        }
    }
    if refused || indexes.paths.iter().any(|i| i.unique) {
        client.batch_execute("ROLLBACK").await?;
        return Ok(Some(Written::NotGrouped));
    }
    // A sorted index is marked multikey (its catalog row locked) before the statement below
    // takes a count slot: a writer holding that row and wanting the slot would be a deadlock.
    for (index, several) in indexes.sorted.iter_mut().zip(several) {
        if several && !index.multikey {
            schema::set_multikey(client, collection, &index.spec).await?;
            index.multikey = true;
        }
    }
    let stmt = client
        .prepare_cached(&format!(
            "WITH ins AS (INSERT INTO {table} (id, doc, body) \
             SELECT i, t, CASE WHEN strpos(t, '\\u0000') = 0 THEN t::jsonb END \
             FROM unnest($1::text[], $2::text[]) AS u(i, t) \
             ON CONFLICT (id) DO NOTHING RETURNING id), \
             counted AS (UPDATE portico_counts SET n = n + (SELECT count(*) FROM ins) \
             WHERE name = $3 AND slot = $4) \
             SELECT id FROM ins"
        ))
        .await?;
    let ids: Vec<&str> = group.iter().map(|j| j.id.as_str()).collect();
    let texts: Vec<&str> = group.iter().map(|j| j.text.as_str()).collect();
    let slot: i32 = rand::random_range(0..schema::COUNT_SLOTS);
    let rows = client
        .query(&stmt, &[&ids, &texts, &collection, &slot])
        .await?;
    let mut inserted = HashSet::with_capacity(rows.len());
    for row in rows {
        inserted.insert(row.try_get::<_, String>(0)?);
    }
    let new: Vec<&Job> = group.iter().filter(|j| inserted.contains(&j.id)).collect();
    if !indexes.is_empty() {
        let docs: Vec<(&str, &Document)> = new.iter().map(|j| (j.id.as_str(), &j.doc)).collect();
        write::insert_index_rows(client, collection, &mut indexes, &docs).await?;
    }
    // Not a `WriteTx` (see `write_tx.rs`): this transaction began with a plain `BEGIN`
    // pipelined with its first statements, and ends with its notification, its prefix counts
    // (last, see `prefixes.rs`) and `COMMIT` pipelined in one round trip, which a wrapped
    // tokio-postgres transaction cannot do. It ends through `write_tx::commit_group`, which
    // sends the changes as every write does. No new document: nothing to tell.
    let changes = if new.is_empty() {
        Vec::new()
    } else {
        let ids = new.iter().map(|j| j.id.clone()).collect();
        vec![Change::documents(collection, ids, ChangeKind::Insert)]
    };
    write_tx::commit_group(client, changes, &mut indexes.prefixes).await?;
    Ok(Some(Written::Ids(inserted)))
}

fn duplicate(collection: &str, id: &str) -> Error {
    Error::DuplicateId {
        collection: collection.to_owned(),
        id: id.to_owned(),
    }
}

/// A copy of `e` for each caller of a failed group (the store's errors are not `Clone`); an
/// unreachable database stays [`Error::Unavailable`].
fn same_error(e: &Error) -> Error {
    match e {
        Error::Unavailable(m) => Error::Unavailable(m.clone()),
        other => Error::Backend(other.to_string()),
    }
}
