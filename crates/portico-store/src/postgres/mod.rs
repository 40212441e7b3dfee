//! The PostgreSQL backend: one database shared by any number of Portico instances.
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use portico_store::postgres::PostgresStore;
//! use portico_store::{Selector, Store};
//! use serde_json::json;
//!
//! let store = PostgresStore::open("postgres://portico:secret@localhost:5432/app").await?;
//! store.ensure_unique_index("users", "usernameLower").await?;
//!
//! let user = json!({"username": "Ada", "usernameLower": "ada"});
//! let id = store.insert("users", user.as_object().cloned().unwrap_or_default()).await?;
//! let found = store.find_one("users", &Selector::parse(&json!({"usernameLower": "ada"}))?).await?;
//! assert_eq!(found.and_then(|doc| doc.get("_id").cloned()), Some(json!(id)));
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! | file | holds |
//! |---|---|
//! | `pool.rs` | the connection pool, its timeouts, store URLs |
//! | `schema.rs` | the catalog, table names, how documents are stored (text plus `jsonb`), counts |
//! | `plan.rs` | narrowing the candidates of a selector in SQL (primary key, index table, jsonpath) |
//! | `query.rs` | `find`, `count`, `get`: candidates decided by the reference matcher, in batches |
//! | `sorted.rs` | finds, list pages and counts read through a sorted index, in one snapshot |
//! | `read.rs` | the read path: each read answered by the read cache, a replica or the primary |
//! | `write.rs` | insert, update, remove, `ensure_index`, `ensure_sorted_index`, drop, each one transaction (a sorted index's fill, several) |
//! | `write_tx.rs` | the write transaction: a write's changes, sent (notification and change stamp) by its commit |
//! | `group.rs` | group commit: concurrent single inserts share one transaction |
//! | `feed.rs` | the change feed: notifications sent in each write transaction, a listener per instance |
//! | `bus.rs` | the bus between instances (channel messages, presence): `NOTIFY` from one publishing task, heard on the feed's listener |
//! | `stamp.rs` | change stamps: a counter per collection moved by every write, read shared by concurrent callers |
//! | `cache.rs` | the read cache: stored texts of gets and pages, served while their collection's stamp holds |
//! | `error.rs` | PostgreSQL's errors as the store's, [`crate::Error::Unavailable`] among them |
//! | `replica.rs` | read replicas: which read goes where, read-your-writes, polling their health |
//!
//! # One request, step by step
//!
//! **A list read** (a page of 20 `posts` and their total, as a list endpoint asks:
//! [`Store::find_page`] of a plain page, counted). The method states only its query
//! (`query::page_json_counted`, or `query::find_json_counted` for a filtered or sorted page)
//! and how its answer is kept (`read::Entry::counted_page`), and hands both to
//! `PostgresStore::read`, the one read path (`read.rs`), which decides:
//! 1. the read cache, when it is on and the running scope would not send a read of `posts` to
//!    a replica: `cache_stamps` waits for the next round of change-stamp reads (`stamp.rs`,
//!    one statement shared by the reads waiting), then `kept` serves the page kept under that
//!    stamp, or runs the query on a pooled primary connection and keeps its answer under it;
//! 2. else a replica the scope may use (`Replicas::pick`): the query runs there, and on the
//!    primary if it fails there;
//! 3. else the primary.
//!
//! **A write** (two documents inserted into `posts` at once: [`Store::insert_many`]). The method
//! hands its write to `PostgresStore::write`, which takes a pooled connection and runs
//! `write::insert_many`: `WriteTx::begin` opens the transaction (`write_tx.rs`), the write
//! takes the collection's lock, inserts the rows and their index rows, adds to the count and
//! records its change (`WriteTx::changed`). `WriteTx::commit`, the only way to commit, then
//! sends the change with `feed::notify` inside the transaction (the same statement moves the
//! collection's change stamp, so every instance's next stamp round sees it together with the
//! documents, and the notification reaches every listener at the commit), applies the prefix
//! counts, and commits. The connection goes back to the pool, and `PostgresStore::recorded`
//! records the write for read-your-writes when there are read replicas. The next read of
//! `posts`, on any instance, reads the new stamp and no longer serves the page kept before.
//! A single insert ([`Store::insert`]) takes the same steps in a group commit shared with the
//! concurrent ones (`group.rs`, ending through `write_tx::commit_group`).
//!
//! The layout is the SQLite backend's: a table per collection with the document's exact text,
//! index tables `(value, id)` for dotted paths (arrays included) written in the transaction of
//! each write, and a catalog with each collection's count. What PostgreSQL adds: a `jsonb` copy
//! of each document, which lets SQL narrow scans by equality, ranges, `$in` and `$exists`;
//! row locks (`SELECT ... FOR UPDATE`) instead of one writer, so instances write in parallel
//! and an update's read-modify-write stays atomic across instances; unique indexes enforced
//! by PostgreSQL, so two instances can never both insert one value.
//!
//! # Sorted indexes
//!
//! A sorted index ([`Store::ensure_sorted_index`], see [`crate::IndexSpec`]) is a table
//! `(k0 bytea, ..., kN bytea, id text COLLATE "C")` with a unique btree index on
//! `(k0, k1 DESC, ..., id)` in the spec's directions: the keys are the order-preserving keys of
//! `order_key.rs`, which `bytea` compares bytewise, so the btree's order is the store's order. A document gives one row per combination of its fields' values (an array at an
//! indexed path gives a row per element). The catalog `portico_sorted` lists each index with
//! its spec, whether some document gave it several rows (`multikey`: a read then leaves out a
//! document's repeats) and whether it is `ready`.
//!
//! Writes keep the rows in their own transaction, like the equality indexes' rows: every write
//! of documents takes the collection's `ROW EXCLUSIVE` lock and then reads both catalogs
//! (`schema::lock_and_indexes`; the group commit reads them the same way), so it keeps every
//! index, ready or being filled, whose catalog row it sees. The first write giving a document
//! several rows marks the index multikey in the same transaction. A document that would give an
//! index more than [`crate::MAX_INDEX_ENTRIES`] rows is refused ([`crate::Error::InvalidDocument`]);
//! a group commit holding one is handed back to its callers, so only that insert fails.
//!
//! Creating an index does not hold writers back while it is filled (see
//! `write::ensure_sorted_index`): a short transaction under the collection's DDL advisory lock
//! and `SHARE` lock (which waits for the writes under way and holds back new ones for its own
//! few statements) creates the empty table and a catalog row that is not ready; from its commit
//! every writer keeps the index. The fill then reads the documents in `_id` order, 1,000 per
//! transaction, `FOR SHARE`, and inserts their rows `ON CONFLICT DO NOTHING`: a write to those
//! documents under way is waited for and its result read, a later one waits for the batch and
//! then sees its rows, a row a writer inserted already is skipped. Then the row is marked
//! ready. Several instances may ask for one index at once: the advisory lock lets one create
//! it; one that finds it not ready fills it again (harmless), so an index whose fill stopped
//! (an instance killed) is finished by the next call. A stored document with too many rows drops
//! the index again. Dropping an index takes the `SHARE` lock for a moment too, so no writer
//! that read the catalog before finds its table gone.
//!
//! Reads use ready indexes only, through the planner shared with SQLite
//! (`index_plan.rs`): `find` (and `find_one`), the list page and total of a filtered or
//! sorted query (`find_page` with its total), and `count` of a selector
//! the index holds exactly. Each store keeps the catalog it last read and plans on it; a
//! read-only `REPEATABLE READ` transaction locks the tables it may read (`ACCESS SHARE`, before
//! its snapshot, so a table it finds is the one its catalog describes), reads the catalog again
//! and then the index in that snapshot, and is planned again when that catalog is not the one
//! it planned on: a page and its total agree, and a document given several rows by a write
//! committed meanwhile is never counted twice. The common list (a first page in an index's
//! order, with its total) sends the whole transaction at once: one round trip. A sort served by an index reads `skip + limit` entries and is not capped by
//! [`crate::MAX_SORTED_WINDOW`]; a page whose plan is exact reads the ids from the index alone
//! and then the page's documents by primary key. Such reads go to a replica as other reads do;
//! a page with its total (a counted `find_page`) is kept in the read cache as any page is (see
//! `cache.rs`), finds and counts are not.
//!
//! Every query result is decided by [`Selector::matches`], the code the memory backend runs, so
//! all backends agree. An acknowledged write is committed by PostgreSQL (durable under its own
//! `fsync` and `synchronous_commit` settings), whatever happens to the instance after.
//!
//! Connections are plain TCP or unix sockets, without TLS: run the database on a trusted network
//! or the same machine.

