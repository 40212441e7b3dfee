//! The live socket (`GET /live`) of the real binary: channels with their config rules,
//! presence, logout, limits and their close codes, publications over the socket; and two
//! instances on one PostgreSQL database, one of them killed.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::common::{Http, Server, Workspace, x_auth};
use portico_testkit::sse::Sse;

const RULES: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
[[api.collection]]\nname = \"items\"\n\
[[channels]]\npattern = \"room:*\"\njoin = \"authenticated\"\n\
[[channels]]\npattern = \"staff:*\"\njoin = \"role:staff\"\n\
[[channels]]\npattern = \"lobby\"\njoin = \"anyone\"\nsend = \"authenticated\"\n";

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A client of the live socket.
pub(crate) struct Client {
    pub(crate) socket: Socket,
    pub(crate) next_ref: u64,
}

/// How long a frame that should come may take.
const WAIT: Duration = Duration::from_secs(10);

impl Client {
    /// A socket whose upgrade request carries the header `name: value` (a token or a key).
    pub(crate) async fn connect_with_header(server: &Http, name: &str, value: &str) -> Client {
        let url = format!("{}/live", server.base.replacen("http", "ws", 1));
        let mut request =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
                .expect("request");
        let name = http::HeaderName::from_bytes(name.as_bytes()).expect("header name");
        request
            .headers_mut()
            .insert(name, value.parse().expect("header"));
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("connect");
        Client {
            socket,
            next_ref: 0,
        }
    }

    async fn connect(server: &Http) -> Client {
        let url = format!("{}/live", server.base.replacen("http", "ws", 1));
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("connect to /live");
        Client {
            socket,
            next_ref: 0,
        }
    }

    async fn send_raw(&mut self, frame: Value) {
        self.socket
            .send(Message::text(frame.to_string()))
            .await
            .expect("send a frame");
    }

    /// The next JSON frame (server pings skipped); panics after [`WAIT`].
    pub(crate) async fn next(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(WAIT, self.socket.next())
                .await
                .expect("a frame in time")
                .expect("the socket is open")
                .expect("a frame");
            if let Message::Close(frame) = &message {
                panic!("the socket closed: {frame:?}");
            }
            if let Message::Text(text) = message {
                let value: Value = serde_json::from_str(&text).expect("JSON frame");
                if value["type"] != "ping" {
                    return value;
                }
            }
        }
    }

    /// The next frame of `type`, skipping others.
    pub(crate) async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            let frame = self.next().await;
            if frame["type"] == kind {
                return frame;
            }
        }
    }

    /// Sends `frame` with a fresh `ref` and returns the reply (`ok` or `error`) to it; frames
    /// before it that are not replies are skipped.
    pub(crate) async fn request(&mut self, mut frame: Value) -> Value {
        self.next_ref += 1;
        let reference = format!("r{}", self.next_ref);
        frame["ref"] = json!(reference);
        self.send_raw(frame).await;
        loop {
            let reply = self.next().await;
            if reply["ref"] == json!(reference) {
                return reply;
            }
        }
    }

    pub(crate) async fn ok(&mut self, frame: Value) -> Value {
        let reply = self.request(frame.clone()).await;
        assert_eq!(reply["type"], "ok", "{frame} -> {reply}");
        reply
    }

    async fn auth(&mut self, token: &str) -> Value {
        self.ok(json!({"type": "auth", "token": token})).await
    }

    /// Joins `channel`; the presence state that follows the reply.
    pub(crate) async fn join(&mut self, channel: &str) -> Value {
        self.ok(json!({"type": "join", "channel": channel})).await;
        let state = self.next_of("presence").await;
        assert_eq!(state["event"], "state", "{state}");
        state
    }

    /// Waits for the close frame; its code and reason. Frames before it are skipped.
    pub(crate) async fn closed(&mut self) -> (u16, String) {
        loop {
            match tokio::time::timeout(WAIT, self.socket.next()).await {
                Ok(Some(Ok(Message::Close(Some(frame))))) => {
                    return (u16::from(frame.code), frame.reason.to_string());
                }
                Ok(Some(Ok(_))) => {}
                Ok(other) => panic!("the socket ended without a close frame: {other:?}"),
                Err(_) => panic!("no close frame in time"),
            }
        }
    }

    /// True when no frame but pings arrives for `quiet`.
    async fn silent_for(&mut self, quiet: Duration) -> Option<Value> {
        let until = tokio::time::Instant::now() + quiet;
        loop {
            match tokio::time::timeout_at(until, self.socket.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(Message::Text(text)))) => {
                    let value: Value = serde_json::from_str(&text).unwrap_or_default();
                    if value["type"] != "ping" {
                        return Some(value);
                    }
                }
                Ok(Some(Ok(_))) => {}
                Ok(other) => return Some(json!({"ended": format!("{other:?}")})),
            }
        }
    }
}

