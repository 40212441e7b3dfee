//! PostgreSQL's read cache across instances: a write committed on one instance before a read
//! begins on another is never hidden by the other's cache, and the cache stays within its
//! memory budget. Real stores on the test cluster, two (or three) on one database.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use portico_store::postgres::{DEFAULT_CACHE_BYTES, PostgresOptions, PostgresStore};
use portico_store::{BatchOp, Query, Selector, Store, Update, UpdateOptions};
use serde_json::{Value, json};

use crate::common::StoredTexts;
use crate::common::{cluster, doc};

async fn database() -> String {
    tokio::task::spawn_blocking(|| cluster().create_database())
        .await
        .expect("task")
        .expect("create database")
}

/// A store on `url` with a read cache of `bytes`.
async fn open(url: &str, bytes: usize) -> PostgresStore {
    let mut options = PostgresOptions::default();
    options.cache_bytes = bytes;
    PostgresStore::open_with(url, options).await.expect("open")
}

fn page() -> Query {
    Query {
        limit: Some(20),
        ..Query::default()
    }
}

/// The lists the cache keeps besides [`page`]: sorted through an index, filtered, both.
fn lists() -> Vec<Query> {
    let sorted = |selector: Value, sort: &str| Query {
        selector: Selector::parse(&selector).expect("selector"),
        sort: Some(portico_store::Sort::parse_list(sort).expect("sort")),
        limit: Some(5),
        ..Query::default()
    };
    vec![
        page(),
        sorted(json!({}), "-v"),
        sorted(json!({"v": {"$gte": 5}}), "-v"),
        sorted(json!({"_id": {"$in": ["n0", "n1", "x1"]}}), "v"),
    ]
}

/// `v` of a stored text.
fn v_of(text: Option<&str>) -> Option<i64> {
    let value: Value = serde_json::from_str(text?).expect("stored JSON");
    value.get("v").and_then(Value::as_i64)
}

/// Every kind of write on instance A is seen by B's very next get and list (with its total),
/// though B served both from its cache just before; a third store without a cache is the
/// reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_instance_is_never_hidden_by_the_others_cache() {
    let url = database().await;
    let a = open(&url, DEFAULT_CACHE_BYTES).await;
    let b = PostgresStore::open(&url).await.expect("open b");
    let reference = open(&url, 0).await;
    assert_eq!(b.cache_status().budget, DEFAULT_CACHE_BYTES);
    for n in 0..3 {
        a.insert("notes", doc(json!({"_id": format!("n{n}"), "v": n})))
            .await
            .expect("insert");
    }
    let by_v = portico_store::IndexSpec::parse(&json!("-v")).expect("spec");
    a.ensure_sorted_index("notes", &by_v).await.expect("index");
    let inc = Update::parse(&json!({"$inc": {"v": 10}})).expect("update");
    let by_id = Selector::by_id("n0");
    for round in 0..30 {
        // B answers twice: the second answer comes from its cache.
        let first = b.get_text("notes", "n0").await.expect("get");
        let listed = b.page_counted("notes", &page()).await.expect("list");
        let mut others = Vec::new();
        for list in lists() {
            others.push(b.page_counted("notes", &list).await.expect("list"));
        }
        let hits = b.cache_status().hits;
        assert_eq!(b.get_text("notes", "n0").await.expect("get"), first);
        assert_eq!(
            b.page_counted("notes", &page()).await.expect("list"),
            listed
        );
        for (list, before) in lists().iter().zip(&others) {
            assert_eq!(&b.page_counted("notes", list).await.expect("list"), before);
        }
        assert_eq!(
            b.cache_status().hits,
            hits + 2 + lists().len() as u64,
            "round {round}: cached"
        );
        match round % 6 {
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
                let op = BatchOp::Update {
                    collection: "notes".into(),
                    selector: by_id.clone(),
                    update: inc.clone(),
                };
                a.batch(vec![op]).await.expect("batch");
            }
            4 => {
                a.insert_many("notes", vec![doc(json!({"v": round})), doc(json!({}))])
                    .await
                    .expect("insert many");
            }
            _ => {
                let replace = Update::parse(&json!({"v": round})).expect("replacement");
                a.update("notes", &by_id, &replace, UpdateOptions::default())
                    .await
                    .expect("replace");
            }
        }
        let got = b.get_text("notes", "n0").await.expect("get");
        assert_eq!(
            got,
            reference.get_text("notes", "n0").await.expect("get"),
            "round {round}: B's get after A's write"
        );
        let (texts, total) = b.page_counted("notes", &page()).await.expect("list");
        let (want, want_total) = reference
            .page_counted("notes", &page())
            .await
            .expect("list");
        assert_eq!((&texts, total), (&want, want_total), "round {round}: list");
        assert_eq!(
            b.page_texts("notes", &page()).await.expect("page"),
            want,
            "round {round}: page"
        );
        for list in lists() {
            assert_eq!(
                b.page_counted("notes", &list).await.expect("list"),
                reference.page_counted("notes", &list).await.expect("list"),
                "round {round}: {list:?}"
            );
        }
        assert_ne!(
            (got, texts, total),
            (first, listed.0, listed.1),
            "round {round}"
        );
    }
    // A dropped collection is not served from the cache either.
    a.drop_collection("notes").await.expect("drop");
    assert_eq!(b.get_text("notes", "n0").await.expect("get"), None);
    assert_eq!(
        b.page_counted("notes", &page()).await.expect("list"),
        (Vec::new(), 0)
    );
    assert_eq!(reference.cache_status().entries, 0, "no budget, no cache");
}

