//! The SQLite backend: the embedded default store, one database file per store.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use portico_store::sqlite::SqliteStore;
//! use portico_store::{Selector, Store};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("app.db")).await?;
//! store.ensure_index("users", "emails.address").await?;
//!
//! let user = json!({"name": "Ada", "emails": [{"address": "ada@example.com"}]});
//! let id = store.insert("users", user.as_object().cloned().unwrap_or_default()).await?;
//!
//! let by_email = Selector::parse(&json!({"emails.address": "ada@example.com"}))?;
//! let found = store.find_one("users", &by_email).await?;
//! assert_eq!(found.and_then(|doc| doc.get("_id").cloned()), Some(json!(id)));
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! | file | holds |
//! |---|---|
//! | `pool.rs` | one writer connection and a few readers; WAL, `synchronous`, busy timeout |
//! | `schema.rs` | the catalog, and how collection names become safe table names |
//! | `prefixes.rs` | kept counts of a compound sorted index's key prefixes (the totals of lists pinning them) |
//! | `index.rs` | index tables `(value, id)` for dotted paths, arrays included |
//! | `plan.rs` | narrowing the candidates of a selector with SQL (primary key, index, text) |
//! | `query.rs` | `find`, `count`, `get`: candidates decided by the reference matcher, paged |
//! | `write/` | insert, update, remove, `ensure_index`, drop, each one transaction (`write/batch.rs`: a batch of writes) |
//! | `group.rs` | group commit: concurrent single inserts share one transaction, each in a savepoint |
//! | `format.rs` | the stored format version (`portico_format`), read and written |
//! | `lock.rs` | the shared lock every open store holds on `<file>-lock`, which a restore takes exclusively |
//! | `backup.rs` | online backups ([`backup`]), their check ([`verify`]) and [`restore`] |
//! | `backup_set.rs` | a directory of backups: take one, list them, keep the newest ([`BackupSet`]) |
//!
//! Each collection is a table `(id TEXT PRIMARY KEY, doc TEXT)` holding the document as JSON
//! text. An acknowledged write survives the process being killed (see `pool.rs` for why WAL
//! with `synchronous=NORMAL` is enough for that). Every query result is decided by
//! [`Selector::matches`], the same code the memory backend runs, so the two backends agree.
//!
//! `find` reads rows one at a time from a statement in `_id` order: without a sort it stops after
//! `skip + limit` matches; with a sort and a limit it keeps only the best `skip + limit` in a
//! heap. Listing a page of a collection of millions of documents holds that page, not the
//! collection. Lookups by `_id` are one primary-key probe, whatever the collection's size.
//!
//! Every operation runs on tokio's blocking pool (see `run_blocking` below), except point reads
//! (`get`; `find` and `find_one` answered through the primary key or an index with a few
//! candidates; the count of a whole collection, kept in the catalog) and small first pages of a
//! whole collection, which run inline when a reader connection is idle because the thread
//! hand-off costs about as much as they do.

mod aggregate;
mod backup;
mod backup_set;
mod checkpoint;
mod error;
mod format;
mod group;
mod index;
#[clippy::msrv = "1.89"]
mod lock;
mod plan;
mod pool;
mod prefixes;
mod query;
mod schema;
mod search;
mod sorted;
mod write;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use self::pool::Pool;
use crate::feed::{Change, ChangeKind};
use crate::{
    Document, Error, Page, PageRead, Query, RelatedField, RelatedRead, Result, Selector, Store,
    Stored, Update, UpdateOptions, UpdateResult,
};
pub use backup::{
    BackupCheck, BackupReport, PARTIAL_SUFFIX, RestoreReport, backup, backup_with,
    for_each_document, restore, verify,
};
pub use backup_set::{
    BACKUP_EXTENSION, BACKUP_PREFIX, BackupFile, BackupSet, FILES_EXTENSION, files_name,
    is_backup_name, new_backup_name,
};
pub use format::read_stored_format;
pub use lock::{LOCK_SUFFIX, is_held, lock_path};

/// Reader connections per store: enough for the two or four cores of a small server to read in
/// parallel, few enough that their page caches stay small.
const READERS: usize = 4;

