//! Path patterns and request paths: the one matcher both front doors route with.
//!
//! A pattern is a `/`-separated path (leading and trailing slashes do not matter) whose segments
//! are literal text or `:name` parameters, or a regular expression that must match the whole
//! relative path. Request paths are split and percent-decoded once; a path whose decoded bytes
//! are not UTF-8 matches nothing (so it is a 404, never a mangled parameter).

use std::borrow::Cow;
use std::collections::HashMap;

use percent_encoding::percent_decode_str;
use regex::Regex;

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid path {path:?}: {reason}")]
pub struct PathError {
    /// The pattern as written.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A route path as written by a host: a `:name` pattern string, or a regular expression.
///
/// A regular expression must match the whole relative path (without leading or trailing slash,
/// percent-decoded); its named groups become parameters by name, its unnamed groups by position
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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

#[derive(Debug, Clone)]
enum Kind {
    Segments(Vec<Segment>),
    Regex(Regex),
}

/// A compiled route path.
///
/// ```
/// use portico_edge::{PathPattern, RequestPath};
/// let pattern = PathPattern::parse("articles/:id/comments/:0")?;
/// let path = RequestPath::parse("/articles/a%20b/comments/7/").expect("valid UTF-8");
/// let found = pattern.matches(&path).expect("matches");
/// assert_eq!(found.param("id"), Some("a b"));
/// assert_eq!(found.param("0"), Some("7"));
/// # Ok::<(), portico_edge::PathError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PathPattern {
    kind: Kind,
    /// Identity used to detect duplicate paths: parameter names do not matter.
    key: String,
    /// The path as written (trimmed), for listings and messages.
    display: String,
}

/// What a request path captured: parameters in path order (`:N` segments and unnamed regex
/// groups are named by their number).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMatch {
    /// `(name, decoded value)` in path order.
    pub params: Vec<(String, String)>,
}

impl PathMatch {
    /// The value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The values of the numbered parameters `:0`..`:count`, in number order (a missing one is
    /// empty; [`PathPattern::numbered_params`] tells how many a pattern has).
    pub fn numbered(&self, count: usize) -> Vec<String> {
        (0..count)
            .map(|n| self.param(&n.to_string()).unwrap_or_default().to_owned())
            .collect()
    }
}