mod aggregate;
mod batch;
mod bus;
mod cache;
mod error;
mod feed;
mod group;
mod plan;
mod pool;
mod prefixes;
mod query;
mod read;
mod replica;
mod rows;
mod schema;
mod search;
mod sorted;
mod stamp;
mod write;
mod write_tx;

pub mod testing;

use crate::{Page, PageRead, Stored};
use async_trait::async_trait;
use deadpool_postgres::{Client, Pool};

use read::{Entry, Keep};

pub use cache::CacheStatus;
pub use replica::{ReplicaState, ReplicaStatus};
pub use stamp::{StampPacing, StampStatus};

use crate::{
    Document, Query, RelatedField, RelatedRead, Result, Selector, Store, Update, UpdateOptions,
    UpdateResult,
};

/// How far behind the primary a read replica may fall before its reads go to the primary
/// instead (see [`PostgresOptions::replica_max_lag`]): one second.
pub const DEFAULT_REPLICA_MAX_LAG: std::time::Duration = std::time::Duration::from_millis(1000);

/// The read cache's memory budget by default (see [`PostgresOptions::cache_bytes`]): 16 MiB,
/// about 30,000 documents of 300 bytes, so that a server reading a million documents at
/// random still stays well under 64 MiB in all.
pub const DEFAULT_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Options of [`PostgresStore::open_with`]. Build with `PostgresOptions::default()` and set
/// the fields.
///
/// ```
/// let mut options = portico_store::postgres::PostgresOptions::default();
/// options.replicas = vec!["postgres://app:secret@replica1/app".into()];
/// assert_eq!(options.replica_max_lag.as_millis(), 1000);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// URLs of read replicas (hot standbys streaming from the primary) that answer reads made
    /// inside a [`crate::routing::Reader`] scope; none by default. See the module `replica.rs`
    /// docs in [`PostgresStore`]'s: writes, the change feed and reads outside a scope use the
    /// primary, and each caller reads its own writes.
    pub replicas: Vec<String>,
    /// A replica further behind the primary than this (in time) is skipped until it catches
    /// up ([`DEFAULT_REPLICA_MAX_LAG`] by default).
    pub replica_max_lag: std::time::Duration,
    /// Collections every read of which goes to the primary; a trailing `*` matches a prefix.
    /// By default `users` and `portico_*` (accounts, login tokens, login limits, sign-in
    /// state: where a stale read would refuse a fresh login or accept a revoked token).
    pub primary_collections: Vec<String>,
    /// The read cache's memory budget in bytes ([`DEFAULT_CACHE_BYTES`] by default; 0 turns
    /// the cache off). The cache keeps the stored text of documents read by id and of pages
    /// of whole collections (with their totals), and serves them only while the collection's
    /// change stamp, read from the database for each read (one read shared by the reads
    /// waiting at that moment), is the one they were read under: a write committed by any
    /// instance before a read began is never hidden. A document or page over a sixteenth of
    /// the budget (at most 256 KiB) is not kept. Reads that a replica answers do not use it.
    pub cache_bytes: usize,
    /// How the reads of change stamps (which the read cache and the token cache check) are
    /// gathered into rounds: a round starts when [`StampPacing::batch`] callers wait or the
    /// first has waited [`StampPacing::wait`] ([`StampPacing::DEFAULT`]: 8 callers or 500 µs),
    /// at once on an idle instance. So the reads per request stay the same when more instances
    /// share the load, at up to `wait` of latency on a busy one.
    pub stamp_pacing: StampPacing,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            replicas: Vec::new(),
            replica_max_lag: DEFAULT_REPLICA_MAX_LAG,
            primary_collections: vec!["users".into(), "portico_*".into()],
            cache_bytes: DEFAULT_CACHE_BYTES,
            stamp_pacing: StampPacing::DEFAULT,
        }
    }
}

