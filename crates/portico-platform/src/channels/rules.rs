//! Who may join, send to and track presence in a channel: rules by name pattern
//! ([`ChannelRule`]), and the optional [`ChannelGuard`] a script gives.
//!
//! A channel no rule and no guard covers is closed to every client. A refusal never says
//! whether anyone is in the channel: every refused name gets the same answer.

use std::str::FromStr;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

/// Who may do one thing in a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelAccess {
    /// Every client, logged in or not.
    Anyone,
    /// Every logged-in client.
    Authenticated,
    /// Logged-in clients holding one of these roles.
    Roles(Vec<String>),
    /// No client (the server may still broadcast).
    Nobody,
}

impl FromStr for ChannelAccess {
    type Err = String;

    /// Parses `anyone`, `authenticated`, `nobody` or `role:NAME` (several roles:
    /// `role:a,b`).
    fn from_str(s: &str) -> Result<ChannelAccess, String> {
        match s.trim() {
            "anyone" => Ok(ChannelAccess::Anyone),
            "authenticated" => Ok(ChannelAccess::Authenticated),
            "nobody" => Ok(ChannelAccess::Nobody),
            other => {
                let roles: Option<Vec<String>> = other.strip_prefix("role:").map(|list| {
                    list.split(',')
                        .map(|r| r.trim().to_owned())
                        .collect::<Vec<_>>()
                });
                match roles {
                    Some(roles)
                        if !roles.is_empty()
                            && roles
                                .iter()
                                .all(|r| !r.is_empty() && !r.contains(char::is_whitespace)) =>
                    {
                        Ok(ChannelAccess::Roles(roles))
                    }
                    _ => Err(format!(
                        "`{s}` is not a channel rule: write anyone, authenticated, role:NAME (role:a,b for several) or nobody"
                    )),
                }
            }
        }
    }
}

impl ChannelAccess {
    /// True when `peer` may.
    pub fn allows(&self, peer: &Peer) -> bool {
        match self {
            ChannelAccess::Anyone => true,
            ChannelAccess::Authenticated => peer.user_id.is_some(),
            ChannelAccess::Roles(roles) => {
                peer.user_id.is_some() && peer.roles.iter().any(|held| roles.contains(held))
            }
            ChannelAccess::Nobody => false,
        }
    }
}

/// The client on a socket, as the rules see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peer {
    user_id: Option<String>,
    roles: Vec<String>,
}

impl Peer {
    /// A client that is not logged in.
    pub fn anonymous() -> Peer {
        Peer::default()
    }

    /// The logged-in user `user_id`, holding `roles`.
    pub fn user(user_id: impl Into<String>, roles: Vec<String>) -> Peer {
        Peer {
            user_id: Some(user_id.into()),
            roles,
        }
    }

    /// The user of a stored user record (its `_id` and `roles`); anonymous without an `_id`.
    pub fn of_user(user: &portico_store::Document) -> Peer {
        let Some(id) = portico_store::document_id(user) else {
            return Peer::anonymous();
        };
        let roles = match user.get("roles") {
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        Peer::user(id, roles)
    }

    /// The user id, `None` when not logged in.
    pub fn user_id(&self) -> Option<&str> {
        self.user_id.as_deref()
    }
}

/// A rule of `[[channels]]`: the channels whose names match `pattern` (`*` stands for any run
/// of characters), and who may join them, send to them and track presence in them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelRule {
    /// The name pattern.
    pub pattern: String,
    /// Who may join.
    pub join: ChannelAccess,
    /// Who may send (members only).
    pub send: ChannelAccess,
    /// Who may track presence (members only).
    pub track: ChannelAccess,
}

impl ChannelRule {
    /// Channels matching `pattern` that logged-in clients may join, send to and track in.
    pub fn new(pattern: impl Into<String>) -> ChannelRule {
        ChannelRule {
            pattern: pattern.into(),
            join: ChannelAccess::Authenticated,
            send: ChannelAccess::Authenticated,
            track: ChannelAccess::Authenticated,
        }
    }

    /// The same rule with `join`, `send` and `track` set.
    pub fn with(mut self, join: ChannelAccess, send: ChannelAccess, track: ChannelAccess) -> Self {
        self.join = join;
        self.send = send;
        self.track = track;
        self
    }
}

/// True when `name` matches `pattern`, where `*` stands for any run of characters (none
/// included) and every other character for itself.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// What a script decides for a channel (see [`crate::Channels::set_guard`]): `None` when it
/// has no function for that channel (the config's rules decide alone); `Some(false)` refuses.
pub trait ChannelGuard: Send + Sync {
    /// May `peer` join `channel`?
    fn join(&self, peer: Peer, channel: String) -> BoxFuture<'static, Option<bool>>;
    /// May `peer` send `event` with `payload` to `channel`?
    fn send(
        &self,
        peer: Peer,
        channel: String,
        event: String,
        payload: Value,
    ) -> BoxFuture<'static, Option<bool>>;
}

/// The rules of one platform, and its guard.
#[derive(Clone, Default)]
pub(crate) struct Policy {
    pub(crate) rules: Vec<ChannelRule>,
    pub(crate) guard: Option<Arc<dyn ChannelGuard>>,
}

/// One thing a client asks to do in a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    Join,
    Send,
    Track,
}

impl Policy {
    /// The first rule whose pattern matches `name`.
    fn rule(&self, name: &str) -> Option<&ChannelRule> {
        self.rules
            .iter()
            .find(|r| pattern_matches(&r.pattern, name))
    }

    /// What the config's rules say: `None` when none matches.
    pub(crate) fn by_rules(&self, act: Act, peer: &Peer, name: &str) -> Option<bool> {
        let rule = self.rule(name)?;
        Some(match act {
            Act::Join => rule.join.allows(peer),
            Act::Send => rule.send.allows(peer),
            Act::Track => rule.track.allows(peer),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(pattern_matches("room:*", "room:42"));
        assert!(pattern_matches("room:*", "room:"));
        assert!(!pattern_matches("room:*", "rooms:1"));
        assert!(pattern_matches("lobby", "lobby"));
        assert!(!pattern_matches("lobby", "lobby2"));
        assert!(pattern_matches("*:typing", "room:1:typing"));
        assert!(pattern_matches("a*b*c", "aXbYc"));
        assert!(!pattern_matches("a*b*c", "aXcYb"));
        assert!(pattern_matches("*", "anything"));
        assert!(!pattern_matches("ab*ba", "aba"));
    }

    #[test]
    fn access_words() {
        let ann = Peer::user("ann", vec!["mod".into()]);
        let anon = Peer::anonymous();
        let parse = |s: &str| s.parse::<ChannelAccess>();
        assert_eq!(parse("anyone"), Ok(ChannelAccess::Anyone));
        assert!(parse("authenticated").is_ok_and(|a| a.allows(&ann) && !a.allows(&anon)));
        assert!(parse("role:admin,mod").is_ok_and(|a| a.allows(&ann)));
        assert!(parse("role:admin").is_ok_and(|a| !a.allows(&ann)));
        assert!(parse("nobody").is_ok_and(|a| !a.allows(&ann)));
        for bad in ["", "everyone", "role:", "role:a b", "owner:x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
