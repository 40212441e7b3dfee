//! Conditional requests on generated collections: `ETag` on reads, `If-None-Match` (304) and
//! `If-Match` (412), checked inside the write's transaction through
//! [`portico_store::Selector::and_etag`].

use http::HeaderMap;
use serde_json::Value;

use crate::Reply;

/// What an `If-Match` header asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IfMatch {
    /// No header: write unconditionally.
    Absent,
    /// `*`: the document must exist (as for any write).
    Any,
    /// The document must still have this tag.
    Tag(String),
}

/// The entity tags listed in a header: `"a", W/"b"` gives `a` and `b` (weak tags compare by
/// their opaque part, as `If-None-Match` does).
fn tags(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .map(|t| t.strip_prefix("W/").unwrap_or(t))
        .filter_map(|t| t.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        .collect()
}

/// Reads `If-Match`. A list of several tags uses the first (Portico issues one tag per
/// document; a client has no reason to send more).
pub(crate) fn if_match(headers: &HeaderMap) -> Result<IfMatch, Reply> {
    let Some(value) = headers.get(http::header::IF_MATCH) else {
        return Ok(IfMatch::Absent);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text == "*" {
        return Ok(IfMatch::Any);
    }
    match tags(text).first() {
        Some(tag) => Ok(IfMatch::Tag((*tag).to_owned())),
        None => Err(Reply::error(
            400,
            "Invalid If-Match: expected \"etag\" or *",
        )),
    }
}

/// True when `If-None-Match` lists `tag` (or is `*`): the client's copy is current.
pub(crate) fn not_modified(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "*" || tags(v).contains(&tag))
}

/// The reply to a conditional read whose copy is current: 304, no body.
pub(crate) fn not_modified_reply(etag_header: String) -> Reply {
    Reply::bytes(bytes::Bytes::new())
        .with_status(304)
        .with_header("etag", etag_header)
}

/// The reply to a write whose `If-Match` no longer holds.
pub(crate) fn precondition_failed() -> Reply {
    Reply::error(
        412,
        "Precondition failed: the document changed since it was read (If-Match)",
    )
}

/// A weak tag over a list page (its documents and total).
pub(crate) fn list_etag(items: &Value, total: u64) -> String {
    let mut doc = portico_store::Document::new();
    doc.insert("items".into(), items.clone());
    doc.insert("total".into(), Value::from(total));
    format!("W/\"{}\"", portico_store::etag(&doc))
}

/// [`list_etag`] of a page given as its documents' compact JSON texts: the same tag, computed
/// from the text `{"items":[...],"total":N}` without decoding a document.
pub(crate) fn list_etag_json(items: &[String], total: u64) -> String {
    let mut text = Vec::with_capacity(items.iter().map(|i| i.len() + 1).sum::<usize>() + 32);
    text.extend_from_slice(b"{\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        text.extend_from_slice(item.as_bytes());
    }
    text.extend_from_slice(format!("],\"total\":{total}}}").as_bytes());
    format!("W/\"{}\"", portico_store::etag_of_json(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_tags_agree_from_values_and_from_text() {
        let items = vec![
            serde_json::json!({"_id": "a", "n": 1.5, "s": "é\"x"}),
            serde_json::json!({"_id": "b", "tags": [1, 2]}),
        ];
        let texts: Vec<String> = items.iter().map(Value::to_string).collect();
        assert_eq!(
            list_etag(&Value::Array(items), 7),
            list_etag_json(&texts, 7)
        );
        assert_ne!(list_etag_json(&texts, 7), list_etag_json(&texts, 8));
    }

    fn headers(name: http::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, value.parse().unwrap());
        h
    }

    #[test]
    fn if_match_forms() {
        assert_eq!(if_match(&HeaderMap::new()).unwrap(), IfMatch::Absent);
        assert_eq!(
            if_match(&headers(http::header::IF_MATCH, "*")).unwrap(),
            IfMatch::Any
        );
        assert_eq!(
            if_match(&headers(http::header::IF_MATCH, "\"abc\", \"d\"")).unwrap(),
            IfMatch::Tag("abc".into())
        );
        assert!(if_match(&headers(http::header::IF_MATCH, "abc")).is_err());
    }

    #[test]
    fn if_none_match_lists() {
        let h = headers(http::header::IF_NONE_MATCH, "W/\"x\", \"abc\"");
        assert!(not_modified(&h, "abc"));
        assert!(not_modified(&h, "x"));
        assert!(!not_modified(&h, "y"));
        assert!(not_modified(
            &headers(http::header::IF_NONE_MATCH, "*"),
            "q"
        ));
    }
}
