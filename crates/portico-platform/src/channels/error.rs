//! [`ChannelError`]: why a channel request was refused.

/// Why a request about a channel was refused. [`ChannelError::code`] is the `code` of the
/// socket's `error` frame; [`ChannelError::ends_connection`] says whether the socket then closes
/// (a client over a limit), and with which code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The rules refuse it. The same for every channel name, so a refusal never tells whether
    /// anyone is in the channel.
    #[error("You may not do this in this channel")]
    Forbidden,
    /// Sending, tracking or leaving a channel the connection has not joined.
    #[error("Join the channel first")]
    NotJoined,
    /// A channel name that is empty, longer than 128 bytes, or holds control characters.
    #[error("A channel name is 1 to 128 characters, without control characters")]
    InvalidName,
    /// An event name that is empty, longer than 64 bytes, or holds control characters.
    #[error("An event name is 1 to 64 characters, without control characters")]
    InvalidEvent,
    /// The channel has as many members on this instance as it may.
    #[error("The channel is full")]
    ChannelFull,
    /// The connection is in as many channels as it may.
    #[error("This connection is in as many channels as it may be")]
    TooManyChannels,
    /// A message or presence metadata over its size limit.
    #[error("The message or metadata is larger than allowed")]
    TooBig,
    /// The instance cannot pass more messages on to the others right now.
    #[error("The server is busy; try again")]
    Busy,
}

impl ChannelError {
    /// The machine-readable code (`forbidden`, `not-joined`, `invalid-channel`,
    /// `invalid-event`, `channel-full`, `too-many-channels`, `too-big`, `busy`).
    pub fn code(&self) -> &'static str {
        match self {
            ChannelError::Forbidden => "forbidden",
            ChannelError::NotJoined => "not-joined",
            ChannelError::InvalidName => "invalid-channel",
            ChannelError::InvalidEvent => "invalid-event",
            ChannelError::ChannelFull => "channel-full",
            ChannelError::TooManyChannels => "too-many-channels",
            ChannelError::TooBig => "too-big",
            ChannelError::Busy => "busy",
        }
    }

    /// The close code of a refusal that ends the socket (the client went over a limit of its
    /// own): 4009 too big, 4010 too many channels; `None` for the others.
    pub fn ends_connection(&self) -> Option<u16> {
        match self {
            ChannelError::TooBig => Some(4009),
            ChannelError::TooManyChannels => Some(4010),
            _ => None,
        }
    }
}

/// Checks a channel name (see [`ChannelError::InvalidName`]).
pub(crate) fn check_name(name: &str) -> Result<(), ChannelError> {
    if name.is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
        return Err(ChannelError::InvalidName);
    }
    Ok(())
}

/// Checks an event name (see [`ChannelError::InvalidEvent`]).
pub(crate) fn check_event(event: &str) -> Result<(), ChannelError> {
    if event.is_empty() || event.len() > 64 || event.chars().any(char::is_control) {
        return Err(ChannelError::InvalidEvent);
    }
    Ok(())
}
