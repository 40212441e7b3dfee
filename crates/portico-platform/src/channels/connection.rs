//! [`Connection`]: one client's membership of channels, and its queue of frames to write.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::error::check_name;
use super::rules::{Act, Peer};
use super::{ChannelError, Channels, Outbox, Tracked, presence_frame};

/// One client connection's membership of channels (see [`Channels::connect`]): what it joined
/// and tracked, who it is ([`Peer`]), and the bounded queue of frames for it to write
/// ([`Connection::next_frame`]). Dropping it leaves every channel, and its presence leaves
/// (on every instance).
pub struct Connection {
    channels: Channels,
    id: u64,
    outbox: Outbox,
    rx: mpsc::Receiver<Arc<str>>,
    joined: BTreeSet<String>,
    peer: Peer,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("joined", &self.joined)
            .finish_non_exhaustive()
    }
}

impl Connection {
    pub(super) fn new(
        channels: Channels,
        id: u64,
        outbox: Outbox,
        rx: mpsc::Receiver<Arc<str>>,
    ) -> Connection {
        Connection {
            channels,
            id,
            outbox,
            rx,
            joined: BTreeSet::new(),
            peer: Peer::anonymous(),
        }
    }

    /// Who the connection is.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Makes the connection `peer`. Becoming someone else (another user, or no one) first
    /// leaves every channel: what one user joined is not kept for the next.
    pub fn set_peer(&mut self, peer: Peer) {
        if peer.user_id() != self.peer.user_id() {
            self.leave_all();
        }
        self.peer = peer;
    }

    /// The channels joined.
    pub fn joined(&self) -> impl Iterator<Item = &str> {
        self.joined.iter().map(String::as_str)
    }

    /// This presence's key: unique across instances.
    fn key(&self) -> String {
        format!("{}-{}", self.channels.shared.instance, self.id)
    }

    /// Joins `channel` when the rules let this peer, and returns the channel's `presence`
    /// frame with its full `state`. Joining a channel already joined only answers its state.
    ///
    /// # Errors
    /// [`ChannelError::Forbidden`] (whatever the channel), [`ChannelError::InvalidName`],
    /// [`ChannelError::TooManyChannels`], [`ChannelError::ChannelFull`].
    pub async fn join(&mut self, channel: &str) -> Result<Arc<str>, ChannelError> {
        check_name(channel)?;
        if !self
            .channels
            .allowed(Act::Join, &self.peer, channel, None)
            .await
        {
            return Err(ChannelError::Forbidden);
        }
        let config = self.channels.config().clone();
        if !self.joined.contains(channel) && self.joined.len() >= config.max_channels_per_connection
        {
            return Err(ChannelError::TooManyChannels);
        }
        let (state, first) = {
            let mut state = self.channels.lock();
            let first = !state.rooms.contains_key(channel);
            let room = state.rooms.entry(channel.to_owned()).or_default();
            if !room.members.contains_key(&self.id) {
                if room.members.len() >= config.max_members_per_channel {
                    if room.members.is_empty() {
                        state.rooms.remove(channel);
                    }
                    return Err(ChannelError::ChannelFull);
                }
                room.members.insert(self.id, self.outbox.clone());
            }
            let members: Vec<&Value> = room.presence.values().map(|t| &t.member).collect();
            let frame: Arc<str> = json!({
                "type": "presence",
                "channel": channel,
                "event": "state",
                "members": members,
            })
            .to_string()
            .into();
            (frame, first)
        };
        self.joined.insert(channel.to_owned());
        if first {
            // Who is there on the other instances arrives as `join` frames.
            self.channels.tell('s', channel, "");
        }
        Ok(state)
    }

    /// Leaves `channel` (its presence leaves too).
    ///
    /// # Errors
    /// [`ChannelError::NotJoined`].
    pub fn leave(&mut self, channel: &str) -> Result<(), ChannelError> {
        if !self.joined.remove(channel) {
            return Err(ChannelError::NotJoined);
        }
        self.remove_from(channel);
        Ok(())
    }

    fn remove_from(&self, channel: &str) {
        let key = self.key();
        let mut state = self.channels.lock();
        let Some(room) = state.rooms.get_mut(channel) else {
            return;
        };
        room.members.remove(&self.id);
        let tracked = room.presence.remove(&key);
        if let Some(t) = &tracked {
            room.deliver(&presence_frame(channel, "leave", &t.member), None);
        }
        if room.members.is_empty() {
            state.rooms.remove(channel);
        }
        drop(state);
        if tracked.is_some() {
            self.channels.tell('l', channel, &key);
        }
    }

