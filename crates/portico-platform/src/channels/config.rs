//! [`ChannelsConfig`]: the limits of channels and of the sockets that use them.

use std::time::Duration;

/// Limits of channels, presence and the sockets that carry them (see
/// [`crate::PlatformConfig::channels`]). Every limit bounds what one client can make the server
/// hold or do; going over one ends that client's socket (the socket says which limit, and
/// closes with the code its docs state), except a full channel, which only refuses the join.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelsConfig {
    /// Channels one connection may be in at once. 100 by default.
    pub max_channels_per_connection: usize,
    /// Members of one channel on this instance. 10,000 by default.
    pub max_members_per_channel: usize,
    /// The longest message (its event name and payload, as JSON), in bytes. 4,096 by default;
    /// at most 6,000, so that a message fits one notification between instances.
    pub max_message_bytes: usize,
    /// The longest presence metadata (as JSON), in bytes. 1,024 by default.
    pub max_meta_bytes: usize,
    /// The longest frame a client may send, in bytes. 16 KiB by default.
    pub max_frame_bytes: usize,
    /// Frames a client may send per second (a burst of this many, refilled continuously). 50
    /// by default.
    pub frames_per_second: u32,
    /// Bytes a client may send per second. 64 KiB by default.
    pub bytes_per_second: usize,
    /// Frames waiting to be written to one client. A client that lets this many pile up (it
    /// reads too slowly) is dropped, so no socket holds unbounded memory. 256 by default.
    pub queue: usize,
    /// How often the server sends a `ping` frame to a quiet socket. 15 s by default.
    pub ping: Duration,
    /// A socket from which nothing arrived for this long is closed. 45 s by default.
    pub idle_timeout: Duration,
    /// How often an instance tells the others it is alive (with a shared database). 2 s by
    /// default.
    pub heartbeat: Duration,
    /// An instance not heard from for this long is taken for dead: its members leave every
    /// channel's presence on the other instances. 10 s by default.
    pub presence_timeout: Duration,
}

impl Default for ChannelsConfig {
    fn default() -> Self {
        ChannelsConfig {
            max_channels_per_connection: 100,
            max_members_per_channel: 10_000,
            max_message_bytes: 4096,
            max_meta_bytes: 1024,
            max_frame_bytes: 16 * 1024,
            frames_per_second: 50,
            bytes_per_second: 64 * 1024,
            queue: 256,
            ping: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(45),
            heartbeat: Duration::from_secs(2),
            presence_timeout: Duration::from_secs(10),
        }
    }
}

/// The largest [`ChannelsConfig::max_message_bytes`] (a message must fit one notification).
pub const MAX_MESSAGE_BYTES: usize = 6000;
