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

/// Reads `If-Match` as the condition a collection write must meet: none without the header,
/// [`IfMatch::Any`] for `*`, else the listed tags.
///
/// # Errors
/// 400 for a header that names no tag.
pub(crate) fn if_match(headers: &HeaderMap) -> Result<IfMatch, ApiError> {
    let Some(value) = headers.get(http::header::IF_MATCH) else {
        return Ok(IfMatch::Absent);
    };
    match tags(value.to_str().unwrap_or_default()) {
        None => Ok(IfMatch::Any),
        Some(tags) if tags.is_empty() => Err(ApiError::bad_request(
            "invalid-if-match",
            "If-Match must be * or a list of quoted entity tags",
        )),
        Some(tags) => Ok(IfMatch::Tags(tags.into_iter().map(str::to_owned).collect())),
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
