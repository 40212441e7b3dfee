//! The write a job is enqueued for: while a write's before hooks run, the jobs they enqueue are
//! kept here instead of being stored, and the write stores them in its own store transaction
//! ([`portico_store::Store::batch`]), so a write that fails or is refused enqueues nothing.
//!
//! A Rust hook runs inside the write's task and finds its write through a task-local. A script
//! hook runs on a script runtime's thread, and its host operations on tasks of their own: the
//! hook is handed the write's number ([`current`]), its runtime tags the host operations of
//! that call with it, and the enqueue finds the write by number ([`keep`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use portico_store::Document;

/// The jobs one write's hooks enqueued; `None` once the write has taken them (an enqueue after
/// that is stored on its own).
#[derive(Default)]
pub(crate) struct Pending {
    number: u64,
    jobs: Mutex<Option<Vec<Document>>>,
}

tokio::task_local! {
    static WRITE: Arc<Pending>;
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// The writes whose hooks run now, by number (for script hooks).
fn open() -> &'static Mutex<HashMap<u64, Weak<Pending>>> {
    static OPEN: std::sync::OnceLock<Mutex<HashMap<u64, Weak<Pending>>>> =
        std::sync::OnceLock::new();
    OPEN.get_or_init(Mutex::default)
}

/// Runs `hooks` (a write's before hooks) as a write that keeps the jobs they enqueue: returns
/// what `hooks` returns and those jobs, for the write to store with itself.
pub(crate) async fn collect<F: Future>(hooks: F) -> (F::Output, Vec<Document>) {
    let pending = Arc::new(Pending {
        number: NEXT.fetch_add(1, Ordering::Relaxed),
        jobs: Mutex::new(Some(Vec::new())),
    });
    open()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(pending.number, Arc::downgrade(&pending));
    let out = WRITE.scope(pending.clone(), hooks).await;
    let mut open = open().lock().unwrap_or_else(PoisonError::into_inner);
    open.remove(&pending.number);
    // Also forget writes whose hooks were dropped midway (their futures cancelled).
    if open.len() > 1024 {
        open.retain(|_, w| w.strong_count() > 0);
    }
    drop(open);
    let jobs = pending
        .jobs
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .unwrap_or_default();
    (out, jobs)
}

/// The number of the write whose before hooks this task runs, for a script hook's call to
/// hand to the enqueues it makes ([`super::Jobs::enqueue_for`]).
pub fn current() -> Option<u64> {
    WRITE.try_with(|p| p.number).ok()
}

/// Keeps `job` with the write whose hooks this task runs (or, given `number`, with that
/// write); gives it back when there is none, or it has been written already.
pub(crate) fn keep(number: Option<u64>, job: Document) -> Option<Document> {
    let pending = match number {
        Some(n) => open()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&n)
            .and_then(Weak::upgrade),
        None => WRITE.try_with(Arc::clone).ok(),
    };
    let Some(pending) = pending else {
        return Some(job);
    };
    let mut jobs = pending.jobs.lock().unwrap_or_else(PoisonError::into_inner);
    match jobs.as_mut() {
        Some(jobs) => {
            jobs.push(job);
            None
        }
        None => Some(job),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: i64) -> Document {
        Document::from_iter([("n".to_owned(), serde_json::json!(n))])
    }

    #[tokio::test]
    async fn jobs_enqueued_inside_are_kept_and_outside_are_not() {
        assert!(keep(None, job(0)).is_some(), "no write: stored on its own");
        let ((), jobs) = collect(async {
            assert!(keep(None, job(1)).is_none());
            let number = current().unwrap_or_default();
            // As a script's host operation on another task does.
            let handle = tokio::spawn(async move { keep(Some(number), job(2)) });
            assert!(handle.await.ok().flatten().is_none());
        })
        .await;
        assert_eq!(jobs, vec![job(1), job(2)]);
        assert_eq!(current(), None);
    }
}
