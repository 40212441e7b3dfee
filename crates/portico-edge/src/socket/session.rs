//! One socket from upgrade to close: reads the client's frames under its budget, writes the
//! channels' frames and the subscriptions' events, pings, and closes with a stated code when a
//! limit is passed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures::{SinkExt, StreamExt};
use portico_platform::{
    ChannelError, Connection, LiveCaller, LoginWatch, Peer, Platform, TOKEN_PATH, hash_token,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::budget::Budget;
use super::close;
use super::frame::{ClientFrame, echo_ref, error, live_event, ok, refusal};

/// How long one write may wait for a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most channel frames written with one flush.
const MAX_BATCH: usize = 64;

/// Who the socket is logged in as, and the watch that ends it.
pub(super) struct Login {
    pub(super) peer: Peer,
    pub(super) caller: LiveCaller,
    pub(super) watch: LoginWatch,
    /// The login token itself, for the list requests made on the socket's behalf.
    pub(super) token: Option<String>,
}

/// Why the loop stops: a close code and reason, or a socket that is gone.
enum Stop {
    Close(u16, &'static str),
    Gone,
}

/// A subscription's task, aborted when dropped.
struct Subscription(tokio::task::JoinHandle<()>);

impl Drop for Subscription {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Session {
    platform: Platform,
    socket: WebSocket,
    connection: Connection,
    login: Option<Login>,
    subscriptions: HashMap<String, Subscription>,
    events_tx: mpsc::Sender<String>,
    lists: Option<axum::Router>,
}

/// Waits for the end of `login`, forever without one.
async fn login_ended(login: &mut Option<Login>) -> &'static str {
    match login {
        Some(login) => login.watch.ended().await,
        None => std::future::pending().await,
    }
}

/// Runs the socket until it closes.
pub(super) async fn run(
    socket: WebSocket,
    platform: Platform,
    lists: Option<axum::Router>,
    login: Option<Login>,
) {
    let config = platform.channels().config().clone();
    let mut connection = platform.channels().connect();
    if let Some(login) = &login {
        connection.set_peer(login.peer.clone());
    }
    let (events_tx, mut events_rx) = mpsc::channel(config.queue.max(1));
    let mut session = Session {
        platform,
        socket,
        connection,
        login,
        subscriptions: HashMap::new(),
        events_tx,
        lists,
    };
    let mut budget = Budget::new(config.frames_per_second, config.bytes_per_second);
    let mut heard = Instant::now();
    let mut ping = tokio::time::interval(config.ping);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let stop = loop {
        let step = tokio::select! {
            reason = login_ended(&mut session.login) => {
                let code = if reason == "expired" { "expired" } else { "logged-out" };
                let _ = session.write(error(&Value::Null, code, "The login ended; log in again")).await;
                Err(Stop::Close(close::LOGGED_OUT, code))
            }
            frame = session.connection.next_frame() => match frame {
                Ok(frame) => session.write_queued(&frame).await,
                Err(_) => Err(Stop::Close(close::SLOW_CONSUMER, "slow-consumer")),
            },
            event = events_rx.recv() => match event {
                Some(text) => session.write(text).await,
                None => Ok(()),
            },
            message = session.socket.recv() => {
                heard = Instant::now();
                match message {
                    Some(Ok(Message::Text(text))) => {
                        if budget.spend(text.len()) {
                            session.on_text(&text).await
                        } else {
                            let _ = session.write(error(&Value::Null, "rate-limited", "Too many frames or bytes per second")).await;
                            Err(Stop::Close(close::RATE_LIMITED, "rate-limited"))
                        }
                    }
                    Some(Ok(Message::Binary(bytes))) => {
                        if budget.spend(bytes.len()) {
                            session.write(error(&Value::Null, "bad-frame", "Frames are JSON text")).await
                        } else {
                            Err(Stop::Close(close::RATE_LIMITED, "rate-limited"))
                        }
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(()),
                    Some(Ok(Message::Close(_))) | None => Err(Stop::Gone),
                    Some(Err(e)) => Err(read_failure(&e)),
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > config.idle_timeout {
                    Err(Stop::Close(close::IDLE, "idle"))
                } else {
                    session.write(json!({"type": "ping"}).to_string()).await
                }
            }
        };
        if let Err(stop) = step {
            break stop;
        }
    };
    if let Stop::Close(code, reason) = stop {
        tracing::info!(code, reason, "live socket closed by the server");
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            session.socket.send(Message::Close(Some(frame))),
        )
        .await;
    }
}

/// The close a failed read calls for: a frame over the size limit, or a broken socket.
fn read_failure(e: &axum::Error) -> Stop {
    let text = e.to_string();
    if text.contains("too long") || text.contains("too big") || text.contains("Space limit") {
        Stop::Close(close::TOO_BIG, "too-big")
    } else {
        Stop::Gone
    }
}

impl Session {
    /// Writes `text`; a client that does not take it within [`WRITE_TIMEOUT`] is dropped.
    async fn write(&mut self, text: String) -> Result<(), Stop> {
        match tokio::time::timeout(WRITE_TIMEOUT, self.socket.send(Message::Text(text.into())))
            .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Stop::Gone),
            Err(_) => Err(Stop::Gone),
        }
    }

    async fn write_shared(&mut self, frame: &Arc<str>) -> Result<(), Stop> {
        self.write(frame.to_string()).await
    }

    /// Writes `first` and the channel frames queued behind it (up to [`MAX_BATCH`]) with one
    /// flush: a client that fell behind a burst (a fan-out to many members) gets them in one
    /// write rather than one write each. A client that does not take them within
    /// [`WRITE_TIMEOUT`] is dropped.
    async fn write_queued(&mut self, first: &Arc<str>) -> Result<(), Stop> {
        let Session {
            socket, connection, ..
        } = self;
        let batch = async {
            socket.feed(Message::Text(first.to_string().into())).await?;
            for _ in 1..MAX_BATCH {
                match connection.try_next_frame() {
                    Ok(Some(frame)) => socket.feed(Message::Text(frame.to_string().into())).await?,
                    // An overflow is seen by the next `next_frame`.
                    Ok(None) | Err(_) => break,
                }
            }
            socket.flush().await
        };
        match tokio::time::timeout(WRITE_TIMEOUT, batch).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(Stop::Gone),
        }
    }

    /// Handles one text frame.
    async fn on_text(&mut self, text: &str) -> Result<(), Stop> {
        let frame: ClientFrame = match serde_json::from_str(text) {
            Ok(frame) => frame,
            Err(_) => {
                return self
                    .write(error(
                        &Value::Null,
                        "bad-frame",
                        "A frame is a JSON object with a `type`",
                    ))
                    .await;
            }
        };
        let reference = echo_ref(frame.reference.as_ref());
        match frame.kind.as_str() {
            "ping" => {
                self.write(json!({"type": "pong", "ref": reference}).to_string())
                    .await
            }
            "pong" => Ok(()),
            "auth" => self.auth(&reference, frame.token.as_deref()).await,
            "join" | "leave" | "send" | "track" | "untrack" => {
                self.channel(&reference, frame).await
            }
            "subscribe" => self.subscribe(&reference, frame).await,
            "unsubscribe" => {
                let id = frame.id.unwrap_or_default();
                if self.subscriptions.remove(&id).is_some() {
                    self.write(ok(&reference, json!({}))).await
                } else {
                    self.write(error(
                        &reference,
                        "not-subscribed",
                        "No subscription has this id",
                    ))
                    .await
                }
            }
            _ => {
                self.write(error(&reference, "bad-frame", "Unknown frame type"))
                    .await
            }
        }
    }

    /// `auth`: logs the socket in with a login token (again: renews it), or out without one.
    async fn auth(&mut self, reference: &Value, token: Option<&str>) -> Result<(), Stop> {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            self.become_peer(None);
            return self.write(ok(reference, json!({"userId": null}))).await;
        };
        let user = match self.platform.accounts().user_by_token(token).await {
            Ok(user) => user,
            Err(e) => {
                tracing::error!(error = %e, "socket: could not look a login token up");
                return self
                    .write(error(reference, "internal-error", "Internal server error"))
                    .await;
            }
        };
        let Some(user) = user else {
            return self
                .write(error(reference, "unauthorized", "The token is not valid"))
                .await;
        };
        let peer = Peer::of_user(&user);
        let Some(user_id) = peer.user_id().map(str::to_owned) else {
            return self
                .write(error(reference, "unauthorized", "The token is not valid"))
                .await;
        };
        let caller = LiveCaller::with_token(&user_id, TOKEN_PATH, hash_token(token));
        let watch = match self.platform.watch_login(caller.clone()).await {
            Ok(watch) => watch,
            Err(e) => {
                let reason = e.reason.clone().unwrap_or_default();
                return self.write(error(reference, &e.error, &reason)).await;
            }
        };
        self.become_peer(Some(Login {
            peer,
            caller,
            watch,
            token: Some(token.to_owned()),
        }));
        self.write(ok(reference, json!({"userId": user_id}))).await
    }

    /// Makes the socket `login` (or no one); a different user keeps none of the last one's
    /// channels or subscriptions.
    fn become_peer(&mut self, login: Option<Login>) {
        let before = self.connection.peer().user_id().map(str::to_owned);
        let peer = login
            .as_ref()
            .map_or_else(Peer::anonymous, |l| l.peer.clone());
        if peer.user_id() != before.as_deref() {
            self.subscriptions.clear();
        }
        self.connection.set_peer(peer);
        self.login = login;
    }

    /// `join`, `leave`, `send`, `track`, `untrack`.
    async fn channel(&mut self, reference: &Value, frame: ClientFrame) -> Result<(), Stop> {
        let Some(channel) = frame.channel else {
            return self
                .write(error(
                    reference,
                    "bad-frame",
                    "The frame names no `channel`",
                ))
                .await;
        };
        let done = match frame.kind.as_str() {
            "join" => match self.connection.join(&channel).await {
                Ok(state) => {
                    self.write(ok(reference, json!({"channel": channel})))
                        .await?;
                    return self.write_shared(&state).await;
                }
                Err(e) => Err(e),
            },
            "leave" => self.connection.leave(&channel),
            "send" => {
                let event = frame.event.unwrap_or_default();
                let payload = frame.payload.unwrap_or(Value::Null);
                let sent = self.connection.send(&channel, &event, &payload).await;
                // The members' sockets get to write before this one reads its next frame: a
                // burst read at once would otherwise fill their queues before they run.
                tokio::task::yield_now().await;
                sent
            }
            "track" => {
                let meta = frame.meta.unwrap_or_else(|| json!({}));
                self.connection.track(&channel, meta).await
            }
            _ => self.connection.untrack(&channel),
        };
        match done {
            // A send without a `ref` asks for no reply (typing indicators, cursors).
            Ok(()) if frame.kind == "send" && reference.is_null() => Ok(()),
            Ok(()) => self.write(ok(reference, json!({"channel": channel}))).await,
            Err(e) => self.refused(reference, &e).await,
        }
    }

    /// The `error` frame of a refusal, then the close it calls for.
    async fn refused(&mut self, reference: &Value, e: &ChannelError) -> Result<(), Stop> {
        self.write(error(reference, e.code(), &e.to_string()))
            .await?;
        match e.ends_connection() {
            Some(code) => Err(Stop::Close(code, e.code())),
            None => Ok(()),
        }
    }

    /// `subscribe`: a publication with its args, followed live; its events carry `sub`, the
    /// frame's `id`.
    async fn subscribe(&mut self, reference: &Value, frame: ClientFrame) -> Result<(), Stop> {
        let Some(id) = frame.id else {
            return self
                .write(error(
                    reference,
                    "bad-frame",
                    "A subscription needs an `id`, and a `publication` or a `list`",
                ))
                .await;
        };
        if id.is_empty() || id.len() > 64 || self.subscriptions.contains_key(&id) {
            return self
                .write(error(
                    reference,
                    "bad-frame",
                    "The `id` is empty, too long or in use",
                ))
                .await;
        }
        let limit = self
            .platform
            .channels()
            .config()
            .max_channels_per_connection;
        if self.subscriptions.len() >= limit {
            let e = ChannelError::TooManyChannels;
            return self.refused(reference, &e).await;
        }
        if let Some(url) = frame.list {
            return self.subscribe_list(reference, id, &url).await;
        }
        let Some(name) = frame.publication else {
            return self
                .write(error(
                    reference,
                    "bad-frame",
                    "A subscription needs a `publication` or a `list`",
                ))
                .await;
        };
        let caller = self
            .login
            .as_ref()
            .map_or_else(LiveCaller::anonymous, |l| l.caller.clone());
        let args = frame.args.unwrap_or_default();
        let stream = match self.platform.subscribe_live(&name, caller, args).await {
            Ok(stream) => stream,
            Err(e) => {
                let reason = e.reason.clone().unwrap_or_default();
                return self
                    .write(refusal(reference, &e.error, &reason, e.status))
                    .await;
            }
        };
        let tx = self.events_tx.clone();
        let sub = id.clone();
        let task = tokio::spawn(async move {
            let mut stream = stream;
            while let Some(event) = stream.next().await {
                // Waiting here lets the stream's own bounded buffer fill when the client reads
                // too slowly; the platform then ends the stream (`end`, `slow-subscriber`).
                let name = event.name();
                if tx.send(live_event(&sub, name, event.json())).await.is_err() || name == "end" {
                    return;
                }
            }
            // A stream that stopped without saying why: the client subscribes again.
            let _ = tx
                .send(live_event(&sub, "end", r#"{"reason":"closed"}"#))
                .await;
        });
        self.subscriptions.insert(id.clone(), Subscription(task));
        self.write(ok(reference, json!({"id": id}))).await
    }

    /// `subscribe` with a `list` URL, followed through the doors (see `lists.rs`).
    async fn subscribe_list(
        &mut self,
        reference: &Value,
        id: String,
        url: &str,
    ) -> Result<(), Stop> {
        let Some(app) = self.lists.clone() else {
            return self
                .write(error(
                    reference,
                    "bad-frame",
                    "Lists are not served on this socket",
                ))
                .await;
        };
        let token = self.login.as_ref().and_then(|l| l.token.clone());
        let opened = super::lists::open(
            &app,
            url,
            token.as_deref(),
            id.clone(),
            self.events_tx.clone(),
        )
        .await;
        match opened {
            Ok(task) => {
                self.subscriptions.insert(id.clone(), Subscription(task));
                self.write(ok(reference, json!({"id": id}))).await
            }
            Err(refused) => {
                let status = Some(refused.status.as_u16());
                self.write(refusal(reference, &refused.code, &refused.reason, status))
                    .await
            }
        }
    }
}
