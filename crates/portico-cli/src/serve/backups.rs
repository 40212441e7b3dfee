//! Scheduled backups in `serve` (`[backups] every_hours`): a task that takes one whenever the
//! newest in `[backups] dir` (or its bucket, `url`) is older than the interval, and keeps the
//! newest `keep`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use portico_platform::backups::Backups;
use tracing::{info, warn};

/// How long to wait after a failed backup before trying again (at most the interval).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(300);

/// How long until the next backup is due: the interval after the newest backup in the set's
/// directory or bucket (taken by this schedule, the admin page or `portico backup`), at once
/// when there is none or it is older.
async fn next_due(set: &Arc<Backups>, every: Duration) -> Duration {
    let newest = set
        .list()
        .await
        .ok()
        .and_then(|files| files.into_iter().next());
    match newest {
        Some(file) => {
            let age = SystemTime::now()
                .duration_since(file.modified)
                .unwrap_or(Duration::ZERO);
            every.saturating_sub(age)
        }
        None => Duration::ZERO,
    }
}

/// Starts the schedule on the runtime: backups of `set` every `every`, until the returned task
/// is aborted or the runtime ends; a backup cut off by the process ending leaves only a
/// `.partial` file, which the next backup of the set removes.
pub(crate) fn schedule(set: Arc<Backups>, every: Duration) -> tokio::task::JoinHandle<()> {
    let interval = if every >= Duration::from_secs(3600) {
        format!("{:.1} h", every.as_secs_f64() / 3600.0)
    } else {
        format!("{:.0} s", every.as_secs_f64())
    };
    info!(
        "backups: every {interval} into {} (keeping {})",
        set.location(),
        set.keep()
    );
    tokio::spawn(async move {
        loop {
            let wait = next_due(&set, every).await;
            tokio::time::sleep(wait).await;
            match set.take().await {
                Ok(report) => info!(
                    backup = %report.location,
                    bytes = report.bytes,
                    seconds = report.elapsed.as_secs_f64(),
                    "scheduled backup taken"
                ),
                // Being taken at this moment from the admin page: the next is due after it.
                Err(portico_store::Error::Unavailable(_)) => {
                    tokio::time::sleep(Duration::from_secs(1).min(every)).await;
                }
                Err(e) => {
                    warn!("scheduled backup failed: {e}");
                    tokio::time::sleep(RETRY_AFTER_FAILURE.min(every)).await;
                }
            }
        }
    })
}
