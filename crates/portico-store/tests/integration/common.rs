//! What every test module shares: the backends under test and helpers to build and read documents.

use std::sync::Arc;

use portico_store::{
    Document, PageRead, Query, RelatedField, RelatedRead, Selector, Sort, Store, Stored,
    document_id,
};
use serde_json::Value;

/// A store under test, with whatever must outlive it (the temp dir of a SQLite file).
pub(crate) struct Fixture {
    pub(crate) store: Arc<dyn Store>,
    _dir: Option<tempfile::TempDir>,
}

/// A fresh, empty memory store.
#[cfg(feature = "memory")]
pub(crate) async fn memory() -> Fixture {
    Fixture {
        store: Arc::new(portico_store::memory::MemoryStore::new()),
        _dir: None,
    }
}

/// A fresh SQLite store in a new temp dir.
#[cfg(feature = "sqlite")]
pub(crate) async fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = portico_store::sqlite::SqliteStore::open(dir.path().join("store.db"))
        .await
        .expect("open sqlite store");
    Fixture {
        store: Arc::new(store),
        _dir: Some(dir),
    }
}

/// The throwaway PostgreSQL cluster of this test binary, started on first use; it stops when
/// the binary exits (see `portico_store::postgres::testing`). Without PostgreSQL installed, the
/// tests that use it fail with a message saying what to install.
#[cfg(feature = "postgres")]
pub(crate) fn cluster() -> &'static portico_store::postgres::testing::TestCluster {
    use std::sync::OnceLock;

    use portico_store::postgres::testing::TestCluster;
    static CLUSTER: OnceLock<Result<TestCluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(TestCluster::start) {
        Ok(cluster) => cluster,
        Err(e) => panic!("cannot start PostgreSQL for the tests: {e}"),
    }
}

/// A fresh PostgreSQL store on a new database of the test cluster.
#[cfg(feature = "postgres")]
pub(crate) async fn postgres() -> Fixture {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("create database task")
        .expect("create database");
    let store = portico_store::postgres::PostgresStore::open(&url)
        .await
        .expect("open postgres store");
    Fixture {
        store: Arc::new(store),
        _dir: None,
    }
}

/// A PostgreSQL store on one database shared by every call (created on first use), with
/// `collection` dropped: for many short cases (the differential test) that each would
/// otherwise pay for creating a database.
#[cfg(feature = "postgres")]
pub(crate) async fn postgres_shared(collection: &str) -> Fixture {
    use std::sync::OnceLock;
    static URL: OnceLock<String> = OnceLock::new();
    let url = match URL.get() {
        Some(url) => url.clone(),
        None => {
            let url = tokio::task::spawn_blocking(|| cluster().create_database())
                .await
                .expect("create database task")
                .expect("create database");
            URL.get_or_init(|| url).clone()
        }
    };
    let store = portico_store::postgres::PostgresStore::open(&url)
        .await
        .expect("open postgres store");
    store
        .drop_collection(collection)
        .await
        .expect("drop the collection of the previous case");
    Fixture {
        store: Arc::new(store),
        _dir: None,
    }
}

/// The object `v` as a document (tests only build objects).
pub(crate) fn doc(v: Value) -> Document {
    match v {
        Value::Object(m) => m,
        other => panic!("test documents are objects, not {other}"),
    }
}

/// The parsed selector `v`.
pub(crate) fn sel(v: Value) -> Selector {
    Selector::parse(&v).unwrap_or_else(|e| panic!("selector {v}: {e}"))
}

/// The `_id`s of `docs`, in order.
pub(crate) fn ids(docs: &[Document]) -> Vec<String> {
    docs.iter()
        .map(|d| document_id(d).unwrap_or("<no _id>").to_string())
        .collect()
}

/// Every document of `collection`, in `_id` order.
pub(crate) async fn all_docs(store: &dyn Store, collection: &str) -> Vec<Document> {
    let query = Query {
        sort: Some(Sort::parse_list("_id").expect("sort")),
        ..Query::default()
    };
    store.find(collection, &query).await.expect("find all")
}

/// The pages and documents of [`Store::find_page`] and [`Store::get_stored`] as JSON texts, for
/// tests that compare what a reply would embed: a decoded document is encoded, stored text is
/// given as it is.
#[allow(dead_code)] // each backend's tests use some of them
pub(crate) trait StoredTexts {
    /// The page of `query` as texts.
    async fn page_texts(&self, c: &str, query: &Query) -> portico_store::Result<Vec<String>>;
    /// The page of `query` as texts, and its total.
    async fn page_counted(
        &self,
        c: &str,
        query: &Query,
    ) -> portico_store::Result<(Vec<String>, u64)>;
    /// The page of `query` as texts, its total, and the related documents read along.
    async fn page_counted_related(
        &self,
        c: &str,
        query: &Query,
        related: &[RelatedField],
    ) -> portico_store::Result<(Vec<String>, u64, Vec<RelatedRead>)>;
    /// The document `id` as its text.
    async fn get_text(&self, c: &str, id: &str) -> portico_store::Result<Option<String>>;
}

impl<S: Store + ?Sized> StoredTexts for S {
    async fn page_texts(&self, c: &str, query: &Query) -> portico_store::Result<Vec<String>> {
        let page = self.find_page(c, &PageRead::new(query.clone())).await?;
        page.into_texts()
    }

    async fn page_counted(
        &self,
        c: &str,
        query: &Query,
    ) -> portico_store::Result<(Vec<String>, u64)> {
        let (texts, total, _) = self.page_counted_related(c, query, &[]).await?;
        Ok((texts, total))
    }

    async fn page_counted_related(
        &self,
        c: &str,
        query: &Query,
        related: &[RelatedField],
    ) -> portico_store::Result<(Vec<String>, u64, Vec<RelatedRead>)> {
        let read = PageRead::new(query.clone())
            .counted(true)
            .related(related.to_vec());
        let mut page = self.find_page(c, &read).await?;
        let related = std::mem::take(&mut page.related);
        let total = page.total.unwrap_or_default();
        Ok((page.into_texts()?, total, related))
    }

    async fn get_text(&self, c: &str, id: &str) -> portico_store::Result<Option<String>> {
        self.get_stored(c, id)
            .await?
            .map(Stored::into_text)
            .transpose()
    }
}
