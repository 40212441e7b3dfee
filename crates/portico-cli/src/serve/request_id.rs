//! `X-Request-Id`: every reply carries one, and the request log line has it.
//!
//! The id is the request's own `X-Request-Id` when the request came from a trusted proxy (the
//! `trusted_proxies` rule that decides whose `X-Forwarded-For` is believed) and the value is
//! 1 to 128 visible ASCII characters; otherwise a new random one (17 characters, as document
//! ids). A client that is not a trusted proxy cannot choose the id that lands in the logs.

use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use http::HeaderValue;
use portico_edge::TrustedProxies;
use tower::{Layer, Service};

/// The header.
pub const REQUEST_ID: &str = "x-request-id";

/// The longest id taken from a proxy.
const MAX_LEN: usize = 128;

/// The id of the request being served, in its extensions (read by the request log).
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub(crate) HeaderValue);

/// Adds the request id to a service (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct RequestIdLayer {
    proxies: TrustedProxies,
}

impl RequestIdLayer {
    pub(crate) fn new(proxies: TrustedProxies) -> Self {
        RequestIdLayer { proxies }
    }
}

impl<S> Layer<S> for RequestIdLayer {
    type Service = WithRequestId<S>;

    fn layer(&self, inner: S) -> WithRequestId<S> {
        WithRequestId {
            inner,
            proxies: self.proxies.clone(),
        }
    }
}

/// A service whose requests get an id, and whose replies carry it.
#[derive(Debug, Clone)]
pub(crate) struct WithRequestId<S> {
    inner: S,
    proxies: TrustedProxies,
}

/// A usable id a proxy sent: 1 to [`MAX_LEN`] visible ASCII characters.
fn acceptable(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty() && bytes.len() <= MAX_LEN && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// The id of `request`: the trusted proxy's, or a new one.
fn id_of(request: &Request, proxies: &TrustedProxies) -> HeaderValue {
    if !proxies.is_empty() && proxies.trusts_peer(request.extensions()) {
        if let Some(sent) = request.headers().get(REQUEST_ID).filter(|v| acceptable(v)) {
            return sent.clone();
        }
    }
    HeaderValue::from_str(&portico_store::new_id())
        .unwrap_or_else(|_| HeaderValue::from_static("-"))
}

impl<S> Service<Request> for WithRequestId<S>
where
    S: Service<Request, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let id = id_of(&request, &self.proxies);
        request.extensions_mut().insert(RequestId(id.clone()));
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            response.headers_mut().insert(REQUEST_ID, id);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_visible_ids_are_taken() {
        assert!(acceptable(&HeaderValue::from_static("abc-123_XYZ")));
        assert!(!acceptable(&HeaderValue::from_static("")));
        assert!(!acceptable(&HeaderValue::from_static("two words")));
        let long = "a".repeat(MAX_LEN + 1);
        assert!(!acceptable(&HeaderValue::from_str(&long).unwrap()));
    }
}
