//! Prometheus metrics (`[metrics]`): request counts and latency histograms per route pattern,
//! method and status, the open live streams and queries, and the job queue (queued, running,
//! failed, runs, latency from due time to done, webhook deliveries among them), rendered by
//! `metrics-exporter-prometheus` at `/metrics`.
//!
//! Labels stay bounded whatever clients send: the route is the pattern the front doors
//! describe (`/api/v1/articles/:id`), or `other` for a path no pattern matches (404s, regex
//! routes), and an unusual method is `other` too.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use portico_edge::{PathPattern, PathTable, RequestPath, RouteDoc};

pub use crate::doors::server_paths::METRICS_PATH;

/// Requests served, by `method`, `route` and `status`.
pub const REQUESTS: &str = "portico_http_requests_total";
/// Request latency in seconds (a histogram), by `method`, `route` and `status`.
pub const DURATION: &str = "portico_http_request_duration_seconds";

/// Live streams (server-sent events) open now, a gauge.
pub const LIVE_STREAMS: &str = "portico_live_streams_open";
/// Distinct live queries evaluated now (identical queries of many streams share one), a gauge.
pub const LIVE_QUERIES: &str = "portico_live_queries_open";
/// Queries that read more than `[log] slow_scan_docs` documents one by one (no index served
/// them; each shape is also logged once with the index that would).
pub const SLOW_QUERIES: &str = "portico_slow_queries_total";

/// Jobs stored and not yet done (due, delayed or running, on every instance), a gauge.
pub const JOBS_QUEUED: &str = "portico_jobs_queued";
/// Jobs this instance runs now, a gauge.
pub const JOBS_RUNNING: &str = "portico_jobs_running";
/// Jobs kept as failed after their last try (of every instance), a gauge.
pub const JOBS_FAILED: &str = "portico_jobs_failed";
/// Runs of this instance, by `outcome` (`succeeded`, `retried`, `failed`).
pub const JOB_RUNS: &str = "portico_job_runs_total";
/// From a job's due time to the end of its successful run, seconds (a histogram), by `job`
/// (`portico:webhook` for webhook deliveries: from the write to the receiver's answer).
pub const JOB_LATENCY: &str = "portico_job_latency_seconds";

/// Latency buckets, seconds: from a cached read to a slow write.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// The process-wide recorder's handle, installed on first use (a process has one recorder).
///
/// # Errors
/// [`crate::Error::Setup`] when another recorder was installed first.
pub fn handle() -> crate::Result<PrometheusHandle> {
    static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
                .map_err(|e| e.to_string())?
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).map_err(|e| e.to_string())?;
            Ok(handle)
        })
        .clone()
        .map_err(|e| crate::Error::Setup(format!("[metrics]: {e}")))
}

/// The route patterns requests are counted under.
#[derive(Default)]
pub struct RouteLabels {
    table: PathTable<String>,
}

impl RouteLabels {
    /// The patterns of `routes` (regex routes are left out: they count as `other`).
    pub fn new(routes: &[RouteDoc]) -> Self {
        let mut table = PathTable::new();
        for route in routes {
            let Some(relative) = route.path.strip_prefix('/') else {
                continue;
            };
            if let Ok(pattern) = PathPattern::parse(relative) {
                // One pattern serves several methods: the first insert wins, the rest are
                // duplicates by design.
                let _ = table.insert(pattern, route.path.clone());
            }
        }
        RouteLabels { table }
    }

    /// The label of a request path.
    pub fn label(&self, path: &str) -> String {
        RequestPath::parse(path)
            .and_then(|path| self.table.find(&path).map(|(_, label, _)| label.clone()))
            .unwrap_or_else(|| "other".to_owned())
    }
}

/// Wraps `app` so every request is counted and timed.
pub fn track(app: Router, labels: RouteLabels) -> Router {
    app.layer(axum::middleware::from_fn_with_state(
        Arc::new(labels),
        record,
    ))
}

async fn record(State(labels): State<Arc<RouteLabels>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = labels.label(request.uri().path());
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [
        ("method", method.to_owned()),
        ("route", route),
        ("status", status),
    ];
    metrics::counter!(REQUESTS, &labels).increment(1);
    metrics::histogram!(DURATION, &labels).record(started.elapsed().as_secs_f64());
    response
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// `GET /metrics`: the Prometheus text format, with the platform's gauges read at each scrape.
pub fn router(handle: PrometheusHandle, platform: portico_platform::Platform) -> Router {
    observe_jobs(&platform);
    Router::new().route(
        METRICS_PATH,
        get(move || {
            let (handle, platform) = (handle.clone(), platform.clone());
            async move {
                #[allow(clippy::cast_precision_loss)] // counts far below 2^52
                {
                    metrics::gauge!(LIVE_STREAMS).set(platform.open_live_streams() as f64);
                    metrics::gauge!(LIVE_QUERIES).set(platform.open_live_queries() as f64);
                }
                super::replicas::record_metrics();
                record_jobs(&platform).await;
                metrics::counter!(SLOW_QUERIES).absolute(portico_store::slow_scans());
                (
                    [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                    handle.render(),
                )
                    .into_response()
            }
        }),
    )
}

/// The job gauges and counters, read at a scrape (the queue's sizes from the store: a count
/// of each collection, which costs no document read).
#[allow(clippy::cast_precision_loss)] // counts far below 2^52
async fn record_jobs(platform: &portico_platform::Platform) {
    let jobs = platform.jobs();
    if let Ok((queued, failed)) = jobs.stored().await {
        metrics::gauge!(JOBS_QUEUED).set(queued as f64);
        metrics::gauge!(JOBS_FAILED).set(failed as f64);
    }
    let counts = jobs.counts();
    metrics::gauge!(JOBS_RUNNING).set(counts.running as f64);
    for (outcome, n) in [
        ("succeeded", counts.succeeded),
        ("retried", counts.retried),
        ("failed", counts.failed),
    ] {
        metrics::counter!(JOB_RUNS, "outcome" => outcome).absolute(n);
    }
}

/// Records each job done in [`JOB_LATENCY`] (once the metrics are on).
fn observe_jobs(platform: &portico_platform::Platform) {
    platform.jobs().observe_done(|name, latency| {
        metrics::histogram!(JOB_LATENCY, "job" => name.to_owned()).record(latency.as_secs_f64());
    });
}

/// Serves `/metrics` alone on `addr` (`[metrics] listen`), in the background until the
/// process ends; the line `metrics on http://ADDR/metrics` says where once it listens.
///
/// # Errors
/// [`crate::Error::Listen`] when the address cannot be bound.
pub async fn serve_apart(
    addr: std::net::SocketAddr,
    platform: portico_platform::Platform,
    limits: crate::config::ConnectionLimits,
) -> crate::Result<()> {
    let app = router(handle()?, platform);
    let (listener, bound) = super::bind(addr).await?;
    tracing::info!("metrics on http://{bound}{METRICS_PATH}");
    // The same accept loop as the APIs' (bounded connections, lingering close); it stops with
    // the process.
    let (keep_open, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        super::connections::serve(listener, app, limits, stop).await;
        drop(keep_open);
    });
    Ok(())
}
