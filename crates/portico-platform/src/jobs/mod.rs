//! Durable jobs: work handed to later, kept in the store until it has run.
//!
//! [`Jobs::define`] names a handler and how it is retried; [`Jobs::enqueue`] stores a job (a
//! document of [`JOBS`]) due now, at a time or after a delay. A worker ([`Jobs::start`], one per
//! instance, `[jobs] concurrency` jobs at a time) claims due jobs with a lease, runs them and
//! removes them; a job that fails is tried again after a backoff, and one that failed every try
//! moves to [`FAILED_JOBS`]. A job whose instance died keeps its lease until it ends, then any
//! instance takes it again: a job runs at least once, and once in the usual case.
//!
//! The claim is a conditional update of the job's document (`{_id, lease: <the lease read>}`
//! to a lease in the future), which the store applies atomically (a row lock on PostgreSQL), so
//! of several instances polling one database exactly one claims a job.
//!
//! A job enqueued by a write's before hook is stored in the write's own store transaction
//! (see `scope.rs`): a committed write has its jobs, a failed or refused one has none.
//!
//! | part | file |
//! |---|---|
//! | definitions, enqueue, limits | `mod.rs` |
//! | schedules: cron expressions, one job per due time | `cron.rs` |
//! | the write a hook's enqueue joins | `scope.rs` |
//! | the worker: claim, run, retry, fail | `worker.rs` |

mod cron;
mod scope;
mod worker;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use crate::locks;

use futures::future::BoxFuture;
use portico_store::{BatchOp, Document, Selector, Store};
use serde_json::{Value, json};

use crate::time::now_ms;
use crate::{Error, Result};

pub use cron::{CronSpec, SCHEDULES, ScheduleInfo};
pub(crate) use scope::collect;
pub use scope::current as current_write;
pub use worker::JobWorker;

/// The collection of pending and running jobs.
pub const JOBS: &str = "portico_jobs";
/// The collection of jobs that failed every try (kept for operators to retry or drop).
pub const FAILED_JOBS: &str = "portico_jobs_failed";

/// The longest a job's name or key may be, in bytes.
pub const MAX_NAME_LEN: usize = 200;

/// How the wait between two tries of a failing job grows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backoff {
    /// Doubles each time, from [`JobOptions::retry_delay`] up to an hour (with jitter).
    #[default]
    Exponential,
    /// [`JobOptions::retry_delay`] every time.
    Fixed,
}

impl Backoff {
    /// `"exponential"` or `"fixed"`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another name.
    pub fn parse(name: &str) -> Result<Backoff> {
        match name {
            "exponential" => Ok(Backoff::Exponential),
            "fixed" => Ok(Backoff::Fixed),
            other => Err(Error::InvalidArgument(format!(
                "backoff must be \"exponential\" or \"fixed\", not {other:?}"
            ))),
        }
    }
}

/// How a defined job is run and retried.
///
/// Built with its setters, one a field:
///
/// ```
/// use std::time::Duration;
/// use portico_platform::jobs::JobOptions;
///
/// let options = JobOptions::default().retries(5).timeout(Duration::from_secs(30));
/// assert_eq!(options.retries, 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobOptions {
    /// How many times a failing job is tried again (so at most `retries + 1` runs). Default 5.
    pub retries: u32,
    /// How the wait between tries grows. Default exponential.
    pub backoff: Backoff,
    /// The first wait between tries. Default 1 s.
    pub retry_delay: Duration,
    /// The longest one run may take; past it the run fails (and is retried). Default 30 s.
    pub timeout: Duration,
    /// When set, a failing job is tried again only while it is younger than this (counted
    /// from its enqueue), whatever `retries` allows. Default none.
    pub max_age: Option<Duration>,
}