/// A server with the rules, and ann (staff) and bob logged in: (server, [(token, id)]).
async fn room() -> (Workspace, Server, Vec<(String, String)>) {
    let ws = Workspace::new();
    ws.config(RULES);
    ws.add_user("ann", "ann-password", &["staff"]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let ann = server.rest_login("/api/", "ann", "ann-password").await;
    let bob = server.rest_login("/api/", "bob", "bob-password").await;
    (ws, server, vec![ann, bob])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_message_each_other_and_see_presence() {
    let (_ws, server, users) = room().await;
    let (ann_token, ann_id) = &users[0];
    let (bob_token, bob_id) = &users[1];
    let mut ann = Client::connect(&server).await;
    let authed = ann.auth(ann_token).await;
    assert_eq!(authed["userId"], json!(ann_id));
    let state = ann.join("room:1").await;
    assert_eq!(state["members"], json!([]));
    ann.ok(json!({"type": "track", "channel": "room:1", "meta": {"name": "Ann"}}))
        .await;
    let own = ann.next_of("presence").await;
    assert_eq!(own["event"], "join");

    let mut bob = Client::connect(&server).await;
    bob.auth(bob_token).await;
    let state = bob.join("room:1").await;
    let members = state["members"].as_array().cloned().unwrap_or_default();
    assert_eq!(members.len(), 1, "{state}");
    assert_eq!(members[0]["userId"], json!(ann_id));
    assert_eq!(members[0]["meta"], json!({"name": "Ann"}));
    bob.ok(json!({"type": "track", "channel": "room:1", "meta": {"name": "Bob"}}))
        .await;
    let joined = ann.next_of("presence").await;
    assert_eq!(joined["event"], "join");
    assert_eq!(joined["member"]["userId"], json!(bob_id));

    // A typing indicator: no ref, no reply; the other member gets it, the sender does not.
    bob.send_raw(
        json!({"type": "send", "channel": "room:1", "event": "typing", "payload": {"on": true}}),
    )
    .await;
    let message = ann.next_of("message").await;
    assert_eq!(
        message,
        json!({"type": "message", "channel": "room:1", "event": "typing", "payload": {"on": true}, "from": bob_id})
    );
    // Per sender, in order.
    for i in 0..20 {
        bob.send_raw(json!({"type": "send", "channel": "room:1", "event": "n", "payload": i}))
            .await;
    }
    for i in 0..20 {
        assert_eq!(ann.next_of("message").await["payload"], json!(i));
    }
    assert_eq!(
        bob.silent_for(Duration::from_millis(300))
            .await
            .and_then(|f| (f["type"] == "message").then_some(f)),
        None
    );

    // Leaving (and closing) takes the presence away.
    drop(bob);
    let left = ann.next_of("presence").await;
    assert_eq!(left["event"], "leave");
    assert_eq!(left["member"]["userId"], json!(bob_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_client_sees_nothing_of_the_channel() {
    let (_ws, server, users) = room().await;
    let (ann_token, _) = &users[0];
    let (bob_token, _) = &users[1];
    let mut ann = Client::connect(&server).await;
    ann.auth(ann_token).await;
    ann.join("staff:ops").await;
    ann.ok(json!({"type": "track", "channel": "staff:ops", "meta": {}}))
        .await;

    // Bob is not staff; an anonymous client may not join rooms; nobody may join a channel no
    // rule names. Every refusal reads the same, busy channel or not.
    let mut bob = Client::connect(&server).await;
    bob.auth(bob_token).await;
    let mut anon = Client::connect(&server).await;
    let refusals = [
        bob.request(json!({"type": "join", "channel": "staff:ops"}))
            .await,
        bob.request(json!({"type": "join", "channel": "staff:empty"}))
            .await,
        bob.request(json!({"type": "join", "channel": "nowhere"}))
            .await,
        anon.request(json!({"type": "join", "channel": "room:1"}))
            .await,
    ];
    for refusal in &refusals {
        assert_eq!(refusal["type"], "error", "{refusal}");
        assert_eq!(refusal["code"], "forbidden");
        assert_eq!(refusal["reason"], refusals[0]["reason"]);
    }
    // Not a member: it cannot send there, and gets nothing of it.
    let send = bob
        .request(json!({"type": "send", "channel": "staff:ops", "event": "x", "payload": 1}))
        .await;
    assert_eq!(send["code"], "not-joined");
    ann.send_raw(json!({"type": "send", "channel": "staff:ops", "event": "secret", "payload": 1}))
        .await;
    assert_eq!(bob.silent_for(Duration::from_millis(500)).await, None);

    // The lobby lets anyone in but only the logged-in send.
    anon.join("lobby").await;
    let send = anon
        .request(json!({"type": "send", "channel": "lobby", "event": "x", "payload": 1}))
        .await;
    assert_eq!(send["code"], "forbidden");

    // A forged token is refused, and leaves the socket as it was.
    let forged = anon
        .request(json!({"type": "auth", "token": "x".repeat(43)}))
        .await;
    assert_eq!(forged["code"], "unauthorized");
    let still = anon
        .request(json!({"type": "join", "channel": "room:1"}))
        .await;
    assert_eq!(still["code"], "forbidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_logout_ends_the_sockets_rights() {
    let (_ws, server, users) = room().await;
    let (ann_token, _) = &users[0];
    let mut ann = Client::connect(&server).await;
    ann.auth(ann_token).await;
    ann.join("room:1").await;
    let out = server
        .call("POST", "/api/logout", None, &x_auth(ann_token))
        .await;
    assert_eq!(out.status, 200, "{}", out.raw);
    let error = ann.next_of("error").await;
    assert_eq!(error["code"], "logged-out");
    assert_eq!(ann.closed().await, (4001, "logged-out".to_owned()));
    // The token no longer logs a socket in.
    let mut again = Client::connect(&server).await;
    let refused = again
        .request(json!({"type": "auth", "token": ann_token}))
        .await;
    assert_eq!(refused["code"], "unauthorized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_the_upgrade_request_logs_the_socket_in() {
    let (_ws, server, users) = room().await;
    let (ann_token, _) = &users[0];
    let mut ann = Client::connect_with_header(&server, "x-auth-token", ann_token).await;
    ann.join("staff:ops").await;
    // A plain GET is told to upgrade.
    let plain = server.call("GET", "/live", None, &[]).await;
    assert_eq!(plain.status, 426, "{}", plain.raw);
    // In the shape of the server's own paths (as /openapi.json describes them).
    assert_eq!(plain.body["status"], "upgrade-required", "{}", plain.raw);
}

/// A server whose limits are small enough to reach in a test.
async fn limited(extra: &str) -> (Workspace, Server) {
    let ws = Workspace::new();
    ws.config(&format!(
        "{RULES}[live]\nmax_channels = 5\nmax_frame_bytes = 4096\nmax_message_bytes = 1024\n{extra}"
    ));
    let server = ws.serve();
    (ws, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_limit_a_client_gets_an_error_then_a_stated_close() {
    let (_ws, server) = limited("frames_per_second = 20\n").await;

    // A flood of frames.
    let mut flood = Client::connect(&server).await;
    for _ in 0..200 {
        if flood
            .socket
            .send(Message::text(json!({"type": "ping"}).to_string()))
            .await
            .is_err()
        {
            break;
        }
    }
    let error = flood.next_of("error").await;
    assert_eq!(error["code"], "rate-limited");
    assert_eq!(flood.closed().await, (4008, "rate-limited".to_owned()));

    // A frame over the size limit.
    let mut huge = Client::connect(&server).await;
    let _ = huge.socket.send(Message::text("x".repeat(1 << 20))).await;
    let (code, _) = huge.closed().await;
    assert_eq!(code, 4009);

    // A message over its limit, within the frame limit.
    let mut big = Client::connect(&server).await;
    big.join("lobby").await;
    let anon_send = big
        .request(json!({"type": "track", "channel": "lobby", "meta": {"x": "y".repeat(2000)}}))
        .await;
    assert_eq!(anon_send["code"], "too-big");
    assert_eq!(big.closed().await, (4009, "too-big".to_owned()));

    // Joins past the channels a connection may be in.
    let mut joiner = Client::connect(&server).await;
    for i in 0..5 {
        let reply = joiner
            .request(json!({"type": "join", "channel": "lobby"}))
            .await;
        assert_eq!(reply["type"], "ok", "{i}: {reply}");
    }
    let _ = joiner;
    let (ws2, server2) =
        limited("frames_per_second = 100000\nbytes_per_second = 100000000\n").await;
    let _keep = ws2;
    let mut joiner = Client::connect(&server2).await;
    let mut sent = 0;
    for i in 0..10_000 {
        let frame = json!({"type": "join", "channel": format!("lobby{i}")});
        if joiner
            .socket
            .send(Message::text(frame.to_string()))
            .await
            .is_err()
        {
            break;
        }
        sent += 1;
    }
    assert!(sent > 0);
    // No rule names `lobbyN`: each is refused, and the socket lives on.
    let refused = joiner.next_of("error").await;
    assert_eq!(refused["code"], "forbidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_past_the_channel_limit_close_the_socket() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{RULES}[[channels]]\npattern = \"open:*\"\njoin = \"anyone\"\n[live]\nmax_channels = 5\nframes_per_second = 100000\nbytes_per_second = 100000000\n"
    ));
    let server = ws.serve();
    let mut joiner = Client::connect(&server).await;
    for i in 0..10_000 {
        let frame = json!({"type": "join", "channel": format!("open:{i}")});
        if joiner
            .socket
            .send(Message::text(frame.to_string()))
            .await
            .is_err()
        {
            break;
        }
    }
    let error = joiner.next_of("error").await;
    assert_eq!(error["code"], "too-many-channels");
    assert_eq!(
        joiner.closed().await,
        (4010, "too-many-channels".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_dropped_and_the_others_go_on() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{RULES}[[channels]]\npattern = \"open:*\"\njoin = \"anyone\"\nsend = \"anyone\"\n[live]\nmax_message_bytes = 6000\nframes_per_second = 1000\nbytes_per_second = 100000000\n"
    ));
    let server = ws.serve_binary();
    // The sleeper's socket holds little in the kernel, so its server-side queue fills soon.
    let addr: std::net::SocketAddr = server
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let tcp = tokio::net::TcpSocket::new_v4().expect("socket");
    tcp.set_recv_buffer_size(4096).expect("small buffer");
    let stream = tcp.connect(addr).await.expect("connect");
    let (socket, _) = tokio_tungstenite::client_async(
        format!("ws://{addr}/live"),
        tokio_tungstenite::MaybeTlsStream::Plain(stream),
    )
    .await
    .expect("upgrade");
    let mut sleeper = Client {
        socket,
        next_ref: 0,
    };
    sleeper.join("open:1").await;
    let mut reader = Client::connect(&server).await;
    reader.join("open:1").await;
    let mut sender = Client::connect(&server).await;
    sender.join("open:1").await;
    let payload = "p".repeat(5800);
    // Far more than the sleeper's queue and its socket's buffers hold.
    let reader_task = tokio::spawn(async move {
        let mut got = 0;
        while got < 1500 {
            match tokio::time::timeout(WAIT, reader.socket.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => {
                    if text.contains("\"message\"") {
                        got += 1;
                    }
                }
                Ok(Some(Ok(_))) => {}
                other => panic!("reader ended after {got}: {other:?}"),
            }
        }
        got
    });
    for i in 0..1500 {
        sender
            .send_raw(
                json!({"type": "send", "channel": "open:1", "event": "x", "payload": [i, payload]}),
            )
            .await;
    }
    let got = tokio::time::timeout(Duration::from_secs(60), reader_task)
        .await
        .expect("the reader got every message in time");
    let got = got.unwrap_or_else(|e| {
        panic!(
            "reader: {e}\n{}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        )
    });
    assert_eq!(got, 1500);
    // The sleeper was dropped: reading now, it finds the end of its socket after what was
    // already buffered.
    let mut seen = 0usize;
    let ended = loop {
        match tokio::time::timeout(WAIT, sleeper.socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame.map(|f| f.code),
            Ok(Some(Ok(_))) => seen += 1,
            Ok(Some(Err(_)) | None) => break None,
            Err(_) => panic!("the slow socket was not ended (read {seen} frames)"),
        }
    };
    assert!(seen < 1500, "the slow client was sent everything: {seen}");
    if let Some(code) = ended {
        assert_eq!(code, CloseCode::from(4029));
    }
}

/// Waits for the presence of `user_id` in `channel`: in the state that follows the join, or
/// in a later `join` frame.
async fn sees_member(client: &mut Client, state: &Value, user_id: &str) {
    let listed = state["members"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["userId"] == json!(user_id)));
    if listed {
        return;
    }
    loop {
        let frame = client.next_of("presence").await;
        if frame["event"] == "join" && frame["member"]["userId"] == json!(user_id) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_channels_and_a_killed_ones_members_leave() {
    let ws = Workspace::on_postgres();
    ws.config(&format!(
        "{RULES}[live]\nheartbeat_ms = 200\npresence_timeout_ms = 1500\n"
    ));
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let mut a = ws.serve_binary();
    let b = ws.serve_binary();
    let (ann_token, ann_id) = a.rest_login("/api/", "ann", "ann-password").await;
    let (bob_token, bob_id) = b.rest_login("/api/", "bob", "bob-password").await;

    let mut ann = Client::connect(&a).await;
    ann.auth(&ann_token).await;
    ann.join("room:1").await;
    ann.ok(json!({"type": "track", "channel": "room:1", "meta": {"name": "Ann"}}))
        .await;

    let mut bob = Client::connect(&b).await;
    bob.auth(&bob_token).await;
    let state = bob.join("room:1").await;
    // Ann is on the other instance: B learns of her from A.
    sees_member(&mut bob, &state, &ann_id).await;
    bob.ok(json!({"type": "track", "channel": "room:1", "meta": {"name": "Bob"}}))
        .await;
    loop {
        let frame = ann.next_of("presence").await;
        if frame["event"] == "join" && frame["member"]["userId"] == json!(bob_id) {
            break;
        }
    }

    // Messages cross, in the order each sender sent them.
    ann.send_raw(json!({"type": "send", "channel": "room:1", "event": "typing", "payload": true}))
        .await;
    let typing = bob.next_of("message").await;
    assert_eq!(typing["from"], json!(ann_id));
    assert_eq!(typing["payload"], json!(true));
    for i in 0..30 {
        bob.send_raw(json!({"type": "send", "channel": "room:1", "event": "n", "payload": i}))
            .await;
    }
    for i in 0..30 {
        assert_eq!(ann.next_of("message").await["payload"], json!(i));
    }

    // A dies without a word: its members leave B's presence within the timeout.
    a.child.kill().expect("kill -9 A");
    a.child.wait().expect("reap A");
    let killed = std::time::Instant::now();
    loop {
        let frame = bob.next_of("presence").await;
        if frame["event"] == "leave" && frame["member"]["userId"] == json!(ann_id) {
            break;
        }
    }
    let took = killed.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "the dead instance's member left after {took:?}"
    );

    // Ann's client reconnects to B and rejoins.
    let mut ann = Client::connect(&b).await;
    ann.auth(&ann_token).await;
    let state = ann.join("room:1").await;
    assert!(
        state["members"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["userId"] == json!(bob_id))),
        "{state}"
    );
    ann.ok(json!({"type": "track", "channel": "room:1", "meta": {"name": "Ann"}}))
        .await;
    let back = bob.next_of("presence").await;
    assert_eq!(back["event"], "join");
    assert_eq!(back["member"]["userId"], json!(ann_id));
}

#[cfg(feature = "scripts")]
const SCRIPT: &str = r#"
import { channels, broadcast, methods, publish, collection } from "portico";

publish("notes", function () {
  return collection("notes").find({}, { sort: { n: 1 } });
});

channels({
  "game:*": {
    join(name: string) {
      return this.userId !== null && name !== "game:closed";
    },
    send(name: string, message: { event: string; payload: unknown }) {
      return message.event !== "cheat";
    },
  },
});

methods({
  async announce(room: string, text: string) {
    await broadcast(room, "announce", { text, by: this.userId });
    return true;
  },
  async addNote(n: number) {
    return await collection("notes").insert({ n });
  },
});
"#;

#[cfg(feature = "scripts")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_functions_decide_and_methods_broadcast() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{RULES}[auto]\nauth_failure_delay_ms = 0\n[scripts]\nmain = \"main.ts\"\n"
    ));
    std::fs::write(ws.path("main.ts"), SCRIPT).expect("script");
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann_token, ann_id) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob_token, _) = server.rest_login("/api/", "bob", "bob-password").await;

    // No [[channels]] rule names `game:*`: the script decides alone.
    let mut anon = Client::connect(&server).await;
    let refused = anon
        .request(json!({"type": "join", "channel": "game:1"}))
        .await;
    assert_eq!(refused["code"], "forbidden");
    let mut ann = Client::connect(&server).await;
    ann.auth(&ann_token).await;
    let closed = ann
        .request(json!({"type": "join", "channel": "game:closed"}))
        .await;
    assert_eq!(closed["code"], "forbidden");
    ann.join("game:1").await;
    let mut bob = Client::connect(&server).await;
    bob.auth(&bob_token).await;
    bob.join("game:1").await;
    let cheat = ann
        .request(json!({"type": "send", "channel": "game:1", "event": "cheat", "payload": 1}))
        .await;
    assert_eq!(cheat["code"], "forbidden");
    ann.ok(json!({"type": "send", "channel": "game:1", "event": "move", "payload": "e4"}))
        .await;
    let moved = bob.next_of("message").await;
    assert_eq!(moved["event"], "move");
    assert_eq!(moved["from"], json!(ann_id));

    // A method broadcasts: every member gets it, from the server.
    let called = server
        .call(
            "POST",
            "/methods/announce",
            Some(json!(["game:1", "hello"])),
            &x_auth(&ann_token),
        )
        .await;
    assert_eq!(called.status, 200, "{}", called.raw);
    for client in [&mut ann, &mut bob] {
        let announced = client.next_of("message").await;
        assert_eq!(announced["event"], "announce");
        assert_eq!(announced["from"], Value::Null);
        assert_eq!(announced["payload"], json!({"text": "hello", "by": ann_id}));
    }

    // A publication followed over the same socket: its initial set, `ready`, then changes.
    let first = server
        .call("POST", "/methods/addNote", Some(json!([1])), &[])
        .await;
    assert_eq!(first.status, 200, "{}", first.raw);
    ann.ok(json!({"type": "subscribe", "id": "n", "publication": "notes", "args": []}))
        .await;
    let added = ann.next_of("added").await;
    assert_eq!(added["sub"], "n");
    assert_eq!(added["collection"], "notes");
    assert_eq!(added["fields"]["n"], json!(1));
    assert_eq!(ann.next_of("ready").await["sub"], "n");
    server
        .call("POST", "/methods/addNote", Some(json!([2])), &[])
        .await;
    let live = ann.next_of("added").await;
    assert_eq!(live["fields"]["n"], json!(2));
    ann.ok(json!({"type": "unsubscribe", "id": "n"})).await;
    server
        .call("POST", "/methods/addNote", Some(json!([3])), &[])
        .await;
    let after = ann.silent_for(Duration::from_millis(500)).await;
    assert_eq!(after, None, "nothing after unsubscribe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_follow_over_the_socket_with_the_rules_of_their_door() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\nauth_required = true\n",
    );
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann_token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob_token, _) = server.rest_login("/api/", "bob", "bob-password").await;
    let post = |token: String, text: &'static str| {
        let server = &server;
        async move {
            let r = server
                .call(
                    "POST",
                    "/api/notes",
                    Some(json!({"text": text})),
                    &x_auth(&token),
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.raw);
        }
    };
    post(ann_token.clone(), "ann's first").await;
    post(bob_token.clone(), "bob's").await;

    // Not logged in: refused as the routes door refuses it.
    let mut anon = Client::connect(&server).await;
    let refused = anon
        .request(json!({"type": "subscribe", "id": "n", "list": "/api/notes"}))
        .await;
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "status-401", "{refused}");
    assert_eq!(refused["status"], 401, "{refused}");

    // Ann's socket follows her notes only, with the fields asked for.
    let mut ann = Client::connect(&server).await;
    ann.auth(&ann_token).await;
    ann.ok(json!({"type": "subscribe", "id": "mine", "list": "/api/notes?fields=text&sort=text"}))
        .await;
    let first = ann.next_of("added").await;
    assert_eq!(first["sub"], "mine");
    assert_eq!(first["fields"], json!({"text": "ann's first"}));
    assert_eq!(ann.next_of("ready").await["sub"], "mine");
    post(bob_token.clone(), "bob's second").await;
    post(ann_token.clone(), "ann's second").await;
    let next = ann.next_of("added").await;
    assert_eq!(
        next["fields"],
        json!({"text": "ann's second"}),
        "bob's note never shows"
    );

    // Logging out ends the socket (and its lists).
    let out = server
        .call("POST", "/api/logout", None, &x_auth(&ann_token))
        .await;
    assert_eq!(out.status, 200);
    let (code, _) = ann.closed().await;
    assert_eq!(code, 4001);
}

