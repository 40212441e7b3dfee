//! Durable jobs on every backend: enqueued jobs run once, a failing job is retried then kept
//! as failed, keys make an enqueue idempotent, limits refuse with a clear error, and a job a
//! before hook enqueues is stored with the write (none for a refused write).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_platform::jobs::{
    CronSpec, EnqueueOptions, FAILED_JOBS, JOBS, JobOptions, JobsConfig, SCHEDULES,
};
use portico_platform::{
    Document, Error, HookOp, HookWhen, MethodError, Platform, Selector, WriteHooks, hook_refusal,
};
use serde_json::{Value, json};

use crate::common::{TestResult, doc};

fn quick() -> JobsConfig {
    let mut config = JobsConfig::default();
    config.poll = Duration::from_millis(50);
    config.lease = Duration::from_secs(5);
    config
}

/// Waits until `done` holds, for at most 10 s.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !done().await {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn stored(p: &Platform, collection: &str) -> u64 {
    p.store().count(collection, &Selector::all()).await.unwrap()
}

/// A before-insert hook that enqueues `audit` with the document's title, and refuses a
/// document whose title is "refuse" after enqueueing.
struct EnqueueingHook(Platform);

impl WriteHooks for EnqueueingHook {
    fn watches(&self, when: HookWhen, op: HookOp) -> bool {
        when == HookWhen::Before && op == HookOp::Insert
    }
    fn before_insert(
        &self,
        _user_id: Option<String>,
        doc: Document,
    ) -> BoxFuture<'static, portico_platform::Result<Document>> {
        let platform = self.0.clone();
        async move {
            let title = doc.get("title").cloned().unwrap_or(Value::Null);
            platform
                .jobs()
                .enqueue("audit", json!({"title": title}), EnqueueOptions::new())
                .await?;
            if title == "refuse" {
                return Err(hook_refusal(MethodError::new("refused", "no")));
            }
            Ok(doc)
        }
        .boxed()
    }
    fn before_update(
        &self,
        _: Option<String>,
        _: Document,
        _: Vec<String>,
        modifier: Value,
    ) -> BoxFuture<'static, portico_platform::Result<Value>> {
        async move { Ok(modifier) }.boxed()
    }
    fn before_remove(
        &self,
        _: Option<String>,
        _: Document,
    ) -> BoxFuture<'static, portico_platform::Result<()>> {
        async { Ok(()) }.boxed()
    }
    fn after_insert(&self, _: Option<String>, _: Document) -> BoxFuture<'static, ()> {
        async {}.boxed()
    }
    fn after_update(
        &self,
        _: Option<String>,
        _: Document,
        _: Document,
        _: Vec<String>,
        _: Value,
    ) -> BoxFuture<'static, ()> {
        async {}.boxed()
    }
    fn after_remove(&self, _: Option<String>, _: Document) -> BoxFuture<'static, ()> {
        async {}.boxed()
    }
}

