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
