//! Store benchmarks: insert, get-by-id, indexed equality lookup and a filtered (non-indexed)
//! find with limit 20, for the memory and SQLite backends, at several collection sizes.
//!
//! Sizes come from `PORTICO_BENCH_SIZES` (comma-separated, default `10000,1000000`). Each backend
//! and size gets its own dataset, built once before its benchmarks (SQLite: one transaction into
//! a temporary file) and dropped after them, so only one large dataset is in memory at a time.
//!
//! ```text
//! cargo bench -p portico-store -- --warm-up-time 1 --measurement-time 3
//! PORTICO_BENCH_SIZES=10000 cargo bench -p portico-store -- get_by_id
//! ```
//!
//! Every operation goes through `Arc<dyn Store>`, as the platform calls it. The insert benchmark
//! runs last for each dataset and adds documents to it (as many as it has iterations).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion};
use portico_store::memory::MemoryStore;
use portico_store::sqlite::SqliteStore;
use portico_store::{Document, Query, Selector, Store};
use serde_json::json;
use tokio::runtime::Runtime;

const COLLECTION: &str = "bench";
/// The indexed path: through an array, as login tokens are.
const INDEXED: &str = "services.resume.loginTokens.hashedToken";
/// Distinct values of the non-indexed `group` field: the filtered find reads about
/// `20 * GROUPS` documents to fill its page, whatever the collection's size.
const GROUPS: u64 = 50;

fn sizes() -> Vec<u64> {
    let spec = std::env::var("PORTICO_BENCH_SIZES").unwrap_or_else(|_| "10000,1000000".into());
    let sizes: Vec<u64> = spec
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .collect();
    assert!(
        !sizes.is_empty(),
        "PORTICO_BENCH_SIZES must list positive sizes, such as 10000,1000000 (got {spec:?})"
    );
    sizes
}

fn id(i: u64) -> String {
    format!("doc{i:08}")
}

fn document(i: u64) -> Document {
    let doc = json!({
        "_id": id(i),
        "name": format!("user {i}"),
        "email": format!("user{i}@example.com"),
        "group": i % GROUPS,
        "score": i % 1000,
        "tags": [format!("t{}", i % 7), format!("t{}", i % 11)],
        "services": {"resume": {"loginTokens": [
            {"when": "2026-01-01T00:00:00.000Z", "hashedToken": format!("tok{i}")}
        ]}},
    });
    match doc {
        serde_json::Value::Object(m) => m,
        _ => Document::new(),
    }
}

/// A cheap deterministic sequence of indexes below `n` (xorshift), so lookups hit the whole
/// collection rather than one cached page.
struct Picker {
    state: Cell<u64>,
    n: u64,
}

impl Picker {
    fn new(n: u64) -> Picker {
        Picker {
            state: Cell::new(0x9E37_79B9_7F4A_7C15),
            n,
        }
    }

    fn next(&self) -> u64 {
        let mut x = self.state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state.set(x);
        x % self.n
    }
}

async fn load_memory(n: u64) -> Arc<dyn Store> {
    let store = MemoryStore::new();
    store
        .ensure_index(COLLECTION, INDEXED)
        .await
        .expect("memory index");
    for i in 0..n {
        store
            .insert(COLLECTION, document(i))
            .await
            .expect("memory insert");
    }
    Arc::new(store)
}

async fn load_sqlite(n: u64, dir: &tempfile::TempDir) -> Arc<dyn Store> {
    let store = SqliteStore::open(dir.path().join("bench.db"))
        .await
        .expect("open sqlite");
    store
        .ensure_index(COLLECTION, INDEXED)
        .await
        .expect("sqlite index");
    store
        .insert_many(COLLECTION, (0..n).map(document))
        .await
        .expect("sqlite bulk load");
    Arc::new(store)
}

fn bench_backend(c: &mut Criterion, rt: &Runtime, backend: &str, n: u64, store: &Arc<dyn Store>) {
    let store = store.as_ref();

    let mut group = c.benchmark_group("get_by_id");
    group.bench_function(BenchmarkId::new(backend, n), |b| {
        let picker = Picker::new(n);
        b.to_async(rt).iter(|| {
            let wanted = id(picker.next());
            async move {
                let doc = store.get(COLLECTION, &wanted).await.expect("get");
                assert!(doc.is_some(), "{wanted} is missing");
            }
        });
    });
    group.finish();

    let mut group = c.benchmark_group("indexed_eq");
    group.bench_function(BenchmarkId::new(backend, n), |b| {
        let picker = Picker::new(n);
        b.to_async(rt).iter(|| {
            let selector = Selector::parse(&json!({INDEXED: format!("tok{}", picker.next())}))
                .expect("selector");
            async move {
                let found = store
                    .find(COLLECTION, &Query::new(selector))
                    .await
                    .expect("find");
                assert_eq!(found.len(), 1);
            }
        });
    });
    group.finish();

    let mut group = c.benchmark_group("filtered_find_limit_20");
    group.bench_function(BenchmarkId::new(backend, n), |b| {
        let picker = Picker::new(GROUPS);
        b.to_async(rt).iter(|| {
            let query = Query {
                limit: Some(20),
                ..Query::new(
                    Selector::parse(&json!({"group": picker.next(), "score": {"$gte": 0}}))
                        .expect("selector"),
                )
            };
            async move {
                let found = store.find(COLLECTION, &query).await.expect("find");
                assert_eq!(found.len(), 20);
            }
        });
    });
    group.finish();

    // Last, because it grows the collection: the reads above see exactly `n` documents.
    let mut group = c.benchmark_group("insert");
    // Criterion calls the closure several times (warm-up, samples): the counter lives outside.
    let next = Cell::new(n);
    group.bench_function(BenchmarkId::new(backend, n), |b| {
        b.to_async(rt).iter(|| {
            let i = next.get();
            next.set(i + 1);
            async move { store.insert(COLLECTION, document(i)).await.expect("insert") }
        });
    });
    group.finish();
}

/// Current and peak resident memory of this process (Linux), for the log.
fn memory_use() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map_or("?".to_string(), |l| l[name.len()..].trim().to_string())
    };
    format!("resident {} (peak {})", field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let sizes = sizes();
    // SQLite first, at every size: the peak resident memory it prints is its own, before the
    // memory backend (which holds every document in RAM) raises it.
    for &n in &sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let started = Instant::now();
        let store = rt.block_on(load_sqlite(n, &dir));
        eprintln!(
            "sqlite: loaded {n} documents in {:.1?}; {}",
            started.elapsed(),
            memory_use()
        );
        bench_backend(&mut c, &rt, "sqlite", n, &store);
        eprintln!("sqlite: after the benchmarks at {n}: {}", memory_use());
    }
    for &n in &sizes {
        let started = Instant::now();
        let store = rt.block_on(load_memory(n));
        eprintln!(
            "memory: loaded {n} documents in {:.1?}; {}",
            started.elapsed(),
            memory_use()
        );
        bench_backend(&mut c, &rt, "memory", n, &store);
    }
    c.final_summary();
}
