//! The hub without sockets: rules and a guard together, fan-out, presence, limits, leaving on
//! drop.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::*;

fn hub(config: ChannelsConfig) -> Channels {
    Channels::new(None, config)
}

/// A guard that lets only `ann` join `game:*` and refuses the event `cheat`.
struct Game;

impl ChannelGuard for Game {
    fn join(&self, peer: Peer, channel: String) -> BoxFuture<'static, Option<bool>> {
        let answer = channel
            .starts_with("game:")
            .then(|| peer.user_id() == Some("ann"));
        Box::pin(async move { answer })
    }
    fn send(
        &self,
        _peer: Peer,
        channel: String,
        event: String,
        _payload: Value,
    ) -> BoxFuture<'static, Option<bool>> {
        let answer = channel.starts_with("game:").then(|| event != "cheat");
        Box::pin(async move { answer })
    }
}

async fn next(connection: &mut Connection) -> Value {
    match tokio::time::timeout(std::time::Duration::from_secs(2), connection.next_frame()).await {
        Ok(Ok(frame)) => serde_json::from_str(&frame).unwrap_or_default(),
        other => panic!("no frame: {other:?}"),
    }
}

#[tokio::test]
async fn rules_and_the_guard_must_both_allow_and_nothing_covering_refuses() {
    let channels = hub(ChannelsConfig::default());
    channels.set_rules(vec![
        ChannelRule::new("game:*"),
        ChannelRule::new("lobby").with(
            ChannelAccess::Anyone,
            ChannelAccess::Nobody,
            ChannelAccess::Anyone,
        ),
    ]);
    channels.set_guard(Arc::new(Game));
    let mut ann = channels.connect();
    ann.set_peer(Peer::user("ann", vec![]));
    let mut bob = channels.connect();
    bob.set_peer(Peer::user("bob", vec![]));
    let mut anon = channels.connect();
    assert!(ann.join("game:1").await.is_ok());
    assert_eq!(
        bob.join("game:1").await,
        Err(ChannelError::Forbidden),
        "the guard refuses"
    );
    assert_eq!(
        anon.join("game:1").await,
        Err(ChannelError::Forbidden),
        "the rule refuses"
    );
    assert_eq!(
        ann.join("nowhere").await,
        Err(ChannelError::Forbidden),
        "nothing covers it"
    );
    assert!(anon.join("lobby").await.is_ok());
    assert_eq!(
        anon.send("lobby", "x", &json!(1)).await,
        Err(ChannelError::Forbidden)
    );
    assert_eq!(
        ann.send("game:1", "cheat", &json!(1)).await,
        Err(ChannelError::Forbidden)
    );
    assert_eq!(
        bob.send("game:1", "move", &json!(1)).await,
        Err(ChannelError::NotJoined)
    );
    assert!(ann.send("game:1", "move", &json!(1)).await.is_ok());
}

#[tokio::test]
async fn members_get_messages_and_presence_and_a_dropped_connection_leaves() {
    let channels = hub(ChannelsConfig::default());
    channels.set_rules(vec![ChannelRule::new("room:*").with(
        ChannelAccess::Anyone,
        ChannelAccess::Anyone,
        ChannelAccess::Anyone,
    )]);
    let mut a = channels.connect();
    let mut b = channels.connect();
    a.join("room:1").await.map_err(|e| e.to_string()).ok();
    a.track("room:1", json!({"n": "a"})).await.ok();
    assert_eq!(next(&mut a).await["event"], "join");
    let state = b
        .join("room:1")
        .await
        .map(|s| s.to_string())
        .unwrap_or_default();
    let state: Value = serde_json::from_str(&state).unwrap_or_default();
    assert_eq!(state["members"][0]["meta"], json!({"n": "a"}));
    b.send("room:1", "hi", &json!([1, 2])).await.ok();
    let message = next(&mut a).await;
    assert_eq!(message["event"], "hi");
    assert_eq!(message["payload"], json!([1, 2]));
    channels.broadcast("room:1", "server", &json!(null)).ok();
    assert_eq!(next(&mut a).await["event"], "server");
    assert_eq!(next(&mut b).await["event"], "server");
    assert_eq!(channels.local_members("room:1"), 2);
    drop(a);
    let left = next(&mut b).await;
    assert_eq!(
        (left["event"].clone(), left["member"]["meta"].clone()),
        (json!("leave"), json!({"n": "a"}))
    );
    assert_eq!(channels.local_members("room:1"), 1);
    b.leave("room:1").ok();
    assert_eq!(channels.local_members("room:1"), 0);
}

#[tokio::test]
async fn limits_refuse_and_a_full_queue_drops_the_connection() {
    let config = ChannelsConfig {
        max_channels_per_connection: 2,
        max_members_per_channel: 1,
        max_message_bytes: 32,
        queue: 2,
        ..ChannelsConfig::default()
    };
    let channels = hub(config);
    channels.set_rules(vec![ChannelRule::new("*").with(
        ChannelAccess::Anyone,
        ChannelAccess::Anyone,
        ChannelAccess::Anyone,
    )]);
    let mut a = channels.connect();
    assert!(a.join("one").await.is_ok());
    assert!(a.join("two").await.is_ok());
    assert_eq!(a.join("three").await, Err(ChannelError::TooManyChannels));
    let mut b = channels.connect();
    assert_eq!(b.join("one").await, Err(ChannelError::ChannelFull));
    assert_eq!(
        a.send("one", "x", &json!("y".repeat(40))).await,
        Err(ChannelError::TooBig)
    );
    assert_eq!(a.join("bad\nname").await, Err(ChannelError::InvalidName));
    // Nobody reads `a`: the third frame for it overflows its queue of two.
    for _ in 0..3 {
        channels.broadcast("one", "x", &json!(1)).ok();
    }
    assert!(matches!(a.next_frame().await, Err(Overflowed)));
}

#[tokio::test]
async fn frames_that_queued_up_are_taken_without_waiting() {
    let channels = hub(ChannelsConfig::default());
    channels.set_rules(vec![ChannelRule::new("room:*").with(
        ChannelAccess::Anyone,
        ChannelAccess::Anyone,
        ChannelAccess::Anyone,
    )]);
    let mut reader = channels.connect();
    let mut sender = channels.connect();
    assert!(reader.join("room:1").await.is_ok());
    assert!(sender.join("room:1").await.is_ok());
    assert!(matches!(reader.try_next_frame(), Ok(None)));
    for n in 1..=3 {
        assert!(sender.send("room:1", "n", &json!(n)).await.is_ok());
    }
    assert_eq!(next(&mut reader).await["payload"], 1);
    let mut rest = Vec::new();
    while let Ok(Some(frame)) = reader.try_next_frame() {
        let frame: Value = serde_json::from_str(&frame).unwrap_or_default();
        rest.push(frame["payload"].clone());
    }
    assert_eq!(rest, [json!(2), json!(3)], "in the order sent");
}
