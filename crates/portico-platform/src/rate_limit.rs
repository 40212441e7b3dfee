//! [`RateLimiter`]: a sliding-window limit of failures per key, kept in the store so that every
//! instance on one database shares it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use portico_store::{Selector, Store, Update, UpdateOptions};
use serde_json::{Value, json};

/// At most `attempts` in any window of `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limit {
    /// Attempts allowed in the window.
    pub attempts: u32,
    /// The sliding window.
    pub per: Duration,
}

impl Limit {
    /// `attempts` per `per`.
    pub const fn new(attempts: u32, per: Duration) -> Self {
        Limit { attempts, per }
    }
}

/// The collection holding recent failures: one document per key (`_id`), with the failure
/// times in milliseconds since the Unix epoch (`failures`) and the latest one (`last`).
pub const LOGIN_FAILURES: &str = "portico_login_failures";

/// Limits failures per key (an identity, a client address) to `attempts` per sliding window of
/// `per`. The front doors use it against login brute force: `check` before the attempt,
/// `record_failure` after a failed one, `reset` after a success.
///
/// The failures live in the store ([`LOGIN_FAILURES`]), not in the process: on PostgreSQL, N
/// instances behind a load balancer share one count, so splitting attempts across instances
/// gains an attacker nothing. Each failure is one atomic `$push` (an upsert), so concurrent
/// failures from several instances all count. The check and the attempt are not one
/// transaction: a burst of concurrent attempts may each pass the check before any failure is
/// recorded, so the limit can be overshot by the number of attempts in flight at once, never
/// more. Clocks of the instances are assumed to agree within a small part of the window.
///
/// When the store cannot be read, `check` lets the attempt through (the login itself will then
/// fail on the same store) and the problem is logged.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # use std::time::Duration;
/// # use portico_platform::RateLimiter;
/// let store = portico_store::open("memory:").await?;
/// let limiter = RateLimiter::new(2, Duration::from_secs(10));
/// assert!(limiter.check(&*store, "ada").await.is_ok());
/// limiter.record_failure(&*store, "ada").await;
/// limiter.record_failure(&*store, "ada").await;
/// let retry_after = limiter.check(&*store, "ada").await.unwrap_err();
/// assert!(retry_after <= Duration::from_secs(10));
/// assert!(limiter.check(&*store, "bob").await.is_ok());
/// limiter.reset(&*store, "ada").await;
/// assert!(limiter.check(&*store, "ada").await.is_ok());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RateLimiter {
    attempts: u32,
    per: Duration,
}

/// Every this many recorded failures (at random), keys whose last failure left the window are
/// removed, so keys that stopped failing do not pile up.
const SWEEP_ONE_IN: u32 = 64;

impl RateLimiter {
    /// At most `attempts` failures per key in any window of `per`.
    pub fn new(attempts: u32, per: Duration) -> RateLimiter {
        RateLimiter { attempts, per }
    }

    fn per_ms(&self) -> i64 {
        i64::try_from(self.per.as_millis()).unwrap_or(i64::MAX)
    }

