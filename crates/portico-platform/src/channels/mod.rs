//! Channels: named rooms (`room:42`) where clients send each other messages that are never
//! stored, and see who is there (presence), on this instance and every other instance on the
//! same database.
//!
//! | part | file |
//! |---|---|
//! | the hub: rooms, their local members and presence, fan-out, the bus between instances | here |
//! | one client connection: its channels, its bounded queue of frames, leaving on drop | `connection.rs` |
//! | who may join, send and track: rules by pattern, a script's guard | `rules.rs` |
//! | the limits | `config.rs` |
//! | refusals and their codes | `error.rs` |
//! | what instances tell each other | `wire.rs` |
//!
//! **Fan-out.** A message is turned into its frame once and handed to every member's queue
//! (a member whose queue is full is dropped: never unbounded buffering). With a shared
//! database the same frame goes on the store's bus ([`portico_store::Bus`]) and every other
//! instance hands it to its own members. Order: the messages of one sender in one channel
//! arrive in the order sent, at every member (one queue per connection here, one publishing
//! queue per instance on the bus); messages of different senders have no common order.
//!
//! **Presence.** A member that tracks itself is in the channel's presence with its user id and
//! metadata until it untracks, leaves or disconnects. Instances tell each other each track and
//! leave, send a heartbeat every [`ChannelsConfig::heartbeat`], and take an instance not heard
//! for [`ChannelsConfig::presence_timeout`] for dead: its members leave on the others. An
//! instance whose first member joins a channel asks the others for the channel's presence; a
//! bus that reconnected asks again for every channel.

mod config;
mod connection;
mod error;
mod rules;
mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, Weak};
use std::time::Instant;

use portico_store::{Bus, BusEvent};
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast, mpsc};

pub use config::{ChannelsConfig, MAX_MESSAGE_BYTES};
pub use connection::{Connection, Overflowed};
pub use error::ChannelError;
pub use rules::{ChannelAccess, ChannelGuard, ChannelRule, Peer, pattern_matches};

use error::{check_event, check_name};
use rules::{Act, Policy};

/// A connection's queue of frames to write, and the flag raised when it overflowed.
#[derive(Clone)]
struct Outbox {
    tx: mpsc::Sender<Arc<str>>,
    dropped: Arc<Dropped>,
}

/// Raised once when a connection's queue overflowed.
#[derive(Default)]
struct Dropped {
    flag: AtomicBool,
    notify: Notify,
}

impl Outbox {
    /// Queues `frame`; a full queue drops the connection (it reads too slowly).
    fn push(&self, frame: &Arc<str>) {
        if self.dropped.flag.load(Ordering::Relaxed) {
            return;
        }
        if self.tx.try_send(frame.clone()).is_err() {
            self.dropped.flag.store(true, Ordering::Relaxed);
            self.dropped.notify.notify_one();
        }
    }
}

/// One tracked presence.
struct Tracked {
    /// The member's JSON: `{key, userId, meta}`.
    member: Value,
    /// The instance it is on; `None` here.
    instance: Option<String>,
}

/// A channel with members on this instance.
#[derive(Default)]
struct Room {
    members: HashMap<u64, Outbox>,
    presence: BTreeMap<String, Tracked>,
}

impl Room {
    fn deliver(&self, frame: &Arc<str>, except: Option<u64>) {
        for (id, outbox) in &self.members {
            if Some(*id) != except {
                outbox.push(frame);
            }
        }
    }
}

#[derive(Default)]
struct State {
    rooms: HashMap<String, Room>,
    /// Other instances, and when each was last heard.
    heard: HashMap<String, Instant>,
    next_id: u64,
}

struct Shared {
    instance: String,
    config: ChannelsConfig,
    policy: RwLock<Policy>,
    bus: Option<Arc<dyn Bus>>,
    state: Mutex<State>,
    started: OnceLock<()>,
}

/// The channels of one platform (see the module docs). Cheap to clone; clones share
/// everything.
#[derive(Clone)]
pub struct Channels {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Channels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channels")
            .field("instance", &self.shared.instance)
            .finish_non_exhaustive()
    }
}

/// A `presence` frame.
fn presence_frame(channel: &str, event: &str, member: &Value) -> Arc<str> {
    json!({"type": "presence", "channel": channel, "event": event, "member": member})
        .to_string()
        .into()
}

