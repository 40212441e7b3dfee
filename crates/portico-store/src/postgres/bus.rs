//! The bus between instances on PostgreSQL (see [`crate::bus`]): `NOTIFY` on [`BUS_CHANNEL`].
//!
//! One task per instance publishes, taking what waits in its bounded queue in order and sending
//! it in one statement (`pg_notify` over an array, in array order), so one instance's messages
//! reach every listener in the order they were published, and a burst costs one round trip.
//! The listening side is the change feed's connection (`feed.rs`), which hears this channel too
//! and hands its messages over at once (never waiting for read replicas: nothing is read).

use std::sync::{Arc, OnceLock};

use tokio::sync::{broadcast, mpsc};

use crate::bus::{BUS_MAX_MESSAGE, Bus, BusEvent, BusRefusal};
use deadpool_postgres::Pool;

/// The notification channel of the bus.
pub(crate) const BUS_CHANNEL: &str = "portico_bus";

/// Messages waiting to be published, per instance.
const QUEUE: usize = 8192;

/// The most messages sent in one statement.
const BATCH: usize = 256;

/// The bus of one PostgreSQL store.
pub(crate) struct PgBus {
    pool: Pool,
    queue: OnceLock<mpsc::Sender<String>>,
    heard: broadcast::Sender<BusEvent>,
    /// Starts the change feed's listener, which hears the bus too.
    start_listener: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for PgBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgBus").finish_non_exhaustive()
    }
}

impl PgBus {
    pub(crate) fn new(
        pool: Pool,
        heard: broadcast::Sender<BusEvent>,
        start_listener: Box<dyn Fn() + Send + Sync>,
    ) -> PgBus {
        PgBus {
            pool,
            queue: OnceLock::new(),
            heard,
            start_listener,
        }
    }

    /// The publishing queue; the first call starts its task (inside a tokio runtime).
    fn queue(&self) -> Option<&mpsc::Sender<String>> {
        if let Some(queue) = self.queue.get() {
            return Some(queue);
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            runtime.spawn(publish(self.pool.clone(), rx));
            tx
        }))
    }
}

impl Bus for PgBus {
    fn publish(&self, message: String) -> Result<(), BusRefusal> {
        if message.len() > BUS_MAX_MESSAGE {
            return Err(BusRefusal::TooLong);
        }
        let queue = self.queue().ok_or(BusRefusal::Busy)?;
        queue.try_send(message).map_err(|_| BusRefusal::Busy)
    }

    fn subscribe(&self) -> broadcast::Receiver<BusEvent> {
        let rx = self.heard.subscribe();
        (self.start_listener)();
        rx
    }
}

/// Publishes what the queue holds until every sender is gone. A failed statement loses its
/// batch (the bus is at most once), logged; the next batch takes a fresh connection.
async fn publish(pool: Pool, mut rx: mpsc::Receiver<String>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let sent = async {
            let client = pool.get().await.map_err(|e| e.to_string())?;
            let stmt = client
                .prepare_cached("SELECT pg_notify($1, m) FROM unnest($2::text[]) WITH ORDINALITY AS t(m, n) ORDER BY n")
                .await
                .map_err(|e| e.to_string())?;
            client
                .execute(&stmt, &[&BUS_CHANNEL, &batch])
                .await
                .map_err(|e| e.to_string())
        }
        .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, lost = batch.len(), "postgres bus: could not publish");
        }
        batch.clear();
    }
}

/// A shared handle, as the store keeps it.
pub(crate) type SharedBus = Arc<PgBus>;
