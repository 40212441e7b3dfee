//! Connections: a pool of PostgreSQL connections with bounded waits.
//!
//! Every wait is bounded, so an operation against a database that went away fails with
//! [`Error::Unavailable`] instead of hanging: a server that is down refuses connections at once,
//! connecting to a host that does not answer times out after [`CONNECT_TIMEOUT`] (unless the URL
//! sets `connect_timeout`), and waiting for a free connection after [`POOL_TIMEOUT`]. TCP keepalives notice a peer that vanished without
//! closing the connection. A connection that broke is found closed when it next leaves the pool
//! and replaced by a new one, so the store recovers by itself once the server is back.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::{Error, Result};

/// How long connecting to the server may take. A server that is down refuses at once; this
/// bounds the wait for a host that does not answer at all, and leaves room for a busy server.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an operation may wait for a free connection of the pool. Longer than the connect
/// timeout: a healthy but busy database (many writers queued on one row) must not read as
/// unavailable, while a database that is down fails at connect, long before this.
pub(crate) const POOL_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections per store (per instance): enough for the requests of a few cores to overlap
/// their round trips, few enough that many instances fit PostgreSQL's default of 100.
pub(crate) const MAX_CONNECTIONS: usize = 16;

/// Builds the pool for a store URL (no connection is made yet), and returns it with the
/// connection settings (the change feed's listener makes a connection of its own with them).
///
/// # Errors
/// [`Error::InvalidUrl`] when `url` is not a PostgreSQL connection URL.
pub(crate) fn build_with_config(url: &str) -> Result<(Pool, tokio_postgres::Config)> {
    build(url, CONNECT_TIMEOUT, POOL_TIMEOUT)
}

/// How long connecting to a read replica may take, and a read may wait for one of its free
/// connections: a replica that is slow to answer is not worth waiting for when the primary can
/// answer the read instead.
pub(crate) const REPLICA_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds the pool of a read replica: as [`build_with_config`], with waits bounded by
/// [`REPLICA_TIMEOUT`] (unless the URL sets `connect_timeout`).
///
/// # Errors
/// [`Error::InvalidUrl`] when `url` is not a PostgreSQL connection URL.
pub(crate) fn build_replica(url: &str) -> Result<Pool> {
    build(url, REPLICA_TIMEOUT, REPLICA_TIMEOUT).map(|(pool, _)| pool)
}

fn build(
    url: &str,
    connect_timeout: Duration,
    pool_timeout: Duration,
) -> Result<(Pool, tokio_postgres::Config)> {
    let invalid = |reason: String| Error::InvalidUrl {
        url: crate::redact_url(url),
        reason,
    };
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| invalid(format!("not a PostgreSQL URL: {e}")))?;
    if config.get_hosts().is_empty() {
        return Err(invalid(
            "no host: write postgres://user:password@host:port/database, \
             or ?host=/path/to/socket/dir for a unix socket"
                .into(),
        ));
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(connect_timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("portico");
    }
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(30));
    let manager = Manager::from_config(
        config.clone(),
        NoTls,
        ManagerConfig {
            // A cheap check when a connection leaves the pool: is it closed? A query on a
            // connection that broke since fails once, as [`Error::Unavailable`].
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(MAX_CONNECTIONS)
        .wait_timeout(Some(pool_timeout))
        .create_timeout(Some(connect_timeout + Duration::from_secs(5)))
        .recycle_timeout(Some(pool_timeout))
        .runtime(Runtime::Tokio1)
        .build()
        .map(|pool| (pool, config))
        .map_err(|e| Error::Open(format!("postgres: cannot build the connection pool: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn urls_are_checked_without_connecting() {
        assert!(build_with_config("postgres://ann:pw@localhost:5432/app").is_ok());
        assert!(build_with_config("postgresql:///app?host=/tmp/sock&user=ann").is_ok());
        assert!(matches!(
            build_with_config("postgres://localhost:notaport/app"),
            Err(Error::InvalidUrl { .. })
        ));
        match build_with_config("postgres://ann:secret@localhost:nope/app") {
            Err(Error::InvalidUrl { url, .. }) => assert!(!url.contains("secret"), "{url}"),
            other => panic!("expected InvalidUrl, got {:?}", other.map(|_| ())),
        }
    }
}
