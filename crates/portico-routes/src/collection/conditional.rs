//! Conditional requests on generated collections: `ETag` on reads, `If-None-Match` (304) and
//! `If-Match` (412), checked inside the write's transaction through
//! [`portico_store::Selector::and_etag`].

use http::HeaderMap;
use portico_platform::IfMatch;
use portico_store::Stored;

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

/// A weak tag over a list page (its documents and total): of the text
/// `{"items":[...],"total":N}`, each document as stored (or encoded once, when decoded), so a
/// page gets one tag however its documents were read.
///
/// # Errors
/// A decoded document that cannot be encoded.
pub(crate) fn list_etag(items: &[Stored], total: u64) -> portico_store::Result<String> {
    let mut text =
        Vec::with_capacity(items.iter().map(|i| i.encoded_len() + 1).sum::<usize>() + 32);
    text.extend_from_slice(b"{\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        text.extend_from_slice(item.text()?.as_bytes());
    }
    text.extend_from_slice(format!("],\"total\":{total}}}").as_bytes());
    Ok(format!("W/\"{}\"", portico_store::etag_of_json(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_tags_agree_from_documents_and_from_text() {
        let items = vec![
            serde_json::json!({"_id": "a", "n": 1.5, "s": "é\"x"}),
            serde_json::json!({"_id": "b", "tags": [1, 2]}),
        ];
        let texts: Vec<Stored> = items.iter().map(|i| Stored::Text(i.to_string())).collect();
        let docs: Vec<Stored> = items
            .into_iter()
            .filter_map(|i| match i {
                serde_json::Value::Object(doc) => Some(Stored::Document(doc)),
                _ => None,
            })
            .collect();
        assert_eq!(list_etag(&docs, 7).unwrap(), list_etag(&texts, 7).unwrap());
        assert_ne!(list_etag(&texts, 7).unwrap(), list_etag(&texts, 8).unwrap());
        // The tag is that of the page's text, as a client could compute it.
        let one = [Stored::Text(r#"{"_id":"a"}"#.into())];
        let whole = portico_store::etag_of_json(br#"{"items":[{"_id":"a"}],"total":1}"#);
        assert_eq!(list_etag(&one, 1).unwrap(), format!("W/\"{whole}\""));
    }
}
