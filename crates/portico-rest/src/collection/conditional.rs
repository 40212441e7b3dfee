//! Conditional requests on generated collections: `ETag` on reads, `If-None-Match` (304) and
//! `If-Match` (412), checked inside the write's transaction through
//! [`portico_store::Selector::and_etag`].

use http::HeaderMap;
use portico_platform::IfMatch;
use serde_json::Value;

use crate::Reply;

/// Reads `If-Match` through the edge ([`portico_edge::if_match`]).
pub(crate) fn if_match(headers: &HeaderMap) -> Result<IfMatch, Reply> {
    portico_edge::if_match(headers)
        .map_err(|_| Reply::error(400, "Invalid If-Match: expected \"etag\" or *"))
}

/// True when `If-None-Match` lists `tag` (or is `*`): the client's copy is current.
pub(crate) fn not_modified(headers: &HeaderMap, tag: &str) -> bool {
    portico_edge::none_match_holds(headers, tag)
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
}
