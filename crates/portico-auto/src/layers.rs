//! The small middleware the router always carries: global response headers and panic capture.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use http::HeaderMap;

use crate::ApiError;

/// The response headers every endpoint sends unless configured otherwise.
pub(crate) fn default_response_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        http::header::PRAGMA,
        http::HeaderValue::from_static("no-cache"),
    );
    headers
}

/// Adds the global response headers to a response, leaving alone any header the endpoint set
/// itself (such as `Allow` or `Retry-After`).
pub(crate) async fn add_response_headers(
    State(headers): State<Arc<HeaderMap>>,
    mut response: Response,
) -> Response {
    for name in headers.keys() {
        if response.headers().contains_key(name) {
            continue;
        }
        for value in headers.get_all(name) {
            response.headers_mut().append(name.clone(), value.clone());
        }
    }
    response
}

/// The delay before every 401 and 403 reply (see [`crate::AutoApi::auth_failure_delay`]): a
/// random length between `min` and `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FailureDelay {
    pub(crate) min: std::time::Duration,
    pub(crate) max: std::time::Duration,
}

impl FailureDelay {
    fn pick(self) -> std::time::Duration {
        if self.max <= self.min {
            return self.min;
        }
        let span = u64::try_from((self.max - self.min).as_millis()).unwrap_or(u64::MAX);
        self.min + std::time::Duration::from_millis(rand::random_range(0..=span))
    }

    pub(crate) fn is_zero(self) -> bool {
        self.max.is_zero()
    }
}

/// Holds a 401 or 403 back for the delay, so a failure cannot be told apart by its timing (a
/// wrong password from an unknown account, a denied write from a missing document) and each
/// guess costs the guesser time.
pub(crate) async fn delay_auth_failures(
    State(delay): State<FailureDelay>,
    response: Response,
) -> Response {
    if matches!(
        response.status(),
        http::StatusCode::UNAUTHORIZED | http::StatusCode::FORBIDDEN
    ) {
        let wait = delay.pick();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
    response
}

/// Turns a panic anywhere below (a handler, an args extractor, a rule) into a 500 JSON error,
/// so one bad request never takes the connection down with it.
pub(crate) async fn catch_panic(req: Request, next: Next) -> Response {
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a request handler panicked".to_owned());
            ApiError::internal(format!("panic while answering a request: {message}"))
                .into_response()
        }
    }
}