impl JobOptions {
    /// Sets [`retries`](JobOptions::retries): how many times a failing job is tried again (so at
    /// most `retries + 1` runs).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Sets [`backoff`](JobOptions::backoff): how the wait between tries grows.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets [`retry_delay`](JobOptions::retry_delay): the first wait between tries.
    pub fn retry_delay(mut self, retry_delay: Duration) -> Self {
        self.retry_delay = retry_delay;
        self
    }

    /// Sets [`timeout`](JobOptions::timeout): the longest one run may take.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`max_age`](JobOptions::max_age): when set, a failing job is tried again only while it
    /// is younger than this (counted from its enqueue), whatever `retries` allows (to `Some`).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = Some(max_age);
        self
    }
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            retries: 5,
            backoff: Backoff::Exponential,
            retry_delay: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
            max_age: None,
        }
    }
}

impl JobOptions {
    /// The wait before try `attempt + 1`, after `attempt` failed tries (from 1), with up to a
    /// fifth of it added at random for an exponential backoff (so retries of many jobs that
    /// failed together spread out).
    pub fn delay(&self, attempt: u32) -> Duration {
        match self.backoff {
            Backoff::Fixed => self.retry_delay,
            Backoff::Exponential => {
                let factor = 1u32
                    .checked_shl(attempt.saturating_sub(1).min(20))
                    .unwrap_or(u32::MAX);
                let base = self
                    .retry_delay
                    .checked_mul(factor)
                    .unwrap_or(MAX_RETRY_DELAY)
                    .min(MAX_RETRY_DELAY);
                let jitter = base.as_millis() / 5;
                let extra = if jitter == 0 {
                    0
                } else {
                    rand::random_range(0..=u64::try_from(jitter).unwrap_or(u64::MAX))
                };
                base.saturating_add(Duration::from_millis(extra))
            }
        }
    }
}

/// The longest wait between two tries of an exponential backoff.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(3600);

/// When and how a job is enqueued.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnqueueOptions {
    /// When the job falls due, in milliseconds since the epoch; now when `None`.
    pub run_at_ms: Option<i64>,
    /// Makes the enqueue idempotent: while a job of this name and key is pending (or running),
    /// enqueueing another is a no-op that answers the first one's id.
    pub key: Option<String>,
}

impl EnqueueOptions {
    /// Due now, without a key.
    pub fn new() -> EnqueueOptions {
        EnqueueOptions::default()
    }

    /// Due after `delay` from now.
    #[must_use]
    pub fn after(mut self, delay: Duration) -> EnqueueOptions {
        let ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
        self.run_at_ms = Some(now_ms().saturating_add(ms));
        self
    }

    /// Due at `ms` milliseconds since the epoch.
    #[must_use]
    pub fn at(mut self, ms: i64) -> EnqueueOptions {
        self.run_at_ms = Some(ms);
        self
    }

    /// With the idempotency key `key`.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> EnqueueOptions {
        self.key = Some(key.into());
        self
    }
}

/// Limits and pace of the job worker (`[jobs]` in the config).
///
/// Built with its setters, one a field:
///
/// ```
/// use std::time::Duration;
/// use portico_platform::jobs::JobsConfig;
///
/// let config = JobsConfig::default().concurrency(2).poll(Duration::from_millis(200));
/// assert_eq!(config.concurrency, 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobsConfig {
    /// How many jobs one instance runs at once. Default 4.
    pub concurrency: usize,
    /// How long a claimed job stays with its instance before another may take it; a run is
    /// stopped when its lease ends. Default 60 s (a job's `timeout` longer than it is cut to it).
    pub lease: Duration,
    /// How many jobs may be stored at once (pending and running ones: an enqueue past it
    /// fails), and how many failed ones are kept (past it a job that fails its last try is
    /// dropped, and logged). Checked before each insert, so writers at the same moment may
    /// pass it by as many as they are. Default 100,000.
    pub max_jobs: u64,
    /// The largest a job's arguments may be, as JSON text. Default 64 KiB.
    pub max_args_bytes: usize,
    /// How often the worker looks for due jobs when no local enqueue wakes it. Default 1 s.
    pub poll: Duration,
    /// The first wait before a webhook delivery is tried again (it doubles, with jitter, up
    /// to an hour, for 24 hours). Default 5 s.
    pub webhook_retry: Duration,
    /// How long a webhook receiver has to answer one try. Default 15 s.
    pub webhook_timeout: Duration,
}

