//! [`Budget`]: what a client may send per second (frames and bytes), as token buckets that
//! refill continuously.

use std::time::Instant;

/// Frames and bytes a client may still send (see the module docs).
#[derive(Debug)]
pub(super) struct Budget {
    frames: f64,
    bytes: f64,
    frames_per_second: f64,
    bytes_per_second: f64,
    at: Instant,
}

impl Budget {
    pub(super) fn new(frames_per_second: u32, bytes_per_second: usize) -> Budget {
        let frames_per_second = f64::from(frames_per_second.max(1));
        #[allow(clippy::cast_precision_loss)]
        let bytes_per_second = bytes_per_second.max(1) as f64;
        Budget {
            frames: frames_per_second,
            bytes: bytes_per_second,
            frames_per_second,
            bytes_per_second,
            at: Instant::now(),
        }
    }

    /// Spends one frame of `len` bytes; false when that is over the budget.
    pub(super) fn spend(&mut self, len: usize) -> bool {
        let now = Instant::now();
        let elapsed = now.duration_since(self.at).as_secs_f64();
        self.at = now;
        self.frames = (self.frames + elapsed * self.frames_per_second).min(self.frames_per_second);
        self.bytes = (self.bytes + elapsed * self.bytes_per_second).min(self.bytes_per_second);
        #[allow(clippy::cast_precision_loss)]
        let len = len as f64;
        if self.frames < 1.0 || self.bytes < len {
            return false;
        }
        self.frames -= 1.0;
        self.bytes -= len;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_over_the_rate_is_refused() {
        let mut budget = Budget::new(10, 1000);
        let spent = (0..50).filter(|_| budget.spend(10)).count();
        assert!((10..=11).contains(&spent), "{spent}");
        let mut budget = Budget::new(1000, 100);
        assert!(budget.spend(60));
        assert!(!budget.spend(60));
    }
}
