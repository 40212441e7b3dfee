//! Checks `[[channels]]` (a pattern and who may join, send and track) and the socket's limits
//! in `[live]`.

use std::time::Duration;

use portico_platform::{ChannelAccess, ChannelRule, ChannelsConfig};
use toml::Spanned;

use super::Checker;
use crate::config::raw::{RawChannel, RawLive};

impl Checker<'_> {
    /// Every `[[channels]]`, in file order.
    pub(super) fn channel_rules(&mut self, raw: Vec<RawChannel>) -> Vec<ChannelRule> {
        let mut rules = Vec::with_capacity(raw.len());
        for channel in raw {
            let pattern = channel.pattern.get_ref().clone();
            if pattern.is_empty() || pattern.len() > 128 || pattern.chars().any(char::is_control) {
                self.error(
                    &channel.pattern,
                    "channels.pattern",
                    "a channel pattern is 1 to 128 characters without control characters; `*` stands for any run of characters",
                );
            }
            let join = self.access(
                channel.join.as_ref(),
                "channels.join",
                ChannelAccess::Authenticated,
            );
            let send = self.access(channel.send.as_ref(), "channels.send", join.clone());
            let track = self.access(channel.track.as_ref(), "channels.track", join.clone());
            rules.push(ChannelRule::new(pattern).with(join, send, track));
        }
        rules
    }

    fn access(
        &mut self,
        value: Option<&Spanned<String>>,
        key: &str,
        default: ChannelAccess,
    ) -> ChannelAccess {
        let Some(value) = value else { return default };
        match value.get_ref().parse() {
            Ok(access) => access,
            Err(message) => {
                self.error(value, key, message);
                default
            }
        }
    }

    /// The socket's and channels' limits of `[live]`.
    pub(super) fn channel_limits(&mut self, raw: Option<&RawLive>) -> ChannelsConfig {
        let mut config = ChannelsConfig::default();
        let Some(raw) = raw else { return config };
        self.channel_sizes(raw, &mut config);
        self.channel_times(raw, &mut config);
        config
    }

    /// A limit of `[live]` given as `value` under `key` (checked within `range`), else
    /// `current`.
    fn limit<N: Copy + TryFrom<u64> + TryInto<u64>>(
        &mut self,
        value: &Option<Spanned<u64>>,
        key: &str,
        range: (u64, u64),
        current: N,
    ) -> N {
        let default = current.try_into().unwrap_or(range.1);
        N::try_from(self.ranged(value.clone(), key, range, default)).unwrap_or(current)
    }

    /// The sizes and rates of `[live]`: channels, members, messages, frames, the queue.
    fn channel_sizes(&mut self, raw: &RawLive, config: &mut ChannelsConfig) {
        config.max_channels_per_connection = self.limit(
            &raw.max_channels,
            "live.max_channels",
            (1, 10_000),
            config.max_channels_per_connection,
        );
        config.max_members_per_channel = self.limit(
            &raw.max_members,
            "live.max_members",
            (1, 1_000_000),
            config.max_members_per_channel,
        );
        config.max_message_bytes = self.limit(
            &raw.max_message_bytes,
            "live.max_message_bytes",
            (16, portico_platform::channels::MAX_MESSAGE_BYTES as u64),
            config.max_message_bytes,
        );
        config.max_meta_bytes = self.limit(
            &raw.max_meta_bytes,
            "live.max_meta_bytes",
            (2, 4096),
            config.max_meta_bytes,
        );
        config.max_frame_bytes = self.limit(
            &raw.max_frame_bytes,
            "live.max_frame_bytes",
            (256, 1 << 20),
            config.max_frame_bytes,
        );
        config.frames_per_second = self.limit(
            &raw.frames_per_second,
            "live.frames_per_second",
            (1, 100_000),
            config.frames_per_second,
        );
        config.bytes_per_second = self.limit(
            &raw.bytes_per_second,
            "live.bytes_per_second",
            (256, 1 << 30),
            config.bytes_per_second,
        );
        config.queue = self.limit(
            &raw.socket_queue,
            "live.socket_queue",
            (1, 65_536),
            config.queue,
        );
    }

    /// The times of `[live]`: pings, the idle timeout, presence heartbeats and timeout.
    fn channel_times(&mut self, raw: &RawLive, config: &mut ChannelsConfig) {
        let secs = |d: Duration| d.as_secs();
        if let Some(ping) = &raw.ping_secs {
            config.ping = Duration::from_secs(*ping.get_ref()).max(Duration::from_secs(1));
        }
        let n = self.ranged(
            raw.idle_timeout_secs.clone(),
            "live.idle_timeout_secs",
            (1, 86_400),
            secs(config.idle_timeout),
        );
        config.idle_timeout = Duration::from_secs(n);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let n = self.ranged(
            raw.heartbeat_ms.clone(),
            "live.heartbeat_ms",
            (100, 60_000),
            ms(config.heartbeat),
        );
        config.heartbeat = Duration::from_millis(n);
        let n = self.ranged(
            raw.presence_timeout_ms.clone(),
            "live.presence_timeout_ms",
            (300, 600_000),
            ms(config.presence_timeout),
        );
        config.presence_timeout = Duration::from_millis(n);
        if config.presence_timeout <= config.heartbeat * 2
            && let Some(value) = &raw.presence_timeout_ms
        {
            self.error(
                value,
                "live.presence_timeout_ms",
                "the presence timeout must be more than twice the heartbeat",
            );
        }
    }
}
