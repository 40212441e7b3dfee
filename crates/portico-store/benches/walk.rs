//! Selector walks over one huge array: `$size`, `$elemMatch` (on values, on object elements by
//! a top-level and a dotted field) and `$all`, on a document whose array has 1,000,000
//! elements; and a SQLite scan with `{"a": {"$size": 3}}` over documents holding such arrays.
//!
//! Besides the time, each walk reports the heap allocations one match makes (counted by
//! `stats_alloc`'s instrumented system allocator): a walk must not allocate per element.
//!
//! ```text
//! cargo bench -p portico-store --bench walk -- --warm-up-time 1 --measurement-time 3
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // a bench: panics on setup failures; criterion macros

use std::alloc::System;
use std::hint::black_box;

use criterion::Criterion;
use portico_store::sqlite::SqliteStore;
use portico_store::{Document, Query, Selector, Store};
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tokio::runtime::Runtime;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ELEMENTS: usize = 1_000_000;

fn doc(v: Value) -> Document {
    match v {
        Value::Object(m) => m,
        _ => Document::new(),
    }
}

fn sel(v: Value) -> Selector {
    Selector::parse(&v).unwrap_or_else(|e| panic!("selector {v}: {e}"))
}

fn walks(c: &mut Criterion) {
    let numbers = doc(json!({"a": vec![0; ELEMENTS]}));
    let objects = doc(json!({
        "a": (0..ELEMENTS).map(|i| json!({"b": i, "c": {"d": i}})).collect::<Vec<_>>()
    }));
    let cases = [
        ("size", &numbers, json!({"a": {"$size": 3}})),
        (
            "elem_match_value",
            &numbers,
            json!({"a": {"$elemMatch": {"$gt": 5}}}),
        ),
        ("all", &numbers, json!({"a": {"$all": [0, 7]}})),
        (
            "elem_match_field",
            &objects,
            json!({"a": {"$elemMatch": {"b": -1}}}),
        ),
        (
            "elem_match_dotted",
            &objects,
            json!({"a": {"$elemMatch": {"c.d": -1}}}),
        ),
        ("dotted_path", &objects, json!({"a.c.d": -1})),
    ];
    let mut group = c.benchmark_group("walk");
    group.sample_size(10);
    for (name, d, s) in cases {
        let s = sel(s);
        let region = Region::new(GLOBAL);
        black_box(s.matches(d));
        let allocations = region.change().allocations;
        println!("walk/{name}: {allocations} allocations per match over {ELEMENTS} elements");
        group.bench_function(name, |b| b.iter(|| black_box(s.matches(black_box(d)))));
    }
    group.finish();
}

fn sqlite_size_scan(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = rt.block_on(async {
        let store = SqliteStore::open(dir.path().join("walk.db"))
            .await
            .expect("open");
        for i in 0..4 {
            let d = doc(json!({"_id": format!("d{i}"), "a": vec![0; ELEMENTS]}));
            store.insert("huge", d).await.expect("insert");
        }
        store
            .insert("huge", doc(json!({"_id": "small", "a": [1, 2, 3]})))
            .await
            .expect("insert");
        store
    });
    let query = Query::new(sel(json!({"a": {"$size": 3}})));
    let region = Region::new(GLOBAL);
    let found = rt.block_on(store.find("huge", &query)).expect("find");
    assert_eq!(found.len(), 1);
    let stats = region.change();
    println!(
        "sqlite_size_scan: {} allocations, {} MB allocated, for one query over 4 x {ELEMENTS} elements",
        stats.allocations,
        stats.bytes_allocated >> 20
    );
    let mut group = c.benchmark_group("walk");
    group.sample_size(10);
    group.bench_function("sqlite_size_scan", |b| {
        b.iter(|| rt.block_on(store.find("huge", &query)).expect("find"))
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    walks(&mut c);
    sqlite_size_scan(&mut c);
    c.final_summary();
}
