//! Route paths: parsing a `url` option and matching request paths against it.
//!
//! A url is a `/`-separated path, with or without a leading slash. A segment `:N` (a number)
//! captures URL argument number N; any other `:name` segment (such as `:_id`) captures a named
//! parameter. Captured values are percent-decoded strings. The numbers of a url must be exactly
//! `0..k` (each once, in any order), so URL arguments always form a dense list.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// The most `:N` arguments one url may have (keeps argument vectors small and bounded).
const MAX_URL_ARGS: usize = 32;

/// One segment of a route path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Must equal this text.
    Literal(String),
    /// Captures URL argument N.
    Arg(usize),
    /// Captures a named parameter (such as `_id`).
    Param(String),
}

/// A parsed route path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlPattern {
    /// The normalised path, with a leading `/` and no trailing `/`.
    path: String,
    segments: Vec<Segment>,
    arg_count: usize,
}

/// What a request path captured from a [`UrlPattern`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UrlMatch {
    /// URL arguments in order: `url_args[n]` is the value of `:n`.
    pub(crate) url_args: Vec<String>,
    /// Named parameters, in path order.
    pub(crate) params: Vec<(String, String)>,
}

impl UrlMatch {
    /// The value of the named parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

impl UrlPattern {
    /// Parses a url option.
    ///
    /// # Errors
    /// A message naming the problem: an empty segment (`a//b`), a `:` with no name, a `?` or `#`,
    /// or `:N` numbers that are not exactly `0..k`.
    pub(crate) fn parse(url: &str) -> Result<UrlPattern, String> {
        let trimmed = url.trim_start_matches('/');
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let mut segments = Vec::new();
        let mut seen_args = Vec::new();
        if !trimmed.is_empty() {
            for raw in trimmed.split('/') {
                if raw.is_empty() {
                    return Err("empty path segment".into());
                }
                if raw.contains(['?', '#']) || raw.chars().any(char::is_whitespace) {
                    return Err(format!("segment {raw:?} contains '?', '#' or white space"));
                }
                if let Some(name) = raw.strip_prefix(':') {
                    if name.is_empty() {
                        return Err("a ':' segment needs a name or a number".into());
                    }
                    if name.bytes().all(|b| b.is_ascii_digit()) {
                        let n: usize = name
                            .parse()
                            .ok()
                            .filter(|n| *n < MAX_URL_ARGS)
                            .ok_or_else(|| format!("argument number {name} is too large"))?;
                        if seen_args.contains(&n) {
                            return Err(format!("argument :{n} appears twice"));
                        }
                        seen_args.push(n);
                        segments.push(Segment::Arg(n));
                    } else {
                        segments.push(Segment::Param(name.to_owned()));
                    }
                } else {
                    let decoded = percent_decode_str(raw)
                        .decode_utf8()
                        .map_err(|_| format!("segment {raw:?} is not valid UTF-8"))?;
                    segments.push(Segment::Literal(decoded.into_owned()));
                }
            }
        }
        let arg_count = seen_args.len();
        if seen_args.iter().any(|n| *n >= arg_count) {
            return Err(format!(
                "url arguments must be numbered :0 to :{} without gaps",
                arg_count.saturating_sub(1)
            ));
        }
        Ok(UrlPattern {
            path: format!("/{trimmed}"),
            segments,
            arg_count,
        })
    }

    /// The normalised path (leading `/`, no trailing `/`), as listed by `api-routes`.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The path as one key (its literal segments joined by `/`) when every segment is a literal
    /// without a `/` of its own: such patterns can be found by exact lookup.
    pub(crate) fn static_key(&self) -> Option<String> {
        let mut parts = Vec::with_capacity(self.segments.len());
        for segment in &self.segments {
            match segment {
                Segment::Literal(text) if !text.contains('/') => parts.push(text.as_str()),
                _ => return None,
            }
        }
        Some(parts.join("/"))
    }

    /// Matches a request path (as in the request URI, still percent-encoded). A single trailing
    /// `/` is ignored.
    #[cfg(test)]
    pub(crate) fn matches(&self, request_path: &str) -> Option<UrlMatch> {
        self.matches_segments(&RequestPath::parse(request_path)?)
    }

