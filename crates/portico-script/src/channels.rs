//! `channels({...})`: the script's say on who joins and sends to a channel, as the platform's
//! [`ChannelGuard`]. The first definition whose pattern matches a channel's name answers; one
//! without the asked function leaves the decision to the config's rules. A function that
//! fails refuses.

use futures::future::BoxFuture;
use portico_platform::{ChannelGuard, Peer, Platform};
use serde_json::{Value, json};

use crate::runtime::Kind;
use crate::{ChannelDefinition, Scripts};

/// The guard of a script's `channels({...})`.
struct ScriptChannels {
    scripts: Scripts,
    defs: Vec<ChannelDefinition>,
}

impl ScriptChannels {
    /// Asks the script's `act` function of the definition matching `channel`; `None` when no
    /// definition matches or it has no such function.
    fn ask(
        &self,
        act: &'static str,
        peer: &Peer,
        channel: &str,
        args: Value,
    ) -> BoxFuture<'static, Option<bool>> {
        let def = self
            .defs
            .iter()
            .find(|d| portico_platform::channels::pattern_matches(&d.pattern, channel));
        let Some(def) = def.filter(|d| if act == "join" { d.join } else { d.send }) else {
            return Box::pin(async { None });
        };
        let scripts = self.scripts.clone();
        let context = json!({"index": def.index, "act": act, "userId": peer.user_id()});
        let place = def.place.clone();
        let pattern = def.pattern.clone();
        Box::pin(async move {
            match scripts.call(Kind::Channel, &pattern, &context, &args).await {
                Ok(outcome) => Some(outcome.value == Value::Bool(true)),
                Err(e) => {
                    portico_platform::error_in_request!(target: "portico::script", script = %place, "the {act} function of channels {pattern:?} failed, so it refuses: {e}");
                    Some(false)
                }
            }
        })
    }
}

impl ChannelGuard for ScriptChannels {
    fn join(&self, peer: Peer, channel: String) -> BoxFuture<'static, Option<bool>> {
        let args = json!([channel]);
        self.ask("join", &peer, &channel, args)
    }

    fn send(
        &self,
        peer: Peer,
        channel: String,
        event: String,
        payload: Value,
    ) -> BoxFuture<'static, Option<bool>> {
        let args = json!([channel, {"event": event, "payload": payload}]);
        self.ask("send", &peer, &channel, args)
    }
}

/// Gives `platform`'s channels the script's guard, when it defined any.
pub(crate) fn install(scripts: &Scripts, platform: &Platform, defs: &[ChannelDefinition]) {
    if defs.is_empty() {
        return;
    }
    platform
        .channels()
        .set_guard(std::sync::Arc::new(ScriptChannels {
            scripts: scripts.clone(),
            defs: defs.to_vec(),
        }));
}
