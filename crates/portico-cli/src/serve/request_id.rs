//! `X-Request-Id`: every reply carries one, and the request log line has it.
//!
//! The id is the request's own `X-Request-Id` when the request came from a trusted proxy (the
//! `trusted_proxies` rule that decides whose `X-Forwarded-For` is believed) and the value is
//! 1 to 128 visible ASCII characters; otherwise a new random one (17 characters, as document
//! ids). A client that is not a trusted proxy cannot choose the id that lands in the logs.
//! The request log's layer (`request_log.rs`) gives each request its id and each reply the
//! header, whether or not the log is on.

use axum::extract::Request;
use http::HeaderValue;
use portico_edge::TrustedProxies;

/// The header.
pub const REQUEST_ID: &str = "x-request-id";

/// The longest id taken from a proxy.
const MAX_LEN: usize = 128;

/// A usable id a proxy sent: 1 to [`MAX_LEN`] visible ASCII characters.
fn acceptable(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty() && bytes.len() <= MAX_LEN && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// The id of `request`: the trusted proxy's, or a new one.
pub(crate) fn id_of(request: &Request, proxies: &TrustedProxies) -> HeaderValue {
    if !proxies.is_empty()
        && proxies.trusts_peer(request.extensions())
        && let Some(sent) = request.headers().get(REQUEST_ID).filter(|v| acceptable(v))
    {
        return sent.clone();
    }
    HeaderValue::from_str(&portico_store::new_id())
        .unwrap_or_else(|_| HeaderValue::from_static("-"))
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