impl JobsConfig {
    /// Sets [`concurrency`](JobsConfig::concurrency): how many jobs one instance runs at once.
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Sets [`lease`](JobsConfig::lease): how long a claimed job stays with its instance before
    /// another may take it.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Sets [`max_jobs`](JobsConfig::max_jobs): how many jobs may be stored at once (pending and
    /// running ones.
    pub fn max_jobs(mut self, max_jobs: u64) -> Self {
        self.max_jobs = max_jobs;
        self
    }

    /// Sets [`max_args_bytes`](JobsConfig::max_args_bytes): the largest a job's arguments may be,
    /// as JSON text.
    pub fn max_args_bytes(mut self, max_args_bytes: usize) -> Self {
        self.max_args_bytes = max_args_bytes;
        self
    }

    /// Sets [`poll`](JobsConfig::poll): how often the worker looks for due jobs when no local
    /// enqueue wakes it.
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Sets [`webhook_retry`](JobsConfig::webhook_retry): the first wait before a webhook delivery
    /// is tried again (it doubles, with jitter, up to an hour, for 24 hours).
    pub fn webhook_retry(mut self, webhook_retry: Duration) -> Self {
        self.webhook_retry = webhook_retry;
        self
    }

    /// Sets [`webhook_timeout`](JobsConfig::webhook_timeout): how long a webhook receiver has to
    /// answer one try.
    pub fn webhook_timeout(mut self, webhook_timeout: Duration) -> Self {
        self.webhook_timeout = webhook_timeout;
        self
    }
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            concurrency: 4,
            lease: Duration::from_secs(60),
            max_jobs: 100_000,
            max_args_bytes: 64 * 1024,
            poll: Duration::from_secs(1),
            webhook_retry: Duration::from_secs(5),
            webhook_timeout: Duration::from_secs(15),
        }
    }
}

/// What a handler is told about the run it does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobRun {
    /// The job's id (the same on every try).
    pub id: String,
    /// The job's name.
    pub name: String,
    /// Which try this is, from 1.
    pub attempt: u32,
    /// This run's own id, which its log lines carry.
    pub run_id: String,
}

/// A job's handler: runs the job with its arguments; an error fails the run (it is retried).
pub type JobHandler =
    Arc<dyn Fn(JobRun, Value) -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

#[derive(Clone)]
struct Definition {
    options: JobOptions,
    handler: JobHandler,
}

/// Counters of this instance's worker, for `/metrics`.
#[derive(Debug, Default)]
struct Counters {
    running: AtomicU64,
    succeeded: AtomicU64,
    retried: AtomicU64,
    failed: AtomicU64,
}

/// What this instance's worker has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobCounts {
    /// Runs under way now.
    pub running: u64,
    /// Runs that succeeded.
    pub succeeded: u64,
    /// Runs that failed and were scheduled again.
    pub retried: u64,
    /// Jobs that failed their last try.
    pub failed: u64,
}

/// What is told of each job done ([`Jobs::observe_done`]).
type DoneObserver = Arc<dyn Fn(&str, Duration) + Send + Sync>;

struct Inner {
    store: Arc<dyn Store>,
    observer: RwLock<Option<DoneObserver>>,
    definitions: RwLock<BTreeMap<String, Definition>>,
    schedules: RwLock<BTreeMap<String, cron::Schedule>>,
    config: RwLock<JobsConfig>,
    counters: Counters,
}

