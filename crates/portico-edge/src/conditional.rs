//! Conditional request headers: `If-Match` read as the platform's [`IfMatch`] (what a client's
//! conditional write expects of the stored document), and `If-None-Match` for reads. Both doors
//! read them here; each shapes its own reply to a bad header, a failed precondition or a copy
//! that is current.

use http::HeaderMap;
use portico_platform::IfMatch;

/// An `If-Match` header that is neither `*` nor a list of quoted entity tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidIfMatch;

impl std::fmt::Display for InvalidIfMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("If-Match must be * or a list of quoted entity tags")
    }
}

impl std::error::Error for InvalidIfMatch {}

/// The entity tags a header lists: `"a", W/"b"` gives `a` and `b` (weak tags compare by their
/// opaque part); anything unquoted is left out.
pub fn entity_tags(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .map(|t| t.strip_prefix("W/").unwrap_or(t))
        .filter_map(|t| t.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        .collect()
}

/// Reads `If-Match`: [`IfMatch::Absent`] without the header, [`IfMatch::Any`] for `*`, else
/// every listed tag (the write applies when the document has any of them).
///
/// # Errors
/// [`InvalidIfMatch`] for a header that names no tag.
pub fn if_match(headers: &HeaderMap) -> Result<IfMatch, InvalidIfMatch> {
    let Some(value) = headers.get(http::header::IF_MATCH) else {
        return Ok(IfMatch::Absent);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text == "*" {
        return Ok(IfMatch::Any);
    }
    let tags = entity_tags(text);
    if tags.is_empty() {
        return Err(InvalidIfMatch);
    }
    Ok(IfMatch::Tags(tags.into_iter().map(str::to_owned).collect()))
}

/// True when `If-None-Match` lists `tag` (or is `*`): the client's copy is current.
pub fn none_match_holds(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "*" || entity_tags(v).contains(&tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: http::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(value) = value.parse() {
            h.insert(name, value);
        }
        h
    }

    #[test]
    fn tags_are_read_from_lists_and_weak_forms() {
        assert_eq!(entity_tags("\"a\", W/\"b\""), vec!["a", "b"]);
        assert_eq!(entity_tags("a"), Vec::<&str>::new());
    }

    #[test]
    fn if_match_forms() {
        assert_eq!(if_match(&HeaderMap::new()), Ok(IfMatch::Absent));
        assert_eq!(
            if_match(&headers(http::header::IF_MATCH, " * ")),
            Ok(IfMatch::Any)
        );
        assert_eq!(
            if_match(&headers(http::header::IF_MATCH, "\"abc\", W/\"d\"")),
            Ok(IfMatch::Tags(vec!["abc".into(), "d".into()]))
        );
        assert_eq!(
            if_match(&headers(http::header::IF_MATCH, "abc")),
            Err(InvalidIfMatch)
        );
    }

    #[test]
    fn if_none_match_lists() {
        let h = headers(http::header::IF_NONE_MATCH, "W/\"x\", \"abc\"");
        assert!(none_match_holds(&h, "abc"));
        assert!(none_match_holds(&h, "x"));
        assert!(!none_match_holds(&h, "y"));
        assert!(none_match_holds(
            &headers(http::header::IF_NONE_MATCH, "*"),
            "q"
        ));
        assert!(!none_match_holds(&HeaderMap::new(), "q"));
    }
}
