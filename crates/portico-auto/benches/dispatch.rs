//! Cost of answering a method call through the auto API router (driven with `oneshot`, no
//! socket), and how it grows with the number of routes: the route table is scanned linearly.
//!
//! `cargo bench -p portico-auto --bench dispatch -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests and benches may panic on setup failures

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use axum::body::Body;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http::Request;
use portico_auto::AutoApi;
use portico_platform::{MethodError, Platform};
use serde_json::{Value, json};
use tower::ServiceExt;

fn bench_dispatch(c: &mut Criterion) {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => panic!("tokio runtime: {err}"),
    };
    let mut group = c.benchmark_group("method_call");
    for methods in [10usize, 100, 1000] {
        let router = runtime.block_on(async {
            let platform = match Platform::open("memory:").await {
                Ok(p) => p,
                Err(err) => panic!("platform: {err}"),
            };
            for i in 0..methods {
                let defined = platform.method(&format!("m{i}"), |_inv, args| async move {
                    Ok::<Value, MethodError>(json!(args.len()))
                });
                if let Err(err) = defined {
                    panic!("method: {err}");
                }
            }
            match AutoApi::new(platform).router() {
                Ok(router) => router,
                Err(err) => panic!("router: {err}"),
            }
        });
        // The last method defined sits at the end of the table: the worst case of the scan.
        let path = format!("/methods/m{}", methods - 1);
        group.bench_with_input(BenchmarkId::new("last_of", methods), &path, |b, path| {
            b.to_async(&runtime).iter(|| {
                let router = router.clone();
                let request = Request::post(path.as_str())
                    .header("content-type", "application/json")
                    .body(Body::from("[1, 2]"));
                async move {
                    let request = match request {
                        Ok(r) => r,
                        Err(err) => panic!("request: {err}"),
                    };
                    match router.oneshot(request).await {
                        Ok(response) => assert_eq!(response.status(), 200),
                        Err(never) => match never {},
                    }
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_dispatch);
criterion_main!(benches);
