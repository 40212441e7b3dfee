//! The change feed on PostgreSQL: every write sends a notification inside its own transaction
//! (PostgreSQL delivers it only when, and only if, the transaction commits), and every instance
//! listens on a dedicated connection and publishes what it hears to its in-process feed.
//!
//! The listener reconnects by itself (with a growing pause, up to [`MAX_BACKOFF`]) and then
//! publishes a [`Change::Resync`]: notifications sent while it was away are lost, so everything
//! is re-checked. A slow safety re-check ([`SAFETY_RECHECK`]) does the same, so a notification
//! missed for any other reason heals itself. A payload that would not fit PostgreSQL's 8000-byte
//! limit names the collection only (any of its documents may have changed).
//!
//! With read replicas, changes are published once every replica in use has replayed them
//! (see `Replicas::caught_up`), so that live queries re-evaluated on a change, which read from
//! a replica, see it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use deadpool_postgres::GenericClient;
use futures::{FutureExt as _, StreamExt};
use serde_json::{Value, json};
use tokio_postgres::{AsyncMessage, NoTls};

use super::bus::BUS_CHANNEL;
use super::replica::Replicas;
use crate::Result;
use crate::bus::BusEvent;
use crate::feed::{Change, ChangeFeed, ChangeKind};

/// The notification channel every instance listens on.
pub(crate) const CHANNEL: &str = "portico_changes";

/// How often everything is re-checked even without a missed notification.
pub(crate) const SAFETY_RECHECK: Duration = Duration::from_secs(30);

/// The longest pause between two attempts to reconnect the listener.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Payloads larger than this name the collection only (PostgreSQL refuses 8000 bytes or more).
const MAX_PAYLOAD: usize = 7000;

fn kind_code(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Insert => "i",
        ChangeKind::Update => "u",
        ChangeKind::Remove => "r",
    }
}

/// The payload of `change`.
fn encode(change: &Change) -> String {
    let value = match change {
        Change::Documents {
            collection,
            ids,
            kind,
        } => {
            let full = json!({"c": &**collection, "k": kind_code(*kind), "ids": ids}).to_string();
            if full.len() <= MAX_PAYLOAD {
                return full;
            }
            json!({"c": &**collection, "k": kind_code(*kind), "ids": []})
        }
        Change::Resync { collection } => json!({"c": collection.as_deref(), "k": "s"}),
    };
    value.to_string()
}

/// The change a payload tells; `None` for one that is not Portico's.
fn decode(payload: &str) -> Option<Change> {
    let value: Value = serde_json::from_str(payload).ok()?;
    let collection = value.get("c").and_then(Value::as_str);
    let kind = match value.get("k")?.as_str()? {
        "i" => ChangeKind::Insert,
        "u" => ChangeKind::Update,
        "r" => ChangeKind::Remove,
        "s" => {
            return Some(Change::Resync {
                collection: collection.map(Into::into),
            });
        }
        _ => return None,
    };
    let ids = value
        .get("ids")?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    Some(Change::documents(collection?, ids, kind))
}

/// Sends `change` inside `tx`: delivered to every listener when `tx` commits, never otherwise.
/// The same statement moves the collection's change stamp (see `stamp.rs`), on the slot of this
/// connection, so the stamp and the documents become visible together.
pub(crate) async fn notify(tx: &impl GenericClient, change: &Change) -> Result<()> {
    let stmt = tx.prepare_cached(&notify_sql()).await?;
    tx.execute(&stmt, &[&CHANNEL, &encode(change), &change.collection()])
        .await?;
    Ok(())
}

/// Prepares the statement of [`notify`] on `client` (at once when it holds it already), so
/// that a later [`notify`] sends its statement on its first poll.
pub(crate) async fn prepare_notify(client: &impl GenericClient) -> Result<()> {
    client.prepare_cached(&notify_sql()).await?;
    Ok(())
}

