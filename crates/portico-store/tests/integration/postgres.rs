//! What only PostgreSQL has: several instances (stores) on one database, and a database server
//! that refuses us or goes away and comes back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_store::postgres::testing::{TestCluster, sorted_index_problems};
use portico_store::postgres::{PostgresOptions, PostgresStore, StampPacing};
use portico_store::{
    BatchOp, Document, Error, IndexSpec, Query, Selector, Sort, Store, Update, UpdateOptions,
};
use serde_json::json;

use crate::common::StoredTexts;
use crate::common::{self, cluster, doc};

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

/// Change stamps across instances: every kind of write on one instance moves the stamp the
/// other reads on its very next call (no waiting for the change feed), a read alone does not,
/// and a collection made before stamps existed gets one when an instance starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_instance_moves_the_stamp_the_other_reads_next() {
    let (a, b) = two_instances().await;
    assert_eq!(
        b.change_stamp("notes").await,
        None,
        "no collection, no stamp"
    );
    a.insert("notes", doc(json!({"_id": "n1", "n": 1})))
        .await
        .expect("insert");
    let mut last = b.change_stamp("notes").await.expect("a stamp once made");
    let other = b.change_stamp("other").await;
    b.get("notes", "n1").await.expect("get");
    assert_eq!(
        b.change_stamp("notes").await,
        Some(last),
        "reads move nothing"
    );
    let inc = Update::parse(&json!({"$inc": {"n": 1}})).expect("update");
    let by_id = Selector::by_id("n1");
    for round in 0..50 {
        match round % 5 {
            0 => {
                a.update("notes", &by_id, &inc, UpdateOptions::default())
                    .await
                    .expect("update");
            }
            1 => {
                a.insert("notes", doc(json!({"_id": format!("x{round}")})))
                    .await
                    .expect("insert");
            }
            2 => {
                a.remove("notes", &Selector::by_id(&format!("x{}", round - 1)))
                    .await
                    .expect("remove");
            }
            3 => {
                let op = portico_store::BatchOp::Update {
                    collection: "notes".into(),
                    selector: by_id.clone(),
                    update: inc.clone(),
                };
                a.batch(vec![op]).await.expect("batch");
            }
            _ => {
                a.insert_many("notes", vec![doc(json!({})), doc(json!({}))])
                    .await
                    .expect("insert many");
            }
        }
        let now = b.change_stamp("notes").await.expect("stamp");
        assert!(now > last, "round {round}: {now} after {last}");
        last = now;
    }
    assert_eq!(b.change_stamp("other").await, other, "per collection");
    // Dropping moves it too, and it never goes back when the collection is made again.
    a.drop_collection("notes").await.expect("drop");
    let dropped = b.change_stamp("notes").await.expect("kept when dropped");
    assert!(dropped > last);
    a.insert("notes", doc(json!({}))).await.expect("again");
    assert!(b.change_stamp("notes").await.expect("stamp") > dropped);
}

/// Many callers at once share reads, and each still sees every write committed before it
/// called: writes and reads interleave from several tasks, each checking its own order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_share_reads_without_missing_a_write() {
    let (a, b) = two_instances().await;
    a.insert("notes", doc(json!({"_id": "n", "n": 0})))
        .await
        .expect("insert");
    let inc = Update::parse(&json!({"$inc": {"n": 1}})).expect("update");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (a, b, inc) = (Arc::clone(&a), Arc::clone(&b), inc.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..20 {
                let before = b.change_stamp("notes").await.expect("stamp");
                a.update(
                    "notes",
                    &Selector::by_id("n"),
                    &inc,
                    UpdateOptions::default(),
                )
                .await
                .expect("update");
                let after = b.change_stamp("notes").await.expect("stamp");
                assert!(after > before, "{after} after {before}");
            }
        }));
    }
    // Readers only, at the same time: each answer is at least the last one it saw.
    for _ in 0..4 {
        let b = Arc::clone(&b);
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for _ in 0..100 {
                let now = b.change_stamp("notes").await.expect("stamp");
                assert!(now >= last);
                last = now;
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
}

/// A store on a fresh database with its stamp rounds paced by `pacing`, and a collection.
async fn paced_store(pacing: StampPacing) -> Arc<PostgresStore> {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let mut options = PostgresOptions::default();
    options.stamp_pacing = pacing;
    let store = PostgresStore::open_with(&url, options).await.expect("open");
    store.insert("notes", doc(json!({}))).await.expect("insert");
    Arc::new(store)
}

/// Rounds follow the callers, not the round trips: 16 threads, each asking for the stamp then
/// working 1-9 ms, over and over, share rounds of about the batch (unpaced, with rounds back to
/// back, each answering whoever came during the last, the same run made 323 rounds for 480
/// calls); no caller waits much past the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_callers_share_rounds_of_a_batch() {
    let mut pacing = StampPacing::default();
    pacing.batch = 8;
    pacing.wait = Duration::from_millis(200);
    let store = paced_store(pacing).await;
    let before = store.stamp_status();
    let runtime = tokio::runtime::Handle::current();
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let (store, runtime) = (Arc::clone(&store), runtime.clone());
            std::thread::spawn(move || {
                let mut longest = Duration::ZERO;
                for _ in 0..30 {
                    let asked = Instant::now();
                    runtime
                        .block_on(store.change_stamp("notes"))
                        .expect("stamp");
                    longest = longest.max(asked.elapsed());
                    std::thread::sleep(Duration::from_micros(rand::random_range(1000..9000)));
                }
                longest
            })
        })
        .collect();
    let longest = tokio::task::spawn_blocking(move || {
        threads
            .into_iter()
            .map(|t| t.join().expect("thread"))
            .max()
            .unwrap_or_default()
    })
    .await
    .expect("task");
    let status = store.stamp_status();
    let (rounds, callers) = (
        status.rounds - before.rounds,
        status.callers - before.callers,
    );
    assert_eq!(callers, 480, "every call answered by a round");
    assert!(
        callers >= 6 * rounds,
        "{callers} calls in {rounds} rounds: rounds did not wait for a batch"
    );
    // A round waits for the batch at most `wait` (plus its read and a loaded machine).
    assert!(
        longest < Duration::from_secs(2),
        "a caller waited {longest:?}"
    );
}

