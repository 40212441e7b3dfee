//! Route paths: API base paths, `:name` patterns and regular-expression paths.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;
use regex::Regex;

use crate::{Error, Result};

/// The path of a route, relative to the API's base path: a pattern string such as
/// `articles/:id/comments/:commentId`, or a regular expression.
///
/// A regular expression must match the whole relative path (without leading or trailing slash,
/// percent-decoded); its named groups become url params by name, its unnamed groups by position
/// (`"0"`, `"1"`...).
#[derive(Debug, Clone)]
pub enum RoutePath {
    /// A pattern with optional `:name` segments.
    Pattern(String),
    /// A regular expression.
    Regex(Regex),
}

impl From<&str> for RoutePath {
    fn from(value: &str) -> Self {
        RoutePath::Pattern(value.to_owned())
    }
}

impl From<String> for RoutePath {
    fn from(value: String) -> Self {
        RoutePath::Pattern(value)
    }
}

impl From<&String> for RoutePath {
    fn from(value: &String) -> Self {
        RoutePath::Pattern(value.clone())
    }
}

impl From<Regex> for RoutePath {
    fn from(value: Regex) -> Self {
        RoutePath::Regex(value)
    }
}

/// Normalises an API base path: the leading slash is dropped, a trailing slash added, and the
/// version (when set) appended with its own trailing slash: `("/api", Some("v1"))` -> `api/v1/`.
/// An empty path stays empty (routes at the server root).
pub fn normalize_api_path(api_path: &str, version: Option<&str>) -> String {
    let mut out = String::new();
    for part in [Some(api_path), version].into_iter().flatten() {
        let trimmed = part.trim_matches('/');
        if !trimmed.is_empty() {
            out.push_str(trimmed);
            out.push('/');
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Static(String),
    Param(String),
}

/// A compiled route path.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    kind: MatcherKind,
    /// Identity used to detect duplicate paths: parameter names do not matter.
    key: String,
    /// The path as written, for messages.
    display: String,
}

#[derive(Debug, Clone)]
enum MatcherKind {
    Segments(Vec<Segment>),
    Regex(Regex),
}

/// A request path split for matching: the raw relative path and its decoded segments.
pub(crate) struct RequestPath<'a> {
    decoded: Cow<'a, str>,
    segments: Vec<Cow<'a, str>>,
}

impl<'a> RequestPath<'a> {
    /// Splits a relative path (after the API base path).
    pub(crate) fn new(relative: &'a str) -> Self {
        let trimmed = relative.trim_matches('/');
        let segments = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').map(decode).collect()
        };
        RequestPath {
            decoded: decode(trimmed),
            segments,
        }
    }
}

fn decode(s: &str) -> Cow<'_, str> {
    percent_decode_str(s).decode_utf8_lossy()
}

impl Matcher {
    /// Compiles a route path.
    pub(crate) fn compile(path: &RoutePath) -> Result<Matcher> {
        match path {
            RoutePath::Pattern(p) => {
                let trimmed = p.trim_matches('/');
                let mut segments = Vec::new();
                let mut key = String::new();
                if !trimmed.is_empty() {
                    for seg in trimmed.split('/') {
                        if let Some(name) = seg.strip_prefix(':') {
                            if name.is_empty() {
                                return Err(Error::InvalidPath {
                                    path: p.clone(),
                                    reason: "a parameter needs a name after ':'".into(),
                                });
                            }
                            segments.push(Segment::Param(name.to_owned()));
                            key.push_str("/:");
                        } else if seg.is_empty() {
                            return Err(Error::InvalidPath {
                                path: p.clone(),
                                reason: "empty segment (two slashes in a row)".into(),
                            });
                        } else {
                            segments.push(Segment::Static(seg.to_owned()));
                            key.push('/');
                            key.push_str(seg);
                        }
                    }
                }
                Ok(Matcher {
                    kind: MatcherKind::Segments(segments),
                    key,
                    display: trimmed.to_owned(),
                })
            }
            RoutePath::Regex(re) => {
                let anchored = Regex::new(&format!("^(?:{})$", re.as_str())).map_err(|e| {
                    Error::InvalidPath {
                        path: re.as_str().to_owned(),
                        reason: e.to_string(),
                    }
                })?;
                Ok(Matcher {
                    kind: MatcherKind::Regex(anchored),
                    key: format!("regex:{}", re.as_str()),
                    display: re.as_str().to_owned(),
                })
            }
        }
    }