/// The statement of [`notify`].
fn notify_sql() -> String {
    format!(
        "WITH stamp AS (UPDATE portico_stamps SET v = v + 1 \
         WHERE name = $3 AND slot = pg_backend_pid() % {}) \
         SELECT pg_notify($1, $2)",
        super::stamp::SLOTS
    )
}

/// Listens for notifications on a connection of its own and publishes them to `feed`, until
/// the store holding `feed` is gone or closed (`closed`).
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    feed: Weak<ChangeFeed>,
    gate: Option<Weak<Replicas>>,
    bus: tokio::sync::broadcast::Sender<BusEvent>,
    closed: Arc<AtomicBool>,
) {
    let mut backoff = Duration::from_millis(100);
    let mut first = true;
    loop {
        if feed.strong_count() == 0 || closed.load(Ordering::Acquire) {
            return;
        }
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let mut messages =
                    futures::stream::poll_fn(move |cx| connection.poll_message(cx)).boxed();
                // The connection must be polled while LISTEN runs, and after.
                let sql = format!("LISTEN {CHANNEL}; LISTEN {BUS_CHANNEL}");
                let listening = {
                    let listen = client.batch_execute(&sql);
                    tokio::pin!(listen);
                    loop {
                        tokio::select! {
                            done = &mut listen => break done.is_ok(),
                            message = messages.next() => if message.is_none() { break false },
                        }
                    }
                };
                if listening {
                    backoff = Duration::from_millis(100);
                    if !first {
                        tracing::info!(
                            "postgres change feed: listening again; re-checking everything"
                        );
                    }
                    // Whatever was sent while no one listened is lost: re-check everything.
                    caught_up(gate.as_ref()).await;
                    if let Some(feed) = feed.upgrade() {
                        feed.publish(Change::Resync { collection: None });
                    }
                    // The bus too: a reader that subscribed before this listener was
                    // listening (its first start included) asks again for what it keeps.
                    let _ = bus.send(BusEvent::Reconnected);
                    first = false;
                    if !pump(&mut messages, &feed, gate.as_ref(), &bus, &closed).await {
                        return;
                    }
                    tracing::warn!(
                        "postgres change feed: the listening connection closed; reconnecting"
                    );
                }
                drop(client);
            }
            Err(e) => {
                tracing::warn!(error = %e, "postgres change feed: cannot connect the listener; retrying");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Publishes notifications until the connection ends (true) or the feed is gone (false).
async fn pump(
    messages: &mut futures::stream::BoxStream<
        '_,
        std::result::Result<AsyncMessage, tokio_postgres::Error>,
    >,
    feed: &Weak<ChangeFeed>,
    gate: Option<&Weak<Replicas>>,
    bus: &tokio::sync::broadcast::Sender<BusEvent>,
    closed: &AtomicBool,
) -> bool {
    let mut safety = tokio::time::interval(SAFETY_RECHECK);
    safety.tick().await;
    // A dropped or closed store closes its listening connection within a second.
    let mut alive = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = alive.tick() => if feed.strong_count() == 0 || closed.load(Ordering::Acquire) {
                return false;
            },
            message = messages.next() => match message {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    // The bus's messages go on at once: nothing waits for them to replicate.
                    let mut changes: Vec<Change> = ours(&n, bus).into_iter().collect();
                    // Notifications already waiting go with this one: one wait for the
                    // replicas covers them all.
                    let mut ended = false;
                    while let Some(next) = messages.next().now_or_never() {
                        match next {
                            Some(Ok(AsyncMessage::Notification(n))) => changes.extend(ours(&n, bus)),
                            Some(Ok(_)) => {}
                            Some(Err(_)) | None => {
                                ended = true;
                                break;
                            }
                        }
                    }
                    if !changes.is_empty() {
                        caught_up(gate).await;
                    }
                    let Some(feed) = feed.upgrade() else { return false };
                    for change in changes {
                        feed.publish(change);
                    }
                    if ended {
                        return true;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return true,
            },
            _ = safety.tick() => {
                caught_up(gate).await;
                let Some(feed) = feed.upgrade() else { return false };
                feed.publish(Change::Resync { collection: None });
            }
        }
    }
}

/// The change a notification on Portico's channel tells; a message on the bus's channel is
/// handed to the bus's readers.
fn ours(
    n: &tokio_postgres::Notification,
    bus: &tokio::sync::broadcast::Sender<BusEvent>,
) -> Option<Change> {
    if n.channel() == BUS_CHANNEL {
        let _ = bus.send(BusEvent::Message(n.payload().into()));
        return None;
    }
    (n.channel() == CHANNEL)
        .then(|| decode(n.payload()))
        .flatten()
}

/// With read replicas, waits until those in use hold what the primary has written now (see
/// [`Replicas::caught_up`]), so that whoever re-reads on a change reads it there too.
async fn caught_up(gate: Option<&Weak<Replicas>>) {
    if let Some(replicas) = gate.and_then(Weak::upgrade) {
        replicas.caught_up().await;
    }
}

/// How many bus messages are kept for a slow reader before it lags.
const BUS_CAPACITY: usize = 8192;

/// The feed of a store, and whether its listener was started.
#[derive(Debug)]
pub(crate) struct Feed {
    pub(crate) feed: Arc<ChangeFeed>,
    /// What the listener hears on the bus's channel.
    pub(crate) bus: tokio::sync::broadcast::Sender<BusEvent>,
    started: std::sync::OnceLock<()>,
    /// The store's read replicas: changes are published once they hold them.
    gate: std::sync::OnceLock<Weak<Replicas>>,
    /// Set when the store is closed: the listener ends (see [`Feed::close`]).
    closed: Arc<AtomicBool>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            feed: Arc::default(),
            bus: tokio::sync::broadcast::channel(BUS_CAPACITY).0,
            started: std::sync::OnceLock::new(),
            gate: std::sync::OnceLock::new(),
            closed: Arc::default(),
        }
    }
}