/// A lone caller is never held back: one request's calls one after another (the token cache,
/// then the read cache) each start a round at once, on a store whose wait is a whole second;
/// and a caller of a busy instance whose round does not fill is answered once the wait is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_caller_is_not_held_and_an_unfilled_round_starts_after_the_wait() {
    let mut pacing = StampPacing::default();
    pacing.batch = 64;
    pacing.wait = Duration::from_secs(1);
    let store = paced_store(pacing).await;
    let started = Instant::now();
    let mut last = 0;
    for _ in 0..10 {
        let now = store.change_stamp("notes").await.expect("stamp");
        assert!(now >= last);
        last = now;
    }
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "10 lone calls took {:?}: held back",
        started.elapsed()
    );
    let lone = store.stamp_status();
    assert_eq!(lone.rounds, lone.callers, "one round each");
    // Busy: 8 callers at once share one round (the leader lets the tasks ready to run call in
    // before it starts; whether all 8 are ready by then depends on the scheduler, so up to 20
    // tries), then 3 more at once: far from the batch of 64 and after a round of 8, their
    // round starts when its first has waited the second (and not much later).
    let calls = |n| {
        let store = Arc::clone(&store);
        async move {
            let all = (0..n).map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.change_stamp("notes").await })
            });
            for task in all.collect::<Vec<_>>() {
                assert!(task.await.expect("task").is_some());
            }
        }
    };
    let mut shared = false;
    for _ in 0..20 {
        let seen = store.stamp_status();
        calls(8).await;
        if store.stamp_status().rounds - seen.rounds == 1 {
            shared = true;
            break;
        }
    }
    assert!(shared, "8 callers at once never shared one round");
    let before = store.stamp_status();
    let asked = Instant::now();
    calls(3).await;
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(4),
        "3 callers after a round of 8 waited {waited:?}, not about the wait of 1 s"
    );
    let after = store.stamp_status();
    assert_eq!(after.callers - before.callers, 3);
    assert!(after.rounds - before.rounds <= 2);
}

/// A database whose collections were made before change stamps existed: the next instance to
/// start gives them stamps, which writes then move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collections_made_before_stamps_get_them_at_start() {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let a = PostgresStore::open(&url).await.expect("open a");
    a.insert("notes", doc(json!({}))).await.expect("insert");
    let db = url.rsplit('/').next().unwrap_or_default().to_owned();
    tokio::task::spawn_blocking(move || cluster().sql(&db, "DROP TABLE portico_stamps"))
        .await
        .expect("task")
        .expect("drop the stamps");
    let b = PostgresStore::open(&url).await.expect("open b");
    let first = b.change_stamp("notes").await.expect("made at start");
    a.insert("notes", doc(json!({}))).await.expect("insert");
    assert!(b.change_stamp("notes").await.expect("stamp") > first);
}

/// Concurrent single inserts (grouped into shared transactions): each caller gets its own
/// answer — a repeated `_id`, within a group or against a stored document, refuses that insert
/// alone — indexes and counts follow, and a collection with a unique index still refuses a
/// shared value to exactly one of the racers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_commit_together_and_fail_alone() {
    let (a, b) = two_instances().await;
    a.insert("notes", doc(json!({"_id": "taken"})))
        .await
        .expect("insert");
    a.ensure_index("notes", "tag").await.expect("index");
    a.ensure_unique_index("people", "name")
        .await
        .expect("unique index");
    let mut tasks = Vec::new();
    for i in 0..64 {
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            let id = match i % 8 {
                0 => "taken".to_owned(),
                1 => "twice".to_owned(),
                _ => format!("n{i}"),
            };
            let notes = store
                .insert("notes", doc(json!({"_id": id, "tag": i % 3})))
                .await;
            let people = store
                .insert("people", doc(json!({"name": format!("p{}", i % 32)})))
                .await;
            (i, notes, people)
        }));
    }
    let (mut twice, mut people) = (0, 0);
    for task in tasks {
        let (i, notes, person) = task.await.expect("task");
        match i % 8 {
            0 => assert!(
                matches!(notes, Err(Error::DuplicateId { .. })),
                "{i}: {notes:?}"
            ),
            1 => twice += usize::from(notes.is_ok()),
            _ => assert!(notes.is_ok(), "{i}: {notes:?}"),
        }
        match person {
            Ok(_) => people += 1,
            Err(e) => assert!(matches!(e, Error::DuplicateKey { .. }), "{e:?}"),
        }
    }
    assert_eq!(twice, 1, "one of the racers for one _id wins");
    assert_eq!(people, 32, "one per unique name");
    let all = Selector::all();
    // "taken", "twice" once, and the 48 others.
    assert_eq!(b.count("notes", &all).await.expect("count"), 50);
    assert_eq!(b.count("people", &all).await.expect("count"), 32);
    let tag1 = Selector::parse(&json!({"tag": 1})).expect("selector");
    let by_index = a
        .find("notes", &portico_store::Query::new(tag1.clone()))
        .await
        .expect("find");
    assert!(!by_index.is_empty());
    assert!(by_index.iter().all(|d| d.get("tag") == Some(&json!(1))));
    assert_eq!(
        by_index.len() as u64,
        a.count("notes", &tag1).await.expect("count")
    );
}

/// A list page, its total and the documents its relation fields name, in one statement: ids
/// each once, strings only, cut to the first `max_ids` in page order then array order; ids not found
/// are looked up but bring no document; only the page's window is followed; a related
/// collection that does not exist leaves the page alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_read_their_related_documents_in_one_statement() {
    related_reads(0).await;
}

