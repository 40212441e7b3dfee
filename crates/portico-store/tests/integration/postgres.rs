//! What only PostgreSQL has: several instances (stores) on one database, and a database server
//! that refuses us or goes away and comes back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use portico_store::postgres::testing::TestCluster;
use portico_store::postgres::{PostgresOptions, PostgresStore, StampPacing};
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
        .find_json_counted_related("posts", &page(0, 20), &follow)
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
        .find_json_counted_related("posts", &page(1, 3), &cut)
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
                .find_json_counted_related("posts", &page(skip, 1), &follow)
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
        .find_json_counted_related("posts", &page(0, 20), &follow)
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
        .find_json_counted_related("posts", &page(10, 5), &follow)
        .await
        .expect("past the end");
    assert_eq!((texts.len(), total), (0, 6));
    assert!(reads.iter().all(|r| r.ids.is_empty() && r.texts.is_empty()));

    // A related collection that does not exist: the page alone, nothing read along.
    let nowhere = [RelatedField::new("author", "nobody-here", 1000)];
    let (texts, total, reads) = store
        .find_json_counted_related("posts", &page(0, 2), &nowhere)
        .await
        .expect("missing collection");
    assert_eq!((texts.len(), total, reads.len()), (2, 6, 0));
    // A page of a collection that does not exist.
    let (texts, total, reads) = store
        .find_json_counted_related("none", &page(0, 2), &follow)
        .await
        .expect("missing page collection");
    assert_eq!((texts.len(), total, reads.len()), (0, 0, 0));
}