on_every_backend! {
    async fn every_enqueued_job_runs_once(p: Platform) -> TestResult {
        let runs = Arc::new(AtomicU32::new(0));
        let seen = runs.clone();
        let effects = p.collection("effects");
        p.jobs().define("count", JobOptions::default(), move |run, args| {
            let seen = seen.clone();
            let effects = effects.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                effects
                    .insert(doc(json!({"n": args["n"], "job": run.id})))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
        })?;
        for n in 0..40 {
            p.jobs().enqueue("count", json!({"n": n}), EnqueueOptions::new()).await?;
        }
        let worker = p.jobs().start(quick());
        eventually("40 runs", async || stored(&p, JOBS).await == 0).await;
        worker.stop(Duration::from_secs(5)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 40);
        assert_eq!(stored(&p, "effects").await, 40);
        assert_eq!(p.jobs().counts().succeeded, 40);
        Ok(())
    }

    async fn a_failing_job_is_retried_then_kept_as_failed(p: Platform) -> TestResult {
        let tries = Arc::new(AtomicU32::new(0));
        let seen = tries.clone();
        let mut options = JobOptions::default();
        options.retries = 2;
        options.retry_delay = Duration::from_millis(10);
        p.jobs().define("flaky", options, move |run, _args| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Err(format!("boom on try {}", run.attempt))
            }
        })?;
        let id = p.jobs().enqueue("flaky", json!(null), EnqueueOptions::new()).await?;
        let worker = p.jobs().start(quick());
        eventually("the job to fail", async || stored(&p, FAILED_JOBS).await == 1).await;
        worker.stop(Duration::from_secs(5)).await;
        assert_eq!(tries.load(Ordering::SeqCst), 3, "one run and two retries");
        assert_eq!(stored(&p, JOBS).await, 0);
        let failed = p.store().find_one(FAILED_JOBS, &Selector::all()).await?.unwrap();
        assert_eq!(failed["jobId"], json!(id));
        assert_eq!(failed["attempts"], json!(3));
        assert_eq!(failed["lastError"], json!("boom on try 3"));
        // An operator puts it back: it runs again (and fails again, three more tries).
        let failed_id = failed["_id"].as_str().unwrap().to_owned();
        assert!(p.jobs().retry_failed(&failed_id).await?);
        assert_eq!(stored(&p, FAILED_JOBS).await, 0);
        let worker = p.jobs().start(quick());
        eventually("the job to fail again", async || stored(&p, FAILED_JOBS).await == 1).await;
        worker.stop(Duration::from_secs(5)).await;
        assert_eq!(tries.load(Ordering::SeqCst), 6);
        Ok(())
    }

    async fn a_slow_job_times_out_and_counts_as_a_failed_try(p: Platform) -> TestResult {
        let mut options = JobOptions::default();
        options.retries = 0;
        options.timeout = Duration::from_millis(100);
        p.jobs().define("slow", options, |_run, _args| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        })?;
        p.jobs().enqueue("slow", json!({}), EnqueueOptions::new()).await?;
        let worker = p.jobs().start(quick());
        eventually("the job to time out", async || stored(&p, FAILED_JOBS).await == 1).await;
        worker.stop(Duration::from_secs(5)).await;
        let failed = p.store().find_one(FAILED_JOBS, &Selector::all()).await?.unwrap();
        let reason = failed["lastError"].as_str().unwrap_or_default();
        assert!(reason.contains("timeout (100 ms)"), "{reason}");
        Ok(())
    }

    async fn keys_dedupe_limits_refuse_and_undefined_names_are_errors(p: Platform) -> TestResult {
        p.jobs().define("mail", JobOptions::default(), |_r, _a| async { Ok(()) })?;
        let later = EnqueueOptions::new().after(Duration::from_secs(3600));
        let a = p.jobs().enqueue("mail", json!(1), later.clone().key("user-7")).await?;
        let b = p.jobs().enqueue("mail", json!(2), later.clone().key("user-7")).await?;
        assert_eq!(a, b, "the second enqueue with the key is a no-op");
        assert_eq!(stored(&p, JOBS).await, 1);
        let missing = p.jobs().enqueue("nope", json!(1), EnqueueOptions::new()).await;
        assert!(
            matches!(&missing, Err(Error::InvalidArgument(m)) if m.contains("\"nope\"")),
            "{missing:?}"
        );
        let mut config = JobsConfig::default();
        config.max_args_bytes = 100;
        config.max_jobs = 3;
        p.jobs().set_config(config);
        let big = p.jobs().enqueue("mail", json!("x".repeat(200)), later.clone()).await;
        assert!(
            matches!(&big, Err(Error::InvalidArgument(m)) if m.contains("max_args_bytes")),
            "{big:?}"
        );
        p.jobs().enqueue("mail", json!(3), later.clone()).await?;
        p.jobs().enqueue("mail", json!(4), later.clone()).await?;
        let full = p.jobs().enqueue("mail", json!(5), later).await;
        assert!(matches!(full, Err(Error::TooManyJobs(3))), "{full:?}");
        assert_eq!(stored(&p, JOBS).await, 3);
        Ok(())
    }

    async fn a_hooks_job_commits_with_its_write_and_a_refused_write_leaves_none(p: Platform) -> TestResult {
        p.jobs().define("audit", JobOptions::default(), |_r, _a| async { Ok(()) })?;
        let posts = p.collection("posts");
        posts.set_hooks(Arc::new(EnqueueingHook(p.clone())));
        posts.insert(doc(json!({"title": "kept"}))).await?;
        let refused = posts.insert(doc(json!({"title": "refuse"}))).await;
        assert!(refused.is_err());
        // A write the store refuses after the hooks ran (a duplicate id) leaves none either.
        posts.insert(doc(json!({"_id": "same", "title": "first"}))).await?;
        let duplicate = posts.insert(doc(json!({"_id": "same", "title": "second"}))).await;
        assert!(duplicate.is_err());
        let jobs = p.store().find(JOBS, &portico_platform::Query::default()).await?;
        let mut titles: Vec<Value> = jobs.iter().map(|j| j["args"]["title"].clone()).collect();
        titles.sort_by_key(ToString::to_string);
        assert_eq!(titles, vec![json!("first"), json!("kept")]);
        assert_eq!(posts.count(&Selector::all()).await?, 2);
        Ok(())
    }
}

