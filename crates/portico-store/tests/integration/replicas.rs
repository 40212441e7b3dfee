//! Read replicas on real streaming replication: a primary and a hot standby made with
//! `pg_basebackup -R`, started by the test. A replica whose replay is paused
//! (`pg_wal_replay_pause()`) shows an older view than the primary, which proves who answered.

use std::time::{Duration, Instant};

use portico_store::postgres::testing::TestCluster;
use portico_store::postgres::{PostgresOptions, PostgresStore, ReplicaState, ReplicaStatus};
use portico_store::routing::{Reader, on_primary};
use portico_store::{Selector, Store, Update, UpdateOptions};
use serde_json::json;

use crate::common::StoredTexts;
use crate::common::doc;

/// A primary, its replica, a database on both, and a store reading from the replica.
struct Pair {
    primary: TestCluster,
    replica: TestCluster,
    db: String,
    store: PostgresStore,
}

async fn pair(max_lag: Duration) -> Pair {
    let (primary, replica, url) = tokio::task::spawn_blocking(|| {
        let primary = TestCluster::start().expect("primary");
        let url = primary.create_database().expect("database");
        let replica = primary.start_replica().expect("replica");
        (primary, replica, url)
    })
    .await
    .expect("setup task");
    let db = url.rsplit('/').next().expect("a database name").to_owned();
    let mut options = PostgresOptions::default();
    options.replicas = vec![replica.url(&db)];
    options.replica_max_lag = max_lag;
    let store = PostgresStore::open_with(&url, options)
        .await
        .expect("open with a replica");
    let pair = Pair {
        primary,
        replica,
        db,
        store,
    };
    pair.wait_state(ReplicaState::InUse).await;
    pair
}

impl Pair {
    async fn wait_state(&self, state: ReplicaState) {
        self.wait_until(&format!("{state:?}"), |r| r.state == state)
            .await;
    }