    /// Matches a request path split by [`RequestPath::parse`].
    pub(crate) fn matches_segments(&self, path: &RequestPath<'_>) -> Option<UrlMatch> {
        if path.segments.len() != self.segments.len() {
            return None;
        }
        let mut url_args = vec![String::new(); self.arg_count];
        let mut params = Vec::new();
        for (segment, decoded) in self.segments.iter().zip(&path.segments) {
            match segment {
                Segment::Literal(text) => {
                    if text != decoded {
                        return None;
                    }
                }
                Segment::Arg(n) => {
                    if decoded.is_empty() {
                        return None;
                    }
                    *url_args.get_mut(*n)? = decoded.to_string();
                }
                Segment::Param(name) => {
                    if decoded.is_empty() {
                        return None;
                    }
                    params.push((name.clone(), decoded.to_string()));
                }
            }
        }
        Some(UrlMatch { url_args, params })
    }
}

/// A request path split into percent-decoded segments, once per request.
#[derive(Debug)]
pub(crate) struct RequestPath<'a> {
    segments: Vec<Cow<'a, str>>,
}

impl<'a> RequestPath<'a> {
    /// Splits and decodes a request path (a single trailing `/` is ignored). `None` when a
    /// segment is not valid UTF-8 once decoded: no route can match such a path.
    pub(crate) fn parse(path: &'a str) -> Option<RequestPath<'a>> {
        let trimmed = path.strip_prefix('/').unwrap_or(path);
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let segments = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed
                .split('/')
                .map(|raw| percent_decode_str(raw).decode_utf8().ok())
                .collect::<Option<Vec<_>>>()?
        };
        Some(RequestPath { segments })
    }

    /// The key [`UrlPattern::static_key`] would give this path, when it can have one.
    pub(crate) fn static_key(&self) -> Option<String> {
        if self.segments.iter().any(|s| s.contains('/')) {
            return None;
        }
        Some(
            self.segments
                .iter()
                .map(|s| s.as_ref())
                .collect::<Vec<_>>()
                .join("/"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_and_trailing_slashes_are_normalised() {
        assert_eq!(
            UrlPattern::parse("methods/add").map(|p| p.path().to_owned()),
            Ok("/methods/add".to_owned())
        );
        assert_eq!(
            UrlPattern::parse("/methods/add/").map(|p| p.path().to_owned()),
            Ok("/methods/add".to_owned())
        );
    }

    #[test]
    fn literal_paths_match_exactly() {
        let p = UrlPattern::parse("methods/add").unwrap();
        assert!(p.matches("/methods/add").is_some());
        assert!(p.matches("/methods/add/").is_some());
        assert!(p.matches("/methods/ad").is_none());
        assert!(p.matches("/methods/add/x").is_none());
        assert!(p.matches("/methods").is_none());
    }

    #[test]
    fn numbered_segments_capture_decoded_args_in_order() {
        let p = UrlPattern::parse("lists/:1/items/:0").unwrap();
        let m = p.matches("/lists/a%20b/items/42").unwrap();
        assert_eq!(m.url_args, vec!["42".to_owned(), "a b".to_owned()]);
        assert!(p.matches("/lists//items/42").is_none());
    }

    #[test]
    fn named_params_are_captured() {
        let p = UrlPattern::parse("todos/:_id").unwrap();
        let m = p.matches("/todos/abc").unwrap();
        assert_eq!(m.param("_id"), Some("abc"));
        assert!(m.url_args.is_empty());
        assert!(p.matches("/todos").is_none());
    }

    #[test]
    fn bad_urls_are_refused() {
        assert!(UrlPattern::parse("a//b").is_err());
        assert!(UrlPattern::parse("a/:").is_err());
        assert!(UrlPattern::parse("a/:1").is_err(), "gap: no :0");
        assert!(UrlPattern::parse("a/:0/:0").is_err());
        assert!(UrlPattern::parse("a?b").is_err());
        assert!(UrlPattern::parse("a/:99999999999999999999999").is_err());
    }

    #[test]
    fn root_url() {
        let p = UrlPattern::parse("").unwrap();
        assert_eq!(p.path(), "/");
        assert!(p.matches("/").is_some());
        assert!(p.matches("/x").is_none());
    }

    #[test]
    fn static_keys_of_patterns_and_paths_agree() {
        let p = UrlPattern::parse("methods/todos.add").unwrap();
        let path = RequestPath::parse("/methods/todos%2Eadd/").unwrap();
        assert_eq!(p.static_key(), path.static_key());
        assert_eq!(UrlPattern::parse("a/:0").unwrap().static_key(), None);
        assert_eq!(UrlPattern::parse("a%2Fb").unwrap().static_key(), None);
        assert_eq!(RequestPath::parse("/a%2Fb").unwrap().static_key(), None);
        assert_eq!(
            UrlPattern::parse("").unwrap().static_key(),
            Some(String::new())
        );
        assert_eq!(
            RequestPath::parse("/").unwrap().static_key(),
            Some(String::new())
        );
    }

    #[test]
    fn invalid_percent_encoding_does_not_match() {
        let p = UrlPattern::parse("x/:0").unwrap();
        assert!(p.matches("/x/%FF").is_none());
    }
}