/// The same through the read cache: the page and the related documents kept under their
/// collections' stamps, a change to a related document seen by the next read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_read_their_related_documents_through_the_cache() {
    related_reads(portico_store::postgres::DEFAULT_CACHE_BYTES).await;
}

async fn related_reads(cache_bytes: usize) {
    use portico_store::postgres::PostgresOptions;
    use portico_store::{Query, RelatedField, RelatedRead};
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let mut options = PostgresOptions::default();
    options.cache_bytes = cache_bytes;
    let store: Arc<dyn Store> =
        Arc::new(PostgresStore::open_with(&url, options).await.expect("open"));
    for d in [
        json!({"_id": "p0", "author": "u2", "tags": ["g1", "missing", "g0", 7, "g1", ["g2"]]}),
        json!({"_id": "p1", "author": "u1", "tags": "g2"}),
        json!({"_id": "p2", "author": "u2", "tags": []}),
        json!({"_id": "p3", "author": {"id": "u1"}, "tags": ["g3", "g0"]}),
        json!({"_id": "p4", "author": "nobody"}),
        json!({"_id": "p5", "author": "u3", "note": "a\u{0}b", "tags": ["g4"]}),
    ] {
        store.insert("posts", doc(d)).await.expect("insert post");
    }
    for d in [
        json!({"_id": "u1", "name": "One"}),
        json!({"_id": "u2", "name": "Two", "ownerId": "x"}),
        json!({"_id": "u3", "name": "Three"}),
    ] {
        store.insert("people", doc(d)).await.expect("insert person");
    }
    for i in 0..5 {
        store
            .insert("tags", doc(json!({"_id": format!("g{i}"), "n": i})))
            .await
            .expect("insert tag");
    }
    let follow = [
        RelatedField::new("author", "people", 1000),
        RelatedField::new("tags", "tags", 1000),
    ];
    let page = |skip: u64, limit: u64| Query {
        skip,
        limit: Some(limit),
        ..Query::default()
    };
    let ids = |read: &RelatedRead| {
        let mut ids = read.ids.clone();
        ids.sort();
        ids
    };
    let found = |read: &RelatedRead| {
        let mut ids: Vec<String> = read
            .texts
            .iter()
            .map(|(id, text)| {
                let doc: serde_json::Value = serde_json::from_str(text).expect("stored text");
                assert_eq!(
                    doc["_id"].as_str(),
                    Some(id.as_str()),
                    "a text under its id"
                );
                id.clone()
            })
            .collect();
        ids.sort();
        ids
    };
    let (texts, total, reads) = store
        .page_counted_related("posts", &page(0, 20), &follow)
        .await
        .expect("read");
    assert_eq!(total, 6);
    let page_ids: Vec<serde_json::Value> = texts
        .iter()
        .map(|t| serde_json::from_str::<serde_json::Value>(t).expect("json")["_id"].clone())
        .collect();
    assert_eq!(
        page_ids,
        ["p0", "p1", "p2", "p3", "p4", "p5"].map(|s| json!(s))
    );
    assert_eq!(reads.len(), 2);
    assert_eq!(reads[0].field, "author");
    // p5 holds `\u0000`: it has no `jsonb` copy, so its ids are not looked up (the caller
    // reads them itself); an object is not an id.
    // Through the cache the page's stored texts are read instead, so p5's ids are too.
    let cached = cache_bytes > 0;
    let with_p5 = |mut v: Vec<&'static str>, extra: &'static str| {
        if cached {
            v.push(extra);
            v.sort_unstable();
        }
        v
    };
    assert_eq!(ids(&reads[0]), with_p5(vec!["nobody", "u1", "u2"], "u3"));
    assert_eq!(found(&reads[0]), with_p5(vec!["u1", "u2"], "u3"));
    let two = reads[0]
        .texts
        .iter()
        .find(|(id, _)| id == "u2")
        .map(|(_, text)| serde_json::from_str::<serde_json::Value>(text).expect("stored text"))
        .expect("u2");
    assert_eq!(two.get("ownerId"), Some(&json!("x")), "whole, as stored");
    assert_eq!(reads[1].field, "tags");
    assert_eq!(
        ids(&reads[1]),
        with_p5(vec!["g0", "g1", "g2", "g3", "missing"], "g4")
    );
    assert_eq!(
        found(&reads[1]),
        with_p5(vec!["g0", "g1", "g2", "g3"], "g4")
    );

    // Only the page's window is followed, and `max_ids` cuts in page order.
    let cut = [RelatedField::new("tags", "tags", 2)];
    let (texts, total, reads) = store
        .page_counted_related("posts", &page(1, 3), &cut)
        .await
        .expect("window");
    assert_eq!((texts.len(), total), (3, 6));
    assert_eq!(ids(&reads[0]), ["g2", "g3"]);
    assert_eq!(found(&reads[0]), ["g2", "g3"]);

    // The same statement over and over (PostgreSQL keeps one plan for it after a few runs):
    // each window follows its own documents.
    let authors = [
        vec!["u2"],
        vec!["u1"],
        vec!["u2"],
        vec![],
        vec!["nobody"],
        if cached { vec!["u3"] } else { vec![] },
    ];
    for round in 0..3 {
        for skip in 0..6u64 {
            let (texts, total, reads) = store
                .page_counted_related("posts", &page(skip, 1), &follow)
                .await
                .expect("window of one");
            assert_eq!((texts.len(), total), (1, 6), "round {round}, skip {skip}");
            assert!(texts[0].contains(&format!("\"p{skip}\"")), "{texts:?}");
            assert_eq!(ids(&reads[0]), authors[skip as usize], "skip {skip}");
        }
    }

    // A related document changed (and one removed) is seen by the very next read.
    store
        .update(
            "people",
            &Selector::parse(&json!({"_id": "u1"})).expect("selector"),
            &Update::parse(&json!({"$set": {"name": "Uno"}})).expect("update"),
            UpdateOptions::default(),
        )
        .await
        .expect("update person");
    store
        .remove(
            "tags",
            &Selector::parse(&json!({"_id": "g0"})).expect("selector"),
        )
        .await
        .expect("remove tag");
    let (_, _, reads) = store
        .page_counted_related("posts", &page(0, 20), &follow)
        .await
        .expect("after the writes");
    let one = reads[0]
        .texts
        .iter()
        .find(|(id, _)| id == "u1")
        .map(|(_, text)| serde_json::from_str::<serde_json::Value>(text).expect("stored text"))
        .expect("u1");
    assert_eq!(one.get("name"), Some(&json!("Uno")));
    assert_eq!(found(&reads[1]), with_p5(vec!["g1", "g2", "g3"], "g4"));

    // Past the end: the total, no document, nothing looked up.
    let (texts, total, reads) = store
        .page_counted_related("posts", &page(10, 5), &follow)
        .await
        .expect("past the end");
    assert_eq!((texts.len(), total), (0, 6));
    assert!(reads.iter().all(|r| r.ids.is_empty() && r.texts.is_empty()));

    // A related collection that does not exist: the page alone, nothing read along.
    let nowhere = [RelatedField::new("author", "nobody-here", 1000)];
    let (texts, total, reads) = store
        .page_counted_related("posts", &page(0, 2), &nowhere)
        .await
        .expect("missing collection");
    assert_eq!((texts.len(), total, reads.len()), (2, 6, 0));
    // A page of a collection that does not exist.
    let (texts, total, reads) = store
        .page_counted_related("none", &page(0, 2), &follow)
        .await
        .expect("missing page collection");
    assert_eq!((texts.len(), total, reads.len()), (0, 0, 0));
}

