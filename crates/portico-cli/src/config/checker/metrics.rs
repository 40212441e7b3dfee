//! Checks `[metrics]`: on when the table is present (unless `enabled = false`), an optional
//! separate `listen` address.

use std::net::SocketAddr;

use super::Checker;
use crate::config::MetricsConfig;
use crate::config::raw::RawMetrics;

impl Checker<'_> {
    pub(super) fn metrics(&mut self, raw: Option<RawMetrics>) -> Option<MetricsConfig> {
        let raw = raw?;
        let listen = raw
            .listen
            .and_then(|listen| match listen.get_ref().parse::<SocketAddr>() {
                Ok(addr) => Some(addr),
                Err(_) => {
                    self.error(
                        &listen,
                        "metrics.listen",
                        format!(
                            "`{}` is not an address; write an IP and a port, as in \"127.0.0.1:9090\"",
                            listen.get_ref()
                        ),
                    );
                    None
                }
            });
        raw.enabled
            .unwrap_or(true)
            .then_some(MetricsConfig { listen })
    }
}
