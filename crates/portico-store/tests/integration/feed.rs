//! The change feed ([`Store::changes`]): what each backend tells after its writes commit, and on
//! PostgreSQL across instances and across a lost listening connection.

use std::time::Duration;

use portico_store::{BatchOp, Change, ChangeKind, Selector, Store, Update, UpdateOptions};
use serde_json::json;
use tokio::sync::broadcast;

use crate::common::doc;

async fn next(rx: &mut broadcast::Receiver<Change>) -> Change {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a change within 10 s")
        .expect("the feed is open")
}

/// The next change that names documents (a PostgreSQL listener also sends resyncs).
async fn next_documents(rx: &mut broadcast::Receiver<Change>) -> Change {
    loop {
        let change = next(rx).await;
        if matches!(change, Change::Documents { .. }) {
            return change;
        }
    }
}

/// Every write that changed something is told, with its ids; one that changed nothing is not.
async fn writes_are_told(store: &dyn Store, mut rx: broadcast::Receiver<Change>) {
    let docs = |ids: &[&str], kind| {
        Change::documents("c", ids.iter().map(|s| (*s).to_owned()).collect(), kind)
    };
    store
        .insert("c", doc(json!({"_id": "a", "n": 1})))
        .await
        .unwrap();
    assert_eq!(
        next_documents(&mut rx).await,
        docs(&["a"], ChangeKind::Insert)
    );
    let set = Update::parse(&json!({"$set": {"n": 1}})).unwrap();
    // A no-op update (n is 1 already), then a real one.
    store
        .update("c", &Selector::by_id("a"), &set, UpdateOptions::default())
        .await
        .unwrap();
    let inc = Update::parse(&json!({"$inc": {"n": 1}})).unwrap();
    store
        .update("c", &Selector::by_id("a"), &inc, UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        next_documents(&mut rx).await,
        docs(&["a"], ChangeKind::Update)
    );
    // A failed write tells nothing: the next change is the batch's.
    assert!(store.insert("c", doc(json!({"_id": "a"}))).await.is_err());
    let ops = vec![
        BatchOp::Insert {
            collection: "c".into(),
            doc: doc(json!({"_id": "b"})),
        },
        BatchOp::Remove {
            collection: "c".into(),
            selector: Selector::by_id("a"),
        },
    ];
    store.batch(ops).await.unwrap();
    assert_eq!(
        next_documents(&mut rx).await,
        docs(&["b"], ChangeKind::Insert)
    );
    assert_eq!(
        next_documents(&mut rx).await,
        docs(&["a"], ChangeKind::Remove)
    );
    store.remove("c", &Selector::by_id("b")).await.unwrap();
    assert_eq!(
        next_documents(&mut rx).await,
        docs(&["b"], ChangeKind::Remove)
    );
}

#[cfg(feature = "memory")]
#[tokio::test]
async fn memory_tells_its_writes() {
    let store = portico_store::memory::MemoryStore::new();
    let rx = store.changes().expect("a feed");
    writes_are_told(&store, rx).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_tells_its_writes_after_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = portico_store::sqlite::SqliteStore::open(dir.path().join("f.db"))
        .await
        .unwrap();
    let rx = store.changes().expect("a feed");
    writes_are_told(&store, rx).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tells_every_instance_and_heals_a_lost_listener() {
    use portico_store::postgres::PostgresStore;

    let url = tokio::task::spawn_blocking(|| crate::common::cluster().create_database())
        .await
        .unwrap()
        .unwrap();
    let a = PostgresStore::open(&url).await.unwrap();
    let b = PostgresStore::open(&url).await.unwrap();
    let mut rx = a.changes().expect("a feed");
    // The listener says it is listening with a resync.
    assert_eq!(next(&mut rx).await, Change::Resync { collection: None });
    // Writes of the other instance, as they commit.
    writes_are_told(&b, a.changes().expect("a feed")).await;

    // Cut the listening connection: the listener reconnects, says so with a resync, and hears
    // writes again.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut rx = a.changes().expect("a feed");
    let cut = client
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE query LIKE 'LISTEN portico_changes%' AND datname = current_database() \
             AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(cut.len(), 1, "one listening connection");
    loop {
        if next(&mut rx).await == (Change::Resync { collection: None }) {
            break;
        }
    }
    b.insert("c", doc(json!({"_id": "after"}))).await.unwrap();
    assert_eq!(
        next_documents(&mut rx).await,
        Change::documents("c", vec!["after".into()], ChangeKind::Insert)
    );
}