/// A fresh database and one store on it, with the store's own type (for
/// [`portico_store::postgres::testing::sorted_index_problems`]).
async fn fresh_store() -> (String, PostgresStore) {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let store = PostgresStore::open(&url).await.expect("open");
    (url, store)
}

fn spec(v: serde_json::Value) -> IndexSpec {
    IndexSpec::parse(&v).unwrap_or_else(|e| panic!("index {v}: {e}"))
}

fn sorted_query(selector: serde_json::Value, sort: &str, skip: u64, limit: u64) -> Query {
    Query {
        selector: Selector::parse(&selector).expect("selector"),
        sort: Some(Sort::parse_list(sort).expect("sort")),
        skip,
        limit: Some(limit),
        projection: None,
    }
}

fn page_ids(texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .map(|t| {
            let v: serde_json::Value = serde_json::from_str(t).expect("JSON");
            v["_id"].as_str().expect("_id").to_owned()
        })
        .collect()
}

async fn assert_index_consistent(store: &PostgresStore, collection: &str, spec: &IndexSpec) {
    let problems = sorted_index_problems(store, collection, spec)
        .await
        .expect("check the index");
    assert!(
        problems.is_empty(),
        "{collection} {spec}: {} problems, first {:?}",
        problems.len(),
        &problems[..problems.len().min(5)]
    );
}

/// Each instance keeps the sorted indexes it last read and plans on them without asking the
/// catalog: an index made multikey, dropped or made again by another instance is seen by the
/// next read, whose answer never changes (a document with two entries listed once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_kept_between_reads_follow_changes_made_by_another_instance() {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    // No read cache: every page is read through the index.
    let mut options = PostgresOptions::default();
    options.cache_bytes = 0;
    let first = PostgresStore::open_with(&url, options.clone())
        .await
        .expect("open first");
    let second = PostgresStore::open_with(&url, options)
        .await
        .expect("open second");
    let score = spec(json!("-score"));
    first
        .ensure_sorted_index("items", &score)
        .await
        .expect("index");
    for (id, n) in [("a", 3), ("b", 1), ("c", 2)] {
        first
            .insert("items", doc(json!({"_id": id, "score": n, "city": "Oslo"})))
            .await
            .expect("insert");
    }
    let query = sorted_query(json!({}), "-score", 0, 10);
    let filtered = sorted_query(json!({"score": {"$gte": 1}}), "-score", 0, 10);
    let selector = Selector::parse(&json!({"score": {"$gte": 1}})).expect("selector");
    let read = |store: &PostgresStore| {
        let (query, filtered, selector) = (query.clone(), filtered.clone(), selector.clone());
        let store = store.clone();
        async move {
            let (texts, total) = store.page_counted("items", &query).await.expect("page");
            let found = store.find("items", &filtered).await.expect("find");
            let counted = store.count("items", &selector).await.expect("count");
            (page_ids(&texts), total, common::ids(&found), counted)
        }
    };
    let abc = || -> Vec<String> { vec!["a".into(), "c".into(), "b".into()] };
    assert_eq!(read(&first).await, (abc(), 3, abc(), 3));
    // The other instance's write makes the index multikey: "d" has two entries and is listed
    // once, at its highest score, and counted once.
    second
        .insert("items", doc(json!({"_id": "d", "score": [0, 5]})))
        .await
        .expect("insert");
    let dabc = || -> Vec<String> { vec!["d".into(), "a".into(), "c".into(), "b".into()] };
    assert_eq!(read(&first).await, (dabc(), 4, dabc(), 4));
    // Dropped by the other instance: the reads scan again, with the same answers.
    assert!(
        second
            .drop_sorted_index("items", &score)
            .await
            .expect("drop")
    );
    assert_eq!(read(&first).await, (dabc(), 4, dabc(), 4));
    // Made again, and a second index beside it: served again, same answers.
    second
        .ensure_sorted_index("items", &score)
        .await
        .expect("index");
    second
        .ensure_sorted_index("items", &spec(json!(["city", "-score"])))
        .await
        .expect("index");
    assert_eq!(read(&first).await, (dabc(), 4, dabc(), 4));
    assert_index_consistent(&first, "items", &score).await;
}