/// A [`Store`] in a PostgreSQL database. Cloning is cheap and shares the connection pool.
///
/// # Read replicas
///
/// With [`PostgresOptions::replicas`], reads made inside a [`crate::routing::Reader`] scope
/// (gets, finds, counts, aggregates, searches) go to a replica that is up, within
/// [`PostgresOptions::replica_max_lag`] of the primary, and has replayed every write of the
/// scope's caller; anything else goes to the primary. After a write in a scope, the store
/// records the primary's WAL insert position for that scope and its caller key, and the
/// caller's reads stay on the primary until the replica's `pg_last_wal_replay_lsn()` (polled
/// every 200 ms) has passed it. A replica that is down, lagging or failing a read is skipped
/// and the read answered by the primary. [`PostgresStore::replica_status`] reports each one.
/// The change feed tells a change once the replicas in use hold it, and reads of a
/// [`crate::routing::Reader::following`] scope (live re-evaluations) go only to a replica
/// holding every change told.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// Settings of the change feed's listening connection.
    config: tokio_postgres::Config,
    feed: std::sync::Arc<feed::Feed>,
    /// The bus between instances, heard on the feed's listener.
    bus: bus::SharedBus,
    stamps: std::sync::Arc<stamp::Stamps>,
    /// The read replicas, when there are any.
    replicas: Option<std::sync::Arc<replica::Replicas>>,
    /// Single inserts waiting for their group commit (see `group.rs`).
    inserts: std::sync::Arc<group::InsertQueue>,
    /// Stored texts read from the primary, valid while their collection's stamp holds.
    cache: std::sync::Arc<cache::Cache>,
    /// The sorted indexes of each collection as last read (see `sorted.rs`).
    catalog: std::sync::Arc<sorted::Catalog>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("pool", &self.pool.status())
            .finish()
    }
}

