//! The job worker: claims due jobs with a lease, runs them (at most `concurrency` at once),
//! and records each outcome: a success removes the job, a failure schedules the next try or,
//! after the last one, moves the job to [`FAILED_JOBS`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::FutureExt;
use portico_store::{BatchOp, Document, Query, Selector, Sort, Update, UpdateOptions};
use rand::seq::SliceRandom;
use serde_json::{Value, json};

use super::{FAILED_JOBS, JOBS, JobRun, Jobs, JobsConfig};
use crate::Result;
use crate::time::{millis, now_ms};

/// How many due jobs one read looks at.
const BATCH: u64 = 50;

/// The running worker task. [`JobWorker::stop`] lets runs under way finish first; dropping the
/// handle stops it at once (a job it had claimed waits for its lease to end).
#[derive(Debug)]
pub struct JobWorker {
    task: crate::background::StoppableTask,
}

impl JobWorker {
    pub(super) fn start(jobs: Jobs, config: JobsConfig) -> JobWorker {
        JobWorker {
            task: crate::background::StoppableTask::spawn(|stop| run(jobs, config, stop)),
        }
    }

    /// Stops the worker: it claims no further job, and runs under way finish (and record their
    /// outcome) within `grace`; past it the worker is stopped where it is, and the jobs it had
    /// claimed are taken again once their leases end.
    pub async fn stop(self, grace: Duration) {
        self.task.stop(grace).await;
    }
}

async fn run(jobs: Jobs, config: JobsConfig, mut stop: tokio::sync::watch::Receiver<bool>) {
    let owner = portico_store::new_id();
    let slots = Arc::new(tokio::sync::Semaphore::new(config.concurrency.max(1)));
    let mut runs = tokio::task::JoinSet::new();
    while !*stop.borrow() {
        // Listen before reading, so an enqueue during the read wakes the next one.
        let woken = super::woken().notified();
        let until_due = match jobs.enqueue_due().await {
            Ok(until) => until,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the schedules");
                None
            }
        };
        let claimed = match claim(&jobs, &config, &owner, &slots, &mut runs).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the job queue");
                0
            }
        };
        while runs.try_join_next().is_some() {}
        if claimed > 0 && slots.available_permits() > 0 {
            continue;
        }
        tokio::select! {
            () = woken => {}
            () = tokio::time::sleep(until_due.map_or(config.poll, |d| d.min(config.poll))) => {}
            _ = stop.changed() => {}
            Ok(_) = slots.clone().acquire_owned(), if slots.available_permits() == 0 => {}
        }
    }
    while runs.join_next().await.is_some() {}
}

/// Claims due jobs while there are free slots, and starts each in `runs`; how many it claimed.
async fn claim(
    jobs: &Jobs,
    config: &JobsConfig,
    owner: &str,
    slots: &Arc<tokio::sync::Semaphore>,
    runs: &mut tokio::task::JoinSet<()>,
) -> Result<usize> {
    let free = slots.available_permits();
    if free == 0 {
        return Ok(0);
    }
    let names = jobs.names();
    if names.is_empty() {
        return Ok(0);
    }
    let store = &jobs.inner.store;
    let now = now_ms();
    let mut query = Query::new(Selector::parse(&json!({
        "runAt": {"$lte": now}, "lease": {"$lte": now}, "name": {"$in": names},
    }))?);
    query.sort = Some(Sort::by("runAt", true)?);
    query.limit = Some(BATCH);
    let mut due = store.find(JOBS, &query).await?;
    // Instances reading the same due jobs try them in different orders, so they seldom
    // compete for one.
    due.shuffle(&mut rand::rng());
    let mut claimed = 0;
    for doc in due {
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            break;
        };
        let Some(id) = doc.get("_id").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        if let (Some(group), Some(order)) = (doc.get("group"), doc.get("order"))
            && let Some(earlier) = store
                .find_one(
                    JOBS,
                    &Selector::parse(&json!({"group": group, "order": {"$lt": order}}))?,
                )
                .await?
        {
            // An earlier job of its group is pending: it runs first. This one waits until that
            // one's next try (so the jobs held back do not fill every read of the queue).
            let next = earlier
                .get("runAt")
                .and_then(Value::as_i64)
                .unwrap_or(now)
                .max(now.saturating_add(millis(config.poll)));
            let held_back = Selector::parse(&json!({"_id": id, "lease": doc.get("lease")}))?;
            let wait = Update::parse(&json!({"$set": {"runAt": next}}))?;
            store
                .update(JOBS, &held_back, &wait, UpdateOptions::default())
                .await?;
            continue;
        }
        let lease = doc.get("lease").cloned().unwrap_or(json!(0));
        let take = Selector::parse(&json!({"_id": id, "lease": lease}))?;
        let until = now_ms().saturating_add(millis(config.lease));
        let attempts = doc.get("attempts").and_then(Value::as_u64).unwrap_or(0) + 1;
        let set = Update::parse(&json!({"$set": {
            "lease": until, "owner": owner, "attempts": attempts, "startedAt": now_ms(),
        }}))?;
        if store
            .update(JOBS, &take, &set, UpdateOptions::default())
            .await?
            .modified
            == 0
        {
            continue; // another worker has it
        }
        claimed += 1;
        let jobs = jobs.clone();
        let owner = owner.to_owned();
        let lease = config.lease;
        runs.spawn(async move {
            let attempt = u32::try_from(attempts).unwrap_or(u32::MAX);
            run_one(&jobs, &owner, lease, id, attempt, doc).await;
            drop(permit);
        });
    }
    Ok(claimed)
}

