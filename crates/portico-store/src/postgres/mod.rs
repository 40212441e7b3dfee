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
//! | `write.rs` | insert, update, remove, `ensure_index`, drop, each one transaction |
//! | `feed.rs` | the change feed: notifications sent in each write transaction, a listener per instance |
//! | `stamp.rs` | change stamps: a counter per collection moved by every write, read shared by concurrent callers |
//! | `error.rs` | PostgreSQL's errors as the store's, [`crate::Error::Unavailable`] among them |
//!
//! The layout is the SQLite backend's: a table per collection with the document's exact text,
//! index tables `(value, id)` for dotted paths (arrays included) written in the transaction of
//! each write, and a catalog with each collection's count. What PostgreSQL adds: a `jsonb` copy
//! of each document, which lets SQL narrow scans by equality, ranges, `$in` and `$exists`;
//! row locks (`SELECT ... FOR UPDATE`) instead of one writer, so instances write in parallel
//! and an update's read-modify-write stays atomic across instances; unique indexes enforced
//! by PostgreSQL, so two instances can never both insert one value.
//!
//! Every query result is decided by [`Selector::matches`], the code the memory backend runs, so
//! all backends agree. An acknowledged write is committed by PostgreSQL (durable under its own
//! `fsync` and `synchronous_commit` settings), whatever happens to the instance after.
//!
//! Connections are plain TCP or unix sockets, without TLS: run the database on a trusted network
//! or the same machine.

mod aggregate;
mod batch;
mod error;
mod feed;
mod plan;
mod pool;
mod query;
mod schema;
mod search;
mod stamp;
mod write;

pub mod testing;

use async_trait::async_trait;
use deadpool_postgres::{Client, Pool};

use crate::{Document, Query, Result, Selector, Store, Update, UpdateOptions, UpdateResult};

/// A [`Store`] in a PostgreSQL database. Cloning is cheap and shares the connection pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// Settings of the change feed's listening connection.
    config: tokio_postgres::Config,
    feed: std::sync::Arc<feed::Feed>,
    stamps: std::sync::Arc<stamp::Stamps>,
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
        let (pool, config) = pool::build_with_config(url)?;
        let store = PostgresStore {
            pool,
            stamps: std::sync::Arc::new(stamp::Stamps::new(config.clone())),
            config,
            feed: std::sync::Arc::default(),
        };
        let mut client = store.client().await?;
        schema::init(&mut client).await?;
        Ok(store)
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
        let mut client = self.client().await?;
        let mut ids = write::insert_many(&mut client, collection, vec![doc]).await?;
        Ok(ids.pop().unwrap_or_default())
    }

    async fn insert_many(&self, collection: &str, docs: Vec<Document>) -> Result<Vec<String>> {
        let mut client = self.client().await?;
        write::insert_many(&mut client, collection, docs).await
    }

    async fn insert_stream(
        &self,
        collection: &str,
        batches: crate::DocumentBatches,
    ) -> Result<u64> {
        let mut client = self.client().await?;
        write::insert_stream(&mut client, collection, batches).await
    }

    async fn find(&self, collection: &str, query: &Query) -> Result<Vec<Document>> {
        crate::top::check_sorted_window(query)?;
        let mut client = self.client().await?;
        query::find(&mut client, collection, query).await
    }

    async fn find_json(&self, collection: &str, query: &Query) -> Result<Vec<String>> {
        // A page of the whole collection in `_id` order is sent as stored (a list endpoint
        // without filter or sort); anything else is `find`, encoded.
        if !query.is_plain_page() {
            return crate::encode_all(&self.find(collection, query).await?);
        }
        let client = self.client().await?;
        query::page_json(&client, collection, query.skip, query.limit).await
    }

    async fn find_json_counted(
        &self,
        collection: &str,
        query: &Query,
    ) -> Result<(Vec<String>, u64)> {
        // A page of the whole collection and its total: one statement, one round trip.
        if !query.is_plain_page() {
            return crate::count_then_page(self, collection, query).await;
        }
        let client = self.client().await?;
        query::page_json_counted(&client, collection, query.skip, query.limit).await
    }

    async fn find_one(&self, collection: &str, selector: &Selector) -> Result<Option<Document>> {
        let mut client = self.client().await?;
        let query = Query {
            limit: Some(1),
            ..Query::new(selector.clone())
        };
        Ok(query::find(&mut client, collection, &query)
            .await?
            .into_iter()
            .next())
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Document>> {
        let client = self.client().await?;
        query::get(&client, collection, id).await
    }

    async fn get_json(&self, collection: &str, id: &str) -> Result<Option<String>> {
        let client = self.client().await?;
        query::get_json(&client, collection, id).await
    }

    async fn count(&self, collection: &str, selector: &Selector) -> Result<u64> {
        let mut client = self.client().await?;
        query::count(&mut client, collection, selector).await
    }

    async fn aggregate(&self, collection: &str, spec: &crate::Aggregate) -> Result<Vec<Document>> {
        let mut client = self.client().await?;
        aggregate::aggregate(&mut client, collection, spec).await
    }

    async fn update(
        &self,
        collection: &str,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        let mut client = self.client().await?;
        write::update(&mut client, collection, selector, update, options).await
    }

    async fn remove(&self, collection: &str, selector: &Selector) -> Result<u64> {
        let mut client = self.client().await?;
        write::remove(&mut client, collection, selector).await
    }

    async fn ensure_index(&self, collection: &str, path: &str) -> Result<()> {
        let mut client = self.client().await?;
        write::ensure_index(&mut client, collection, path, false).await
    }

    async fn ensure_unique_index(&self, collection: &str, path: &str) -> Result<()> {
        let mut client = self.client().await?;
        write::ensure_index(&mut client, collection, path, true).await
    }

    async fn ensure_search(&self, collection: &str, fields: &[String]) -> Result<()> {
        let mut client = self.client().await?;
        search::ensure(&mut client, collection, fields).await
    }

    async fn search(
        &self,
        collection: &str,
        search: &crate::Search,
    ) -> Result<(Vec<Document>, u64)> {
        let client = self.client().await?;
        search::search(&client, collection, search).await
    }

    async fn drop_collection(&self, collection: &str) -> Result<()> {
        let mut client = self.client().await?;
        write::drop_collection(&mut client, collection).await
    }

    async fn batch(
        &self,
        ops: Vec<crate::BatchOp>,
    ) -> std::result::Result<Vec<crate::BatchOutcome>, crate::BatchError> {
        let mut client = self
            .client()
            .await
            .map_err(|e| crate::BatchError::new(0, e))?;
        batch::batch(&mut client, ops).await
    }

    async fn list_collections(&self) -> Result<Vec<String>> {
        let client = self.client().await?;
        schema::list_collections(&client).await
    }

    async fn change_stamp(&self, collection: &str) -> Option<u64> {
        self.stamps.stamp(collection).await
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<crate::Change>> {
        Some(self.feed.subscribe(&self.config))
    }
}
