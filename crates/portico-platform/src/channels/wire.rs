//! What instances tell each other about channels on the store's bus: one line of kind,
//! instance and channel, then the rest.
//!
//! | kind | rest | meaning |
//! |---|---|---|
//! | `m` | the `message` frame, as clients get it | a message sent to the channel |
//! | `j` | the member (`{key, userId, meta}`) | a member tracked (or changed) its presence |
//! | `l` | the member's key | a member's presence left |
//! | `s` | — | an instance asks the others for the channel's presence |
//! | `h` | — | the instance is alive (every heartbeat) |
//! | `b` | — | the instance stops: its presence leaves everywhere |

/// One message on the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wire<'a> {
    pub(crate) kind: char,
    pub(crate) instance: &'a str,
    pub(crate) channel: &'a str,
    pub(crate) rest: &'a str,
}

/// The text of a message (channel names and instance ids never hold a newline).
pub(crate) fn encode(kind: char, instance: &str, channel: &str, rest: &str) -> String {
    let mut text = String::with_capacity(instance.len() + channel.len() + rest.len() + 5);
    text.push(kind);
    text.push('\n');
    text.push_str(instance);
    text.push('\n');
    text.push_str(channel);
    text.push('\n');
    text.push_str(rest);
    text
}

/// A message's parts; `None` for text that is not one.
pub(crate) fn decode(text: &str) -> Option<Wire<'_>> {
    let mut parts = text.splitn(4, '\n');
    let mut kind = parts.next()?.chars();
    let k = kind.next()?;
    if kind.next().is_some() {
        return None;
    }
    Some(Wire {
        kind: k,
        instance: parts.next()?,
        channel: parts.next()?,
        rest: parts.next()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let text = encode('m', "i1", "room:1", "{\"a\":\"x\\ny\"}\nmore");
        let wire = decode(&text);
        assert_eq!(
            wire,
            Some(Wire {
                kind: 'm',
                instance: "i1",
                channel: "room:1",
                rest: "{\"a\":\"x\\ny\"}\nmore"
            })
        );
        assert_eq!(decode("mm\na\nb\nc"), None);
        assert_eq!(decode("m\na"), None);
    }
}
