//! Per-request cost of the routes front door, driven as a tower service (no sockets): a hand-made
//! route, generated get-by-id (anonymous and authenticated) and list-20, on memory and SQLite;
//! beside them the same list done by a hand-written route (`raw-list-20`) and by the store alone
//! (`store-*`), to show the share of the front door.
//!
//! `cargo bench -p portico-routes --bench routes -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

use axum::Router;
use axum::body::Body;
use criterion::{Criterion, criterion_main};
use http::Request;
use http_body_util::BodyExt;
use portico_platform::{NewUser, Password, Platform};
use portico_routes::{
    Api, ApiOptions, CollectionOptions, Context, DelayRange, Endpoints, RouteOptions,
};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Setup {
    router: Router,
    items: portico_platform::Collection,
    token: String,
    _dir: tempfile::TempDir,
}

async fn setup(url_kind: &str) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = match url_kind {
        "sqlite" => format!("sqlite:{}", dir.path().join("bench.db").display()),
        _ => "memory:".to_owned(),
    };
    let platform = Platform::open(&url).await.expect("platform");
    let items = platform.collection("items");
    for i in 0..10_000 {
        let Value::Object(doc) = json!({"_id": format!("item-{i:07}"), "title": format!("Item {i}"), "n": i, "tags": ["bench"]})
        else {
            unreachable!()
        };
        items.insert(doc).await.expect("insert");
    }
    let user = platform
        .accounts()
        .create_user(NewUser {
            username: Some("bench".into()),
            password: Some(Password::Plain("bench-password".into())),
            ..NewUser::default()
        })
        .await
        .expect("user");
    let token = platform
        .accounts()
        .new_login_token(&user)
        .await
        .expect("token")
        .token;
    let mut api = Api::new(
        {
            let mut o = ApiOptions::default();
            o.auth_failure_delay = DelayRange::none();
            o
        },
        platform.clone(),
    )
    .expect("api");
    api.add_route(
        "hello/:name",
        RouteOptions::default(),
        Endpoints::new().get(|ctx: Context| async move { json!({"hello": ctx.url_param("name")}) }),
    )
    .expect("route");
    api.add_collection(items.clone(), CollectionOptions::new())
        .expect("items");
    let items_handle = items.clone();
    let raw_items = items.clone();
    api.add_route(
        "raw-list",
        RouteOptions::default(),
        Endpoints::new().get(move |_ctx: Context| {
            let items = raw_items.clone();
            async move {
                let n = items.count(&portico_store::Selector::all()).await?;
                let q = portico_store::Query {
                    limit: Some(20),
                    ..Default::default()
                };
                let docs = items.find(&q).await?;
                Ok::<_, portico_routes::Reply>(
                    portico_routes::Reply::success(Value::Array(
                        docs.into_iter().map(Value::Object).collect(),
                    ))
                    .with_header("x-total-count", n.to_string()),
                )
            }
        }),
    )
    .expect("raw list");
    api.add_collection(
        items,
        CollectionOptions::new()
            .path("secure/items")
            .route_options(RouteOptions::new().auth_required(true)),
    )
    .expect("secure items");
    Setup {
        router: api.router(),
        items: items_handle,
        token,
        _dir: dir,
    }
}

async fn hit(router: &Router, uri: &str, token: Option<&str>) {
    let mut b = Request::builder().uri(uri);
    if let Some(t) = token {
        b = b.header("x-auth-token", t);
    }
    let resp = router
        .clone()
        .oneshot(b.body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    assert_eq!(resp.status(), 200);
    let _ = resp.into_body().collect().await.expect("body");
}

pub(crate) fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    for kind in ["memory", "sqlite"] {
        let s = rt.block_on(setup(kind));
        let mut group = c.benchmark_group(kind);
        group.bench_function("custom-route", |b| {
            b.to_async(&rt)
                .iter(|| hit(&s.router, "/api/hello/world", None))
        });
        group.bench_function("get-by-id", |b| {
            let mut i = 0u32;
            b.to_async(&rt).iter(|| {
                i = (i + 7919) % 10_000;
                let uri = format!("/api/items/item-{i:07}");
                let r = &s.router;
                async move { hit(r, &uri, None).await }
            })
        });
        group.bench_function("auth-get-by-id", |b| {
            let mut i = 0u32;
            b.to_async(&rt).iter(|| {
                i = (i + 7919) % 10_000;
                let uri = format!("/api/secure/items/item-{i:07}");
                let (r, t) = (&s.router, s.token.as_str());
                async move { hit(r, &uri, Some(t)).await }
            })
        });
        group.bench_function("list-20", |b| {
            b.to_async(&rt)
                .iter(|| hit(&s.router, "/api/items?limit=20", None))
        });
        group.bench_function("raw-list-20", |b| {
            b.to_async(&rt)
                .iter(|| hit(&s.router, "/api/raw-list", None))
        });
        group.bench_function("list-20-skip-500", |b| {
            b.to_async(&rt)
                .iter(|| hit(&s.router, "/api/items?limit=20&skip=500", None))
        });
        // The store's share of list-20: the count behind X-Total-Count, and the page itself.
        group.bench_function("store-count", |b| {
            b.to_async(&rt).iter(|| async {
                s.items
                    .count(&portico_store::Selector::all())
                    .await
                    .expect("count")
            })
        });
        group.bench_function("store-count-and-find-20", |b| {
            b.to_async(&rt).iter(|| async {
                let n = s
                    .items
                    .count(&portico_store::Selector::all())
                    .await
                    .expect("count");
                let q = portico_store::Query {
                    limit: Some(20),
                    ..Default::default()
                };
                (n, s.items.find(&q).await.expect("find"))
            })
        });
        group.bench_function("store-find-20", |b| {
            b.to_async(&rt).iter(|| async {
                let q = portico_store::Query {
                    limit: Some(20),
                    ..Default::default()
                };
                s.items.find(&q).await.expect("find")
            })
        });
        group.finish();
    }
}

#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::bench);
}
use group::benches;
criterion_main!(benches);
