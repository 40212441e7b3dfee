//! Checks the database keys: `database` (a store URL), `database_replicas` (PostgreSQL hot
//! standbys), `replica_max_lag_ms`, `database_cache_mb` and the `database_stamp_*` tuning.

use std::time::Duration;

use super::Checker;
use crate::config::check_database_url;
use crate::config::raw::RawConfig;

/// The checked database keys, as [`crate::config::Config`] holds them.
pub(super) struct DatabaseKeys {
    pub(super) database: Option<String>,
    pub(super) database_position: Option<(usize, usize)>,
    pub(super) database_replicas: Vec<String>,
    pub(super) replica_max_lag: Option<Duration>,
    pub(super) database_cache_bytes: Option<usize>,
    pub(super) database_stamp_batch: Option<usize>,
    pub(super) database_stamp_wait: Option<Duration>,
}

impl Checker<'_> {
    /// Takes the database keys out of `raw` and checks them.
    pub(super) fn database(&mut self, raw: &mut RawConfig) -> DatabaseKeys {
        let database_position = raw
            .database
            .as_ref()
            .map(|db| self.source.position(db.span().start));
        let database = raw
            .database
            .take()
            .and_then(|db| match check_database_url(db.get_ref()) {
                Ok(()) => Some(db.into_inner()),
                Err(message) => {
                    self.error(&db, "database", message);
                    None
                }
            });
        DatabaseKeys {
            database,
            database_position,
            database_replicas: self.replicas(raw),
            replica_max_lag: raw.replica_max_lag_ms.take().and_then(|ms| {
                if *ms.get_ref() == 0 {
                    self.error(&ms, "replica_max_lag_ms", "must be at least 1");
                    None
                } else {
                    Some(Duration::from_millis(ms.into_inner()))
                }
            }),
            database_cache_bytes: raw.database_cache_mb.take().and_then(|mb| {
                // At most 1 TiB: a budget beyond the machine's memory is a mistake.
                match usize::try_from(mb.get_ref().saturating_mul(1024 * 1024)) {
                    Ok(bytes) if *mb.get_ref() <= 1024 * 1024 => Some(bytes),
                    _ => {
                        self.error(&mb, "database_cache_mb", "must be at most 1048576 (1 TiB)");
                        None
                    }
                }
            }),
            database_stamp_batch: raw.database_stamp_batch.take().and_then(
                |n| match usize::try_from(*n.get_ref()) {
                    Ok(batch @ 1..=4096) => Some(batch),
                    _ => {
                        self.error(&n, "database_stamp_batch", "must be between 1 and 4096");
                        None
                    }
                },
            ),
            database_stamp_wait: raw.database_stamp_wait_us.take().and_then(|us| {
                if *us.get_ref() > 1_000_000 {
                    let message = "must be at most 1000000 (1 s)";
                    self.error(&us, "database_stamp_wait_us", message);
                    None
                } else {
                    Some(Duration::from_micros(us.into_inner()))
                }
            }),
        }
    }

    /// `database_replicas`: PostgreSQL URLs only.
    fn replicas(&mut self, raw: &mut RawConfig) -> Vec<String> {
        let Some(list) = raw.database_replicas.take() else {
            return Vec::new();
        };
        let bad = list
            .get_ref()
            .iter()
            .find(|url| !(url.starts_with("postgres://") || url.starts_with("postgresql://")));
        if let Some(url) = bad {
            let message = format!(
                "`{}` is not a PostgreSQL URL; replicas are PostgreSQL hot standbys, as in \"postgres://app@replica1/app\"",
                portico_store::redact_url(url)
            );
            self.error(&list, "database_replicas", message);
        }
        list.into_inner()
    }
}