/// A sort the index serves is not capped by the sorted window, reads the page in the index's
/// order and gives the same page as the store's order; a covered total is a count of entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_index_serves_sorts_past_the_window_and_covered_totals() {
    let (_, store) = fresh_store().await;
    const N: usize = 12_345;
    let cities = ["Oslo", "Rome", "Lima"];
    let docs: Vec<(String, i64, &str)> = (0..N)
        .map(|i| {
            let score = i64::try_from((i * 7919) % 1000).expect("score");
            (format!("d{i:05}"), score, cities[i % 3])
        })
        .collect();
    store
        .insert_many(
            "scores",
            docs.iter()
                .map(|(id, score, city)| doc(json!({"_id": id, "score": score, "city": city})))
                .collect(),
        )
        .await
        .expect("insert");
    let past = sorted_query(json!({}), "-score", 12_000, 25);
    assert!(
        matches!(
            store.find("scores", &past).await,
            Err(Error::InvalidSort(_))
        ),
        "no index: the window is capped"
    );
    store
        .ensure_sorted_index("scores", &spec(json!("-score")))
        .await
        .expect("index");
    let mut by_score: Vec<&(String, i64, &str)> = docs.iter().collect();
    by_score.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let want: Vec<String> = by_score[12_000..12_025]
        .iter()
        .map(|d| d.0.clone())
        .collect();
    let found = store
        .find("scores", &past)
        .await
        .expect("served by the index");
    assert_eq!(common::ids(&found), want);
    let (texts, total) = store
        .page_counted("scores", &past)
        .await
        .expect("list page");
    assert_eq!((page_ids(&texts), total), (want, N as u64));

    // Equality on the first field, the sort on the second; totals counted in the index.
    store
        .ensure_sorted_index("scores", &spec(json!(["city", "-score"])))
        .await
        .expect("index");
    let rome: Vec<&&(String, i64, &str)> = by_score.iter().filter(|d| d.2 == "Rome").collect();
    let q = sorted_query(json!({"city": "Rome"}), "-score", 4_000, 10);
    let (texts, total) = store.page_counted("scores", &q).await.expect("page");
    let want: Vec<String> = rome[4_000..4_010].iter().map(|d| d.0.clone()).collect();
    assert_eq!((page_ids(&texts), total), (want, rome.len() as u64));
    let high = Selector::parse(&json!({"city": "Rome", "score": {"$gte": 500, "$lt": 900}}))
        .expect("selector");
    let want = rome.iter().filter(|d| (500..900).contains(&d.1)).count();
    assert_eq!(
        store.count("scores", &high).await.expect("count"),
        want as u64
    );
    assert_eq!(
        store
            .sorted_indexes("scores")
            .await
            .expect("list")
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec!["-score".to_string(), "city,-score".to_string()]
    );
    assert!(
        store
            .drop_sorted_index("scores", &spec(json!("-score")))
            .await
            .expect("drop")
    );
    assert!(
        matches!(
            store.find("scores", &past).await,
            Err(Error::InvalidSort(_))
        ),
        "the index dropped: capped again"
    );
}

/// Documents with several values at an indexed path (multikey) are found, sorted and counted
/// once, whether the index was made before them (the writes mark it multikey) or after (the
/// fill does); pages and totals are the memory store's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multikey_documents_are_counted_once() {
    let (_, store) = fresh_store().await;
    let reference = portico_store::memory::MemoryStore::new();
    let letters = ["a", "b", "c", "d", "e"];
    let docs: Vec<portico_store::Document> = (0..400)
        .map(|i: usize| {
            let tags: Vec<&str> = letters
                .iter()
                .enumerate()
                .filter(|(k, _)| (i >> k) & 1 == 1 || (i + k).is_multiple_of(7))
                .map(|(_, l)| *l)
                .collect();
            doc(json!({"_id": format!("m{i:03}"), "tags": tags, "n": i % 9}))
        })
        .collect();
    for (collection, before) in [("early", true), ("late", false)] {
        if before {
            for s in [json!("tags"), json!(["n", "-tags"])] {
                store
                    .ensure_sorted_index(collection, &spec(s))
                    .await
                    .expect("index");
            }
        }
        // Singly (group commits) and in one transaction.
        for d in &docs[..100] {
            store.insert(collection, d.clone()).await.expect("insert");
            reference.insert(collection, d.clone()).await.expect("ref");
        }
        store
            .insert_many(collection, docs[100..].to_vec())
            .await
            .expect("insert many");
        reference
            .insert_many(collection, docs[100..].to_vec())
            .await
            .expect("ref");
        if !before {
            for s in [json!("tags"), json!(["n", "-tags"])] {
                store
                    .ensure_sorted_index(collection, &spec(s))
                    .await
                    .expect("index");
            }
        }
        for s in [json!("tags"), json!(["n", "-tags"])] {
            assert_index_consistent(&store, collection, &spec(s)).await;
        }
        let queries = [
            sorted_query(json!({}), "tags", 0, 50),
            sorted_query(json!({}), "-tags", 120, 50),
            sorted_query(json!({"tags": "c"}), "tags", 10, 30),
            sorted_query(json!({"tags": {"$in": ["a", "e"]}}), "_id", 5, 500),
            sorted_query(json!({"tags": {"$gte": "b", "$lt": "d"}}), "-tags", 0, 500),
            sorted_query(json!({"tags": {"$gt": "c"}}), "tags", 3, 40),
            sorted_query(json!({"n": 4}), "-tags", 0, 100),
            sorted_query(json!({"n": 4, "tags": "b"}), "_id", 0, 100),
        ];
        for q in &queries {
            let want = reference.find(collection, q).await.expect("ref find");
            let want_total = reference.count(collection, &q.selector).await.expect("ref");
            let found = store.find(collection, q).await.expect("find");
            assert_eq!(
                common::ids(&found),
                common::ids(&want),
                "{collection}: {q:?}"
            );
            let (texts, total) = store.page_counted(collection, q).await.expect("page");
            assert_eq!(page_ids(&texts), common::ids(&want), "{collection}: {q:?}");
            assert_eq!(total, want_total, "{collection}: total of {q:?}");
            let n = store.count(collection, &q.selector).await.expect("count");
            assert_eq!(n, want_total, "{collection}: count of {q:?}");
        }
    }
}