fn invalid(path: &str, reason: impl Into<String>) -> PathError {
    PathError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

impl PathPattern {
    /// Compiles a pattern or a regular expression.
    ///
    /// # Errors
    /// See [`PathPattern::parse`] and [`PathPattern::regex`].
    pub fn compile(path: &RoutePath) -> Result<PathPattern, PathError> {
        match path {
            RoutePath::Pattern(p) => PathPattern::parse(p),
            RoutePath::Regex(re) => PathPattern::regex(re),
        }
    }

    /// Parses a `:name` pattern.
    ///
    /// # Errors
    /// An empty segment (`a//b`), a `:` without a name, a segment with `?`, `#` or white space,
    /// or a literal segment that does not percent-decode to UTF-8.
    pub fn parse(pattern: &str) -> Result<PathPattern, PathError> {
        let trimmed = pattern.trim_matches('/');
        let mut segments = Vec::new();
        let mut key = String::new();
        if !trimmed.is_empty() {
            for raw in trimmed.split('/') {
                if raw.is_empty() {
                    return Err(invalid(pattern, "empty segment (two slashes in a row)"));
                }
                if raw.contains(['?', '#']) || raw.chars().any(char::is_whitespace) {
                    return Err(invalid(
                        pattern,
                        format!("segment {raw:?} contains '?', '#' or white space"),
                    ));
                }
                if let Some(name) = raw.strip_prefix(':') {
                    if name.is_empty() {
                        return Err(invalid(pattern, "a parameter needs a name after ':'"));
                    }
                    segments.push(Segment::Param(name.to_owned()));
                    key.push_str("/:");
                } else {
                    let decoded = percent_decode_str(raw).decode_utf8().map_err(|_| {
                        invalid(pattern, format!("segment {raw:?} is not valid UTF-8"))
                    })?;
                    key.push('/');
                    key.push_str(&decoded);
                    segments.push(Segment::Literal(decoded.into_owned()));
                }
            }
        }
        Ok(PathPattern {
            kind: Kind::Segments(segments),
            key,
            display: trimmed.to_owned(),
        })
    }

    /// Compiles a regular expression that must match a whole relative path.
    ///
    /// # Errors
    /// When the anchored expression does not compile.
    pub fn regex(re: &Regex) -> Result<PathPattern, PathError> {
        let anchored = Regex::new(&format!("^(?:{})$", re.as_str()))
            .map_err(|e| invalid(re.as_str(), e.to_string()))?;
        Ok(PathPattern {
            kind: Kind::Regex(anchored),
            key: format!("regex:{}", re.as_str()),
            display: re.as_str().to_owned(),
        })
    }

    /// The key two patterns share when they match the same requests.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The pattern as written, without leading or trailing slashes.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// True for a regular-expression path.
    pub fn is_regex(&self) -> bool {
        matches!(self.kind, Kind::Regex(_))
    }

    /// The parameter names of a `:name` pattern, in path order (none for a regular expression).
    pub fn param_names(&self) -> Vec<&str> {
        match &self.kind {
            Kind::Segments(segments) => segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Param(name) => Some(name.as_str()),
                    Segment::Literal(_) => None,
                })
                .collect(),
            Kind::Regex(_) => Vec::new(),
        }
    }

    /// How many numbered parameters (`:0`, `:1`...) the pattern has.
    ///
    /// # Errors
    /// A message when the numbers are not exactly `0..k`, each once, or when one is above `max`.
    pub fn numbered_params(&self, max: usize) -> Result<usize, PathError> {
        let mut seen = Vec::new();
        for name in self.param_names() {
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let n = name
                .parse::<usize>()
                .ok()
                .filter(|n| *n < max)
                .ok_or_else(|| invalid(&self.display, format!("argument :{name} is too large")))?;
            if seen.contains(&n) {
                return Err(invalid(
                    &self.display,
                    format!("argument :{n} appears twice"),
                ));
            }
            seen.push(n);
        }
        if seen.iter().any(|n| *n >= seen.len()) {
            return Err(invalid(
                &self.display,
                format!(
                    "arguments must be numbered :0 to :{} without gaps",
                    seen.len().saturating_sub(1)
                ),
            ));
        }
        Ok(seen.len())
    }

    /// Per segment, true when literal: a more specific pattern wins when several match.
    fn specificity(&self) -> Vec<bool> {
        match &self.kind {
            Kind::Segments(segments) => segments
                .iter()
                .map(|s| matches!(s, Segment::Literal(_)))
                .collect(),
            Kind::Regex(_) => Vec::new(),
        }
    }

    /// The pattern as one lookup key when every segment is literal text without `/`.
    fn static_key(&self) -> Option<String> {
        let Kind::Segments(segments) = &self.kind else {
            return None;
        };
        let mut parts = Vec::with_capacity(segments.len());
        for segment in segments {
            match segment {
                Segment::Literal(text) if !text.contains('/') => parts.push(text.as_str()),
                _ => return None,
            }
        }
        Some(parts.join("/"))
    }

    /// The parameters when `path` matches.
    pub fn matches(&self, path: &RequestPath<'_>) -> Option<PathMatch> {
        match &self.kind {
            Kind::Segments(segments) => {
                if segments.len() != path.segments.len() {
                    return None;
                }
                let mut params = Vec::new();
                for (segment, actual) in segments.iter().zip(&path.segments) {
                    match segment {
                        Segment::Literal(text) if text != actual => return None,
                        Segment::Literal(_) => {}
                        Segment::Param(_) if actual.is_empty() => return None,
                        Segment::Param(name) => params.push((name.clone(), actual.to_string())),
                    }
                }
                Some(PathMatch { params })
            }
            Kind::Regex(re) => {
                let caps = re.captures(&path.decoded)?;
                let mut params = Vec::new();
                let mut unnamed = 0usize;
                for (i, name) in re.capture_names().enumerate().skip(1) {
                    let key = match name {
                        Some(n) => n.to_owned(),
                        None => {
                            unnamed += 1;
                            (unnamed - 1).to_string()
                        }
                    };
                    if let Some(value) = caps.get(i) {
                        params.push((key, value.as_str().to_owned()));
                    }
                }
                Some(PathMatch { params })
            }
        }
    }
}