    /// The key two paths share when they would match the same requests.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The path as written (trimmed), for messages.
    pub(crate) fn display(&self) -> &str {
        &self.display
    }

    /// True for a regular-expression path.
    pub(crate) fn is_regex(&self) -> bool {
        matches!(self.kind, MatcherKind::Regex(_))
    }

    /// Per segment, true when static: a more specific pattern wins when several match.
    pub(crate) fn specificity(&self) -> Vec<bool> {
        match &self.kind {
            MatcherKind::Segments(segs) => segs
                .iter()
                .map(|s| matches!(s, Segment::Static(_)))
                .collect(),
            MatcherKind::Regex(_) => Vec::new(),
        }
    }

    /// The url params when `path` matches.
    pub(crate) fn matches(&self, path: &RequestPath<'_>) -> Option<Vec<(String, String)>> {
        match &self.kind {
            MatcherKind::Segments(segs) => {
                if segs.len() != path.segments.len() {
                    return None;
                }
                let mut params = Vec::new();
                for (seg, actual) in segs.iter().zip(&path.segments) {
                    match seg {
                        Segment::Static(s) => {
                            if s != actual {
                                return None;
                            }
                        }
                        Segment::Param(name) => params.push((name.clone(), actual.to_string())),
                    }
                }
                Some(params)
            }
            MatcherKind::Regex(re) => {
                let caps = re.captures(&path.decoded)?;
                let mut params = Vec::new();
                let mut unnamed = 0usize;
                for (i, name) in re.capture_names().enumerate().skip(1) {
                    let value = caps.get(i).map(|m| m.as_str().to_owned());
                    let key = match name {
                        Some(n) => n.to_owned(),
                        None => {
                            let k = unnamed.to_string();
                            unnamed += 1;
                            k
                        }
                    };
                    if let Some(v) = value {
                        params.push((key, v));
                    }
                }
                Some(params)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_normalised() {
        assert_eq!(normalize_api_path("api", None), "api/");
        assert_eq!(normalize_api_path("/api/", None), "api/");
        assert_eq!(normalize_api_path("my-api/", Some("v1")), "my-api/v1/");
        assert_eq!(normalize_api_path("/", Some("/v2/")), "v2/");
        assert_eq!(normalize_api_path("", None), "");
    }

    #[test]
    fn patterns_capture_params() {
        let m = Matcher::compile(&"/articles/:id/comments/:cid/".into()).unwrap();
        let p = RequestPath::new("articles/a%20b/comments/7/");
        assert_eq!(
            m.matches(&p).unwrap(),
            vec![("id".into(), "a b".into()), ("cid".into(), "7".into())]
        );
        assert!(
            m.matches(&RequestPath::new("articles/1/comments"))
                .is_none()
        );
        assert_eq!(m.key(), "/articles/:/comments/:");
    }

    #[test]
    fn duplicate_keys_ignore_param_names() {
        let a = Matcher::compile(&"a/:x".into()).unwrap();
        let b = Matcher::compile(&"/a/:y/".into()).unwrap();
        assert_eq!(a.key(), b.key());
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(Matcher::compile(&"a/:".into()).is_err());
        assert!(Matcher::compile(&"a//b".into()).is_err());
    }

    #[test]
    fn regex_paths_match_whole_path() {
        let m =
            Matcher::compile(&Regex::new(r"files/(?P<name>\w+)\.(\w+)").unwrap().into()).unwrap();
        let params = m.matches(&RequestPath::new("files/report.pdf")).unwrap();
        assert_eq!(
            params,
            vec![("name".into(), "report".into()), ("0".into(), "pdf".into())]
        );
        assert!(m.matches(&RequestPath::new("x/files/report.pdf")).is_none());
        assert!(m.is_regex());
    }
}