/// Every kind of write keeps the sorted indexes equal to the entries of the stored documents;
/// a document with too many entries is refused and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_keep_sorted_indexes_consistent() {
    let (_, store) = fresh_store().await;
    let c = "kept";
    let specs = [
        spec(json!("score")),
        spec(json!(["tags", "-score"])),
        spec(json!(["a.b", "name"])),
    ];
    for s in &specs {
        store.ensure_sorted_index(c, s).await.expect("index");
    }
    let check = |when: &'static str| {
        let store = &store;
        let specs = &specs;
        async move {
            for s in specs {
                let problems = sorted_index_problems(store, c, s).await.expect("check");
                assert!(problems.is_empty(), "{when}: {s}: {problems:?}");
            }
        }
    };
    // Single inserts at once (a group commit), then many in one transaction.
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let tags: Vec<i64> = (0..(i % 4)).collect();
            store
                .insert(
                    c,
                    doc(
                        json!({"_id": format!("g{i:02}"), "score": i % 7, "tags": tags,
                               "a": [{"b": i % 3}, {"b": "x"}], "name": format!("n{i}")}),
                    ),
                )
                .await
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("insert");
    }
    check("group inserts").await;
    store
        .insert_many(
            c,
            (0..300)
                .map(|i| {
                    doc(json!({"_id": format!("m{i:03}"), "score": (i * 13) % 50,
                               "tags": [i % 5, "t"], "a": {"b": i % 4}}))
                })
                .collect(),
        )
        .await
        .expect("insert many");
    check("insert many").await;
    let set = |v: serde_json::Value| Update::parse(&v).expect("update");
    store
        .update(
            c,
            &Selector::parse(&json!({"score": {"$lt": 20}})).expect("selector"),
            &set(json!({"$set": {"score": 99}, "$push": {"tags": "new"}})),
            UpdateOptions::new(true, false),
        )
        .await
        .expect("update many");
    store
        .update(
            c,
            &Selector::parse(&json!({"_id": "g03"})).expect("selector"),
            &set(json!({"$unset": {"tags": ""}, "$set": {"a": {"b": [1, 2, 3]}}})),
            UpdateOptions::new(false, false),
        )
        .await
        .expect("update one");
    store
        .update(
            c,
            &Selector::parse(&json!({"_id": "up"})).expect("selector"),
            &set(json!({"$set": {"score": 5, "tags": ["u", "v"]}})),
            UpdateOptions::new(false, true),
        )
        .await
        .expect("upsert");
    check("updates").await;
    store
        .remove(c, &Selector::parse(&json!({"tags": 3})).expect("selector"))
        .await
        .expect("remove");
    check("remove").await;
    store
        .batch(vec![
            BatchOp::Insert {
                collection: c.into(),
                doc: doc(json!({"_id": "b1", "score": 1, "tags": ["b"]})),
            },
            BatchOp::Update {
                collection: c.into(),
                selector: Selector::parse(&json!({"_id": "m001"})).expect("selector"),
                update: set(json!({"$set": {"tags": ["z", "y", "x"], "score": -1}})),
            },
            BatchOp::Remove {
                collection: c.into(),
                selector: Selector::parse(&json!({"_id": "m002"})).expect("selector"),
            },
        ])
        .await
        .expect("batch");
    check("batch").await;
    // Too many entries: refused alone, in every write path, and nothing of it is kept.
    let big: Vec<i64> = (0..40).collect();
    let wide = doc(json!({"_id": "wide", "tags": big, "a": [{"b": big}], "name": "w"}));
    let product = [spec(json!(["tags", "a.b", "name"]))];
    store
        .ensure_sorted_index(c, &product[0])
        .await
        .expect("index of three fields");
    for result in [
        store.insert(c, wide.clone()).await.map(drop),
        store.insert_many(c, vec![wide.clone()]).await.map(drop),
        store
            .update(
                c,
                &Selector::parse(&json!({"_id": "m010"})).expect("selector"),
                &set(json!({"$set": {"tags": big, "a": {"b": big}, "name": "w"}})),
                UpdateOptions::new(false, false),
            )
            .await
            .map(drop),
    ] {
        assert!(
            matches!(result, Err(Error::InvalidDocument(_))),
            "{result:?}"
        );
    }
    assert!(store.get(c, "wide").await.expect("get").is_none());
    check("refusals").await;
    assert_index_consistent(&store, c, &product[0]).await;
    // A stored document with too many entries: the index is refused and not kept.
    store.drop_sorted_index(c, &product[0]).await.expect("drop");
    store
        .insert(c, wide)
        .await
        .expect("insert without that index");
    assert!(matches!(
        store.ensure_sorted_index(c, &product[0]).await,
        Err(Error::InvalidDocument(_))
    ));
    assert_eq!(
        store.sorted_indexes(c).await.expect("list").len(),
        specs.len()
    );
    // Everything removed, then written again.
    store.remove(c, &Selector::all()).await.expect("remove all");
    check("remove all").await;
    store
        .insert(c, doc(json!({"_id": "again", "score": 3, "tags": [1, 2]})))
        .await
        .expect("insert");
    check("after remove all").await;
}