/// How many candidates an inline `find` or `find_one` may read before the work goes to the
/// blocking pool instead (each costs a row read and a JSON parse, a few microseconds).
const INLINE_CANDIDATES: usize = 16;

/// How many rows a `find` of a whole collection in natural order (`skip + limit`) may read inline
/// before it goes to the blocking pool. Such a page is a sequential read of adjacent B-tree
/// leaves and a JSON parse per row (a few microseconds each): for a page of 20 the hand-off to
/// the blocking pool (20-odd microseconds) is about as much again, for a page of hundreds it is
/// small next to the work, which would then hold an async worker too long.
const INLINE_PAGE_ROWS: u64 = 32;

/// About how many index entries an inline sorted page ([`query::page_counted_quick`]) may count
/// for its total (an entry is a few bytes of an adjacent B-tree leaf, a fraction of a
/// microsecond); a larger total is counted in the blocking pool.
const INLINE_COUNT: u64 = 4_000;

/// The limits of an inline page through a sorted index: `skip + limit` rows, and its count.
const INLINE_SORTED: (u64, u64) = (INLINE_PAGE_ROWS, INLINE_COUNT);

/// How many related documents an inline page read ([`Store::find_page`]) reads
/// along with it, by primary key (a few microseconds each); the caller reads any others.
const INLINE_RELATED: usize = 64;

/// A [`Store`] in one SQLite database file. Cloning is cheap and shares the connections.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: Arc<Pool>,
    /// Told after each committed write of this process (see [`SqliteStore::committed`]).
    feed: crate::ChangeFeed,
    /// Single inserts waiting for their group commit (see `group.rs`).
    inserts: Arc<group::InsertQueue>,
    /// The shared lock on the database held while this store is open (see `lock.rs`); after
    /// `pool` so that the connections close first. Taken out by [`Store::close`].
    lock: Arc<std::sync::Mutex<Option<lock::DatabaseLock>>>,
}

impl SqliteStore {
    /// Opens the store in the SQLite file at `path`, creating the file when it is missing.
    ///
    /// # Errors
    /// [`Error::Open`] when the file cannot be opened or created (its directory does not exist,
    /// no permission, ...) or is not a SQLite database.
    ///
    /// The database's stored format (see [`crate::format`]) is read before anything is written:
    /// a newer one is refused with [`Error::Open`] and the file is left exactly as it was; an
    /// older one is first copied with [`backup`] to `<file>.before-format-<N>-<UTC time>`
    /// beside it, then migrated in the same transaction that opens the catalog. While the store
    /// is open it holds a shared lock on `<file>-lock` (see [`restore`]).
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref().to_path_buf();
        let (pool, lock) = run_blocking(move || open_checked(&path)).await?;
        Ok(SqliteStore {
            pool: Arc::new(pool),
            feed: crate::ChangeFeed::new(),
            inserts: Arc::default(),
            lock: Arc::new(std::sync::Mutex::new(Some(lock))),
        })
    }

    /// The database file this store is open on.
    pub fn path(&self) -> &Path {
        self.pool.path()
    }

    /// Inserts many documents in one transaction, all or none, and returns their `_id`s in order.
    /// Much faster than inserting one by one, for imports and bulk loads.
    ///
    /// # Errors
    /// As [`Store::insert`] for the first document that fails; then nothing is inserted.
    pub async fn insert_many<I>(&self, collection: &str, docs: I) -> Result<Vec<String>>
    where
        I: IntoIterator<Item = Document> + Send + 'static,
    {
        let name = collection.to_owned();
        let ids = self
            .with_writer(move |conn| write::insert_many(conn, &name, docs))
            .await?;
        self.committed(Change::documents(
            collection,
            ids.clone(),
            ChangeKind::Insert,
        ));
        Ok(ids)
    }

    /// The change feed hook: called once a write has committed, with what it changed. Writes
    /// of other processes on the same file are not seen (out of scope, as the docs say).
    fn committed(&self, change: Change) {
        self.feed.publish(change);
    }

    /// Runs `f` on a reader connection in the blocking pool.
    async fn with_reader<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> Result<T> + Send + 'static,
    {
        let pool = Arc::clone(&self.pool);
        run_blocking(move || pool.read(f)).await
    }

    /// Runs `f` on the writer connection in the blocking pool.
    async fn with_writer<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> Result<T> + Send + 'static,
    {
        let pool = Arc::clone(&self.pool);
        run_blocking(move || pool.write(f)).await
    }
}

