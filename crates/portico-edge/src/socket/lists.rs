//! Live lists over the socket: a `subscribe` frame with a `list` URL (`/api/v1/notes?where=...`,
//! or a publication's URL) runs that URL through the application's own router with
//! `Accept: text/event-stream` and the socket's token, exactly as a client's server-sent events
//! request would, so the list gets every rule of the door that serves it (authentication,
//! roles, the owner scope, field rules, `where`/`sort`/`limit`/`fields`); its events come back
//! as frames carrying `sub`.

use axum::Router;
use axum::body::Body;
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use tokio::sync::mpsc;
use tower::ServiceExt;

use super::frame::live_event;

/// The longest `list` URL.
const MAX_URL: usize = 4096;
/// The most of a stream's text held while an event is incomplete, and of a refusal's body.
const MAX_PENDING: usize = 1 << 20;

/// Why a list was not followed: the HTTP status, and a code and a reason for the `error` frame.
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) code: String,
    pub(super) reason: String,
}

/// Requests the list `url` through `app` as the holder of `token`, with `Accept:
/// text/event-stream`: the door's `200` event stream, or why it refused.
pub(super) async fn request(
    app: &Router,
    url: &str,
    token: Option<&str>,
) -> Result<Response<Body>, Refusal> {
    let bad = |reason: &str| Refusal {
        status: StatusCode::BAD_REQUEST,
        code: "bad-frame".into(),
        reason: reason.into(),
    };
    if !url.starts_with('/') || url.starts_with("//") || url.len() > MAX_URL {
        return Err(bad(
            "A list is a path on this server, such as /api/notes?sort=-createdAt",
        ));
    }
    let mut request = Request::builder()
        .method(Method::GET)
        .uri(url)
        .header(http::header::ACCEPT, "text/event-stream");
    if let Some(token) = token {
        request = request.header("x-auth-token", token);
    }
    let request = request
        .body(Body::empty())
        .map_err(|_| bad("The list URL is not valid"))?;
    let Ok(response) = app.clone().oneshot(request).await;
    let is_stream = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if response.status() == StatusCode::OK && is_stream {
        return Ok(response);
    }
    let (parts, body) = response.into_parts();
    let bytes = http_body_util::Limited::new(body, MAX_PENDING)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let reason = value
        .get("message")
        .or_else(|| value.get("reason"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("The list cannot be followed")
        .to_owned();
    // A list URL answered without a stream (a door's plain reply) is not a list.
    let status = if parts.status.is_success() {
        StatusCode::BAD_REQUEST
    } else {
        parts.status
    };
    Err(Refusal {
        status,
        code: format!("status-{}", status.as_u16()),
        reason,
    })
}

/// Opens the list `url` through `app` as the holder of `token`; on success, a task forwards its
/// events to `tx` (as frames of subscription `sub`) until the stream or `tx` ends.
pub(super) async fn open(
    app: &Router,
    url: &str,
    token: Option<&str>,
    sub: String,
    tx: mpsc::Sender<String>,
) -> Result<tokio::task::JoinHandle<()>, Refusal> {
    let body = request(app, url, token).await?.into_body();
    Ok(tokio::spawn(async move {
        let mut data = body.into_data_stream();
        let mut pending = String::new();
        while let Some(Ok(chunk)) = data.next().await {
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let block: String = pending.drain(..end + 2).collect();
                let (mut event, mut text) = (None, String::new());
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event = Some(name.trim().to_owned());
                    } else if let Some(d) = line.strip_prefix("data:") {
                        text.push_str(d.strip_prefix(' ').unwrap_or(d));
                    }
                }
                if let Some(event) = event
                    && tx.send(live_event(&sub, &event, &text)).await.is_err()
                {
                    return;
                }
            }
            if pending.len() > MAX_PENDING {
                return;
            }
        }
    }))
}
