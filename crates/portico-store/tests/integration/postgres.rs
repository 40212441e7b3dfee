//! What only PostgreSQL has: several instances (stores) on one database, and a database server
//! that refuses us or goes away and comes back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_store::postgres::PostgresStore;
use portico_store::postgres::testing::TestCluster;
use portico_store::{Error, Selector, Store, Update, UpdateOptions};
use serde_json::json;

use crate::common::{cluster, doc};

/// Two stores on one database, as two `portico serve` instances would have.
async fn two_instances() -> (Arc<dyn Store>, Arc<dyn Store>) {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let a = PostgresStore::open(&url).await.expect("open a");
    let b = PostgresStore::open(&url).await.expect("open b");
    (Arc::new(a), Arc::new(b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_share_documents_indexes_and_counts() {
    let (a, b) = two_instances().await;
    let id = a
        .insert("notes", doc(json!({"text": "hi", "tags": ["x"]})))
        .await
        .expect("insert on a");
    assert!(b.get("notes", &id).await.expect("get on b").is_some());
    // An index made by one instance is maintained by the other's writes.
    a.ensure_index("notes", "tags").await.expect("index on a");
    b.insert("notes", doc(json!({"_id": "n2", "tags": ["x", "y"]})))
        .await
        .expect("insert on b");
    let by_tag = Selector::parse(&json!({"tags": "y"})).expect("selector");
    let found = a.find_one("notes", &by_tag).await.expect("find on a");
    assert_eq!(found.and_then(|d| d.get("_id").cloned()), Some(json!("n2")));
    assert_eq!(a.count("notes", &Selector::all()).await.expect("count"), 2);
    assert_eq!(b.count("notes", &Selector::all()).await.expect("count"), 2);
    assert_eq!(
        b.list_collections().await.expect("list"),
        vec!["notes".to_string()]
    );
}

/// A lookup by one equality reads the index table directly when there is one (no catalog read):
/// it must see an index another instance made, and fall back to a scan when the index goes
/// away under a statement prepared for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_equality_lookups_follow_indexes_made_and_dropped_elsewhere() {
    let (a, b) = two_instances().await;
    let by_tag = Selector::parse(&json!({"tags": "y"})).expect("selector");
    let ids = |docs: Vec<portico_store::Document>| -> Vec<serde_json::Value> {
        docs.into_iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect()
    };
    let query = portico_store::Query::new(by_tag.clone());
    assert!(
        b.find("notes", &query)
            .await
            .expect("no collection")
            .is_empty()
    );
    a.insert("notes", doc(json!({"_id": "n1", "tags": ["y"]})))
        .await
        .expect("insert");
    assert_eq!(
        ids(b.find("notes", &query).await.expect("scan")),
        vec![json!("n1")]
    );
    a.ensure_index("notes", "tags").await.expect("index on a");
    a.insert("notes", doc(json!({"_id": "n2", "tags": ["x", "y"]})))
        .await
        .expect("insert");
    for _ in 0..3 {
        assert_eq!(
            ids(b.find("notes", &query).await.expect("indexed")),
            vec![json!("n1"), json!("n2")]
        );
        assert_eq!(b.count("notes", &by_tag).await.expect("count"), 2);
    }
    // The collection (and its index) goes; a new one without an index takes its place.
    a.drop_collection("notes").await.expect("drop");
    a.insert("notes", doc(json!({"_id": "n3", "tags": "y"})))
        .await
        .expect("insert");
    for _ in 0..3 {
        assert_eq!(
            ids(b.find("notes", &query).await.expect("scan again")),
            vec![json!("n3")]
        );
    }
    a.drop_collection("notes").await.expect("drop");
    assert!(b.find("notes", &query).await.expect("gone").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_race_for_one_unique_value_and_one_document() {
    let (a, b) = two_instances().await;
    a.ensure_unique_index("users", "nameLower")
        .await
        .expect("unique index");
    b.insert("users", doc(json!({"_id": "hot", "n": 0})))
        .await
        .expect("insert");
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let inc = Update::parse(&json!({"$inc": {"n": 1}})).expect("modifier");
            store
                .update(
                    "users",
                    &Selector::by_id("hot"),
                    &inc,
                    UpdateOptions::default(),
                )
                .await
                .expect("increment");
            store
                .insert(
                    "users",
                    doc(json!({"_id": format!("u{i}"), "nameLower": "ann"})),
                )
                .await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(_) => won += 1,
            Err(Error::DuplicateKey { path, .. }) => assert_eq!(path, "nameLower"),
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(won, 1, "exactly one instance takes the name");
    let hot = a.get("users", "hot").await.expect("get").expect("hot");
    assert_eq!(hot.get("n"), Some(&json!(20)), "no increment is lost");
    assert_eq!(b.count("users", &Selector::all()).await.expect("count"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_and_missing_databases_are_unavailable_with_the_reason() {
    let c = cluster();
    let wrong = format!("postgres://postgres:wrong@127.0.0.1:{}/postgres", c.port());
    match PostgresStore::open(&wrong).await {
        Err(Error::Unavailable(reason)) => {
            assert!(
                reason.contains("password authentication failed"),
                "{reason}"
            );
            assert!(!reason.contains("wrong"), "{reason}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    match PostgresStore::open(&c.url("no_such_db")).await {
        Err(Error::Unavailable(reason)) => assert!(reason.contains("no_such_db"), "{reason}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    // A unix socket, libpq style.
    let socket = format!(
        "postgresql:///postgres?host={}&port={}&user=postgres",
        c.socket_dir().display(),
        c.port()
    );
    let store = PostgresStore::open(&socket)
        .await
        .expect("open over the socket");
    store.list_collections().await.expect("list");
}

/// Retries `op` until it succeeds or `within` passes; returns the last result.
async fn eventually<T, F, Fut>(within: Duration, mut op: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let deadline = Instant::now() + within;
    loop {
        let result = op().await;
        if result.is_ok() || Instant::now() > deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_is_unavailable_then_comes_back() {
    // A cluster of its own: this test stops it.
    let own = tokio::task::spawn_blocking(TestCluster::start)
        .await
        .expect("task")
        .expect("start a cluster");
    let url = own.create_database().expect("create database");
    let store = PostgresStore::open(&url).await.expect("open");
    store
        .insert("kept", doc(json!({"_id": "k", "v": 1})))
        .await
        .expect("insert");
    let own = Arc::new(own);
    let stopper = Arc::clone(&own);
    tokio::task::spawn_blocking(move || stopper.stop())
        .await
        .expect("task")
        .expect("stop the server");

    // Every operation fails quickly, as Unavailable; none hangs.
    let started = Instant::now();
    for _ in 0..3 {
        let read = tokio::time::timeout(Duration::from_secs(20), store.get("kept", "k"))
            .await
            .expect("a read returns while the server is down");
        assert!(matches!(read, Err(Error::Unavailable(_))), "{read:?}");
        let write = tokio::time::timeout(
            Duration::from_secs(20),
            store.insert("kept", doc(json!({"v": 2}))),
        )
        .await
        .expect("a write returns while the server is down");
        assert!(matches!(&write, Err(e) if e.is_unavailable()), "{write:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(60));

    let starter = Arc::clone(&own);
    tokio::task::spawn_blocking(move || starter.restart())
        .await
        .expect("task")
        .expect("restart the server");
    // The pool replaces its broken connections by itself.
    let back = eventually(Duration::from_secs(20), || store.get("kept", "k"))
        .await
        .expect("reads work again");
    assert_eq!(back.and_then(|d| d.get("v").cloned()), Some(json!(1)));
    eventually(Duration::from_secs(20), || {
        store.insert("kept", doc(json!({"_id": "after"})))
    })
    .await
    .expect("writes work again");
    assert_eq!(
        store.count("kept", &Selector::all()).await.expect("count"),
        2
    );
}