    /// Waits (up to 20 s) until the replica's status is `what` as `holds` says.
    async fn wait_until(&self, what: &str, holds: impl Fn(&ReplicaStatus) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = self.store.replica_status();
            if holds(&status[0]) {
                return;
            }
            assert!(Instant::now() < deadline, "replica not {what}: {status:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn replica_reads(&self) -> u64 {
        self.store.replica_status()[0].reads
    }

    /// Pauses the replica's replay, and waits until it is paused.
    fn pause(&self) {
        self.replica
            .sql(&self.db, "SELECT pg_wal_replay_pause()")
            .expect("pause replay");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self
            .replica
            .query(&self.db, "SELECT pg_get_wal_replay_pause_state()")
            .expect("pause state")
            != "paused"
        {
            assert!(Instant::now() < deadline, "replay did not pause");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn resume(&self) {
        self.replica
            .sql(&self.db, "SELECT pg_wal_replay_resume()")
            .expect("resume replay");
    }

    /// Document `id` as caller `key` reads it (in a scope of its own: one request).
    async fn get_as(&self, key: &str, id: &str) -> Option<i64> {
        Reader::caller(Some(key))
            .scope(self.store.get("c", id))
            .await
            .expect("a read never fails for a replica")
            .and_then(|d| d.get("v").and_then(serde_json::Value::as_i64))
    }

    /// Waits until caller `key` reads `v` of `id`.
    async fn wait_read(&self, key: &str, id: &str, v: Option<i64>) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.get_as(key, id).await != v {
            assert!(Instant::now() < deadline, "{key} never read {id} = {v:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn set_v(v: i64) -> Update {
    Update::parse(&json!({"$set": {"v": v}})).expect("update")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_replica_serves_other_callers_while_writers_read_their_writes() {
    let pair = pair(Duration::from_secs(60)).await;
    let store = &pair.store;
    Reader::caller(Some("alice"))
        .scope(store.insert("c", doc(json!({"_id": "old", "v": 1}))))
        .await
        .unwrap();
    // Bob reads it once the replica has replayed it.
    pair.wait_read("bob", "old", Some(1)).await;
    pair.pause();

    // Alice writes while the replica is paused: one request inserts, another updates.
    Reader::caller(Some("alice"))
        .scope(store.insert("c", doc(json!({"_id": "new", "v": 2}))))
        .await
        .unwrap();
    Reader::caller(Some("alice"))
        .scope(store.update(
            "c",
            &Selector::by_id("old"),
            &set_v(3),
            UpdateOptions::default(),
        ))
        .await
        .unwrap();

    // Her next requests read her writes (from the primary)...
    assert_eq!(pair.get_as("alice", "new").await, Some(2));
    assert_eq!(pair.get_as("alice", "old").await, Some(3));
    let count = Reader::caller(Some("alice"))
        .scope(store.count("c", &Selector::all()))
        .await
        .unwrap();
    assert_eq!(count, 2);

    // ...while Bob, who wrote nothing, reads the paused replica's older view.
    let before = pair.replica_reads();
    assert_eq!(pair.get_as("bob", "new").await, None);
    assert_eq!(pair.get_as("bob", "old").await, Some(1));
    let bobs = Reader::caller(Some("bob"))
        .scope(store.count("c", &Selector::all()))
        .await
        .unwrap();
    assert_eq!(bobs, 1, "the replica has one document");
    assert_eq!(pair.replica_reads(), before + 3);

    // Within one request, a write is read back at once, whoever the caller is.
    let carol = Reader::caller(Some("carol"))
        .scope(async {
            store
                .insert("c", doc(json!({"_id": "carol", "v": 4})))
                .await
                .unwrap();
            store.get("c", "carol").await.unwrap()
        })
        .await;
    assert!(carol.is_some());
    // Another key of a caller that wrote: Carol's next request reads from the primary too.
    assert_eq!(pair.get_as("carol", "carol").await, Some(4));

    // Outside a scope, and on_primary inside one, reads go to the primary.
    assert!(store.get("c", "new").await.unwrap().is_some());
    let bob_on_primary = Reader::caller(Some("bob"))
        .scope(on_primary(store.get("c", "new")))
        .await
        .unwrap();
    assert!(bob_on_primary.is_some());
    // The replica is paused but within its allowed lag: still in use.
    assert_eq!(store.replica_status()[0].state, ReplicaState::InUse);

    // Replay resumes: Bob sees everything, from the replica.
    pair.resume();
    pair.wait_read("bob", "new", Some(2)).await;
    assert_eq!(pair.get_as("bob", "old").await, Some(3));
    drop(pair.primary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_or_stopped_replica_is_skipped_and_used_again_when_back() {
    let pair = pair(Duration::from_millis(300)).await;
    let store = &pair.store;
    store
        .insert("c", doc(json!({"_id": "a", "v": 1})))
        .await
        .unwrap();
    pair.wait_read("bob", "a", Some(1)).await;

    // Paused past the allowed lag: skipped, Bob reads the primary's current data.
    pair.pause();
    store
        .update(
            "c",
            &Selector::by_id("a"),
            &set_v(2),
            UpdateOptions::default(),
        )
        .await
        .unwrap();
    pair.wait_state(ReplicaState::Lagging).await;
    // Lagging may first be set by the change feed's wait for the replica (past the allowed
    // lag), which measures no lag; the next poll (every 200 ms) gives it.
    pair.wait_until("measured over 300 ms behind", |r| {
        r.lag_ms.is_some_and(|lag| lag > 300)
    })
    .await;
    assert_eq!(store.replica_status()[0].state, ReplicaState::Lagging);
    assert_eq!(pair.get_as("bob", "a").await, Some(2));
    pair.resume();
    pair.wait_state(ReplicaState::InUse).await;
    pair.wait_read("bob", "a", Some(2)).await;

    // Stopped: every read still answers, from the primary.
    let replica = &pair.replica;
    tokio::task::block_in_place(|| replica.stop()).expect("stop the replica");
    for _ in 0..20 {
        assert_eq!(pair.get_as("bob", "a").await, Some(2));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pair.wait_state(ReplicaState::Down).await;
    store
        .update(
            "c",
            &Selector::by_id("a"),
            &set_v(3),
            UpdateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(pair.get_as("bob", "a").await, Some(3));

    // Back: in use again, and reads go to it.
    tokio::task::block_in_place(|| replica.restart()).expect("restart the replica");
    pair.wait_state(ReplicaState::InUse).await;
    let before = pair.replica_reads();
    pair.wait_read("bob", "a", Some(3)).await;
    assert!(pair.get_as("bob", "a").await == Some(3));
    assert!(
        pair.replica_reads() > before,
        "{:?}",
        store.replica_status()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_told_once_the_replica_holds_them_so_live_reads_see_them_there() {
    let pair = pair(Duration::from_millis(1500)).await;
    let store = &pair.store;
    let mut rx = store.changes().expect("a feed");
    // The listener says it listens with a re-check.
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("listening in time")
        .expect("the feed is open");
    store
        .insert("c", doc(json!({"_id": "a", "v": 1})))
        .await
        .unwrap();
    next_insert(&mut rx).await;
    // Told: a read that follows the feed finds it, on the replica.
    let before = pair.replica_reads();
    let seen = Reader::following()
        .scope(store.get("c", "a"))
        .await
        .unwrap();
    assert!(seen.is_some());
    assert_eq!(pair.replica_reads(), before + 1, "read on the replica");

    // Paused: the change waits for the replica, then for the allowed lag, then is told with
    // the replica skipped, and the read that follows it finds it on the primary.
    pair.pause();
    let written = Instant::now();
    store
        .insert("c", doc(json!({"_id": "b", "v": 2})))
        .await
        .unwrap();
    next_insert(&mut rx).await;
    assert!(
        written.elapsed() >= Duration::from_millis(1400),
        "told after {:?}",
        written.elapsed()
    );
    assert_ne!(store.replica_status()[0].state, ReplicaState::InUse);
    let seen = Reader::following()
        .scope(store.get("c", "b"))
        .await
        .unwrap();
    assert!(seen.is_some());
    pair.resume();
    pair.wait_state(ReplicaState::InUse).await;
}

/// Waits for the next insert the feed tells (skipping re-checks).
async fn next_insert(rx: &mut tokio::sync::broadcast::Receiver<portico_store::Change>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let change = tokio::time::timeout(left, rx.recv())
            .await
            .expect("a change in time")
            .expect("the feed is open");
        if matches!(change, portico_store::Change::Documents { .. }) {
            return;
        }
    }
}

/// The read cache with a replica: a read the replica answers neither comes from the cache nor
/// fills it (the primary's stamp does not count the replica's data); reads on the primary are
/// cached, and a caller's own writes are read back at once through the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_cache_holds_primary_reads_only_and_keeps_read_your_writes() {
    let pair = pair(Duration::from_secs(60)).await;
    let store = &pair.store;
    let v_as = |key: &'static str, id: &'static str| async move {
        let text = Reader::caller(Some(key))
            .scope(store.get_text("c", id))
            .await
            .expect("a read never fails for a replica");
        text.and_then(|t| {
            serde_json::from_str::<serde_json::Value>(&t)
                .ok()?
                .get("v")?
                .as_i64()
        })
    };
    Reader::caller(Some("alice"))
        .scope(store.insert("c", doc(json!({"_id": "old", "v": 1}))))
        .await
        .unwrap();
    pair.wait_read("bob", "old", Some(1)).await;
    pair.pause();

    // Outside a scope the primary answers, and its answer is cached.
    let before = store.cache_status();
    assert!(store.get_text("c", "old").await.unwrap().is_some());
    assert!(store.get_text("c", "old").await.unwrap().is_some());
    let cached = store.cache_status();
    assert_eq!(cached.hits, before.hits + 1, "{cached:?}");

    // Alice updates while the replica is paused.
    Reader::caller(Some("alice"))
        .scope(store.update(
            "c",
            &Selector::by_id("old"),
            &set_v(3),
            UpdateOptions::default(),
        ))
        .await
        .unwrap();

    // Bob's reads go to the replica, past the cache: its older view, the cache untouched.
    let reads = pair.replica_reads();
    assert_eq!(v_as("bob", "old").await, Some(1));
    assert_eq!(v_as("bob", "old").await, Some(1));
    let (page, total) = Reader::caller(Some("bob"))
        .scope(store.page_counted(
            "c",
            &portico_store::Query {
                limit: Some(20),
                ..portico_store::Query::default()
            },
        ))
        .await
        .unwrap();
    assert_eq!((page.len(), total), (1, 1));
    assert!(page[0].contains("\"v\":1"), "{page:?}");
    assert_eq!(pair.replica_reads(), reads + 3);
    assert_eq!(
        store.cache_status(),
        cached,
        "a replica read leaves the cache alone"
    );

    // Alice reads her write at once (the primary, a new stamp: not the cached v=1), and her
    // next read comes from the cache.
    assert_eq!(v_as("alice", "old").await, Some(3));
    let hits = store.cache_status().hits;
    assert_eq!(v_as("alice", "old").await, Some(3));
    assert_eq!(store.cache_status().hits, hits + 1);
    assert_eq!(pair.replica_reads(), reads + 3, "Alice read the primary");
    // On the primary, Bob too reads the newest document.
    let bob_on_primary = Reader::caller(Some("bob"))
        .scope(on_primary(store.get_text("c", "old")))
        .await
        .unwrap();
    assert!(bob_on_primary.is_some_and(|t| t.contains("\"v\":3")));

    pair.resume();
    pair.wait_read("bob", "old", Some(3)).await;
    drop(pair.primary);
}

/// A read through a sorted index goes to the replica as other reads do: its catalog and index
/// are replicated with the documents, so a sort past the window is served there (a replica
/// without the ready index would refuse it), with its total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sorted_index_reads_are_served_by_the_replica() {
    let pair = pair(Duration::from_secs(60)).await;
    const N: u64 = 10_100;
    pair.store
        .insert_many(
            "c",
            (0..N)
                .map(|i| doc(json!({"_id": format!("d{i:05}"), "v": (i * 37) % 1000})))
                .collect(),
        )
        .await
        .expect("insert");
    let spec = portico_store::IndexSpec::parse(&json!("-v")).expect("spec");
    pair.store
        .ensure_sorted_index("c", &spec)
        .await
        .expect("index");
    let query = portico_store::Query {
        sort: Some(portico_store::Sort::parse_list("-v").expect("sort")),
        skip: 10_000,
        limit: Some(20),
        ..portico_store::Query::default()
    };
    let mut want: Vec<(u64, String)> = (0..N)
        .map(|i| ((i * 37) % 1000, format!("d{i:05}")))
        .collect();
    want.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let want: Vec<String> = want[10_000..10_020].iter().map(|w| w.1.clone()).collect();
    // Another caller than the writer, once the replica has replayed the index.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (texts, total) = loop {
        let before = pair.replica_reads();
        let read = Reader::caller(Some("reader"))
            .scope(pair.store.page_counted("c", &query))
            .await;
        if let Ok(answer) = &read
            && pair.replica_reads() > before
        {
            break answer.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the replica never served: {read:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let ids: Vec<String> = texts
        .iter()
        .map(|t| {
            let v: serde_json::Value = serde_json::from_str(t).expect("JSON");
            v["_id"].as_str().expect("_id").to_owned()
        })
        .collect();
    assert_eq!((ids, total), (want, N));
}