/// `GET /live` as server-sent events: `?list=` and `?publication=&args=`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_answers_server_sent_events_for_a_list_or_a_publication() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\nauth_required = true\n\
         [auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n\
         [auto.rules.things]\ninsert = \"anyone\"\n\
         [[auto.publication]]\nname = \"things\"\ncollection = \"things\"\nfields = { secret = 0 }\n",
    );
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;
    for (token, text) in [(&ann, "ann's"), (&bob, "bob's")] {
        let r = server
            .call(
                "POST",
                "/api/notes",
                Some(json!({"text": text})),
                &x_auth(token),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.raw);
    }
    let sse = |query: &str, token: Option<&str>| {
        let mut request = reqwest::Client::new()
            .get(server.url(&format!("/live?{query}")))
            .header("accept", "text/event-stream");
        if let Some(token) = token {
            request = request.header("x-auth-token", token);
        }
        request
    };
    let list = "list=%2Fapi%2Fnotes%3Ffields%3Dtext";

    // A list, with the rules of its door: ann sees her notes only, then her next one.
    let mut notes = Sse::open(sse(list, Some(&ann))).await;
    assert_eq!(
        notes.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    let (event, data) = notes.next().await;
    assert_eq!(
        (event.as_str(), &data["fields"]),
        ("added", &json!({"text": "ann's"}))
    );
    assert_eq!(notes.next().await.0, "ready");
    for (token, text) in [(&bob, "bob's second"), (&ann, "ann's second")] {
        server
            .call(
                "POST",
                "/api/notes",
                Some(json!({"text": text})),
                &x_auth(token),
            )
            .await;
    }
    let (event, data) = notes.next().await;
    assert_eq!(
        (event.as_str(), &data["fields"]["text"]),
        ("added", &json!("ann's second")),
        "bob's note never shows: {data}"
    );

    // Without a token the door refuses, with its status, as `{status, reason}`.
    let refused = server
        .call(
            "GET",
            &format!("/live?{list}"),
            None,
            &[("accept", "text/event-stream")],
        )
        .await;
    assert_eq!(refused.status, 401, "{}", refused.raw);
    assert!(refused.body["status"].is_string(), "{}", refused.raw);
    assert!(refused.body["reason"].is_string(), "{}", refused.raw);

    // A publication, with args, as anyone.
    let r = server
        .call("POST", "/things", Some(json!({"a": 1, "secret": "s"})), &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let mut things = Sse::open(sse("publication=things&args=%5B%5D", None)).await;
    let (event, data) = things.next().await;
    assert_eq!((event.as_str(), &data["fields"]["a"]), ("added", &json!(1)));
    assert!(data["fields"].get("secret").is_none(), "{data}");
    assert_eq!(things.next().await.0, "ready");
    server
        .call("POST", "/things", Some(json!({"a": 2})), &[])
        .await;
    let (event, data) = things.next().await;
    assert_eq!((event.as_str(), &data["fields"]["a"]), ("added", &json!(2)));

    // Logging ann out ends her stream, as the door's own stream ends.
    let out = server
        .call("POST", "/api/logout", None, &x_auth(&ann))
        .await;
    assert_eq!(out.status, 200);
    assert!(notes.ends().await, "the list stream ends after a logout");

    // Bad queries: a clear 400; an unknown publication: 404; no stream asked for: 426.
    let event_stream = [("accept", "text/event-stream")];
    for query in [
        "",
        "list=%2Fapi%2Fnotes&publication=things",
        "publication=things&args=%7B%7D",
        "list=http%3A%2F%2Felsewhere%2F",
    ] {
        let r = server
            .call("GET", &format!("/live?{query}"), None, &event_stream)
            .await;
        assert_eq!(r.status, 400, "{query}: {}", r.raw);
        assert!(r.body["reason"].is_string(), "{query}: {}", r.raw);
    }
    let missing = server
        .call("GET", "/live?publication=nope", None, &event_stream)
        .await;
    assert_eq!(missing.status, 404, "{}", missing.raw);
    let plain = server
        .call("GET", "/live?publication=things", None, &[])
        .await;
    assert_eq!(plain.status, 426, "{}", plain.raw);

    // /openapi.json names the parameters.
    let doc = server.call("GET", "/openapi.json", None, &[]).await;
    let params: Vec<&str> = doc.body["paths"]["/live"]["get"]["parameters"]
        .as_array()
        .map(|ps| ps.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(params, ["list", "publication", "args"], "{}", doc.raw);
}
