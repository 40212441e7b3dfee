//! [`RateLimiter`]: an in-memory sliding-window limit of failures per key.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Limits failures per key (an identity, a client address) to `attempts` per sliding window of
/// `per`. The front doors use it against login brute force: `check` before the attempt,
/// `record_failure` after a failed one, `reset` after a success.
///
/// ```
/// # use std::time::Duration;
/// # use portico_platform::RateLimiter;
/// let limiter = RateLimiter::new(2, Duration::from_secs(10));
/// assert!(limiter.check("ada").is_ok());
/// limiter.record_failure("ada");
/// limiter.record_failure("ada");
/// let retry_after = limiter.check("ada").unwrap_err();
/// assert!(retry_after <= Duration::from_secs(10));
/// assert!(limiter.check("bob").is_ok());
/// ```
#[derive(Debug)]
pub struct RateLimiter {
    attempts: u32,
    per: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    failures: HashMap<String, VecDeque<Instant>>,
    last_sweep: Instant,
}

/// Above this many keys, stale ones are swept (at most once per window), so keys that stopped
/// failing do not pile up.
const SWEEP_ABOVE: usize = 10_000;

impl RateLimiter {
    /// At most `attempts` failures per key in any window of `per`.
    pub fn new(attempts: u32, per: Duration) -> RateLimiter {
        RateLimiter {
            attempts,
            per,
            state: Mutex::new(State {
                failures: HashMap::new(),
                last_sweep: Instant::now(),
            }),
        }
    }

    fn prune(queue: &mut VecDeque<Instant>, per: Duration, now: Instant) {
        while queue
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= per)
        {
            queue.pop_front();
        }
    }

    /// `Ok` when `key` may try again now; otherwise how long until it may.
    ///
    /// # Errors
    /// The time to wait (for a `Retry-After` header) when `key` has used up its attempts.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        if self.attempts == 0 {
            return Err(self.per.max(Duration::from_millis(1)));
        }
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(queue) = state.failures.get_mut(key) else {
            return Ok(());
        };
        RateLimiter::prune(queue, self.per, now);
        let limit = usize::try_from(self.attempts).unwrap_or(usize::MAX);
        if queue.len() < limit {
            return Ok(());
        }
        // The window frees a slot when the oldest failure that still counts leaves it.
        let oldest = queue[queue.len() - limit];
        let wait = self
            .per
            .saturating_sub(now.saturating_duration_since(oldest));
        Err(wait.max(Duration::from_millis(1)))
    }

    /// Records a failed attempt of `key`.
    pub fn record_failure(&self, key: &str) {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.failures.len() > SWEEP_ABOVE
            && now.saturating_duration_since(state.last_sweep) >= self.per
        {
            state.failures.retain(|_, q| {
                RateLimiter::prune(q, self.per, now);
                !q.is_empty()
            });
            state.last_sweep = now;
        }
        let queue = state.failures.entry(key.to_string()).or_default();
        RateLimiter::prune(queue, self.per, now);
        queue.push_back(now);
        // Only the newest `attempts` failures matter.
        let limit = usize::try_from(self.attempts).unwrap_or(usize::MAX).max(1);
        while queue.len() > limit {
            queue.pop_front();
        }
    }

    /// Forgets the failures of `key` (after a successful login).
    pub fn reset(&self, key: &str) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .failures
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_after_the_allowed_failures_and_resets() {
        let limiter = RateLimiter::new(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(limiter.check("k").is_ok());
            limiter.record_failure("k");
        }
        let wait = limiter.check("k");
        assert!(
            matches!(wait, Err(d) if d > Duration::from_secs(50) && d <= Duration::from_secs(60))
        );
        assert!(limiter.check("other").is_ok());
        limiter.reset("k");
        assert!(limiter.check("k").is_ok());
    }

    #[test]
    fn failures_leave_the_window() {
        let limiter = RateLimiter::new(1, Duration::from_millis(30));
        limiter.record_failure("k");
        assert!(limiter.check("k").is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(limiter.check("k").is_ok());
    }

    #[test]
    fn stale_keys_are_swept() {
        let limiter = RateLimiter::new(3, Duration::from_millis(20));
        for i in 0..=SWEEP_ABOVE {
            limiter.record_failure(&format!("k{i}"));
        }
        std::thread::sleep(Duration::from_millis(30));
        limiter.record_failure("fresh");
        let state = limiter.state.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(state.failures.len(), 1);
    }

    #[test]
    fn zero_attempts_always_refuses() {
        let limiter = RateLimiter::new(0, Duration::from_secs(1));
        assert!(limiter.check("fresh").is_err());
        limiter.record_failure("k");
        assert!(limiter.check("k").is_err());
    }
}
