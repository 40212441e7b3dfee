//! The request log: one `info` line per request, written when its response is ready.
//!
//! The line is one event (target `portico::request`) with the request id (see
//! [`super::request_id`]), the method, the URI (credentials
//! redacted, see [`super::redact`]), the HTTP version, the status and the latency; headers and
//! bodies are never logged. `RUST_LOG=info,portico::request=off` keeps every other line and
//! drops these.
//!
//! Why not `tower_http::trace::TraceLayer`: it opens a span per request and logs an event in
//! it, and with the log on, a profile of get-by-id put 16% of the server's time in the span
//! (its registry slot, its fields formatted, entered and left on every poll) and the event.
//! One event costs about half of that. With `debug` on for this target, each request also gets
//! a `request` span, so the server's own debug lines carry the request they belong to.

use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::Request;
use axum::response::Response;
use futures::future::BoxFuture;
use tower::{Layer, Service};
use tracing::{Instrument as _, Level};

use super::redact;

/// The target of the request lines.
pub(crate) const TARGET: &str = "portico::request";

/// A request id as log text (`-` when the request has none).
struct RequestIdText<'a>(Option<&'a http::HeaderValue>);

impl std::fmt::Display for RequestIdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.and_then(|v| v.to_str().ok()) {
            Some(id) => f.write_str(id),
            None => f.write_str("-"),
        }
    }
}

/// Adds the request log to a service.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestLogLayer;

impl<S> Layer<S> for RequestLogLayer {
    type Service = RequestLog<S>;

    fn layer(&self, inner: S) -> RequestLog<S> {
        RequestLog { inner }
    }
}

/// A service whose requests are logged (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct RequestLog<S> {
    inner: S,
}

impl<S> Service<Request> for RequestLog<S>
where
    S: Service<Request, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if !tracing::enabled!(target: TARGET, Level::INFO) {
            return Box::pin(self.inner.call(request));
        }
        let started = Instant::now();
        let id = request
            .extensions()
            .get::<super::request_id::RequestId>()
            .map(|id| id.0.clone());
        let method = request.method().clone();
        let uri = redact::redacted_uri(request.uri());
        let version = request.version();
        let span = tracing::enabled!(target: TARGET, Level::DEBUG)
            .then(|| tracing::debug_span!(target: TARGET, "request", request_id = %RequestIdText(id.as_ref()), method = %method, uri = %uri));
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = match span {
                Some(span) => response.instrument(span).await,
                None => response.await,
            };
            if let Ok(response) = &result {
                tracing::info!(
                    target: TARGET,
                    request_id = %RequestIdText(id.as_ref()),
                    method = %method,
                    uri = %uri,
                    version = ?version,
                    status = response.status().as_u16(),
                    latency = ?started.elapsed(),
                    "request"
                );
            }
            result
        })
    }
}