    /// `Ok` when `key` may try again now; otherwise how long until it may.
    ///
    /// # Errors
    /// The time to wait (for a `Retry-After` header) when `key` has used up its attempts.
    pub async fn check(&self, store: &dyn Store, key: &str) -> Result<(), Duration> {
        if self.attempts == 0 {
            return Err(self.per.max(Duration::from_millis(1)));
        }
        let doc = match store.get(LOGIN_FAILURES, key).await {
            Ok(doc) => doc,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read login failures; allowing the attempt");
                return Ok(());
            }
        };
        let now = now_ms();
        let since = now.saturating_sub(self.per_ms());
        let mut recent: Vec<i64> = doc
            .as_ref()
            .and_then(|d| d.get("failures"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_i64)
            .filter(|&t| t > since)
            .collect();
        let limit = usize::try_from(self.attempts).unwrap_or(usize::MAX);
        if recent.len() < limit {
            return Ok(());
        }
        recent.sort_unstable();
        // The window frees a slot when the oldest failure that still counts leaves it.
        let oldest = recent[recent.len() - limit];
        let wait_ms = self.per_ms().saturating_sub(now.saturating_sub(oldest));
        let wait = Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0));
        Err(wait.max(Duration::from_millis(1)))
    }

    /// Records a failed attempt of `key`, and drops its failures that left the window.
    pub async fn record_failure(&self, store: &dyn Store, key: &str) {
        if let Err(e) = self.try_record(store, key).await {
            tracing::warn!(error = %e, "cannot record a login failure");
        }
    }

    async fn try_record(&self, store: &dyn Store, key: &str) -> portico_store::Result<()> {
        let now = now_ms();
        let since = now.saturating_sub(self.per_ms());
        let by_key = Selector::by_id(key);
        let upsert = UpdateOptions::new(false, true);
        let push = Update::parse(&json!({"$push": {"failures": now}, "$set": {"last": now}}))?;
        store.update(LOGIN_FAILURES, &by_key, &push, upsert).await?;
        let prune = Update::parse(&json!({"$pull": {"failures": {"$lte": since}}}))?;
        store
            .update(LOGIN_FAILURES, &by_key, &prune, UpdateOptions::default())
            .await?;
        if rand::random_range(0..SWEEP_ONE_IN) == 0 {
            let stale = Selector::parse(&json!({"last": {"$lte": since}}))?;
            store.remove(LOGIN_FAILURES, &stale).await?;
        }
        Ok(())
    }

    /// Forgets the failures of `key` (after a successful login).
    pub async fn reset(&self, store: &dyn Store, key: &str) {
        if let Err(e) = store.remove(LOGIN_FAILURES, &Selector::by_id(key)).await {
            tracing::warn!(error = %e, "cannot reset login failures");
        }
    }
}

/// Milliseconds since the Unix epoch (0 for a clock before it).
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The failures document of `key`, for tests.
#[cfg(test)]
async fn failures(store: &dyn Store, key: &str) -> Option<portico_store::Document> {
    store.get(LOGIN_FAILURES, key).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    async fn store() -> Arc<dyn Store> {
        portico_store::open("memory:").await.expect("memory store")
    }

    #[tokio::test]
    async fn refuses_after_the_allowed_failures_and_resets() {
        let s = store().await;
        let limiter = RateLimiter::new(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(limiter.check(&*s, "k").await.is_ok());
            limiter.record_failure(&*s, "k").await;
        }
        let wait = limiter.check(&*s, "k").await;
        assert!(
            matches!(wait, Err(d) if d > Duration::from_secs(50) && d <= Duration::from_secs(60))
        );
        assert!(limiter.check(&*s, "other").await.is_ok());
        limiter.reset(&*s, "k").await;
        assert!(limiter.check(&*s, "k").await.is_ok());
        assert!(failures(&*s, "k").await.is_none());
    }

    #[tokio::test]
    async fn limiters_on_one_store_share_the_count() {
        // Two instances of a server: two limiters, one store.
        let s = store().await;
        let a = RateLimiter::new(5, Duration::from_secs(60));
        let b = RateLimiter::new(5, Duration::from_secs(60));
        for i in 0..5 {
            let limiter = if i % 2 == 0 { &a } else { &b };
            assert!(limiter.check(&*s, "ann").await.is_ok());
            limiter.record_failure(&*s, "ann").await;
        }
        assert!(a.check(&*s, "ann").await.is_err());
        assert!(b.check(&*s, "ann").await.is_err());
    }

    #[tokio::test]
    async fn failures_leave_the_window() {
        let s = store().await;
        let limiter = RateLimiter::new(1, Duration::from_millis(30));
        limiter.record_failure(&*s, "k").await;
        assert!(limiter.check(&*s, "k").await.is_err());
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert!(limiter.check(&*s, "k").await.is_ok());
        // The next failure drops the one that left the window.
        limiter.record_failure(&*s, "k").await;
        let doc = failures(&*s, "k").await.expect("failures");
        assert_eq!(doc["failures"].as_array().map(Vec::len), Some(1));
    }

    #[tokio::test]
    async fn zero_attempts_always_refuses() {
        let s = store().await;
        let limiter = RateLimiter::new(0, Duration::from_secs(1));
        assert!(limiter.check(&*s, "fresh").await.is_err());
        limiter.record_failure(&*s, "k").await;
        assert!(limiter.check(&*s, "k").await.is_err());
    }
}
