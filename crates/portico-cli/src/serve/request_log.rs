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
//! a `request` span, so the server's own debug lines carry the request they belong to. Error
//! lines logged while a request is served (a script's failure, an internal error) carry its
//! `request_id` at every level: the request runs inside `portico_platform::request_scope`.

use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::Request;
use axum::response::Response;
use futures::future::BoxFuture;
use portico_platform::request_scope;
use tower::{Layer, Service};
use tracing::{Instrument as _, Level};

use super::redact;
use super::request_id::REQUEST_ID;

/// The target of the request lines.
pub(crate) const TARGET: &str = "portico::request";

/// A request id as log text (ids are visible ASCII; `-` if one were not).
struct RequestIdText<'a>(&'a http::HeaderValue);

impl std::fmt::Display for RequestIdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.to_str().unwrap_or("-"))
    }
}

/// Adds the request log and the request id to a service.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestLogLayer {
    /// Whose `X-Request-Id` is kept (see [`super::request_id`]).
    proxies: portico_edge::TrustedProxies,
}

impl RequestLogLayer {
    pub(crate) fn new(proxies: portico_edge::TrustedProxies) -> Self {
        RequestLogLayer { proxies }
    }
}

impl<S> Layer<S> for RequestLogLayer {
    type Service = RequestLog<S>;

    fn layer(&self, inner: S) -> RequestLog<S> {
        RequestLog {
            inner,
            proxies: self.proxies.clone(),
        }
    }
}

/// A service whose requests are logged, and whose replies carry their request's id (see the
/// module docs).
#[derive(Debug, Clone)]
pub(crate) struct RequestLog<S> {
    inner: S,
    proxies: portico_edge::TrustedProxies,
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
        let id = super::request_id::id_of(&request, &self.proxies);
        // Lines logged while the request is served (a script's failure, an internal error)
        // carry its id as `request_id` (see `portico_platform::request_scope`).
        let scoped = RequestIdText(&id).to_string();
        if !tracing::enabled!(target: TARGET, Level::INFO) {
            let response = request_scope::scope(scoped, self.inner.call(request));
            return Box::pin(async move {
                let mut response = response.await?;
                response.headers_mut().insert(REQUEST_ID, id);
                Ok(response)
            });
        }
        let started = Instant::now();
        let method = request.method().clone();
        let uri = redact::redacted_uri(request.uri());
        let version = request.version();
        let span = tracing::enabled!(target: TARGET, Level::DEBUG)
            .then(|| tracing::debug_span!(target: TARGET, "request", request_id = %RequestIdText(&id), method = %method, uri = %uri));
        let response = request_scope::scope(scoped, self.inner.call(request));
        Box::pin(async move {
            let result = match span {
                Some(span) => response.instrument(span).await,
                None => response.await,
            };
            let mut result = result;
            if let Ok(response) = &mut result {
                response.headers_mut().insert(REQUEST_ID, id.clone());
                tracing::info!(
                    target: TARGET,
                    request_id = %RequestIdText(&id),
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
