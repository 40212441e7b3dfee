//! The failure log behind login limits: recent failures per key, shared by every door of a
//! platform, each door checking them against its own limit.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How many failures a key remembers: no limit counts more than this many in its window.
pub(crate) const REMEMBERED: usize = 256;

/// Above this many keys, stale ones are swept (at most once a minute).
const SWEEP_ABOVE: usize = 10_000;

/// Keys forget failures older than this, whatever limit asks.
const LONGEST_WINDOW: Duration = Duration::from_secs(3600);

#[derive(Debug)]
pub(crate) struct FailureLog {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    failures: HashMap<String, VecDeque<Instant>>,
    last_sweep: Instant,
}

impl Default for FailureLog {
    fn default() -> Self {
        FailureLog {
            state: Mutex::new(State {
                failures: HashMap::new(),
                last_sweep: Instant::now(),
            }),
        }
    }
}

impl FailureLog {
    /// `Ok` when `key` has had fewer than `attempts` failures in the last `per`; otherwise how
    /// long until the oldest of them leaves the window.
    pub(crate) fn check(&self, key: &str, attempts: u32, per: Duration) -> Result<(), Duration> {
        let limit = usize::try_from(attempts).unwrap_or(usize::MAX);
        if limit == 0 {
            return Err(per.max(Duration::from_millis(1)));
        }
        let now = Instant::now();
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(queue) = state.failures.get(key) else {
            return Ok(());
        };
        let recent: Vec<&Instant> = queue
            .iter()
            .filter(|t| now.saturating_duration_since(**t) < per)
            .collect();
        if recent.len() < limit {
            return Ok(());
        }
        // A slot frees when the oldest failure that still counts leaves the window.
        let oldest = recent[recent.len() - limit];
        Err(per
            .saturating_sub(now.saturating_duration_since(*oldest))
            .max(Duration::from_millis(1)))
    }

    /// Records a failure of each key.
    pub(crate) fn record(&self, keys: &[&str]) {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.failures.len() > SWEEP_ABOVE
            && now.saturating_duration_since(state.last_sweep) >= Duration::from_secs(60)
        {
            state.failures.retain(|_, q| {
                q.retain(|t| now.saturating_duration_since(*t) < LONGEST_WINDOW);
                !q.is_empty()
            });
            state.last_sweep = now;
        }
        for key in keys {
            let queue = state.failures.entry((*key).to_owned()).or_default();
            queue.push_back(now);
            while queue.len() > REMEMBERED {
                queue.pop_front();
            }
        }
    }

    /// Forgets the failures of `key`.
    pub(crate) fn reset(&self, key: &str) {
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
    fn each_check_uses_its_own_limit_over_shared_failures() {
        let log = FailureLog::default();
        let minute = Duration::from_secs(60);
        for _ in 0..3 {
            log.record(&["k"]);
        }
        assert!(log.check("k", 3, minute).is_err());
        assert!(log.check("k", 4, minute).is_ok());
        let wait = log.check("k", 2, minute).unwrap_err();
        assert!(wait > Duration::from_secs(50) && wait <= minute);
        assert!(log.check("other", 1, minute).is_ok());
        log.reset("k");
        assert!(log.check("k", 1, minute).is_ok());
        assert!(log.check("k", 0, minute).is_err());
    }

    #[test]
    fn failures_leave_the_window() {
        let log = FailureLog::default();
        log.record(&["k"]);
        assert!(log.check("k", 1, Duration::from_millis(30)).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(log.check("k", 1, Duration::from_millis(30)).is_ok());
    }
}