    fn leave_all(&mut self) {
        for channel in std::mem::take(&mut self.joined) {
            self.remove_from(&channel);
        }
    }

    /// Sends `event` with `payload` to the other members of `channel`, on every instance.
    ///
    /// # Errors
    /// [`ChannelError::NotJoined`], [`ChannelError::Forbidden`], [`ChannelError::InvalidEvent`],
    /// [`ChannelError::TooBig`], [`ChannelError::Busy`].
    pub async fn send(
        &mut self,
        channel: &str,
        event: &str,
        payload: &Value,
    ) -> Result<(), ChannelError> {
        if !self.joined.contains(channel) {
            return Err(ChannelError::NotJoined);
        }
        super::error::check_event(event)?;
        if !self
            .channels
            .allowed(Act::Send, &self.peer, channel, Some((event, payload)))
            .await
        {
            return Err(ChannelError::Forbidden);
        }
        self.channels
            .fan_out(channel, event, payload, self.peer.user_id(), Some(self.id))
    }

    /// Tracks this connection's presence in `channel` with `meta` (again: changes its meta),
    /// told to every member as a `presence` `join`.
    ///
    /// # Errors
    /// [`ChannelError::NotJoined`], [`ChannelError::Forbidden`], [`ChannelError::TooBig`].
    pub async fn track(&mut self, channel: &str, meta: Value) -> Result<(), ChannelError> {
        if !self.joined.contains(channel) {
            return Err(ChannelError::NotJoined);
        }
        if meta.to_string().len() > self.channels.config().max_meta_bytes {
            return Err(ChannelError::TooBig);
        }
        if !self
            .channels
            .allowed(Act::Track, &self.peer, channel, None)
            .await
        {
            return Err(ChannelError::Forbidden);
        }
        let key = self.key();
        let member = json!({"key": key, "userId": self.peer.user_id(), "meta": meta});
        {
            let mut state = self.channels.lock();
            let Some(room) = state.rooms.get_mut(channel) else {
                return Err(ChannelError::NotJoined);
            };
            room.deliver(&presence_frame(channel, "join", &member), None);
            room.presence.insert(
                key,
                Tracked {
                    member: member.clone(),
                    instance: None,
                },
            );
        }
        self.channels.tell('j', channel, &member.to_string());
        Ok(())
    }

    /// Stops tracking this connection's presence in `channel`.
    ///
    /// # Errors
    /// [`ChannelError::NotJoined`].
    pub fn untrack(&mut self, channel: &str) -> Result<(), ChannelError> {
        if !self.joined.contains(channel) {
            return Err(ChannelError::NotJoined);
        }
        let key = self.key();
        let gone = {
            let mut state = self.channels.lock();
            let Some(room) = state.rooms.get_mut(channel) else {
                return Ok(());
            };
            let gone = room.presence.remove(&key);
            if let Some(t) = &gone {
                room.deliver(&presence_frame(channel, "leave", &t.member), None);
            }
            gone
        };
        if gone.is_some() {
            self.channels.tell('l', channel, &key);
        }
        Ok(())
    }

    /// The next frame already waiting in the queue, without waiting for one (`None`: none now),
    /// so that a writer can write the frames that queued up together.
    ///
    /// # Errors
    /// [`Overflowed`], as [`Connection::next_frame`].
    pub fn try_next_frame(&mut self) -> Result<Option<Arc<str>>, Overflowed> {
        if self.outbox.dropped.flag.load(Ordering::Relaxed) {
            return Err(Overflowed);
        }
        match self.rx.try_recv() {
            Ok(frame) => Ok(Some(frame)),
            Err(mpsc::error::TryRecvError::Empty) => Ok(None),
            Err(mpsc::error::TryRecvError::Disconnected) => Err(Overflowed),
        }
    }

    /// The next frame to write to the client (messages and presence of its channels).
    ///
    /// # Errors
    /// [`Overflowed`] once the queue overflowed (the client reads too slowly): the connection
    /// gets nothing more and should be closed.
    pub async fn next_frame(&mut self) -> Result<Arc<str>, Overflowed> {
        loop {
            let notified = self.outbox.dropped.notify.notified();
            if self.outbox.dropped.flag.load(Ordering::Relaxed) {
                return Err(Overflowed);
            }
            tokio::select! {
                frame = self.rx.recv() => return frame.ok_or(Overflowed),
                () = notified => {}
            }
        }
    }
}

/// A connection's queue overflowed: its client reads too slowly (see
/// [`Connection::next_frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client reads too slowly")]
pub struct Overflowed;

impl Drop for Connection {
    fn drop(&mut self) {
        self.leave_all();
    }
}