/// The job definitions and queue of a platform ([`crate::Platform::jobs`]). Cheap to clone.
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("defined", &self.names())
            .finish_non_exhaustive()
    }
}

/// Wakes the workers of this process: a job was stored.
pub(crate) fn wake() {
    woken().notify_waiters();
}

/// What a worker waits on between reads.
fn woken() -> &'static tokio::sync::Notify {
    static WOKEN: std::sync::OnceLock<tokio::sync::Notify> = std::sync::OnceLock::new();
    WOKEN.get_or_init(tokio::sync::Notify::new)
}

impl Jobs {
    pub(crate) fn new(store: Arc<dyn Store>) -> Jobs {
        Jobs {
            inner: Arc::new(Inner {
                store,
                observer: RwLock::default(),
                definitions: RwLock::default(),
                schedules: RwLock::default(),
                config: RwLock::new(JobsConfig::default()),
                counters: Counters::default(),
            }),
        }
    }

    /// Creates the index the worker's reads use.
    pub(crate) async fn prepare(&self) -> Result<()> {
        self.inner.store.ensure_index(JOBS, "runAt").await?;
        self.inner.store.ensure_index(JOBS, "group").await?;
        Ok(())
    }

    pub(crate) fn config(&self) -> JobsConfig {
        *self
            .inner
            .config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the limits enqueues are held to (the worker's pace is given to [`Jobs::start`]).
    pub fn set_config(&self, config: JobsConfig) {
        *self
            .inner
            .config
            .write()
            .unwrap_or_else(PoisonError::into_inner) = config;
    }

    /// Defines the job `name`: `handler` runs each job of that name with its arguments.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when `name` is defined already; [`Error::InvalidArgument`] for an
    /// empty or too long name.
    pub fn define<F, Fut>(&self, name: &str, options: JobOptions, handler: F) -> Result<()>
    where
        F: Fn(JobRun, Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::result::Result<(), String>> + Send + 'static,
    {
        check_name("job name", name)?;
        let handler: JobHandler = Arc::new(move |run, args| Box::pin(handler(run, args)));
        let mut definitions = self
            .inner
            .definitions
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if definitions.contains_key(name) {
            return Err(Error::Duplicate(format!("job {name:?} is defined already")));
        }
        definitions.insert(name.to_owned(), Definition { options, handler });
        Ok(())
    }

    /// The names of the defined jobs, sorted.
    pub fn names(&self) -> Vec<String> {
        self.inner
            .definitions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    fn definition(&self, name: &str) -> Option<Definition> {
        self.inner
            .definitions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Enqueues the job `name` with `args`; returns its id. Inside a write's before hook the
    /// job is stored with the write, in its transaction; elsewhere at once.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a job not defined, arguments over
    /// [`JobsConfig::max_args_bytes`] or a bad key; [`Error::TooManyJobs`] when
    /// [`JobsConfig::max_jobs`] are stored; store failures.
    pub async fn enqueue(
        &self,
        name: &str,
        args: Value,
        options: EnqueueOptions,
    ) -> Result<String> {
        self.enqueue_for(None, name, args, options).await
    }

    /// [`Jobs::enqueue`] from a script's host operation: `write` is the number of the write
    /// whose hook made the call ([`current_write`] as the hook was handed it), if any.
    ///
    /// # Errors
    /// As [`Jobs::enqueue`].
    pub async fn enqueue_for(
        &self,
        write: Option<u64>,
        name: &str,
        args: Value,
        options: EnqueueOptions,
    ) -> Result<String> {
        let doc = self.job_document(name, args, &options, true)?;
        let id = document_id(&doc);
        self.check_room().await?;
        let Some(doc) = scope::keep(write, doc) else {
            return Ok(id);
        };
        match self.inner.store.insert(JOBS, doc).await {
            Ok(_) => {}
            Err(portico_store::Error::DuplicateId { .. }) if options.key.is_some() => {}
            Err(e) => return Err(e.into()),
        }
        wake();
        Ok(id)
    }

    /// The stored document of a new job `name` with `args`, for a writer that stores it
    /// itself in a transaction of its own (a [`crate::WriteEvents`] source): checked as
    /// [`Jobs::enqueue`] checks, but for the size of `args` (made from a stored document,
    /// which the store bounds).
    ///
    /// # Errors
    /// As [`Jobs::enqueue`].
    pub async fn prepare_job(
        &self,
        name: &str,
        args: Value,
        options: &EnqueueOptions,
    ) -> Result<Document> {
        let doc = self.job_document(name, args, options, false)?;
        self.check_room().await?;
        Ok(doc)
    }

    /// The stored document of a new job.
    fn job_document(
        &self,
        name: &str,
        args: Value,
        options: &EnqueueOptions,
        limit_args: bool,
    ) -> Result<Document> {
        if self.definition(name).is_none() {
            return Err(Error::InvalidArgument(format!(
                "no job is defined with the name {name:?} (jobs.define it first)"
            )));
        }
        let config = self.config();
        let size = serde_json::to_string(&args).map_or(usize::MAX, |t| t.len());
        if limit_args && size > config.max_args_bytes {
            return Err(Error::InvalidArgument(format!(
                "the arguments of job {name:?} are {size} bytes as JSON, over the limit of {} (max_args_bytes)",
                config.max_args_bytes
            )));
        }
        let id = match &options.key {
            Some(key) => {
                check_name("job key", key)?;
                // One id per name and key: a second enqueue is a duplicate id, a no-op.
                format!("{name}:{key}")
            }
            None => portico_store::new_id(),
        };
        let now = now_ms();
        let mut doc = Document::new();
        doc.insert("_id".into(), json!(id));
        doc.insert("name".into(), json!(name));
        doc.insert("args".into(), args);
        let due = options.run_at_ms.unwrap_or(now);
        doc.insert("runAt".into(), json!(due));
        doc.insert("dueAt".into(), json!(due));
        doc.insert("created".into(), json!(now));
        doc.insert("lease".into(), json!(0));
        doc.insert("attempts".into(), json!(0));
        Ok(doc)
    }

    /// Refuses an enqueue when [`JobsConfig::max_jobs`] are stored.
    async fn check_room(&self) -> Result<()> {
        let max = self.config().max_jobs;
        let stored = self.inner.store.count(JOBS, &Selector::all()).await?;
        if stored >= max {
            return Err(Error::TooManyJobs(max));
        }
        Ok(())
    }

    /// How many jobs are stored now: pending (including running) and failed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn stored(&self) -> Result<(u64, u64)> {
        let store = &self.inner.store;
        let pending = store.count(JOBS, &Selector::all()).await?;
        let failed = store.count(FAILED_JOBS, &Selector::all()).await?;
        Ok((pending, failed))
    }

    /// What this instance's worker has done since it started.
    pub fn counts(&self) -> JobCounts {
        let c = &self.inner.counters;
        JobCounts {
            running: c.running.load(Ordering::Relaxed),
            succeeded: c.succeeded.load(Ordering::Relaxed),
            retried: c.retried.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        }
    }

    /// Calls `observer` with the name of each job this instance's worker runs to success and
    /// how long it took from its due time to the end of its last run (for a webhook
    /// delivery, [`crate::DELIVERY_JOB`]: from the write to the receiver's 2xx).
    pub fn observe_done(&self, observer: impl Fn(&str, Duration) + Send + Sync + 'static) {
        *self
            .inner
            .observer
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(observer));
    }

    /// Forgets every job definition, schedule and the observer (when the platform closes):
    /// what their handlers captured, a platform handle included, is let go.
    pub(crate) fn release(&self) {
        let definitions = std::mem::take(&mut *locks::write(&self.inner.definitions));
        let schedules = std::mem::take(&mut *locks::write(&self.inner.schedules));
        let observer = locks::write(&self.inner.observer).take();
        drop((definitions, schedules, observer));
    }

    /// Tells the observer job `name`, due at `due_ms`, is done.
    fn done(&self, name: &str, due_ms: i64) {
        let observer = self
            .inner
            .observer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(observer) = observer {
            let ms = u64::try_from(now_ms().saturating_sub(due_ms)).unwrap_or(0);
            observer(name, Duration::from_millis(ms));
        }
    }

    /// Puts the failed job `id` back in the queue, due now, with its tries counted from zero;
    /// false when there is no such failed job.
    ///
    /// # Errors
    /// Store failures; a conflict when a job with its key is pending again.
    pub async fn retry_failed(&self, id: &str) -> Result<bool> {
        let store = &self.inner.store;
        let Some(mut doc) = store.get(FAILED_JOBS, id).await? else {
            return Ok(false);
        };
        let job_id = doc
            .remove("jobId")
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(portico_store::new_id);
        doc.insert("_id".into(), json!(job_id));
        doc.insert("runAt".into(), json!(now_ms()));
        doc.insert("lease".into(), json!(0));
        doc.insert("attempts".into(), json!(0));
        doc.remove("failedAt");
        let ops = vec![
            BatchOp::Remove {
                collection: FAILED_JOBS.into(),
                selector: Selector::by_id(id),
            },
            BatchOp::Insert {
                collection: JOBS.into(),
                doc,
            },
        ];
        store
            .batch(ops)
            .await
            .map_err(|e| Error::InvalidArgument(format!("cannot retry job {id:?}: {e}")))?;
        wake();
        Ok(true)
    }

    /// Removes the pending job `id` (a running one finishes its run, and is not tried again
    /// if it fails), or the failed job `id`; false when there is neither.
    ///
    /// # Errors
    /// Store failures.
    pub async fn cancel(&self, id: &str) -> Result<bool> {
        let store = &self.inner.store;
        let pending = store.remove(JOBS, &Selector::by_id(id)).await?;
        let failed = store.remove(FAILED_JOBS, &Selector::by_id(id)).await?;
        Ok(pending + failed > 0)
    }

    /// Starts this instance's worker with `config` (which also sets the enqueue limits).
    pub fn start(&self, config: JobsConfig) -> JobWorker {
        self.set_config(config);
        JobWorker::start(self.clone(), config)
    }
}

/// Puts job `doc` in the ordered group `group`: of a group's pending jobs, only the one
/// enqueued first may run (so they run in the order they were enqueued).
pub fn set_group(doc: &mut Document, group: &str) {
    // Microseconds, then the id: two writes of one document a millisecond apart keep their
    // order (writes of one document are serialised by the store).
    let micros = chrono::Utc::now().timestamp_micros();
    let order = format!("{micros:018}:{}", document_id(doc));
    doc.insert("group".into(), json!(group));
    doc.insert("order".into(), json!(order));
}

fn document_id(doc: &Document) -> String {
    doc.get("_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.contains('\0') {
        return Err(Error::InvalidArgument(format!(
            "a {what} must be 1 to {MAX_NAME_LEN} bytes without NUL, not {} bytes",
            name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_backoff_doubles_with_jitter_and_fixed_stays() {
        let o = JobOptions {
            retry_delay: Duration::from_millis(1000),
            ..JobOptions::default()
        };
        for (attempt, base) in [(1, 1000u128), (2, 2000), (3, 4000)] {
            let d = o.delay(attempt).as_millis();
            assert!(d >= base && d <= base + base / 5, "{attempt}: {d}");
        }
        assert!(o.delay(u32::MAX) <= MAX_RETRY_DELAY + MAX_RETRY_DELAY / 5);
        let fixed = JobOptions {
            backoff: Backoff::Fixed,
            ..o
        };
        assert_eq!(fixed.delay(7), Duration::from_millis(1000));
    }
}
