//! Health probes for orchestrators: `GET /healthz` answers while the process serves,
//! `GET /readyz` only while the store answers too (and lists each read replica's state and lag,
//! without depending on them: their reads fall back to the primary).

use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use portico_edge::{Access, Door, RouteDoc};
use portico_platform::Platform;
use serde_json::{Value, json};

pub use crate::doors::server_paths::{HEALTHZ, READYZ};

/// How long `/readyz` waits for the store before calling it down: an orchestrator's probe
/// usually times out after a few seconds, and a store that slow is not ready either.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The two probes on `platform`'s store.
pub fn router(platform: Platform) -> Router {
    Router::new()
        .route(HEALTHZ, get(healthz))
        .route(READYZ, get(readyz))
        .with_state(platform)
}

async fn healthz() -> axum::Json<Value> {
    axum::Json(json!({"status": "ok"}))
}

async fn readyz(State(platform): State<Platform>) -> (StatusCode, axum::Json<Value>) {
    // One lookup by primary key in the accounts collection, which every platform has: the
    // cheapest call that still goes to the database.
    let lookup = platform
        .store()
        .get(portico_platform::USERS, "readyz-probe");
    match tokio::time::timeout(READY_TIMEOUT, lookup).await {
        Ok(Ok(_)) => {
            let mut body = json!({"status": "ok"});
            // Replicas are reported, not required: reads fall back to the primary.
            if let Some(replicas) = super::replicas::readyz_json() {
                body["replicas"] = replicas;
            }
            (StatusCode::OK, axum::Json(body))
        }
        Ok(Err(err)) => {
            tracing::warn!("readiness probe: the store failed: {err}");
            unavailable("the store did not answer")
        }
        Err(_) => {
            tracing::warn!("readiness probe: the store took over {READY_TIMEOUT:?}");
            unavailable("the store did not answer in time")
        }
    }
}

fn unavailable(reason: &str) -> (StatusCode, axum::Json<Value>) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({"status": "unavailable", "reason": reason})),
    )
}

/// The probes as route descriptions, for the OpenAPI document.
pub fn docs() -> Vec<RouteDoc> {
    let status = |values: Value| json!({"type": "object", "required": ["status"], "properties": {"status": {"enum": values}}});
    vec![
        RouteDoc::new(Door::Server, http_get(), HEALTHZ, Access::Public)
            .summary("liveness: the process serves")
            .reply_body(status(json!(["ok"]))),
        RouteDoc::new(Door::Server, http_get(), READYZ, Access::Public)
            .summary("readiness: the store answers (503 when it does not)")
            .reply_body(status(json!(["ok"]))),
    ]
}

fn http_get() -> axum::http::Method {
    axum::http::Method::GET
}