impl Channels {
    /// Channels with `config`, across instances over `bus` when there is one.
    pub(crate) fn new(bus: Option<Arc<dyn Bus>>, config: ChannelsConfig) -> Channels {
        Channels {
            shared: Arc::new(Shared {
                instance: portico_store::new_id(),
                config,
                policy: RwLock::new(Policy::default()),
                bus,
                state: Mutex::new(State::default()),
                started: OnceLock::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The limits.
    pub fn config(&self) -> &ChannelsConfig {
        &self.shared.config
    }

    /// Sets the rules (see [`ChannelRule`]); the first whose pattern matches a name decides.
    pub fn set_rules(&self, rules: Vec<ChannelRule>) {
        self.shared
            .policy
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .rules = rules;
    }

    /// Sets the script's guard (see [`ChannelGuard`]): for a channel it has a function for, it
    /// must allow too (beside a matching rule, or alone when no rule matches).
    pub fn set_guard(&self, guard: Arc<dyn ChannelGuard>) {
        self.shared
            .policy
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .guard = Some(guard);
    }

    /// Forgets the script's guard (when the platform closes): what it captured is let go.
    pub(crate) fn release(&self) {
        let guard = crate::locks::write(&self.shared.policy).guard.take();
        drop(guard);
    }

    /// A new client connection (see [`Connection`]).
    pub fn connect(&self) -> Connection {
        self.start();
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            state.next_id
        };
        let (tx, rx) = mpsc::channel(self.shared.config.queue.max(1));
        let outbox = Outbox {
            tx,
            dropped: Arc::default(),
        };
        Connection::new(self.clone(), id, outbox, rx)
    }

    /// Sends `event` with `payload` to every member of `channel` on every instance, as the
    /// server (`from` is null; no rule applies). Nothing happens when no one is in it.
    ///
    /// # Errors
    /// [`ChannelError::InvalidName`], [`ChannelError::InvalidEvent`], [`ChannelError::TooBig`]
    /// over the message limit, [`ChannelError::Busy`] when the bus's queue is full.
    pub fn broadcast(
        &self,
        channel: &str,
        event: &str,
        payload: &Value,
    ) -> Result<(), ChannelError> {
        self.start();
        self.fan_out(channel, event, payload, None, None)
    }

    /// How many connections are in `channel` on this instance.
    pub fn local_members(&self, channel: &str) -> usize {
        self.lock()
            .rooms
            .get(channel)
            .map_or(0, |r| r.members.len())
    }

    /// May `peer` do `act` in `name`? (The config's rules, then the script's guard; nothing
    /// covering the name refuses.)
    async fn allowed(
        &self,
        act: Act,
        peer: &Peer,
        name: &str,
        message: Option<(&str, &Value)>,
    ) -> bool {
        let (by_rules, guard) = {
            let policy = self
                .shared
                .policy
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            (policy.by_rules(act, peer, name), policy.guard.clone())
        };
        if by_rules == Some(false) {
            return false;
        }
        let by_guard = match (act, guard) {
            (Act::Join, Some(guard)) => guard.join(peer.clone(), name.to_owned()).await,
            (Act::Send, Some(guard)) => {
                let (event, payload) = message.unwrap_or(("", &Value::Null));
                guard
                    .send(
                        peer.clone(),
                        name.to_owned(),
                        event.to_owned(),
                        payload.clone(),
                    )
                    .await
            }
            // Without a rule, whoever may join may track.
            (Act::Track, _) if by_rules.is_none() => Some(true),
            _ => None,
        };
        !matches!((by_rules, by_guard), (_, Some(false)) | (None, None))
    }

    /// The message frame, handed to the members here (but `except`) and to the other
    /// instances.
    fn fan_out(
        &self,
        channel: &str,
        event: &str,
        payload: &Value,
        from: Option<&str>,
        except: Option<u64>,
    ) -> Result<(), ChannelError> {
        check_name(channel)?;
        check_event(event)?;
        let payload_text = payload.to_string();
        if event.len() + payload_text.len()
            > self.shared.config.max_message_bytes.min(MAX_MESSAGE_BYTES)
        {
            return Err(ChannelError::TooBig);
        }
        let frame: Arc<str> = json!({
            "type": "message",
            "channel": channel,
            "event": event,
            "payload": payload,
            "from": from,
        })
        .to_string()
        .into();
        if let Some(bus) = &self.shared.bus {
            bus.publish(wire::encode('m', &self.shared.instance, channel, &frame))
                .map_err(|_| ChannelError::Busy)?;
        }
        if let Some(room) = self.lock().rooms.get(channel) {
            room.deliver(&frame, except);
        }
        Ok(())
    }

    /// Tells the other instances (when there are any).
    fn tell(&self, kind: char, channel: &str, rest: &str) {
        if let Some(bus) = &self.shared.bus
            && let Err(e) = bus.publish(wire::encode(kind, &self.shared.instance, channel, rest))
        {
            tracing::warn!(error = %e, "channels: could not tell the other instances");
        }
    }

    /// Starts listening to the bus and sending heartbeats (once, with a bus).
    fn start(&self) {
        let Some(bus) = &self.shared.bus else { return };
        self.shared.started.get_or_init(|| {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            runtime.spawn(follow(Arc::downgrade(&self.shared), bus.subscribe()));
        });
    }

    /// What another instance said.
    fn on_wire(&self, text: &str) {
        let Some(w) = wire::decode(text) else { return };
        if w.instance == self.shared.instance {
            return;
        }
        let mut state = self.lock();
        state.heard.insert(w.instance.to_owned(), Instant::now());
        match w.kind {
            'm' => {
                if let Some(room) = state.rooms.get(w.channel) {
                    room.deliver(&Arc::from(w.rest), None);
                }
            }
            'j' => {
                let Some(room) = state.rooms.get_mut(w.channel) else {
                    return;
                };
                let Ok(member) = serde_json::from_str::<Value>(w.rest) else {
                    return;
                };
                let Some(key) = member.get("key").and_then(Value::as_str).map(str::to_owned) else {
                    return;
                };
                room.deliver(&presence_frame(w.channel, "join", &member), None);
                room.presence.insert(
                    key,
                    Tracked {
                        member,
                        instance: Some(w.instance.to_owned()),
                    },
                );
            }
            'l' => {
                let Some(room) = state.rooms.get_mut(w.channel) else {
                    return;
                };
                if room
                    .presence
                    .get(w.rest)
                    .is_some_and(|t| t.instance.as_deref() == Some(w.instance))
                    && let Some(gone) = room.presence.remove(w.rest)
                {
                    room.deliver(&presence_frame(w.channel, "leave", &gone.member), None);
                }
            }
            's' => {
                let Some(room) = state.rooms.get(w.channel) else {
                    return;
                };
                let mine: Vec<String> = room
                    .presence
                    .values()
                    .filter(|t| t.instance.is_none())
                    .map(|t| t.member.to_string())
                    .collect();
                drop(state);
                for member in mine {
                    self.tell('j', w.channel, &member);
                }
            }
            'b' => {
                let instance = w.instance.to_owned();
                state.heard.remove(&instance);
                remove_instance(&mut state, &instance);
            }
            _ => {}
        }
    }

    /// Sends a heartbeat, and lets the members of instances not heard for the timeout leave.
    fn beat(&self) {
        self.tell('h', "", "");
        let timeout = self.shared.config.presence_timeout;
        let mut state = self.lock();
        let dead: Vec<String> = state
            .heard
            .iter()
            .filter(|(_, at)| at.elapsed() > timeout)
            .map(|(i, _)| i.clone())
            .collect();
        for instance in dead {
            state.heard.remove(&instance);
            tracing::info!(%instance, "channels: an instance went quiet; its members leave");
            remove_instance(&mut state, &instance);
        }
    }

    /// Asks the other instances for the presence of every channel with members here (the bus
    /// started listening, or came back: what it carried before is lost).
    fn resync(&self) {
        let names: Vec<String> = self.lock().rooms.keys().cloned().collect();
        for name in names {
            self.tell('s', &name, "");
        }
    }

    /// Tells the other instances that this one stops: its members leave there at once.
    pub fn shutdown(&self) {
        self.tell('b', "", "");
    }
}

/// Removes every presence of `instance`, telling the members here.
fn remove_instance(state: &mut State, instance: &str) {
    for (name, room) in &mut state.rooms {
        let gone: Vec<String> = room
            .presence
            .iter()
            .filter(|(_, t)| t.instance.as_deref() == Some(instance))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            if let Some(t) = room.presence.remove(&key) {
                room.deliver(&presence_frame(name, "leave", &t.member), None);
            }
        }
    }
}

/// The hub's task: hears the bus and beats, until the platform is gone.
async fn follow(shared: Weak<Shared>, mut rx: broadcast::Receiver<BusEvent>) {
    let every = match shared.upgrade() {
        Some(s) => s.config.heartbeat,
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let event = tokio::select! {
            received = rx.recv() => match received {
                Ok(event) => Some(event),
                Err(broadcast::error::RecvError::Lagged(_)) => Some(BusEvent::Reconnected),
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => None,
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let channels = Channels { shared };
        match event {
            Some(BusEvent::Message(text)) => channels.on_wire(&text),
            Some(BusEvent::Reconnected) => channels.resync(),
            None => channels.beat(),
        }
    }
}

#[cfg(test)]
mod tests;