/// Records each run of a schedule's job (its due time) in `ticks`.
fn ticking(p: &Platform, name: &str, expression: &str) -> TestResult {
    let ticks = p.collection("ticks");
    p.jobs().cron(
        name,
        CronSpec::parse(expression, None)?,
        JobOptions::default(),
        move |_run, args| {
            let ticks = ticks.clone();
            async move {
                ticks
                    .insert(doc(
                        json!({"due": args["due"], "schedule": args["schedule"]}),
                    ))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
        },
    )?;
    Ok(())
}

async fn dues(p: &Platform) -> Vec<i64> {
    let mut dues: Vec<i64> = p
        .store()
        .find("ticks", &portico_platform::Query::default())
        .await
        .unwrap()
        .iter()
        .filter_map(|t| t["due"].as_i64())
        .collect();
    dues.sort_unstable();
    dues
}

on_every_backend! {
    async fn a_missed_due_time_runs_once_at_start_and_a_new_schedule_waits(p: Platform) -> TestResult {
        ticking(&p, "hourly", "0 * * * *")?;
        ticking(&p, "fresh", "0 * * * *")?;
        // "hourly" was last enqueued five hours ago: every instance was down since.
        let now = chrono::Utc::now().timestamp_millis();
        p.store()
            .insert(SCHEDULES, doc(json!({"_id": "hourly", "last": now - 5 * 3_600_000})))
            .await?;
        let worker = p.jobs().start(quick());
        eventually("the catch-up run", async || dues(&p).await.len() == 1).await;
        // A few more passes of the worker: nothing more runs.
        tokio::time::sleep(Duration::from_millis(300)).await;
        worker.stop(Duration::from_secs(5)).await;
        let latest = CronSpec::parse("0 * * * *", None)?.latest_due(now).unwrap();
        assert_eq!(dues(&p).await, vec![latest], "one run, for the latest due time");
        let hourly = p.store().get(SCHEDULES, "hourly").await?.unwrap();
        assert_eq!(hourly["last"], json!(latest));
        assert_eq!(hourly["lastResult"], json!("ok"));
        // "fresh" was seen for the first time: it starts from now and has not run.
        let fresh = p.store().get(SCHEDULES, "fresh").await?.unwrap();
        assert_eq!(fresh["last"], json!(latest));
        assert!(fresh.get("lastRunAt").is_none());
        let listed = p.jobs().schedules();
        assert_eq!(listed.len(), 2);
        assert!(listed[0].next_due_ms.unwrap() > now);
        Ok(())
    }

    async fn a_schedule_due_every_second_runs_once_per_due_time_with_two_workers(p: Platform) -> TestResult {
        ticking(&p, "second", "* * * * * *")?;
        // Two workers on one store, as two instances are.
        let a = p.jobs().start(quick());
        let b = p.jobs().start(quick());
        tokio::time::sleep(Duration::from_millis(3500)).await;
        a.stop(Duration::from_secs(5)).await;
        b.stop(Duration::from_secs(5)).await;
        let dues = dues(&p).await;
        assert!(dues.len() >= 2, "{dues:?}");
        for pair in dues.windows(2) {
            assert_eq!(pair[1] - pair[0], 1000, "one run per due time: {dues:?}");
        }
        Ok(())
    }
}

on_every_backend! {
    async fn jobs_held_back_behind_a_failing_one_of_their_group_do_not_starve_others(p: Platform) -> TestResult {
        let mut options = JobOptions::default();
        options.retry_delay = Duration::from_secs(3600);
        p.jobs().define("ordered", options, |_run, _args| async { Err("down".to_owned()) })?;
        let runs = Arc::new(AtomicU32::new(0));
        let seen = runs.clone();
        p.jobs().define("free", JobOptions::default(), move |_run, _args| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })?;
        // More held-back jobs than one read of the queue takes, all due before the free one.
        for n in 0..80 {
            let mut job = p
                .jobs()
                .prepare_job("ordered", json!({"n": n}), &EnqueueOptions::new())
                .await?;
            portico_platform::jobs::set_group(&mut job, "one document");
            p.store().insert(JOBS, job).await?;
        }
        p.jobs().enqueue("free", json!({}), EnqueueOptions::new()).await?;
        let worker = p.jobs().start(quick());
        eventually("the free job", async || runs.load(Ordering::SeqCst) == 1).await;
        worker.stop(Duration::from_secs(5)).await;
        // The first of the group failed once and waits an hour; the others were not run.
        let first = p
            .store()
            .find_one(JOBS, &Selector::parse(&json!({"args.n": 0}))?)
            .await?
            .unwrap();
        assert_eq!(first["attempts"], json!(1));
        let untried = p
            .store()
            .count(JOBS, &Selector::parse(&json!({"attempts": 0}))?)
            .await?;
        assert_eq!(untried, 79);
        Ok(())
    }
}
