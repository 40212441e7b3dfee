//! Read replicas (`database_replicas`): the store opened with them, each request run as its
//! caller (so reads may go to a replica while the caller still reads its own writes), and
//! their state for `/readyz` and `/metrics`.
//!
//! The caller of a request is its login token (hashed) when it sends one, otherwise its
//! client address (as `trusted_proxies` works it out): a write records the primary's WAL
//! position for that key, and that key's reads stay on the primary until a replica has
//! replayed it (see `portico_store::postgres::PostgresStore`).

use std::hash::{Hash, Hasher};
#[cfg(feature = "postgres")]
use std::sync::OnceLock;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use portico_edge::TrustedProxies;
use serde_json::{Value, json};

/// Replicas serving reads now, by `replica` (URL without password): 1 in use, 0 skipped.
pub const REPLICA_UP: &str = "portico_replica_up";
/// How far behind the primary each replica was at its last poll, in seconds.
pub const REPLICA_LAG: &str = "portico_replica_lag_seconds";
/// Reads each replica answered.
pub const REPLICA_READS: &str = "portico_replica_reads_total";
/// Reads that failed on a replica and were answered by the primary.
pub const REPLICA_FALLBACKS: &str = "portico_replica_fallbacks_total";

/// Rounds of change-stamp reads on PostgreSQL (each one round trip, shared by the requests
/// waiting for it; see `database_stamp_batch`).
pub const STAMP_ROUNDS: &str = "portico_postgres_stamp_rounds_total";
/// Calls the change-stamp rounds answered: divided by the rounds, the requests sharing each.
pub const STAMP_CALLERS: &str = "portico_postgres_stamp_callers_total";
/// Reads the PostgreSQL read cache answered (`database_cache_mb`).
pub const CACHE_HITS: &str = "portico_postgres_cache_hits_total";
/// Reads the PostgreSQL read cache sent to the database.
pub const CACHE_MISSES: &str = "portico_postgres_cache_misses_total";
/// Bytes the PostgreSQL read cache holds, as counted against its budget.
pub const CACHE_BYTES: &str = "portico_postgres_cache_bytes";

/// One replica's state, as `/readyz` and `/metrics` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaReport {
    /// The URL, without its password.
    pub url: String,
    /// `in_use`, `lagging`, `down`, `not_replica` or `starting`.
    pub state: &'static str,
    /// The lag at the last poll that reached it, in milliseconds.
    pub lag_ms: Option<u64>,
    /// Reads it answered.
    pub reads: u64,
    /// Reads that failed there and were answered by the primary.
    pub fallbacks: u64,
}

/// The PostgreSQL store this process opened (with replicas or not): its replicas' state and
/// its stamp and cache counters.
#[cfg(feature = "postgres")]
static STORE: OnceLock<portico_store::postgres::PostgresStore> = OnceLock::new();

/// True when this process reads from replicas.
pub fn enabled() -> bool {
    #[cfg(feature = "postgres")]
    if let Some(store) = STORE.get() {
        return !store.replica_status().is_empty();
    }
    false
}

/// Each replica's state (empty without replicas).
pub fn report() -> Vec<ReplicaReport> {
    #[cfg(feature = "postgres")]
    if let Some(store) = STORE.get() {
        return store
            .replica_status()
            .into_iter()
            .map(|s| ReplicaReport {
                url: s.url,
                state: s.state.as_str(),
                lag_ms: s.lag_ms,
                reads: s.reads,
                fallbacks: s.fallbacks,
            })
            .collect();
    }
    Vec::new()
}

/// The replicas as `/readyz` lists them.
pub fn readyz_json() -> Option<Value> {
    enabled().then(|| {
        report()
            .into_iter()
            .map(|r| json!({"url": r.url, "state": r.state, "lag_ms": r.lag_ms}))
            .collect()
    })
}

