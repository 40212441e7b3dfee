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
    Ok(tokio::spawn(forward(body, sub, tx)))
}

/// Forwards the events of the stream `body` to `tx` as frames of subscription `sub`, until the
/// stream or `tx` ends. A stream that ends without an `end` event of its own (or holds more
/// than [`MAX_PENDING`] of an unfinished event) is followed by `end` with the reason `closed`,
/// so the client knows to subscribe again.
async fn forward(body: Body, sub: String, tx: mpsc::Sender<String>) {
    let mut data = body.into_data_stream();
    // Bytes, not text: a character may be split between two chunks.
    let mut pending: Vec<u8> = Vec::new();
    while let Some(Ok(chunk)) = data.next().await {
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = pending.drain(..end + 2).collect();
            let block = String::from_utf8_lossy(&block);
            let (mut event, mut text) = (None, String::new());
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event:") {
                    event = Some(name.trim().to_owned());
                } else if let Some(d) = line.strip_prefix("data:") {
                    text.push_str(d.strip_prefix(' ').unwrap_or(d));
                }
            }
            let Some(event) = event else { continue };
            if tx.send(live_event(&sub, &event, &text)).await.is_err() || event == "end" {
                return;
            }
        }
        if pending.len() > MAX_PENDING {
            break;
        }
    }
    let _ = tx
        .send(live_event(&sub, "end", r#"{"reason":"closed"}"#))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(chunks: Vec<&'static [u8]>) -> Vec<serde_json::Value> {
        let body = Body::from_stream(futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from_static(c))),
        ));
        let (tx, mut rx) = mpsc::channel(16);
        forward(body, "s".into(), tx).await;
        let mut out = Vec::new();
        while let Ok(frame) = rx.try_recv() {
            out.push(serde_json::from_str(&frame).unwrap_or_default());
        }
        out
    }

    #[tokio::test]
    async fn events_split_anywhere_and_a_silent_end() {
        // "é" is split between two chunks, and so is the blank line ending the first event.
        let got = frames(vec![
            b"event: added\ndata: {\"id\":\"a\",\"fields\":{\"t\":\"\xc3",
            b"\xa9\"}}\n",
            b"\n: ping\n\nevent: ready\ndata: {}\n\n",
        ])
        .await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0]["fields"]["t"], "é");
        assert_eq!(got[0]["sub"], "s");
        assert_eq!(got[1]["type"], "ready");
        assert_eq!(
            (&got[2]["type"], &got[2]["reason"]),
            (&serde_json::json!("end"), &serde_json::json!("closed"))
        );
        // The stream's own `end` is the last frame.
        let got = frames(vec![b"event: end\ndata: {\"reason\":\"logged-out\"}\n\n"]).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["reason"], "logged-out");
    }
}