/// A request path split into percent-decoded segments, once per request.
#[derive(Debug)]
pub struct RequestPath<'a> {
    decoded: Cow<'a, str>,
    segments: Vec<Cow<'a, str>>,
}

impl<'a> RequestPath<'a> {
    /// Splits and decodes a path (leading and trailing slashes do not matter). `None` when the
    /// path does not decode to UTF-8: no route can match it.
    pub fn parse(path: &'a str) -> Option<RequestPath<'a>> {
        let trimmed = path.trim_matches('/');
        let segments = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed
                .split('/')
                .map(|raw| percent_decode_str(raw).decode_utf8().ok())
                .collect::<Option<Vec<_>>>()?
        };
        Some(RequestPath {
            decoded: percent_decode_str(trimmed).decode_utf8().ok()?,
            segments,
        })
    }

    /// The key [`PathPattern`]'s static lookup uses, when this path can have one.
    fn static_key(&self) -> Option<String> {
        if self.segments.iter().any(|s| s.contains('/')) {
            return None;
        }
        Some(self.segments.join("/"))
    }
}

/// Patterns with a value each, found in match order: an all-literal pattern by one hash lookup;
/// otherwise patterns by specificity (a literal segment beats a parameter at the first place
/// they differ), then regular expressions in the order they were added.
#[derive(Debug, Clone)]
pub struct PathTable<T> {
    literal: HashMap<String, usize>,
    ordered: Vec<usize>,
    entries: Vec<(PathPattern, T)>,
}

impl<T> Default for PathTable<T> {
    fn default() -> Self {
        PathTable {
            literal: HashMap::new(),
            ordered: Vec::new(),
            entries: Vec::new(),
        }
    }
}

/// A pattern that matches the same requests as one already in a [`PathTable`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a route exists already at {0:?}")]
pub struct DuplicatePath(pub String);

