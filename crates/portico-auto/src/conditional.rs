//! `If-Match` on the collection write endpoints (`PATCH`/`DELETE /<collection>/:_id`): the write
//! applies only while the document still has the entity tag the client read
//! ([`portico_store::etag`]), else 412 `{"error": "precondition-failed", ...}`.
//!
//! The auto API answers these writes with a count, never a document, so it sends no `ETag`
//! itself; clients get tags from the routes door (or compute [`portico_store::etag`] of what
//! a publication sent). The tag is compared just before the write, on the document as stored;
//! the write itself goes through the collection's rules (`Collection::client_update`), which
//! select by `_id` only, so a writer racing in between is not caught yet (see the crate docs).

use http::{HeaderMap, StatusCode};
use portico_platform::Collection;

use crate::ApiError;

/// 412 for a document that changed (or went) since the client read it.
fn precondition_failed() -> ApiError {
    ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "precondition-failed",
        "The document changed since it was read (If-Match)",
    )
}

/// The strong tags an `If-Match` value lists (`"a", W/"b"` gives `a` and `b`), or `None` for
/// `*`.
fn tags(value: &str) -> Option<Vec<&str>> {
    if value.trim() == "*" {
        return None;
    }
    Some(
        value
            .split(',')
            .map(str::trim)
            .map(|t| t.strip_prefix("W/").unwrap_or(t))
            .filter_map(|t| t.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
            .collect(),
    )
}

/// Checks `If-Match` against the document `id` of `collection`: nothing to check without the
/// header; `*` needs the document to exist; a tag list needs its tag among them.
///
/// # Errors
/// 400 for a header that names no tag, 412 when the document does not match, a store error
/// when it cannot be read.
pub(crate) async fn check_if_match(
    collection: &Collection,
    headers: &HeaderMap,
    id: &str,
) -> Result<(), ApiError> {
    let Some(value) = headers.get(http::header::IF_MATCH) else {
        return Ok(());
    };
    let text = value.to_str().unwrap_or_default();
    let wanted = tags(text);
    if wanted.as_ref().is_some_and(Vec::is_empty) {
        return Err(ApiError::bad_request(
            "invalid-if-match",
            "If-Match must be * or a list of quoted entity tags",
        ));
    }
    let Some(doc) = collection.get(id).await? else {
        return Err(precondition_failed());
    };
    match wanted {
        None => Ok(()),
        Some(tags) if tags.contains(&portico_store::etag(&doc).as_str()) => Ok(()),
        Some(_) => Err(precondition_failed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_from_lists_and_weak_forms() {
        assert_eq!(tags("\"a\", W/\"b\""), Some(vec!["a", "b"]));
        assert_eq!(tags(" * "), None);
        assert_eq!(tags("a"), Some(vec![]));
    }
}