impl PostgresStore {
    /// Connects to the database `url` names and creates Portico's catalog tables when missing.
    ///
    /// `url` is `postgres://user:password@host:port/database` (or `postgresql://`), with the
    /// options tokio-postgres understands as query parameters, such as
    /// `?host=/var/run/postgresql` for a unix socket, `connect_timeout=20` (seconds; 10 by
    /// default) or `application_name=...`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidUrl`] for a malformed URL; [`crate::Error::Unavailable`] when the
    /// server cannot be reached, refuses the credentials, or has no such database (the message
    /// says which); [`crate::Error::Backend`] when the catalog cannot be created.
    pub async fn open(url: &str) -> Result<PostgresStore> {
        PostgresStore::open_with(url, PostgresOptions::default()).await
    }

    /// As [`PostgresStore::open`], with `options` (read replicas). Replicas are polled once
    /// before this returns (a healthy one is in use at once); one that cannot be reached does
    /// not stop the store from opening, it is skipped until it answers.
    ///
    /// # Errors
    /// As [`PostgresStore::open`]; [`crate::Error::InvalidUrl`] for a malformed replica URL.
    pub async fn open_with(url: &str, options: PostgresOptions) -> Result<PostgresStore> {
        let (pool, config) = pool::build_with_config(url)?;
        let replicas = if options.replicas.is_empty() {
            None
        } else {
            Some(std::sync::Arc::new(replica::Replicas::new(
                pool.clone(),
                &options.replicas,
                options.replica_max_lag,
                options.primary_collections,
            )?))
        };
        let feed = std::sync::Arc::new(feed::Feed::default());
        let bus = {
            let feed = feed.clone();
            let config = config.clone();
            std::sync::Arc::new(bus::PgBus::new(
                pool.clone(),
                feed.bus.clone(),
                Box::new(move || feed.start(&config)),
            ))
        };
        let store = PostgresStore {
            bus,
            pool,
            stamps: std::sync::Arc::new(stamp::Stamps::new(config.clone(), options.stamp_pacing)),
            inserts: std::sync::Arc::default(),
            config,
            feed,
            replicas,
            cache: std::sync::Arc::new(cache::Cache::new(options.cache_bytes)),
            catalog: std::sync::Arc::default(),
        };
        let mut client = store.client().await?;
        schema::init(&mut client).await?;
        if let Some(replicas) = &store.replicas {
            replicas.poll().await;
            replicas.start();
            store.feed.gate_on(replicas);
        }
        Ok(store)
    }

    /// Each read replica's state, lag and reads, as last polled (empty without replicas).
    pub fn replica_status(&self) -> Vec<ReplicaStatus> {
        self.replicas
            .as_ref()
            .map(|r| r.status())
            .unwrap_or_default()
    }

