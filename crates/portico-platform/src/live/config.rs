//! [`LiveConfig`]: the limits of live streams.

use std::time::Duration;

/// Limits of live streams (see [`crate::PlatformConfig::live`]).
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::LiveConfig;
///
/// let live = LiveConfig::default().max_streams(1_000);
/// assert_eq!(live.max_streams, 1_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveConfig {
    /// The most streams open at once on this server; one more is refused (the doors answer
    /// 503). 10,000 by default.
    pub max_streams: usize,
    /// Events buffered per subscriber. A subscriber that lets this many pile up (a client that
    /// reads too slowly) has its stream ended, so no subscriber holds unbounded memory. 256
    /// by default.
    pub buffer: usize,
    /// How often an idle stream sends a keep-alive comment (`: ping`), so proxies keep it open.
    /// 15 s by default.
    pub ping: Duration,
}

impl LiveConfig {
    /// Sets [`max_streams`](LiveConfig::max_streams): the most streams open at once on this server.
    pub fn max_streams(mut self, max_streams: usize) -> Self {
        self.max_streams = max_streams;
        self
    }

    /// Sets [`buffer`](LiveConfig::buffer): events buffered per subscriber.
    pub fn buffer(mut self, buffer: usize) -> Self {
        self.buffer = buffer;
        self
    }

    /// Sets [`ping`](LiveConfig::ping): how often an idle stream sends a keep-alive comment (`.
    pub fn ping(mut self, ping: Duration) -> Self {
        self.ping = ping;
        self
    }
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            max_streams: 10_000,
            buffer: 256,
            ping: Duration::from_secs(15),
        }
    }
}