/// Runs one claimed job and records its outcome.
async fn run_one(
    jobs: &Jobs,
    owner: &str,
    lease: Duration,
    id: String,
    attempt: u32,
    doc: Document,
) {
    let name = doc
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let run_id = portico_store::new_id();
    let Some(definition) = jobs.definition(&name) else {
        return; // undefined since it was claimed: its lease ends and another instance takes it
    };
    let args = doc.get("args").cloned().unwrap_or(Value::Null);
    let run = JobRun {
        id: id.clone(),
        name: name.clone(),
        attempt,
        run_id: run_id.clone(),
    };
    let counters = &jobs.inner.counters;
    counters.running.fetch_add(1, Ordering::Relaxed);
    tracing::info!(job = %id, job_name = %name, run_id = %run_id, attempt, "job started");
    let limit = definition.options.timeout.min(lease);
    let handler = (definition.handler)(run, args);
    let outcome = crate::request_scope::scope(run_id.clone(), async {
        match tokio::time::timeout(limit, std::panic::AssertUnwindSafe(handler).catch_unwind())
            .await
        {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err("the job's handler panicked".to_owned()),
            Err(_) => Err(format!(
                "the run did not finish within its timeout ({} ms)",
                limit.as_millis()
            )),
        }
    })
    .await;
    counters.running.fetch_sub(1, Ordering::Relaxed);
    jobs.record_schedule_run(&doc, &run_id, &outcome).await;
    let recorded = match outcome {
        Ok(()) => {
            counters.succeeded.fetch_add(1, Ordering::Relaxed);
            // From the due time of the first try (a retry's runAt is later).
            let due = doc
                .get("dueAt")
                .and_then(Value::as_i64)
                .unwrap_or_else(now_ms);
            jobs.done(&name, due);
            tracing::info!(job = %id, job_name = %name, run_id = %run_id, attempt, "job done");
            done(jobs, owner, &id).await
        }
        Err(reason)
            if attempt <= definition.options.retries && young(&doc, definition.options.max_age) =>
        {
            counters.retried.fetch_add(1, Ordering::Relaxed);
            let wait = definition.options.delay(attempt);
            tracing::warn!(job = %id, job_name = %name, run_id = %run_id, attempt, retry_in_ms = millis(wait), error = %reason, "job failed; it will be tried again");
            retry_later(jobs, owner, &id, wait, &reason).await
        }
        Err(reason) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            tracing::error!(job = %id, job_name = %name, run_id = %run_id, attempt, error = %reason, "job failed its last try");
            failed(jobs, owner, &id, attempt, doc, &reason).await
        }
    };
    if let Err(e) = recorded {
        // The lease ends and the job runs again.
        tracing::warn!(job = %id, run_id = %run_id, error = %e, "cannot record a job's outcome");
    }
}

/// True when job `doc` was enqueued less than `max_age` ago (always without a maximum).
fn young(doc: &Document, max_age: Option<Duration>) -> bool {
    let Some(max_age) = max_age else {
        return true;
    };
    let created = doc.get("created").and_then(Value::as_i64).unwrap_or(0);
    now_ms().saturating_sub(created) < millis(max_age)
}

/// The selector of job `id` while `owner` holds it.
fn held(id: &str, owner: &str) -> Result<Selector> {
    Ok(Selector::parse(&json!({"_id": id, "owner": owner}))?)
}

async fn done(jobs: &Jobs, owner: &str, id: &str) -> Result<()> {
    jobs.inner.store.remove(JOBS, &held(id, owner)?).await?;
    Ok(())
}

async fn retry_later(
    jobs: &Jobs,
    owner: &str,
    id: &str,
    wait: Duration,
    reason: &str,
) -> Result<()> {
    let next = Update::parse(&json!({
        "$set": {"runAt": now_ms().saturating_add(millis(wait)), "lease": 0, "lastError": excerpt(reason)},
        "$unset": {"owner": ""},
    }))?;
    jobs.inner
        .store
        .update(JOBS, &held(id, owner)?, &next, UpdateOptions::default())
        .await?;
    Ok(())
}

/// Moves job `id` to [`FAILED_JOBS`] (under a new id, so its key is free again); when that
/// holds [`JobsConfig::max_jobs`] already, the job is dropped instead (and logged), so a job
/// that fails in a loop cannot fill the disk either.
async fn failed(
    jobs: &Jobs,
    owner: &str,
    id: &str,
    attempt: u32,
    mut doc: Document,
    reason: &str,
) -> Result<()> {
    let max = jobs.config().max_jobs;
    if jobs
        .inner
        .store
        .count(FAILED_JOBS, &Selector::all())
        .await?
        >= max
    {
        tracing::error!(job = %id, max_jobs = max, "a failed job was dropped: {max} failed jobs are kept already (retry or drop them on the admin page)");
        jobs.inner.store.remove(JOBS, &held(id, owner)?).await?;
        return Ok(());
    }
    doc.insert("_id".into(), json!(portico_store::new_id()));
    doc.insert("jobId".into(), json!(id));
    doc.insert("lastError".into(), json!(excerpt(reason)));
    doc.insert("failedAt".into(), json!(now_ms()));
    doc.insert("attempts".into(), json!(attempt));
    doc.remove("owner");
    doc.remove("lease");
    let ops = vec![
        BatchOp::Remove {
            collection: JOBS.into(),
            selector: held(id, owner)?,
        },
        BatchOp::Insert {
            collection: FAILED_JOBS.into(),
            doc,
        },
    ];
    jobs.inner
        .store
        .batch(ops)
        .await
        .map_err(|e| crate::Error::Internal(e.to_string()))?;
    Ok(())
}

/// The first 2,000 bytes of an error, at a character boundary.
fn excerpt(reason: &str) -> String {
    let mut end = reason.len().min(2000);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_owned()
}