impl<T> PathTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `pattern` with its value.
    ///
    /// # Errors
    /// [`DuplicatePath`] when a pattern with the same key is in the table.
    pub fn insert(&mut self, pattern: PathPattern, value: T) -> Result<(), DuplicatePath> {
        if self.entries.iter().any(|(p, _)| p.key() == pattern.key()) {
            return Err(DuplicatePath(pattern.display().to_owned()));
        }
        let index = self.entries.len();
        if let Some(key) = pattern.static_key() {
            self.literal.insert(key, index);
        }
        let spec = pattern.specificity();
        let position = if pattern.is_regex() {
            self.ordered.len()
        } else {
            self.ordered
                .iter()
                .position(|&i| {
                    let other = &self.entries[i].0;
                    other.is_regex() || other.specificity() < spec
                })
                .unwrap_or(self.ordered.len())
        };
        self.ordered.insert(position, index);
        self.entries.push((pattern, value));
        Ok(())
    }

    /// The first entry matching `path`, with what it captured.
    pub fn find(&self, path: &RequestPath<'_>) -> Option<(&PathPattern, &T, PathMatch)> {
        if let Some(&i) = path.static_key().and_then(|k| self.literal.get(&k)) {
            let (pattern, value) = &self.entries[i];
            return Some((pattern, value, PathMatch::default()));
        }
        self.ordered.iter().find_map(|&i| {
            let (pattern, value) = &self.entries[i];
            pattern.matches(path).map(|found| (pattern, value, found))
        })
    }

    /// The value at exactly `pattern` (same key), to change it.
    pub fn get_mut(&mut self, pattern: &PathPattern) -> Option<&mut T> {
        self.entries
            .iter_mut()
            .find(|(p, _)| p.key() == pattern.key())
            .map(|(_, v)| v)
    }

    /// Every entry in match order.
    pub fn iter(&self) -> impl Iterator<Item = (&PathPattern, &T)> {
        self.ordered.iter().map(|&i| {
            let (pattern, value) = &self.entries[i];
            (pattern, value)
        })
    }

    /// Every entry in the order it was added.
    pub fn iter_added(&self) -> impl Iterator<Item = (&PathPattern, &T)> {
        self.entries.iter().map(|(pattern, value)| (pattern, value))
    }

    /// How many entries the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> RequestPath<'_> {
        RequestPath::parse(p).unwrap()
    }

    #[test]
    fn patterns_capture_decoded_params() {
        let m = PathPattern::parse("/articles/:id/comments/:cid/").unwrap();
        assert_eq!(
            m.matches(&path("articles/a%20b/comments/7/"))
                .unwrap()
                .params,
            vec![("id".into(), "a b".into()), ("cid".into(), "7".into())]
        );
        assert!(m.matches(&path("articles/1/comments")).is_none());
        assert!(m.matches(&path("articles//comments/1")).is_none());
        assert_eq!(m.key(), "/articles/:/comments/:");
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["a/:", "a//b", "a?b", "a b", "a/%FF"] {
            assert!(PathPattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbered_params_must_be_dense() {
        let count = |p: &str| PathPattern::parse(p).unwrap().numbered_params(32);
        assert_eq!(count("lists/:1/items/:0"), Ok(2));
        assert_eq!(count("todos/:_id"), Ok(0));
        assert!(count("a/:1").is_err());
        assert!(count("a/:0/:0").is_err());
        assert!(count("a/:99999999999999999999999").is_err());
        let p = PathPattern::parse("lists/:1/items/:0").unwrap();
        let found = p.matches(&path("/lists/a%20b/items/42")).unwrap();
        assert_eq!(found.numbered(2), vec!["42".to_owned(), "a b".to_owned()]);
    }

    #[test]
    fn regex_paths_match_the_whole_path() {
        let m = PathPattern::regex(&Regex::new(r"files/(?P<name>\w+)\.(\w+)").unwrap()).unwrap();
        let found = m.matches(&path("files/report.pdf")).unwrap();
        assert_eq!(
            found.params,
            vec![("name".into(), "report".into()), ("0".into(), "pdf".into())]
        );
        assert!(m.matches(&path("x/files/report.pdf")).is_none());
    }

    #[test]
    fn invalid_utf8_matches_nothing() {
        assert!(RequestPath::parse("/x/%FF").is_none());
    }

    #[test]
    fn table_prefers_literal_segments_then_regexes_in_order() {
        let mut table = PathTable::new();
        table
            .insert(
                PathPattern::regex(&Regex::new(".*").unwrap()).unwrap(),
                "any",
            )
            .unwrap();
        table
            .insert(PathPattern::parse("a/:x").unwrap(), "param")
            .unwrap();
        table
            .insert(PathPattern::parse("a/b").unwrap(), "literal")
            .unwrap();
        table
            .insert(PathPattern::parse(":y/c").unwrap(), "late")
            .unwrap();
        let found = |p: &str| table.find(&path(p)).map(|(_, v, _)| *v);
        assert_eq!(found("a/b"), Some("literal"));
        assert_eq!(found("a/z"), Some("param"));
        assert_eq!(found("a/c"), Some("param"), "a literal first segment wins");
        assert_eq!(found("q/c"), Some("late"));
        assert_eq!(found("zzz"), Some("any"));
        let order: Vec<_> = table.iter().map(|(_, v)| *v).collect();
        assert_eq!(order, vec!["literal", "param", "late", "any"]);
    }

    #[test]
    fn duplicate_keys_ignore_param_names() {
        let mut table = PathTable::new();
        table
            .insert(PathPattern::parse("a/:x").unwrap(), 1)
            .unwrap();
        assert_eq!(
            table.insert(PathPattern::parse("/a/:y/").unwrap(), 2),
            Err(DuplicatePath("a/:y".into()))
        );
    }

    #[test]
    fn encoded_literals_match_decoded_paths() {
        let mut table = PathTable::new();
        table
            .insert(PathPattern::parse("methods/todos.add").unwrap(), 1)
            .unwrap();
        assert!(table.find(&path("/methods/todos%2Eadd/")).is_some());
        let slash = PathPattern::parse("a%2Fb").unwrap();
        assert!(slash.matches(&path("a%2Fb")).is_some());
        assert!(slash.matches(&path("a/b")).is_none());
    }
}