/// Readers on B race a writer on A: each read begins after the writer recorded its last
/// acknowledged write, and must hold it (the document's `v` and the total never behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_readers_on_one_instance_never_miss_an_acknowledged_write_of_the_other() {
    let url = database().await;
    let a = open(&url, DEFAULT_CACHE_BYTES).await;
    let b = Arc::new(open(&url, DEFAULT_CACHE_BYTES).await);
    a.insert("notes", doc(json!({"_id": "d", "v": 0})))
        .await
        .expect("insert");
    // The last acknowledged `v`, and the last acknowledged total.
    let acked = Arc::new(AtomicI64::new(0));
    let total = Arc::new(AtomicI64::new(1));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (b, acked, total) = (Arc::clone(&b), Arc::clone(&acked), Arc::clone(&total));
            tokio::spawn(async move {
                let mut reads = 0;
                while acked.load(Ordering::Acquire) < 60 {
                    let (v, n) = (acked.load(Ordering::Acquire), total.load(Ordering::Acquire));
                    let got = b.get_text("notes", "d").await.expect("get");
                    let seen = v_of(got.as_deref()).expect("v");
                    assert!(seen >= v, "read {seen} after {v} was acknowledged");
                    let (_, listed) = b.page_counted("notes", &page()).await.expect("list");
                    assert!(
                        listed >= u64::try_from(n).expect("total"),
                        "total {listed} < {n}"
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let set = |v: i64| Update::parse(&json!({"$set": {"v": v}})).expect("update");
    for v in 1..=60 {
        a.update(
            "notes",
            &Selector::by_id("d"),
            &set(v),
            UpdateOptions::default(),
        )
        .await
        .expect("update");
        acked.store(v, Ordering::Release);
        if v % 3 == 0 {
            a.insert("notes", doc(json!({}))).await.expect("insert");
            total.fetch_add(1, Ordering::AcqRel);
        }
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let mut reads = 0;
    for reader in readers {
        reads += reader.await.expect("reader");
    }
    assert!(reads >= 60, "readers ran along ({reads} reads)");
    let status = b.cache_status();
    assert!(status.hits > 0, "the cache served some reads: {status:?}");
}

/// The cache keeps within its budget, skips large documents, caches nothing while the
/// stamps cannot be read, and a budget of 0 caches nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_stays_within_its_budget_and_skips_large_documents() {
    let url = database().await;
    let budget = 64 * 1024;
    let store = open(&url, budget).await;
    let pad = "x".repeat(300);
    let docs = (0..1000)
        .map(|n| doc(json!({"_id": format!("d{n:04}"), "pad": pad})))
        .collect();
    store.insert_many("docs", docs).await.expect("insert");
    for round in 0..2 {
        for n in 0..1000 {
            let text = store
                .get_text("docs", &format!("d{n:04}"))
                .await
                .expect("get");
            assert!(text.is_some_and(|t| t.contains(&pad)), "round {round}");
            let status = store.cache_status();
            assert!(status.bytes <= budget, "{status:?}");
        }
    }
    let status = store.cache_status();
    assert!(
        status.entries > 50 && status.entries < 250,
        "about 64 KiB of 400-byte entries: {status:?}"
    );
    // The most recent reads are kept.
    let hits = status.hits;
    store.get_text("docs", "d0999").await.expect("get");
    assert_eq!(store.cache_status().hits, hits + 1);
    // Over a sixteenth of the budget: read from the database every time.
    let big = "y".repeat(budget / 16);
    store
        .insert("docs", doc(json!({"_id": "big", "pad": big})))
        .await
        .expect("insert");
    let before = store.cache_status();
    for _ in 0..3 {
        let text = store.get_text("docs", "big").await.expect("get");
        assert!(text.is_some_and(|t| t.len() > budget / 16));
    }
    let after = store.cache_status();
    assert_eq!((after.hits, after.misses), (before.hits, before.misses + 3));
    // No stamp (its table cannot be read): every read goes to the database, none is cached.
    let db = url.rsplit('/').next().expect("database name").to_owned();
    let sql = |db: String, sql: &'static str| async move {
        tokio::task::spawn_blocking(move || cluster().sql(&db, sql))
            .await
            .expect("task")
            .expect("sql");
    };
    sql(
        db.clone(),
        "ALTER TABLE portico_stamps RENAME TO stamps_away",
    )
    .await;
    let before = store.cache_status();
    for _ in 0..3 {
        assert!(
            store
                .get_text("docs", "d0999")
                .await
                .expect("get")
                .is_some()
        );
        let (_, total) = store.page_counted("docs", &page()).await.expect("list");
        assert_eq!(total, 1001);
    }
    let after = store.cache_status();
    assert_eq!((after.hits, after.misses), (before.hits, before.misses));
    sql(db, "ALTER TABLE stamps_away RENAME TO portico_stamps").await;
    store.get_text("docs", "d0999").await.expect("get");
    store.get_text("docs", "d0999").await.expect("get");
    assert_eq!(store.cache_status().hits, after.hits + 1, "stamps back");
    // No budget: nothing kept, nothing counted.
    let off = open(&url, 0).await;
    for _ in 0..3 {
        off.get_text("docs", "d0001").await.expect("get");
        off.page_counted("docs", &page()).await.expect("list");
    }
    let status = off.cache_status();
    assert_eq!((status.entries, status.hits, status.misses), (0, 0, 0));
}

/// Waits (10 s at most) until `feed` tells `n` changes of `collection` (`None`: a resync of
/// everything, as a listener tells once it listens), skipping the other changes.
async fn heard(
    feed: &mut tokio::sync::broadcast::Receiver<portico_store::Change>,
    collection: Option<&str>,
    n: usize,
    what: &str,
) {
    let wait = async {
        let mut seen = 0;
        while seen < n {
            let change = feed.recv().await.expect("the change feed runs");
            if change.collection() == collection {
                seen += 1;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), wait)
        .await
        .unwrap_or_else(|_| panic!("{what}: no change of {collection:?} told within 10 s"));
}

/// Every write path of the store (the group commit, each write function's transaction, a
/// batch, a dropped collection), with and without indexes to keep, sends its change: another
/// instance hears it on its change feed, sees the collection's stamp move, and no longer
/// serves its cached get and list from before. A write that committed without its
/// notification fails here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_path_tells_the_other_instances_and_moves_the_stamp() {
    let url = database().await;
    let a = open(&url, DEFAULT_CACHE_BYTES).await;
    let b = open(&url, DEFAULT_CACHE_BYTES).await;
    let reference = open(&url, 0).await;
    let mut feed = b.changes().expect("a change feed");
    heard(&mut feed, None, 1, "the listener starts").await;
    a.insert("kinds", doc(json!({"_id": "p", "v": 0, "u": "p"})))
        .await
        .expect("first insert");
    heard(&mut feed, Some("kinds"), 1, "first insert").await;
    let inc = Update::parse(&json!({"$inc": {"v": 1}})).expect("update");
    let by_p = Selector::by_id("p");
    let kinds = [
        "insert",
        "insert_json",
        "insert_many of one",
        "ensure indexes",
        "insert (unique index: alone)",
        "insert_many of one (indexes)",
        "insert_many of two",
        "insert_stream",
        "update",
        "update_owned",
        "upsert",
        "remove",
        "batch",
        "drop_collection",
    ];
    for (step, kind) in kinds.into_iter().enumerate() {
        let id = format!("d{step}");
        let fresh = || doc(json!({"_id": format!("d{step}"), "v": step, "u": format!("u{step}")}));
        // B's get and list, the second time from its cache.
        let got = b.get_text("kinds", "p").await.expect("get");
        let listed = b.page_counted("kinds", &page()).await.expect("list");
        let hits = b.cache_status().hits;
        assert_eq!(b.get_text("kinds", "p").await.expect("get"), got);
        assert_eq!(
            b.page_counted("kinds", &page()).await.expect("list"),
            listed
        );
        assert_eq!(b.cache_status().hits, hits + 2, "{kind}: B's reads cached");
        let stamp = b.change_stamp("kinds").await.expect("a stamp");
        let changes = match kind {
            "insert" | "insert (unique index: alone)" => {
                a.insert("kinds", fresh()).await.expect(kind);
                1
            }
            "insert_json" => {
                a.insert_stored("kinds", fresh()).await.expect(kind);
                1
            }
            "insert_many of one" | "insert_many of one (indexes)" => {
                a.insert_many("kinds", vec![fresh()]).await.expect(kind);
                1
            }
            "ensure indexes" => {
                // No document changes: nothing is told, and B's cache stays right. The writes
                // after keep an equality, a unique and a sorted index.
                a.ensure_index("kinds", "v").await.expect(kind);
                a.ensure_unique_index("kinds", "u").await.expect(kind);
                let spec = portico_store::IndexSpec::parse(&json!(["u", "-v"])).expect("spec");
                a.ensure_sorted_index("kinds", &spec).await.expect(kind);
                a.ensure_search("kinds", &["u".to_owned()])
                    .await
                    .expect(kind);
                assert_eq!(b.get_text("kinds", "p").await.expect("get"), got);
                assert_eq!(
                    b.page_counted("kinds", &page()).await.expect("list"),
                    listed
                );
                continue;
            }
            "insert_many of two" => {
                let other = doc(json!({"_id": format!("{id}b"), "u": format!("{id}b")}));
                a.insert_many("kinds", vec![fresh(), other])
                    .await
                    .expect(kind);
                1
            }
            "insert_stream" => {
                let batch: Vec<portico_store::Result<Vec<portico_store::Document>>> =
                    vec![Ok(vec![fresh()])];
                a.insert_stream("kinds", Box::new(batch.into_iter()))
                    .await
                    .expect(kind);
                1
            }
            "update" => {
                let result = a
                    .update("kinds", &by_p, &inc, UpdateOptions::default())
                    .await
                    .expect(kind);
                assert_eq!(result.modified, 1);
                1
            }
            "update_owned" => {
                let result = a
                    .update_owned("kinds", &by_p, inc.clone(), UpdateOptions::default())
                    .await
                    .expect(kind);
                assert_eq!(result.modified, 1);
                1
            }
            "upsert" => {
                let options = UpdateOptions::new(false, true);
                let result = a
                    .update("kinds", &Selector::by_id(&id), &inc, options)
                    .await
                    .expect(kind);
                assert_eq!(result.upserted_id.as_deref(), Some(id.as_str()));
                1
            }
            "remove" => {
                assert_eq!(
                    a.remove("kinds", &Selector::by_id("d0")).await.expect(kind),
                    1
                );
                1
            }
            "batch" => {
                let ops = vec![
                    BatchOp::Insert {
                        collection: "kinds".into(),
                        doc: fresh(),
                    },
                    BatchOp::Update {
                        collection: "kinds".into(),
                        selector: by_p.clone(),
                        update: inc.clone(),
                    },
                    BatchOp::Remove {
                        collection: "kinds".into(),
                        selector: Selector::by_id("d1"),
                    },
                ];
                a.batch(ops).await.expect(kind);
                3
            }
            _ => {
                a.drop_collection("kinds").await.expect(kind);
                1
            }
        };
        heard(&mut feed, Some("kinds"), changes, kind).await;
        let moved = b.change_stamp("kinds").await.expect("a stamp");
        assert!(
            moved > stamp,
            "{kind}: the stamp moved ({stamp} -> {moved})"
        );
        let now = b.get_text("kinds", "p").await.expect("get");
        let now_listed = b.page_counted("kinds", &page()).await.expect("list");
        assert_eq!(
            now,
            reference.get_text("kinds", "p").await.expect("get"),
            "{kind}: B's get"
        );
        assert_eq!(
            now_listed,
            reference
                .page_counted("kinds", &page())
                .await
                .expect("list"),
            "{kind}: B's list"
        );
        assert_ne!((now, now_listed), (got, listed), "{kind}: the write shows");
    }
}
