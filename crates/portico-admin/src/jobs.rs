//! The jobs view: schedules (next due time, last run), pending and running jobs, and jobs that
//! failed their last try (webhook deliveries among them, with the receiver's last answer),
//! each failed one retried or dropped, each pending one cancelled (see
//! [`portico_platform::jobs`]).

use axum::Json;
use axum::extract::{Path, State};
use portico_platform::jobs::{FAILED_JOBS, JOBS, SCHEDULES};
use portico_store::{Query, Selector, Sort};
use serde_json::{Value, json};

use crate::admin_error::{AdminError, AdminResult};
use crate::state::AdminState;

/// How many jobs of each list are shown.
const SHOWN: u64 = 100;

/// The first [`SHOWN`] documents of `collection` in `sort` order, each as `fields` of it.
async fn listed(
    state: &AdminState,
    collection: &str,
    sort: &Value,
    fields: &[&str],
) -> AdminResult<Vec<Value>> {
    let mut query = Query::new(Selector::all());
    query.sort = Some(Sort::parse(sort)?);
    query.limit = Some(SHOWN);
    let docs = state.platform.store().find(collection, &query).await?;
    Ok(docs
        .into_iter()
        .map(|doc| {
            Value::Object(
                fields
                    .iter()
                    .filter_map(|f| doc.get(*f).map(|v| ((*f).to_owned(), v.clone())))
                    .collect(),
            )
        })
        .collect())
}

/// `GET api/jobs`: `{schedules: [...], pending: [...], failed: [...], queued, failedCount}`;
/// pending jobs by due time, failed ones newest first, at most 100 of each.
pub(crate) async fn list(State(state): State<AdminState>) -> AdminResult<Json<Value>> {
    let jobs = state.platform.jobs();
    let store = state.platform.store();
    let mut schedules = Vec::new();
    for schedule in jobs.schedules() {
        let stored = store
            .get(SCHEDULES, &schedule.name)
            .await?
            .unwrap_or_default();
        schedules.push(json!({
            "name": schedule.name,
            "expression": schedule.expression,
            "timezone": schedule.timezone,
            "job": schedule.job,
            "nextDueMs": schedule.next_due_ms,
            "lastRunAt": stored.get("lastRunAt"),
            "lastResult": stored.get("lastResult"),
        }));
    }
    let pending = listed(
        &state,
        JOBS,
        &json!({"runAt": 1}),
        &[
            "_id",
            "name",
            "runAt",
            "attempts",
            "lease",
            "lastError",
            "created",
        ],
    )
    .await?;
    let failed = listed(
        &state,
        FAILED_JOBS,
        &json!({"failedAt": -1}),
        &[
            "_id",
            "jobId",
            "name",
            "attempts",
            "failedAt",
            "lastError",
            "created",
        ],
    )
    .await?;
    let (queued, failed_count) = jobs.stored().await?;
    Ok(Json(json!({
        "schedules": schedules,
        "pending": pending,
        "failed": failed,
        "queued": queued,
        "failedCount": failed_count,
        "nowMs": now_ms(),
    })))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `POST api/jobs/{id}/retry`: puts the failed job back in the queue, due now.
pub(crate) async fn retry(
    State(state): State<AdminState>,
    Path(id): Path<String>,
) -> AdminResult<Json<Value>> {
    if !state.platform.jobs().retry_failed(&id).await? {
        return Err(AdminError::not_found("No such failed job"));
    }
    tracing::info!(job = %id, "failed job retried from the admin page");
    Ok(Json(json!({ "retried": id })))
}

/// `DELETE api/jobs/{id}`: removes the pending or failed job (a run under way finishes).
pub(crate) async fn cancel(
    State(state): State<AdminState>,
    Path(id): Path<String>,
) -> AdminResult<Json<Value>> {
    if !state.platform.jobs().cancel(&id).await? {
        return Err(AdminError::not_found("No such job"));
    }
    tracing::info!(job = %id, "job cancelled from the admin page");
    Ok(Json(json!({ "cancelled": id })))
}
