//! Checks `[metrics]`: on when the table is present (unless `enabled = false`), an optional
//! separate `listen` address.

use super::Checker;
use crate::config::MetricsConfig;
use crate::config::raw::RawMetrics;

impl Checker<'_> {
    pub(super) fn metrics(&mut self, raw: Option<RawMetrics>) -> Option<MetricsConfig> {
        let raw = raw?;
        let listen = raw
            .listen
            .and_then(|listen| self.address(&listen, "metrics.listen", "127.0.0.1:9090"));
        raw.enabled
            .unwrap_or(true)
            .then_some(MetricsConfig { listen })
    }
}