/// Sets the replicas' gauges and counters, and the PostgreSQL store's stamp and cache
/// counters, before a scrape.
pub fn record_metrics() {
    #[cfg(feature = "postgres")]
    if let Some(store) = STORE.get() {
        let stamps = store.stamp_status();
        metrics::counter!(STAMP_ROUNDS).absolute(stamps.rounds);
        metrics::counter!(STAMP_CALLERS).absolute(stamps.callers);
        let cache = store.cache_status();
        metrics::counter!(CACHE_HITS).absolute(cache.hits);
        metrics::counter!(CACHE_MISSES).absolute(cache.misses);
        #[allow(clippy::cast_precision_loss)] // bytes far below 2^52
        metrics::gauge!(CACHE_BYTES).set(cache.bytes as f64);
    }
    #[allow(clippy::cast_precision_loss)] // lags and counts far below 2^52
    for r in report() {
        let up = if r.state == "in_use" { 1.0 } else { 0.0 };
        metrics::gauge!(REPLICA_UP, "replica" => r.url.clone()).set(up);
        if let Some(lag) = r.lag_ms {
            metrics::gauge!(REPLICA_LAG, "replica" => r.url.clone()).set(lag as f64 / 1000.0);
        }
        metrics::counter!(REPLICA_READS, "replica" => r.url.clone()).absolute(r.reads);
        metrics::counter!(REPLICA_FALLBACKS, "replica" => r.url).absolute(r.fallbacks);
    }
}

/// Opens the PostgreSQL store on `url` with the config's `database_replicas` (their lag bound
/// `replica_max_lag_ms`), read cache budget and stamp pacing (each the store's default when
/// unset), and keeps it for [`report`] and [`record_metrics`].
///
/// # Errors
/// [`crate::Error::Database`] when `url` is not PostgreSQL or the store cannot be opened.
#[cfg(feature = "postgres")]
pub async fn open_store(
    url: &str,
    config: &crate::config::Config,
) -> crate::Result<std::sync::Arc<dyn portico_store::Store>> {
    let replicas = &config.database_replicas;
    let failed = |message: String| crate::Error::Database {
        url: portico_store::redact_url(url),
        message,
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(failed(
            "database_replicas needs a PostgreSQL database (postgres://...): replicas are its hot standbys".into(),
        ));
    }
    let mut options = portico_store::postgres::PostgresOptions::default();
    options.replicas = replicas.to_vec();
    if let Some(max_lag) = config.replica_max_lag {
        options.replica_max_lag = max_lag;
    }
    if let Some(bytes) = config.database_cache_bytes {
        options.cache_bytes = bytes;
    }
    if let Some(batch) = config.database_stamp_batch {
        options.stamp_pacing.batch = batch;
    }
    if let Some(wait) = config.database_stamp_wait {
        options.stamp_pacing.wait = wait;
    }
    let store = portico_store::postgres::PostgresStore::open_with(url, options)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let _ = STORE.set(store.clone());
    Ok(std::sync::Arc::new(store))
}

/// Opens nothing: this build has no PostgreSQL backend.
///
/// # Errors
/// Always [`crate::Error::Database`].
#[cfg(not(feature = "postgres"))]
pub async fn open_store(
    url: &str,
    _config: &crate::config::Config,
) -> crate::Result<std::sync::Arc<dyn portico_store::Store>> {
    Err(crate::Error::Database {
        url: portico_store::redact_url(url),
        message:
            "database_replicas, database_cache_mb and database_stamp_* need the postgres backend, not in this build"
                .into(),
    })
}

/// Runs every request as its caller (see the module docs).
pub fn with_callers(app: axum::Router, proxies: TrustedProxies) -> axum::Router {
    app.layer(axum::middleware::from_fn_with_state(proxies, as_caller))
}

async fn as_caller(
    State(proxies): State<TrustedProxies>,
    request: Request,
    next: Next,
) -> Response {
    let key = caller_key(&proxies, &request);
    portico_store::routing::Reader::caller(key.as_deref())
        .scope(next.run(request))
        .await
}

/// A request's caller: its token, hashed (two tokens sharing a hash share a record: more
/// reads on the primary, never fewer), else its client address.
fn caller_key(proxies: &TrustedProxies, request: &Request) -> Option<String> {
    if let Some(token) = portico_edge::request_token(request.headers()) {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        token.hash(&mut hasher);
        return Some(format!("t{:x}", hasher.finish()));
    }
    proxies
        .client_ip_of(request.headers(), request.extensions())
        .map(|ip| format!("a{ip}"))
}