/// Opens the pool on `path` after the lock and the stored format allow it (see
/// [`SqliteStore::open`]).
fn open_checked(path: &Path) -> Result<(Pool, lock::DatabaseLock)> {
    use crate::format::FormatStatus;
    pool::check_path(path)?;
    let lock = lock::DatabaseLock::shared(path)?;
    let place = path.display().to_string();
    let migrated = match FormatStatus::of(format::read_stored_format(path)?) {
        FormatStatus::Newer(v) => return Err(crate::format::newer_error(&place, v)),
        FormatStatus::Older(v) => Some((v, backup::before_migration(path)?)),
        FormatStatus::Empty | FormatStatus::Current => None,
    };
    let pool = Pool::open(path, READERS, |conn| {
        // Immediate: a second process opening the same old file at the same moment waits here,
        // then finds it migrated.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        match FormatStatus::of(format::read(&tx)?) {
            FormatStatus::Newer(v) => return Err(crate::format::newer_error(&place, v)),
            FormatStatus::Current => schema::init(&tx)?,
            FormatStatus::Empty | FormatStatus::Older(_) => {
                // Format 1 to 2: the catalog as it was (`init` brings files older than format 1
                // up to it too), plus the version row.
                schema::init(&tx)?;
                format::stamp(&tx)?;
            }
        }
        tx.commit()?;
        Ok(())
    })?;
    if let Some((from, backup)) = migrated {
        tracing::warn!(
            "{place}: migrated from stored format {from} to {}; the database as it was is kept \
             in {} ({} bytes)",
            crate::FORMAT_VERSION,
            backup.path.display(),
            backup.bytes
        );
    }
    Ok((pool, lock))
}

/// Runs blocking SQLite work on tokio's blocking pool and awaits its result.
///
/// Why the blocking pool: rusqlite is synchronous, and any statement may wait on the disk, on the
/// writer mutex, or on another process's lock (up to the busy timeout). Run on an async worker
/// thread, such a wait would stall every other request scheduled on it. `spawn_blocking` hands the
/// work to a thread that may block, at the price of one thread hand-off per operation (a few
/// microseconds), which is small next to parsing a request. A dedicated worker thread per
/// connection fed by a channel would cost the same hand-off and add a queue to manage; the
/// blocking pool already grows and shrinks with demand, and our [`Pool`] bounds how many
/// connections those threads can use at once. Work is never cancelled midway: if the caller's
/// future is dropped, the closure still runs to the end, so a transaction either commits or rolls
/// back, never stops half done.
async fn run_blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Backend(format!("sqlite: the blocking task failed: {e}")))?
}

/// The two kinds of list read behind [`Store::find_page`].
impl SqliteStore {
    /// [`Store::find_page`] without a total.
    async fn page_without_total(&self, collection: &str, query: &Query) -> Result<Page> {
        // A page of the whole collection in `_id` order is sent as stored: the rows' JSON text,
        // with no document decoded and encoded again (a list endpoint without filter or sort).
        // Anything else is `find`, decoded.
        if !query.is_plain_page() {
            return Ok(Page::of_documents(
                self.find(collection, query).await?,
                None,
            ));
        }
        let (skip, limit) = (query.skip, query.limit);
        if limit.is_some_and(|limit| skip.saturating_add(limit) <= INLINE_PAGE_ROWS)
            && let Some(Ok(found)) = self
                .pool
                .try_read_now(|conn| query::page_json(conn, collection, skip, limit))
        {
            return Ok(Page::of_texts(found, None));
        }
        let collection = collection.to_owned();
        let texts = self
            .with_reader(move |conn| query::page_json(conn, &collection, skip, limit))
            .await?;
        Ok(Page::of_texts(texts, None))
    }

