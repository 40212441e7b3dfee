//! Live streams as server-sent events, the same on both doors.
//!
//! A request asks for a stream with `Accept: text/event-stream` ([`wants_event_stream`]). The
//! answer ([`event_stream`]) is `200 text/event-stream` whose events are the platform's
//! `LiveEvent`s: `event: <name>` and one `data:` line of JSON each, and a `: ping` comment
//! whenever the stream was quiet for the configured interval (15 s by default), so proxies
//! keep it open. The stream ends after an `end` event when the caller is logged out, the token
//! expires or the client reads too slowly; a client that reconnects gets a fresh initial set.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::HeaderMap;
use portico_platform::{LiveStream, SentEvent};

/// True when the request's `Accept` header names `text/event-stream`.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// assert!(!portico_edge::wants_event_stream(&headers));
/// headers.insert("accept", "text/event-stream".parse()?);
/// assert!(portico_edge::wants_event_stream(&headers));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            item.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}

/// One event in SSE form: its name and its JSON data on one line.
fn sse_event(event: &SentEvent) -> Event {
    Event::default().event(event.name()).data(event.json())
}

/// The response streaming `stream` as server-sent events, with a `: ping` comment after
/// `ping` of quiet. Proxies are asked not to buffer it (`X-Accel-Buffering: no`) and clients
/// not to cache it.
pub fn event_stream(stream: LiveStream, ping: Duration) -> Response {
    let events = stream.map(|event| Ok::<_, Infallible>(sse_event(&event)));
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(ping).text("ping"))
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists_and_parameters() {
        let mut h = HeaderMap::new();
        h.insert(
            "accept",
            "application/json, TEXT/EVENT-STREAM;q=0.9".parse().unwrap(),
        );
        assert!(wants_event_stream(&h));
        h.insert("accept", "application/json".parse().unwrap());
        assert!(!wants_event_stream(&h));
    }
}