/// Tiny deterministic random numbers for the writer below.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// An index made while another instance inserts, updates and removes documents (the fill runs
/// in batches without holding writers back): afterwards it holds exactly the entries of the
/// stored documents, none lost, none stale. The same index asked for by both instances at once
/// is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_made_while_another_instance_writes_keeps_every_write() {
    let (url, a) = fresh_store().await;
    let b = PostgresStore::open(&url).await.expect("open b");
    let c = "busy";
    const SEED: u64 = 6_000;
    a.insert_many(
        c,
        (0..SEED)
            .map(|i| doc(json!({"_id": format!("s{i:05}"), "score": i % 97, "tags": [i % 5]})))
            .collect(),
    )
    .await
    .expect("seed");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut writers = Vec::new();
    for w in 0..2u64 {
        let store = b.clone();
        let stop = Arc::clone(&stop);
        let writes = Arc::clone(&writes);
        writers.push(tokio::spawn(async move {
            let mut rng = Lcg(w + 1);
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let id = format!("s{:05}", rng.below(SEED + 500));
                let by_id = Selector::parse(&json!({"_id": id})).expect("selector");
                let result = match rng.below(4) {
                    0 => store
                        .insert(
                            c,
                            doc(json!({"_id": format!("w{w}-{n}"), "score": rng.below(97),
                                       "tags": [rng.below(5), rng.below(5)]})),
                        )
                        .await
                        .map(drop),
                    1 => store.remove(c, &by_id).await.map(drop),
                    _ => store
                        .update(
                            c,
                            &by_id,
                            &Update::parse(&json!({"$set": {
                                "score": rng.below(97),
                                "tags": [rng.below(5), rng.below(5), rng.below(5)]
                            }}))
                            .expect("update"),
                            UpdateOptions::new(false, true),
                        )
                        .await
                        .map(drop),
                };
                result.expect("write while the index is made");
                n += 1;
                writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
    }
    // Let the writers start (and measure their pace alone), then make the indexes from both
    // instances at once.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let alone = writes.load(std::sync::atomic::Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let alone = writes.load(std::sync::atomic::Ordering::Relaxed) - alone;
    let specs = [spec(json!(["tags", "-score"])), spec(json!("score"))];
    let before = writes.load(std::sync::atomic::Ordering::Relaxed);
    let started = Instant::now();
    for s in &specs {
        let (on_a, on_b) = tokio::join!(a.ensure_sorted_index(c, s), b.ensure_sorted_index(c, s));
        on_a.expect("index on a");
        on_b.expect("index on b");
    }
    let made_in = started.elapsed();
    let during = writes.load(std::sync::atomic::Ordering::Relaxed) - before;
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    assert!(during > 0, "no write ran while the indexes were made");
    eprintln!(
        "indexes made in {made_in:?} with {during} writes meanwhile ({alone} in 500 ms before)"
    );
    for s in &specs {
        assert_index_consistent(&a, c, s).await;
    }
    assert_eq!(a.sorted_indexes(c).await.expect("list").len(), 2);
    // Reads through the indexes agree with the documents.
    let all = common::all_docs(&a, c).await;
    let want = all
        .iter()
        .filter(|d| d.get("score").and_then(serde_json::Value::as_u64) == Some(42))
        .count();
    let q = Selector::parse(&json!({"score": 42})).expect("selector");
    assert_eq!(a.count(c, &q).await.expect("count"), want as u64);
}

/// Not a check: how long a sorted page deep in a collection and a filtered count take without
/// and with a sorted index (`cargo test ... -- --ignored --nocapture measure_sorted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement"]
async fn measure_sorted_index_reads() {
    let (_, store) = fresh_store().await;
    const N: usize = 50_000;
    let cities = ["Oslo", "Rome", "Lima", "Kyiv", "Pune"];
    store
        .insert_many(
            "m",
            (0..N)
                .map(|i| {
                    doc(
                        json!({"_id": format!("d{i:06}"), "score": (i * 7919) % 100_000,
                               "city": cities[i % 5], "pad": "x".repeat(200)}),
                    )
                })
                .collect(),
        )
        .await
        .expect("insert");
    let deep = sorted_query(json!({}), "-score", 9_000, 20);
    let rome = sorted_query(json!({"city": "Rome"}), "-score", 0, 20);
    let rome_count = Selector::parse(&json!({"city": "Rome"})).expect("selector");
    async fn median(mut f: impl AsyncFnMut()) -> Duration {
        let mut times = Vec::new();
        for _ in 0..7 {
            let start = Instant::now();
            f().await;
            times.push(start.elapsed());
        }
        times.sort();
        times[3]
    }
    for (label, with) in [("without", false), ("with", true)] {
        if with {
            for s in [json!("-score"), json!(["city", "-score"])] {
                let start = Instant::now();
                store
                    .ensure_sorted_index("m", &spec(s.clone()))
                    .await
                    .expect("index");
                eprintln!("made {s} over {N} documents in {:?}", start.elapsed());
            }
        }
        let page = median(async || {
            store.page_counted("m", &deep).await.expect("deep");
        })
        .await;
        let filtered = median(async || {
            store.page_counted("m", &rome).await.expect("rome");
        })
        .await;
        let count = median(async || {
            store.count("m", &rome_count).await.expect("count");
        })
        .await;
        eprintln!(
            "{label} indexes: sorted page at 9,000 with total {page:?}; \
             city page with total {filtered:?}; city count {count:?}"
        );
    }
}

/// A list pinning a compound index's first field by equality takes its total from the kept
/// prefix counts, which every instance's writes keep (grouped inserts, batches, updates that
/// move a document between prefixes, removals); a database whose index lost its counts (as
/// one made before them) is counted again by the next store that opens it, and is counted
/// entry by entry until then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn totals_of_lists_pinning_a_prefix_are_kept_counts() {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let db = url.rsplit('/').next().unwrap_or_default().to_owned();
    let mut options = PostgresOptions::default();
    options.cache_bytes = 0;
    let first = PostgresStore::open_with(&url, options.clone())
        .await
        .expect("open first");
    let second = PostgresStore::open_with(&url, options.clone())
        .await
        .expect("open second");
    let by_city = spec(json!(["city", "-score"]));
    let by_tag = spec(json!(["tags", "owner", "-score"]));
    first
        .ensure_sorted_index("items", &by_city)
        .await
        .expect("index");
    let cities = ["Oslo", "Rome", "Bergen"];
    let mut tasks = Vec::new();
    for i in 0..48usize {
        let store = if i % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        tasks.push(tokio::spawn(async move {
            let tags = if i % 4 == 0 {
                json!(["a", "b"])
            } else {
                json!(["a"])
            };
            let d = json!({"_id": format!("d{i:02}"), "city": cities[i % 3], "score": i,
                "owner": if i % 2 == 0 { "ann" } else { "bob" }, "tags": tags});
            store.insert("items", doc(d)).await
        }));
    }
    for task in tasks {
        task.await.expect("task").expect("insert");
    }
    let more: Vec<Document> = (0..20)
        .map(|i| {
            doc(json!({"_id": format!("m{i:02}"), "city": [cities[i % 3], "Oslo"], "score": i}))
        })
        .collect();
    second
        .insert_many("items", more)
        .await
        .expect("insert many");
    // Made by the other instance after the documents: counted when it becomes ready.
    second
        .ensure_sorted_index("items", &by_tag)
        .await
        .expect("index");
    let moved = Update::parse(&json!({"$set": {"city": "Rome"}})).expect("update");
    let oslo = Selector::parse(&json!({"city": "Oslo"})).expect("selector");
    first
        .update("items", &oslo, &moved, UpdateOptions::new(false, false))
        .await
        .expect("update");
    let pushed = Update::parse(&json!({"$push": {"tags": "c"}})).expect("update");
    let bobs = Selector::parse(&json!({"owner": "bob"})).expect("selector");
    second
        .update("items", &bobs, &pushed, UpdateOptions::new(true, false))
        .await
        .expect("update");
    first
        .batch(vec![
            BatchOp::Insert {
                collection: "items".into(),
                doc: doc(json!({"_id": "b1", "city": "Oslo", "tags": ["c"], "owner": "bob"})),
            },
            BatchOp::Update {
                collection: "items".into(),
                selector: Selector::parse(&json!({"_id": "d03"})).expect("selector"),
                update: Update::parse(&json!({"$set": {"city": "Tromsø"}})).expect("update"),
            },
            BatchOp::Remove {
                collection: "items".into(),
                selector: Selector::parse(&json!({"_id": "d06"})).expect("selector"),
            },
        ])
        .await
        .expect("batch");
    second
        .remove(
            "items",
            &Selector::parse(&json!({"score": {"$lt": 5}})).expect("selector"),
        )
        .await
        .expect("remove");
    assert_index_consistent(&first, "items", &by_city).await;
    assert_index_consistent(&first, "items", &by_tag).await;

    let lists = [
        json!({"city": "Oslo"}),
        json!({"city": "Rome"}),
        json!({"city": "Paris"}),
        json!({"tags": "c", "owner": "bob"}),
        json!({"tags": "a"}),
    ];
    let lists = &lists;
    let totals = |store: PostgresStore| async move {
        let mut out = Vec::new();
        for list in lists {
            let selector = Selector::parse(list).expect("selector");
            let all = Query {
                selector: selector.clone(),
                ..Query::default()
            };
            let scanned = store.find("items", &all).await.expect("find").len() as u64;
            let query = sorted_query(list.clone(), "-score", 0, 3);
            let (_, total) = store.page_counted("items", &query).await.expect("page");
            let counted = store.count("items", &selector).await.expect("count");
            out.push((scanned, total, counted));
        }
        out
    };
    let before = totals(first.clone()).await;
    for (scanned, total, counted) in &before {
        assert_eq!((total, counted), (scanned, scanned));
    }
    // The totals are the kept counts: multiplied in the table, they are multiplied.
    let sql = |q: &'static str| {
        let db = db.clone();
        async move {
            tokio::task::spawn_blocking(move || cluster().sql(&db, q))
                .await
                .expect("task")
                .expect("sql");
        }
    };
    sql("UPDATE portico_prefix_counts SET n = n * 1000").await;
    let scaled = totals(second.clone()).await;
    for (i, ((scanned, _, _), (_, total, counted))) in before.iter().zip(&scaled).enumerate() {
        assert_eq!(*counted, scanned * 1000, "count of {}", lists[i]);
        // The last list's sort does not follow its index after the prefix: its page reads
        // every match, and counts them as it goes.
        let page_total = if i + 1 < lists.len() {
            scanned * 1000
        } else {
            *scanned
        };
        assert_eq!(*total, page_total, "total of {}", lists[i]);
    }
    // Without them (a database from before the counts): counted entry by entry, then kept
    // again once a store opens the database.
    sql("DELETE FROM portico_prefix_counts").await;
    assert_eq!(totals(first.clone()).await, before);
    let third = PostgresStore::open_with(&url, options)
        .await
        .expect("open third");
    assert_index_consistent(&third, "items", &by_city).await;
    assert_index_consistent(&third, "items", &by_tag).await;
    assert_eq!(totals(third).await, before);
}

/// The group commit's notification, which moves the change stamp, runs inside the group's
/// transaction even on a connection that has not prepared its statement yet (the first insert
/// of a fresh store): the document's row and the stamp's row were written by one transaction.
/// Were the statement prepared while the pipelined `COMMIT` went out, it would run after it,
/// in a transaction of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commit_moves_the_stamp_inside_its_own_transaction() {
    let url = tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database");
    let a = PostgresStore::open(&url).await.expect("open");
    a.insert("notes", doc(json!({"_id": "n"})))
        .await
        .expect("insert");
    let db = url.rsplit('/').next().unwrap_or_default().to_owned();
    // The collection's table is `c_` and the name in hex.
    let sql = "SELECT (SELECT xmin::text FROM \"c_6e6f746573\" WHERE id = 'n') \
               = (SELECT xmin::text FROM portico_stamps WHERE name = 'notes' AND v > 0)";
    let same = tokio::task::spawn_blocking(move || cluster().query(&db, sql))
        .await
        .expect("task")
        .expect("query");
    assert_eq!(
        same, "t",
        "one transaction wrote the document and moved the stamp"
    );
}
