//! Store operation latency for `[metrics]`: the store wrapped so every operation records its
//! duration in `portico_store_operation_duration_seconds{operation}` (a histogram) and its
//! failures in `portico_store_errors_total{operation}`.
//!
//! Only a server with `[metrics]` opens its store this way; without it the store is not
//! wrapped and costs nothing.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use portico_platform::Platform;
use portico_store::{
    BatchError, BatchOp, BatchOutcome, Document, Page, PageRead, Query, Selector, Store, Stored,
    Update, UpdateOptions, UpdateResult,
};

use crate::config::check_database_url;

/// Store operation latency in seconds, by `operation` (`get`, `find`, `update`...).
pub const STORE_DURATION: &str = "portico_store_operation_duration_seconds";
/// Store operations that failed, by `operation`.
pub const STORE_ERRORS: &str = "portico_store_errors_total";

/// A store whose every operation is timed.
struct Measured(Arc<dyn Store>);

async fn timed<T, E>(
    operation: &'static str,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let started = Instant::now();
    let result = work.await;
    metrics::histogram!(STORE_DURATION, "operation" => operation)
        .record(started.elapsed().as_secs_f64());
    if result.is_err() {
        metrics::counter!(STORE_ERRORS, "operation" => operation).increment(1);
    }
    result
}

type StoreResult<T> = portico_store::Result<T>;

#[async_trait]
impl Store for Measured {
    async fn insert(&self, collection: &str, doc: Document) -> StoreResult<String> {
        timed("insert", self.0.insert(collection, doc)).await
    }

    async fn insert_stored(
        &self,
        collection: &str,
        doc: Document,
    ) -> StoreResult<(String, Stored)> {
        timed("insert", self.0.insert_stored(collection, doc)).await
    }

    async fn insert_many(&self, collection: &str, docs: Vec<Document>) -> StoreResult<Vec<String>> {
        timed("insert_many", self.0.insert_many(collection, docs)).await
    }

    async fn insert_stream(
        &self,
        collection: &str,
        batches: portico_store::DocumentBatches,
    ) -> StoreResult<u64> {
        // Forwarded, not the trait's default: the default would collect the whole stream.
        timed("insert_many", self.0.insert_stream(collection, batches)).await
    }

    async fn find(&self, collection: &str, query: &Query) -> StoreResult<Vec<Document>> {
        timed("find", self.0.find(collection, query)).await
    }

    async fn find_page(&self, collection: &str, read: &PageRead) -> StoreResult<Page> {
        timed("find", self.0.find_page(collection, read)).await
    }

    async fn find_one(
        &self,
        collection: &str,
        selector: &Selector,
    ) -> StoreResult<Option<Document>> {
        timed("find_one", self.0.find_one(collection, selector)).await
    }

    async fn get(&self, collection: &str, id: &str) -> StoreResult<Option<Document>> {
        timed("get", self.0.get(collection, id)).await
    }

    async fn get_stored(&self, collection: &str, id: &str) -> StoreResult<Option<Stored>> {
        timed("get", self.0.get_stored(collection, id)).await
    }

    async fn count(&self, collection: &str, selector: &Selector) -> StoreResult<u64> {
        timed("count", self.0.count(collection, selector)).await
    }

    async fn update(
        &self,
        collection: &str,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> StoreResult<UpdateResult> {
        timed(
            "update",
            self.0.update(collection, selector, update, options),
        )
        .await
    }

    async fn update_owned(
        &self,
        collection: &str,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> StoreResult<UpdateResult> {
        timed(
            "update",
            self.0.update_owned(collection, selector, update, options),
        )
        .await
    }

    async fn remove(&self, collection: &str, selector: &Selector) -> StoreResult<u64> {
        timed("remove", self.0.remove(collection, selector)).await
    }

    async fn ensure_index(&self, collection: &str, path: &str) -> StoreResult<()> {
        timed("ensure_index", self.0.ensure_index(collection, path)).await
    }

    async fn ensure_unique_index(&self, collection: &str, path: &str) -> StoreResult<()> {
        timed(
            "ensure_unique_index",
            self.0.ensure_unique_index(collection, path),
        )
        .await
    }

    async fn ensure_sorted_index(
        &self,
        collection: &str,
        spec: &portico_store::IndexSpec,
    ) -> StoreResult<()> {
        timed(
            "ensure_sorted_index",
            self.0.ensure_sorted_index(collection, spec),
        )
        .await
    }

    async fn sorted_indexes(&self, collection: &str) -> StoreResult<Vec<portico_store::IndexSpec>> {
        timed("sorted_indexes", self.0.sorted_indexes(collection)).await
    }

    async fn drop_sorted_index(
        &self,
        collection: &str,
        spec: &portico_store::IndexSpec,
    ) -> StoreResult<bool> {
        timed(
            "drop_sorted_index",
            self.0.drop_sorted_index(collection, spec),
        )
        .await
    }

    async fn aggregate(
        &self,
        collection: &str,
        spec: &portico_store::Aggregate,
    ) -> StoreResult<Vec<Document>> {
        // Forwarded, not the trait's default: the default reads every matching document.
        timed("aggregate", self.0.aggregate(collection, spec)).await
    }

    async fn ensure_search(&self, collection: &str, fields: &[String]) -> StoreResult<()> {
        // Forwarded, not the trait's default: the default keeps no full-text index.
        timed("ensure_search", self.0.ensure_search(collection, fields)).await
    }

    async fn search(
        &self,
        collection: &str,
        search: &portico_store::Search,
    ) -> StoreResult<(Vec<Document>, u64)> {
        // Forwarded, not the trait's default: the default scans every document.
        timed("search", self.0.search(collection, search)).await
    }

    async fn drop_collection(&self, collection: &str) -> StoreResult<()> {
        timed("drop_collection", self.0.drop_collection(collection)).await
    }

    async fn change_stamp(&self, collection: &str) -> Option<u64> {
        self.0.change_stamp(collection).await
    }

    async fn list_collections(&self) -> StoreResult<Vec<String>> {
        timed("list_collections", self.0.list_collections()).await
    }

    async fn batch(&self, ops: Vec<BatchOp>) -> Result<Vec<BatchOutcome>, BatchError> {
        timed("batch", self.0.batch(ops)).await
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<portico_store::Change>> {
        self.0.changes()
    }

    fn bus(&self) -> Option<std::sync::Arc<dyn portico_store::Bus>> {
        self.0.bus()
    }

    async fn close(&self) {
        self.0.close().await;
    }
}

/// Opens the platform on `url` as [`crate::database::open`] does, its store timed.
///
/// # Errors
/// As [`crate::database::open`].
pub async fn open(url: &str, config: portico_platform::PlatformConfig) -> crate::Result<Platform> {
    let failed = |message: String| crate::Error::Database {
        url: url.to_owned(),
        message,
    };
    check_database_url(url).map_err(failed)?;
    let store = portico_store::open(url)
        .await
        .map_err(|e| failed(e.to_string()))?;
    platform_on(url, store, config).await
}

/// Opens the platform on `store` (opened from `url`), its store timed.
///
/// # Errors
/// [`crate::Error::Database`] when the platform cannot be set up on the store.
pub async fn platform_on(
    url: &str,
    store: Arc<dyn Store>,
    config: portico_platform::PlatformConfig,
) -> crate::Result<Platform> {
    Platform::with_store_config(Arc::new(Measured(store)), config)
        .await
        .map_err(|e| crate::Error::Database {
            url: portico_store::redact_url(url),
            message: e.to_string(),
        })
}