    /// [`Store::find_page`] with a total.
    async fn page_with_total(
        &self,
        collection: &str,
        query: &Query,
        related: &[RelatedField],
    ) -> Result<(Vec<String>, u64, Vec<RelatedRead>)> {
        // A small first page of the whole collection and the kept count, in one read
        // transaction on an idle reader: one snapshot, and one take of the WAL read lock
        // instead of two (a list profile put 10% in the count's own read). The documents its
        // relations name are read in the same transaction, by primary key, as stored text (up
        // to `INLINE_RELATED` of them): no query per relation afterwards.
        if query.is_plain_page()
            && query
                .limit
                .is_some_and(|limit| query.skip.saturating_add(limit) <= INLINE_PAGE_ROWS)
            && let Some(Ok(found)) = self.pool.try_read_now(|conn| {
                query::in_read_transaction(conn, |conn| {
                    let total = query::count(conn, collection, &query.selector)?;
                    let page = query::page_json(conn, collection, query.skip, query.limit)?;
                    let reads = query::related_json(conn, &page, related, INLINE_RELATED)?;
                    Ok((page, total, reads))
                })
            })
        {
            return Ok(found);
        }
        // A short page through a sorted index with a small or kept total: inline too.
        if let Some(Ok(Some((page, total)))) = self.pool.try_read_now(|conn| {
            query::in_read_transaction(conn, |conn| {
                query::page_counted_quick(conn, collection, query, INLINE_SORTED)
            })
        }) {
            return Ok((page, total, Vec::new()));
        }
        // Any other page with its total, in one snapshot: through a sorted index when one
        // serves it, else in one pass over the candidates.
        let name = collection.to_owned();
        let owned = query.clone();
        let (page, total) = self
            .with_reader(move |conn| {
                query::in_read_transaction(conn, |conn| {
                    query::page_counted_any(conn, &name, &owned)
                })
            })
            .await?;
        Ok((page, total, Vec::new()))
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn insert(&self, collection: &str, doc: Document) -> Result<String> {
        // Concurrent inserts share a transaction (group commit); each is answered once the
        // transaction holding it committed.
        let (id, _) = self
            .inserts
            .insert(&self.pool, collection, doc, false)
            .await?;
        self.committed(Change::documents(
            collection,
            vec![id.clone()],
            ChangeKind::Insert,
        ));
        Ok(id)
    }

    async fn insert_stored(&self, collection: &str, doc: Document) -> Result<(String, Stored)> {
        // The group commit gives the text it stored back: the document is not encoded twice,
        // and its tree is dropped as soon as it is encoded.
        let (id, text) = self
            .inserts
            .insert(&self.pool, collection, doc, true)
            .await?;
        self.committed(Change::documents(
            collection,
            vec![id.clone()],
            ChangeKind::Insert,
        ));
        let text =
            text.ok_or_else(|| Error::Backend("sqlite: the inserted text was not kept".into()))?;
        Ok((id, Stored::Text(text)))
    }

    async fn insert_many(&self, collection: &str, docs: Vec<Document>) -> Result<Vec<String>> {
        // The inherent method: one transaction, rolled back when a document fails.
        SqliteStore::insert_many(self, collection, docs).await
    }

    async fn insert_stream(
        &self,
        collection: &str,
        batches: crate::DocumentBatches,
    ) -> Result<u64> {
        // One writer transaction, fed as the batches come: memory holds a batch, not the stream.
        let name = collection.to_owned();
        let n = self
            .with_writer(move |conn| write::insert_stream(conn, &name, batches))
            .await?;
        // Which ids is not kept (a stream may be millions): listeners re-read the collection.
        self.committed(Change::documents(
            collection,
            Vec::new(),
            ChangeKind::Insert,
        ));
        Ok(n)
    }

    async fn find(&self, collection: &str, query: &Query) -> Result<Vec<Document>> {
        // The sorted window is checked by `query::find` unless a sorted index serves the sort.
        // A query answered through the primary key or an index with few entries for the value
        // is a handful of point reads: inline, as `find_one` and `get` below.
        if let Some(Ok(Some(found))) = self.pool.try_read_now(|conn| {
            query::find_quick(conn, collection, query, INLINE_CANDIDATES, INLINE_SORTED)
        }) {
            return Ok(found);
        }
        // A small first page of the whole collection in `_id` order (a list endpoint without
        // filter or sort) is a short sequential read: inline too.
        if query.selector.is_all()
            && query.sort.is_none()
            && query
                .limit
                .is_some_and(|limit| query.skip.saturating_add(limit) <= INLINE_PAGE_ROWS)
            && let Some(Ok(found)) = self
                .pool
                .try_read_now(|conn| query::find(conn, collection, query))
        {
            return Ok(found);
        }
        let collection = collection.to_owned();
        let query = query.clone();
        self.with_reader(move |conn| query::find(conn, &collection, &query))
            .await
    }

    async fn find_page(&self, collection: &str, read: &PageRead) -> Result<Page> {
        if read.count {
            let (texts, total, related) = self
                .page_with_total(collection, &read.query, &read.related)
                .await?;
            let mut page = Page::of_texts(texts, Some(total));
            page.related = related;
            return Ok(page);
        }
        self.page_without_total(collection, &read.query).await
    }

    async fn find_one(&self, collection: &str, selector: &Selector) -> Result<Option<Document>> {
        // Lookups through the primary key or an index (a login token on every authenticated
        // request) are point reads too, and run inline like `get` below, within a budget of
        // candidates so that a selector the index narrows poorly goes to the blocking pool.
        if let Some(Ok(Some(found))) = self.pool.try_read_now(|conn| {
            query::find_first_quick(conn, collection, selector, INLINE_CANDIDATES)
        }) {
            return Ok(found);
        }
        let collection = collection.to_owned();
        let query = Query {
            limit: Some(1),
            ..Query::new(selector.clone())
        };
        let found = self
            .with_reader(move |conn| query::find(conn, &collection, &query))
            .await?;
        Ok(found.into_iter().next())
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Document>> {
        // A point read by primary key runs inline on the async worker when a reader is idle:
        // it is one B-tree descent on pages that are almost always cached, and the hand-off to
        // the blocking pool costs more than the read itself. Measured with `benches/store.rs`
        // (`get_by_id`, 10k documents, 2 cores): 7-9 µs inline, 29-33 µs through
        // `spawn_blocking`. It never waits: with every reader busy, or a lock held elsewhere
        // (busy timeout zero inline), the read is redone in the blocking pool, where waiting is
        // harmless.
        if let Some(Ok(found)) = self
            .pool
            .try_read_now(|conn| query::get(conn, collection, id))
        {
            return Ok(found);
        }
        let collection = collection.to_owned();
        let id = id.to_owned();
        self.with_reader(move |conn| query::get(conn, &collection, &id))
            .await
    }

    async fn get_stored(&self, collection: &str, id: &str) -> Result<Option<Stored>> {
        // `get` with the stored text instead of the decoded document: inline when a reader is
        // idle, as `get`.
        if let Some(Ok(found)) = self
            .pool
            .try_read_now(|conn| query::get_json(conn, collection, id))
        {
            return Ok(found.map(Stored::Text));
        }
        let collection = collection.to_owned();
        let id = id.to_owned();
        let found = self
            .with_reader(move |conn| query::get_json(conn, &collection, &id))
            .await?;
        Ok(found.map(Stored::Text))
    }

    async fn count(&self, collection: &str, selector: &Selector) -> Result<u64> {
        // Counting a whole collection reads one catalog row (the count kept by every write):
        // a point read, inline like `get`.
        if selector.is_all()
            && let Some(Ok(n)) = self
                .pool
                .try_read_now(|conn| query::count(conn, collection, selector))
        {
            return Ok(n);
        }
        let collection = collection.to_owned();
        let selector = selector.clone();
        self.with_reader(move |conn| query::count(conn, &collection, &selector))
            .await
    }

    async fn aggregate(&self, collection: &str, spec: &crate::Aggregate) -> Result<Vec<Document>> {
        let collection = collection.to_owned();
        let spec = spec.clone();
        self.with_reader(move |conn| aggregate::aggregate(conn, &collection, &spec))
            .await
    }

    async fn update(
        &self,
        collection: &str,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        // A replacement's clone shares its document: nothing large is copied.
        self.update_owned(collection, selector, update.clone(), options)
            .await
    }

    async fn update_owned(
        &self,
        collection: &str,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        let name = collection.to_owned();
        let owned = selector.clone();
        let result = self
            .with_writer(move |conn| write::update(conn, &name, &owned, update, options))
            .await?;
        if result.modified > 0 || result.upserted_id.is_some() {
            self.committed(Change::of_update(collection, selector, &result));
        }
        Ok(result)
    }

    async fn remove(&self, collection: &str, selector: &Selector) -> Result<u64> {
        let name = collection.to_owned();
        let owned = selector.clone();
        let removed = self
            .with_writer(move |conn| write::remove(conn, &name, &owned))
            .await?;
        if removed > 0 {
            self.committed(Change::of_remove(collection, selector));
        }
        Ok(removed)
    }

    async fn ensure_index(&self, collection: &str, path: &str) -> Result<()> {
        let collection = collection.to_owned();
        let path = path.to_owned();
        self.with_writer(move |conn| write::ensure_index(conn, &collection, &path))
            .await
    }

    async fn ensure_unique_index(&self, collection: &str, path: &str) -> Result<()> {
        let collection = collection.to_owned();
        let path = path.to_owned();
        self.with_writer(move |conn| write::ensure_unique_index(conn, &collection, &path))
            .await
    }

    async fn ensure_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<()> {
        let collection = collection.to_owned();
        let spec = spec.clone();
        self.with_writer(move |conn| write::ensure_sorted_index(conn, &collection, &spec))
            .await
    }

    async fn sorted_indexes(&self, collection: &str) -> Result<Vec<crate::IndexSpec>> {
        let collection = collection.to_owned();
        self.with_reader(move |conn| {
            Ok(schema::sorted_indexes(conn, &collection)?
                .into_iter()
                .map(|i| i.spec)
                .collect())
        })
        .await
    }

    async fn drop_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<bool> {
        let collection = collection.to_owned();
        let spec = spec.clone();
        self.with_writer(move |conn| write::drop_sorted_index(conn, &collection, &spec))
            .await
    }

    async fn ensure_search(&self, collection: &str, fields: &[String]) -> Result<()> {
        let collection = collection.to_owned();
        let fields = fields.to_vec();
        self.with_writer(move |conn| search::ensure(conn, &collection, &fields))
            .await
    }

    async fn search(
        &self,
        collection: &str,
        search: &crate::Search,
    ) -> Result<(Vec<Document>, u64)> {
        let collection = collection.to_owned();
        let search = search.clone();
        self.with_reader(move |conn| search::search(conn, &collection, &search))
            .await
    }

    async fn drop_collection(&self, collection: &str) -> Result<()> {
        let name = collection.to_owned();
        self.with_writer(move |conn| write::drop_collection(conn, &name))
            .await?;
        self.committed(Change::Resync {
            collection: Some(collection.into()),
        });
        Ok(())
    }

    async fn change_stamp(&self, _collection: &str) -> Option<u64> {
        // SQLite's data version of the whole file: any commit on another connection changes
        // it, also one of another process (`portico users remove` beside the server), so a
        // cache keyed on it never outlives a write it did not see.
        self.pool.data_version()
    }

    async fn list_collections(&self) -> Result<Vec<String>> {
        self.with_reader(|conn| schema::list_collections(conn))
            .await
    }

    async fn batch(
        &self,
        ops: Vec<crate::BatchOp>,
    ) -> std::result::Result<Vec<crate::BatchOutcome>, crate::BatchError> {
        let pool = Arc::clone(&self.pool);
        let targets = crate::feed::batch_targets(&ops);
        let ran =
            run_blocking(move || Ok(pool.write(move |conn| Ok(write::batch(conn, ops))))).await;
        let outcomes = match ran {
            Ok(Ok(done)) => done?,
            Ok(Err(e)) | Err(e) => return Err(crate::BatchError::new(0, e)),
        };
        for change in crate::feed::batch_changes(targets, &outcomes) {
            self.committed(change);
        }
        Ok(outcomes)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        Some(self.feed.subscribe())
    }

    fn bus(&self) -> Option<std::sync::Arc<dyn crate::Bus>> {
        // One process sees this data: nothing travels between instances.
        None
    }

    async fn close(&self) {
        let pool = Arc::clone(&self.pool);
        let lock = Arc::clone(&self.lock);
        // Waiting for the connections' current users is blocking work.
        let closed = tokio::task::spawn_blocking(move || {
            pool.close();
            drop(
                lock.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take(),
            );
        })
        .await;
        if let Err(e) = closed {
            tracing::warn!(error = %e, "closing the SQLite store did not finish");
        }
    }
}
