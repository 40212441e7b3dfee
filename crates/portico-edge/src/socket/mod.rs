//! The live socket: one WebSocket at `GET /live` carrying channels, presence and live
//! publications as JSON frames.
//!
//! Every client frame is an object with a `type` and an optional `ref`, echoed in the reply
//! (`ok` or `error`):
//!
//! | client frame | fields | what it does |
//! |---|---|---|
//! | `auth` | `token` | logs the socket in with a login token (again: renews it; none: logs it out) |
//! | `join` / `leave` | `channel` | joins a channel (the reply is followed by its presence `state`) / leaves it |
//! | `send` | `channel`, `event`, `payload` | sends a message to the channel's other members (no `ref`: no `ok`) |
//! | `track` / `untrack` | `channel`, `meta` | puts this connection in the channel's presence (with `meta`) / takes it out |
//! | `subscribe` / `unsubscribe` | `id`, and `publication` with `args`, or `list` (a URL) | follows a publication, or a list or publication URL of the doors (with their rules), live: `added`, `changed`, `removed`, `ready` frames carrying `sub` |
//! | `ping` | | answered with `pong` |
//!
//! The server sends `message` (`channel`, `event`, `payload`, `from`: the sender's user id),
//! `presence` (`channel`, `event`: `state` with `members`, or `join`/`leave` with `member`:
//! `{key, userId, meta}`), the subscriptions' events, `ok`, `error` (`ref`, `code`, `reason`)
//! and `ping` (every [`portico_platform::ChannelsConfig::ping`]; any frame answers it).
//!
//! Without an upgrade, `GET /live?list=<URL>` or `GET /live?publication=<name>&args=<JSON>`
//! with `Accept: text/event-stream` follows one list or publication as server-sent events, the
//! same events as the socket's subscriptions (without `sub`); any other plain `GET` is `426`.
//!
//! Limits ([`portico_platform::ChannelsConfig`]): over one the socket gets an `error` frame,
//! then closes with the code of [`close`]. A client that reads too slowly is dropped: the
//! frames for it wait in a bounded queue, and a write waits at most 5 s.

mod budget;
mod frame;
mod lists;
mod session;
mod sse;

use axum::Router;
use axum::extract::ws::{WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use portico_platform::{LiveCaller, Peer, Platform, TOKEN_PATH};

use crate::AuthenticatedUser;

/// How much a socket reads at once.
const READ_BUFFER: usize = 1024;

/// The path of the live socket.
pub const LIVE_PATH: &str = "/live";

/// The close codes of the live socket.
pub mod close {
    /// Nothing arrived from the client for the idle timeout.
    pub const IDLE: u16 = 4000;
    /// The socket's login was logged out or expired.
    pub const LOGGED_OUT: u16 = 4001;
    /// More frames or bytes per second than allowed.
    pub const RATE_LIMITED: u16 = 4008;
    /// A frame, message or presence metadata over its size limit.
    pub const TOO_BIG: u16 = 4009;
    /// More channels (or subscriptions) on one socket than allowed.
    pub const TOO_MANY_CHANNELS: u16 = 4010;
    /// The client read too slowly: the frames for it filled its queue.
    pub const SLOW_CONSUMER: u16 = 4029;
}

/// What every socket of a router shares.
#[derive(Clone)]
struct SocketState {
    platform: Platform,
    lists: Option<Router>,
}

/// The router serving the live socket at [`LIVE_PATH`] on `platform`. With `lists`, the
/// application's own router (its doors), a `subscribe` frame may name a `list` URL, followed
/// through it as a server-sent events request would be (see the module docs).
pub fn router(platform: Platform, lists: Option<Router>) -> Router {
    Router::new()
        .route(LIVE_PATH, get(upgrade))
        .with_state(SocketState { platform, lists })
}

/// Upgrades `GET /live`; a login token in the request's headers logs the socket in at once.
/// Without an upgrade, `Accept: text/event-stream` with `?list=` or `?publication=` streams one
/// subscription as server-sent events (see `sse.rs`); anything else is answered `426`.
async fn upgrade(
    State(SocketState { platform, lists }): State<SocketState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let ws = match ws {
        Ok(ws) => ws,
        Err(_) if crate::wants_event_stream(&headers) => {
            return sse::answer(&platform, lists.as_ref(), &headers, query.as_deref()).await;
        }
        Err(_) => {
            let mut response = sse::refusal(
                StatusCode::UPGRADE_REQUIRED,
                "upgrade-required",
                "GET /live is a WebSocket, or server-sent events with `Accept: text/event-stream` and ?list=<a list URL> or ?publication=<name>&args=<a JSON array>",
            );
            response.headers_mut().insert(
                http::header::UPGRADE,
                http::HeaderValue::from_static("websocket"),
            );
            return response;
        }
    };
    let login = match AuthenticatedUser::resolve(&platform, &headers).await {
        Ok(Some(user)) => {
            let hashed = user.hashed_token().unwrap_or_default().to_owned();
            let caller = LiveCaller::with_token(user.user_id(), TOKEN_PATH, hashed);
            match platform.watch_login(caller.clone()).await {
                Ok(watch) => Some(session::Login {
                    peer: Peer::of_user(user.user()),
                    caller,
                    watch,
                    token: crate::request_token(&headers).map(str::to_owned),
                }),
                Err(e) => {
                    return (
                        StatusCode::from_u16(e.status.unwrap_or(503))
                            .unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                        axum::Json(serde_json::json!({"status": e.error, "reason": e.reason})),
                    )
                        .into_response();
                }
            }
        }
        Ok(None) => None,
        Err(e) => {
            tracing::error!(error = %e, "socket: could not look a login token up");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let limit = platform.channels().config().max_frame_bytes;
    // The WebSocket library zeroes this much of its read buffer before every read attempt, and
    // a socket's loop attempts one each time it wakes (twice per message it is sent): small,
    // since clients send little (a larger frame is read in more steps).
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(move |socket| session::run(socket, platform, lists, login))
}