    /// The read cache's budget, size and hits (see [`PostgresOptions::cache_bytes`]).
    pub fn cache_status(&self) -> CacheStatus {
        self.cache.status()
    }

    /// Rounds of change-stamp reads so far, and the calls they answered (see
    /// [`PostgresOptions::stamp_pacing`]).
    pub fn stamp_status(&self) -> StampStatus {
        self.stamps.status()
    }

    /// The write path of every write method: `op` writes on a connection from the pool
    /// (committing through `write_tx::WriteTx`, which sends its changes) and gives the
    /// connection back; then the write is recorded for read-your-writes ([`Self::recorded`]).
    /// No connection: the error, nothing written or recorded.
    async fn write<T, Fut>(&self, op: impl FnOnce(Client) -> Fut) -> Result<T>
    where
        Fut: Future<Output = Result<T>>,
    {
        let client = self.client().await?;
        self.recorded(op(client)).await
    }

    /// Runs the write `op`, then records it for read-your-writes with read replicas (see
    /// `replica.rs`; nothing without replicas or outside a routing scope), failed or not: a
    /// commit whose answer was lost may have committed. Here, in the caller's task and after
    /// `op` gave its connection back, not in `WriteTx::commit`: the routing scope is the
    /// task's (the group commit and a sorted index's fill commit on tasks of their own), the
    /// record takes a pooled connection of its own (a write holding one while waiting for
    /// another could starve the pool), and one record covers a call that commits several
    /// transactions.
    async fn recorded<R>(&self, op: impl Future<Output = R>) -> R {
        let done = op.await;
        if let Some(replicas) = &self.replicas {
            replicas.wrote().await;
        }
        done
    }

    /// A connection from the pool, within the pool's timeouts.
    async fn client(&self) -> Result<Client> {
        Ok(self.pool.get().await?)
    }
}

/// The stored format of the database `url` names, read without creating or changing anything
/// (see [`crate::stored_format`]).
pub(crate) async fn stored_format(url: &str) -> Result<Option<u32>> {
    let (pool, _) = pool::build_with_config(url)?;
    let client = pool.get().await?;
    schema::read_format(&client).await
}

#[async_trait]
impl Store for PostgresStore {
    async fn insert(&self, collection: &str, doc: Document) -> Result<String> {
        // Concurrent inserts share a transaction (group commit); each is answered once the
        // transaction holding it committed.
        let inserted = self.inserts.insert(&self.pool, collection, doc);
        Ok(self.recorded(inserted).await?.0)
    }

    async fn insert_stored(&self, collection: &str, doc: Document) -> Result<(String, Stored)> {
        // The text the group commit stored: the document is encoded once.
        let inserted = self.inserts.insert(&self.pool, collection, doc);
        let (id, text) = self.recorded(inserted).await?;
        Ok((id, Stored::Text(text)))
    }

    async fn insert_many(&self, collection: &str, docs: Vec<Document>) -> Result<Vec<String>> {
        self.write(
            |mut client| async move { write::insert_many(&mut client, collection, docs).await },
        )
        .await
    }

    async fn insert_stream(
        &self,
        collection: &str,
        batches: crate::DocumentBatches,
    ) -> Result<u64> {
        self.write(|mut client| async move {
            write::insert_stream(&mut client, collection, batches).await
        })
        .await
    }

    async fn find(&self, collection: &str, query: &Query) -> Result<Vec<Document>> {
        // Through a sorted index when one helps; the sorted window is checked only when none
        // serves the sort (`None`).
        let found = self
            .read(Some(collection), Keep::No, |mut client| async move {
                query::find(&mut client, &self.catalog, collection, query).await
            })
            .await?;
        match found {
            Some(docs) => Ok(docs),
            None => crate::paging::check_sorted_window(query).map(|()| Vec::new()),
        }
    }

    async fn find_page(&self, collection: &str, read: &PageRead) -> Result<Page> {
        if !read.count {
            return self.page_without_total(collection, &read.query).await;
        }
        let (texts, total, related) = self
            .page_with_related(collection, &read.query, &read.related)
            .await?;
        let mut page = Page::of_texts(texts, Some(total));
        page.related = related;
        Ok(page)
    }