impl Feed {
    /// A reader of the feed; the first call starts the listener (inside a tokio runtime).
    pub(crate) fn subscribe(
        &self,
        config: &tokio_postgres::Config,
    ) -> tokio::sync::broadcast::Receiver<Change> {
        let rx = self.feed.subscribe();
        self.start(config);
        rx
    }

    /// Starts the listener (once; inside a tokio runtime).
    pub(crate) fn start(&self, config: &tokio_postgres::Config) {
        self.started.get_or_init(|| {
            tokio::spawn(listen(
                config.clone(),
                Arc::downgrade(&self.feed),
                self.gate.get().cloned(),
                self.bus.clone(),
                Arc::clone(&self.closed),
            ));
        });
    }

    /// Ends the listener (within a second) and keeps it from starting.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        // A listener not started yet never starts.
        let _ = self.started.set(());
    }

    /// Publishes changes only once `replicas` hold them (set before the listener starts).
    pub(crate) fn gate_on(&self, replicas: &Arc<Replicas>) {
        let _ = self.gate.set(Arc::downgrade(replicas));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_large_ones_name_the_collection() {
        let change = Change::documents("c", vec!["a".into(), "b".into()], ChangeKind::Update);
        assert_eq!(decode(&encode(&change)), Some(change));
        let resync = Change::Resync { collection: None };
        assert_eq!(decode(&encode(&resync)), Some(resync));
        let many: Vec<String> = (0..2000).map(|i| format!("id-{i}")).collect();
        let big = Change::documents("c", many, ChangeKind::Remove);
        let text = encode(&big);
        assert!(text.len() < 8000);
        assert_eq!(
            decode(&text),
            Some(Change::documents("c", vec![], ChangeKind::Remove))
        );
        assert_eq!(decode("not json"), None);
    }
}
