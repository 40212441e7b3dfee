//! `If-Match` on the collection write endpoints (`PATCH`/`DELETE /<collection>/:_id`): the write
//! applies only while the document still has the entity tag the client read
//! ([`portico_store::etag`]), else 412 `{"error": "precondition-failed", ...}`.
//!
//! The auto API answers these writes with a count, never a document, so it sends no `ETag`
//! itself; clients get tags from the routes door (or compute [`portico_store::etag`] of what
//! a publication sent). The write goes through the collection's rules
//! ([`portico_platform::Collection::client_update_if`]), which check the tag again inside the
//! write's transaction: of two clients writing with the same tag, exactly one succeeds.

use http::HeaderMap;
use portico_platform::IfMatch;

use crate::ApiError;

/// Reads `If-Match` through the edge ([`portico_edge::if_match`]) as the condition a collection
/// write must meet.
///
/// # Errors
/// 400 for a header that names no tag.
pub(crate) fn if_match(headers: &HeaderMap) -> Result<IfMatch, ApiError> {
    portico_edge::if_match(headers)
        .map_err(|e| ApiError::bad_request("invalid-if-match", e.to_string()))
}
