//! Reading request bodies with a size limit.

use axum::body::Body;
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::ApiError;

/// The default largest request body: 50 MB.
pub const DEFAULT_BODY_LIMIT: usize = 50 * 1024 * 1024;

/// Reads the whole body, refusing more than `limit` bytes with 413.
///
/// A `Content-Length` over the limit is refused before anything is read; a body without a
/// length (chunked) is cut off as soon as it passes the limit, so an oversized body never sits
/// in memory whole.
///
/// # Errors
/// 413 `payload-too-large` over the limit; 400 `invalid-body` when the body stream fails.
pub(crate) async fn read_body(
    headers: &http::HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::payload_too_large(limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) => {
            if is_length_limit(err.as_ref()) {
                Err(ApiError::payload_too_large(limit))
            } else {
                Err(ApiError::bad_request(
                    "invalid-body",
                    "The request body could not be read",
                ))
            }
        }
    }
}

/// True when `err` (or an error it wraps) is the length limit being hit.
fn is_length_limit(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if e.is::<LengthLimitError>() {
            return true;
        }
        current = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn body_within_limit_is_read() {
        let bytes = read_body(&http::HeaderMap::new(), Body::from("hello"), 5)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"hello");
    }

    #[tokio::test]
    async fn body_over_limit_is_413() {
        let err = read_body(&http::HeaderMap::new(), Body::from("hello!"), 5)
            .await
            .unwrap_err();
        assert_eq!(err.status_code(), http::StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn declared_length_over_limit_is_413_without_reading() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::CONTENT_LENGTH,
            http::HeaderValue::from(100u64),
        );
        let err = read_body(&headers, Body::from("tiny"), 5)
            .await
            .unwrap_err();
        assert_eq!(err.status_code(), http::StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn default_limit_is_50_mb() {
        assert_eq!(DEFAULT_BODY_LIMIT, 52_428_800);
    }
}
