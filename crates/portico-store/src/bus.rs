//! The message bus between the instances that share one database: short texts that are never
//! stored, for what the platform sends between instances without writing it (channel messages
//! and presence).
//!
//! A backend whose data is seen by one process only (memory, SQLite) has no bus
//! ([`crate::Store::bus`] answers `None`): everything happens in that process. On PostgreSQL the
//! bus is `NOTIFY` on its own channel, sent by one publishing task per instance (so the
//! messages of one instance arrive everywhere in the order it published them) and heard on the
//! change feed's listening connection.
//!
//! Delivery is at most once: a listener that starts or reconnects has missed what was sent
//! before it listened, and then hears [`BusEvent::Reconnected`], so a reader that keeps state
//! from the bus (presence) asks for it again.

use std::sync::Arc;

use tokio::sync::broadcast;

/// The longest message the bus carries, in bytes (PostgreSQL refuses notifications of 8000 bytes
/// or more).
pub const BUS_MAX_MESSAGE: usize = 7500;

/// What a reader of the bus hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusEvent {
    /// A message some instance published (this one included).
    Message(Arc<str>),
    /// The bus (re)started listening: messages sent before are lost.
    Reconnected,
}

/// Why [`Bus::publish`] refused a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BusRefusal {
    /// The message is longer than [`BUS_MAX_MESSAGE`].
    #[error("the message is longer than the bus carries")]
    TooLong,
    /// More messages wait to be published than the instance's queue holds.
    #[error("the bus is busy")]
    Busy,
}

/// A message bus between instances (see the module docs).
pub trait Bus: Send + Sync + std::fmt::Debug {
    /// Queues `message` for every instance (this one included); returns at once.
    ///
    /// # Errors
    /// [`BusRefusal`]: the message is too long, or the queue is full.
    fn publish(&self, message: String) -> Result<(), BusRefusal>;

    /// A reader of every message published from now on. A reader that falls behind the bus's
    /// bounded backlog gets `Lagged` and has lost messages.
    fn subscribe(&self) -> broadcast::Receiver<BusEvent>;
}