    async fn find_one(&self, collection: &str, selector: &Selector) -> Result<Option<Document>> {
        let query = &Query {
            limit: Some(1),
            ..Query::new(selector.clone())
        };
        let found = self
            .read(Some(collection), Keep::No, |mut client| async move {
                query::find(&mut client, &self.catalog, collection, query).await
            })
            .await?;
        Ok(found.into_iter().flatten().next())
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Document>> {
        self.read(Some(collection), Keep::No, |client| async move {
            query::get(&client, collection, id).await
        })
        .await
    }

    async fn get_stored(&self, collection: &str, id: &str) -> Result<Option<Stored>> {
        let keep = Keep::Entry(Entry::doc(id));
        let text = self
            .read(Some(collection), keep, |client| async move {
                query::get_json(&client, collection, id).await
            })
            .await?;
        Ok(text.map(Stored::Text))
    }

    async fn count(&self, collection: &str, selector: &Selector) -> Result<u64> {
        self.read(Some(collection), Keep::No, |mut client| async move {
            query::count(&mut client, &self.catalog, collection, selector).await
        })
        .await
    }

    async fn aggregate(&self, collection: &str, spec: &crate::Aggregate) -> Result<Vec<Document>> {
        self.read(Some(collection), Keep::No, |mut client| async move {
            aggregate::aggregate(&mut client, collection, spec).await
        })
        .await
    }

    async fn update(
        &self,
        collection: &str,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        self.write(|mut client| async move {
            write::update(&mut client, collection, selector, update, options).await
        })
        .await
    }

    async fn update_owned(
        &self,
        collection: &str,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        crate::fallback::update_owned(self, collection, selector, update, options).await
    }

    async fn remove(&self, collection: &str, selector: &Selector) -> Result<u64> {
        self.write(
            |mut client| async move { write::remove(&mut client, collection, selector).await },
        )
        .await
    }

    async fn ensure_index(&self, collection: &str, path: &str) -> Result<()> {
        self.write(|mut client| async move {
            write::ensure_index(&mut client, collection, path, false).await
        })
        .await
    }

    async fn ensure_unique_index(&self, collection: &str, path: &str) -> Result<()> {
        self.write(|mut client| async move {
            write::ensure_index(&mut client, collection, path, true).await
        })
        .await
    }

    async fn ensure_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<()> {
        let (name, spec) = (collection.to_owned(), spec.clone());
        self.write(|mut client| async move {
            // A task of its own: a caller that goes away does not stop the fill half way with
            // its advisory lock held by a pooled connection (see `write::ensure_sorted_index`).
            let done =
                tokio::spawn(
                    async move { write::ensure_sorted_index(&mut client, &name, &spec).await },
                )
                .await
                .unwrap_or_else(|e| {
                    Err(crate::Error::Backend(format!(
                        "postgres: making a sorted index stopped: {e}"
                    )))
                });
            self.catalog.forget(collection);
            done
        })
        .await
    }

    async fn sorted_indexes(&self, collection: &str) -> Result<Vec<crate::IndexSpec>> {
        // The catalog as the primary has it.
        let indexes = self
            .read(None, Keep::No, |client| async move {
                schema::sorted_indexes(&client, collection, false).await
            })
            .await?;
        Ok(indexes.into_iter().map(|i| i.spec).collect())
    }

    async fn drop_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<bool> {
        self.write(|mut client| async move {
            let dropped = write::drop_sorted_index(&mut client, collection, spec).await;
            drop(client);
            self.catalog.forget(collection);
            dropped
        })
        .await
    }

    async fn ensure_search(&self, collection: &str, fields: &[String]) -> Result<()> {
        self.write(
            |mut client| async move { search::ensure(&mut client, collection, fields).await },
        )
        .await
    }

    async fn search(
        &self,
        collection: &str,
        search: &crate::Search,
    ) -> Result<(Vec<Document>, u64)> {
        self.read(Some(collection), Keep::No, |client| async move {
            search::search(&client, collection, search).await
        })
        .await
    }

    async fn drop_collection(&self, collection: &str) -> Result<()> {
        self.write(|mut client| async move {
            let done = write::drop_collection(&mut client, collection).await;
            drop(client);
            self.catalog.forget(collection);
            done
        })
        .await
    }

    async fn batch(
        &self,
        ops: Vec<crate::BatchOp>,
    ) -> std::result::Result<Vec<crate::BatchOutcome>, crate::BatchError> {
        let mut client = self
            .client()
            .await
            .map_err(|e| crate::BatchError::new(0, e))?;
        self.recorded(async move { batch::batch(&mut client, ops).await })
            .await
    }

    async fn list_collections(&self) -> Result<Vec<String>> {
        // The catalog as the primary has it.
        self.read(None, Keep::No, |client| async move {
            schema::list_collections(&client).await
        })
        .await
    }

    async fn change_stamp(&self, collection: &str) -> Option<u64> {
        self.stamps.stamp(collection).await
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<crate::Change>> {
        Some(self.feed.subscribe(&self.config))
    }

    fn bus(&self) -> Option<std::sync::Arc<dyn crate::Bus>> {
        Some(self.bus.clone())
    }

    async fn close(&self) {
        // Idle connections close now; one in use closes as it comes back.
        self.pool.close();
        if let Some(replicas) = &self.replicas {
            replicas.close();
        }
        self.feed.close();
        self.stamps.close();
    }
}

/// The list reads behind [`Store::find_page`].
impl PostgresStore {
    /// [`Store::find_page`] without a total.
    async fn page_without_total(&self, collection: &str, query: &Query) -> Result<Page> {
        // A page of the whole collection in `_id` order is sent as stored (a list endpoint
        // without filter or sort), through the read cache; anything else is `find`, decoded.
        if !query.is_plain_page() {
            return Ok(Page::of_documents(
                self.find(collection, query).await?,
                None,
            ));
        }
        let keep = Keep::Entry(Entry::page(query));
        let texts = self
            .read(Some(collection), keep, |client| async move {
                query::page_json(&client, collection, query.skip, query.limit).await
            })
            .await?;
        Ok(Page::of_texts(texts, None))
    }

    /// A page and its total.
    async fn page_with_total(&self, collection: &str, query: &Query) -> Result<(Vec<String>, u64)> {
        // Through the read cache (a sorted or filtered page as a page of the whole collection:
        // the answer depends on the collection's documents alone, which its stamp counts).
        // Through a sorted index the page and its total come from one snapshot; the sorted
        // window is checked only when none serves the sort (`None`). A page of the whole
        // collection and its total: one statement, one round trip.
        let keep = Keep::Entry(Entry::counted_page(query));
        let found = self
            .read(Some(collection), keep, |mut client| async move {
                if query.is_plain_page() {
                    query::page_json_counted(&client, collection, query.skip, query.limit)
                        .await
                        .map(Some)
                } else {
                    query::find_json_counted(&mut client, &self.catalog, collection, query).await
                }
            })
            .await?;
        match found {
            Some(answer) => Ok(answer),
            None => crate::paging::check_sorted_window(query).map(|()| (Vec::new(), 0)),
        }
    }

    /// A page, its total and the related documents read along.
    async fn page_with_related(
        &self,
        collection: &str,
        query: &Query,
        related: &[RelatedField],
    ) -> Result<(Vec<String>, u64, Vec<RelatedRead>)> {
        // A page of the whole collection, its total and its related documents: one statement,
        // one round trip. On a replica only when none of the collections reads on the primary.
        if !query.is_plain_page() || related.is_empty() || query.limit == Some(0) {
            let (page, total) = self.page_with_total(collection, query).await?;
            return Ok((page, total, Vec::new()));
        }
        let on = self
            .replicas
            .as_ref()
            .and_then(|r| {
                related
                    .iter()
                    .map(|f| f.collection.as_str())
                    .find(|c| r.read_on_primary(c))
            })
            .unwrap_or(collection);
        let keep = Keep::Related {
            collection,
            query,
            related,
            answer: Some,
        };
        let read = self
            .read(Some(on), keep, |client| async move {
                query::page_json_counted_related(
                    &client,
                    collection,
                    query.skip,
                    query.limit,
                    related,
                )
                .await
            })
            .await?;
        match read {
            Some(answer) => Ok(answer),
            None => {
                // A related collection that does not exist: the page alone.
                let (page, total) = self.page_with_total(collection, query).await?;
                Ok((page, total, Vec::new()))
            }
        }
    }
}
