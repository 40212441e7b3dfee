//! Config mistakes with their place in the file: line, column and key.
//!
//! The TOML parser stops at the first mistake it meets. To list every mistake at once, the
//! parse is repeated: each reported key-value line is blanked out (with spaces, so that every
//! other byte keeps its offset and every line its number) and the file parsed again, until it
//! parses or the next mistake could only be a consequence of the blanking.

use std::fmt;
use std::ops::Range;

use serde::de::DeserializeOwned;

/// One mistake in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// 1-based line of the mistake.
    pub line: usize,
    /// 1-based column (in characters) of the mistake.
    pub column: usize,
    /// The dotted key the mistake is about (`api.collection.excluded_endpoints`), or empty
    /// when the mistake is not about one key (a syntax error between keys).
    pub key: String,
    /// What is wrong, in words.
    pub message: String,
}

impl ConfigError {
    /// A mistake about `key` on `line` as a whole (column 1).
    pub fn at_line(line: usize, key: &str, message: String) -> ConfigError {
        ConfigError {
            line,
            column: 1,
            key: key.to_owned(),
            message,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(
                f,
                "line {}, column {}: {}",
                self.line, self.column, self.message
            )
        } else {
            write!(
                f,
                "line {}, column {}, key `{}`: {}",
                self.line, self.column, self.key, self.message
            )
        }
    }
}

/// The source text of a config file, and the way from byte offsets to lines and keys.
#[derive(Debug, Clone)]
pub(crate) struct Source<'a> {
    text: &'a str,
}

impl<'a> Source<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Source { text }
    }

    /// 1-based line and column of a byte offset.
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(self.text, offset.min(self.text.len()));
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }

    /// A mistake at `span` about `key` (given in full by the caller).
    pub(crate) fn error(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        let (line, column) = self.position(span.start);
        ConfigError {
            line,
            column,
            key: key.to_owned(),
            message: message.into(),
        }
    }

    /// The dotted key at a byte offset: the table header above it, then the keys of the
    /// inline tables the offset sits in, then the key of its value.
    pub(crate) fn key_at(&self, offset: usize) -> String {
        let offset = floor_char_boundary(self.text, offset.min(self.text.len()));
        let before = &self.text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let mut path: Vec<String> = Vec::new();
        if let Some(header) = self.header_before(line_start) {
            path.extend(split_dotted(&header));
        }
        let line_prefix = &before[line_start..];
        let line_end = self.text[line_start..]
            .find('\n')
            .map_or(self.text.len(), |i| line_start + i);
        let whole_line = strip_comment(&self.text[line_start..line_end]).trim();
        if whole_line.starts_with('[') && !line_prefix.contains('=') {
            // The offset is on a table header: the header names the key.
            let header = whole_line.trim_start_matches('[').trim_end_matches(']');
            return split_dotted(header).join(".");
        }
        path.extend(inline_key_path(line_prefix));
        path.retain(|p| !p.is_empty());
        path.join(".")
    }

    /// The text of the last table header (`api.collection`) before `line_start`.
    fn header_before(&self, line_start: usize) -> Option<String> {
        self.text[..line_start].lines().rev().find_map(|line| {
            let line = strip_comment(line).trim();
            if line.starts_with('[') && line.ends_with(']') {
                Some(
                    line.trim_start_matches('[')
                        .trim_end_matches(']')
                        .trim()
                        .to_owned(),
                )
            } else {
                None
            }
        })
    }

    /// The 1-based line of the table header `[name]`, if the file has one.
    pub(crate) fn header_line(&self, name: &str) -> Option<usize> {
        self.header_lines(name).first().copied()
    }

    /// The 1-based lines of every header `[name]` or `[[name]]`, in file order.
    pub(crate) fn header_lines(&self, name: &str) -> Vec<usize> {
        self.text
            .lines()
            .enumerate()
            .filter(|(_, line)| {
                let line = strip_comment(line).trim();
                line.starts_with('[') && line.trim_matches(|c| c == '[' || c == ']').trim() == name
            })
            .map(|(i, _)| i + 1)
            .collect()
    }

    fn is_header_line(&self, offset: usize) -> bool {
        let offset = floor_char_boundary(self.text, offset.min(self.text.len()));
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[line_start..]
            .find('\n')
            .map_or(self.text.len(), |i| line_start + i);
        strip_comment(&self.text[line_start..line_end])
            .trim()
            .starts_with('[')
    }
}

/// Parses `text` into `T`, collecting every mistake the parser reports (see the module docs).
///
/// Returns the value parsed from the text with the reported lines blanked out when that text
/// parses (so checks after parsing can still run on the rest), and every mistake found.
pub(crate) fn parse_all<T: DeserializeOwned>(text: &str) -> (Option<T>, Vec<ConfigError>) {
    const MAX_ROUNDS: usize = 50;
    let source = Source::new(text);
    let mut current = text.to_owned();
    let mut errors = Vec::new();
    let mut blanked_keys: Vec<String> = Vec::new();
    for round in 0..MAX_ROUNDS {
        if round > 0 && toml::from_str::<toml::Table>(&current).is_err() {
            // Blanking a line broke the syntax (a multi-line value): what follows would be noise.
            return (None, errors);
        }
        let err = match toml::from_str::<T>(&current) {
            Ok(value) => return (Some(value), errors),
            Err(err) => err,
        };
        let message = clean_message(err.message());
        let Some(span) = err.span() else {
            errors.push(ConfigError {
                line: 1,
                column: 1,
                key: String::new(),
                message,
            });
            return (None, errors);
        };
        let missing = quoted_name(&message, "missing field `");
        if let Some(field) = &missing
            && blanked_keys.iter().any(|k| k == field)
        {
            // Caused by our own blanking of a wrongly typed required key.
            return (None, errors);
        }
        let mut key = source.key_at(span.start);
        if let Some(unknown) = quoted_name(&message, "unknown field `") {
            if !key.ends_with(&unknown) {
                key = if key.is_empty() {
                    unknown
                } else {
                    format!("{key}.{unknown}")
                };
            }
        } else if let Some(field) = &missing {
            key = if key.is_empty() {
                field.clone()
            } else {
                format!("{key}.{field}")
            };
        }
        let (line, column) = source.position(span.start);
        errors.push(ConfigError {
            line,
            column,
            key: key.clone(),
            message,
        });
        if missing.is_some() || source.is_header_line(span.start) {
            // Blanking a header would move its keys into the table above: stop here.
            return (None, errors);
        }
        blanked_keys.push(key.rsplit('.').next().unwrap_or_default().to_owned());
        current = blank_lines(&current, span);
    }
    (None, errors)
}

/// The toml crate's message without its trailing newline.
fn clean_message(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The name between backquotes after `prefix` in `message`.
fn quoted_name(message: &str, prefix: &str) -> Option<String> {
    let start = message.find(prefix)? + prefix.len();
    let end = message[start..].find('`')? + start;
    Some(message[start..end].to_owned())
}

/// `text` with every byte of the lines that `span` touches replaced by a space.
fn blank_lines(text: &str, span: Range<usize>) -> String {
    let start = floor_char_boundary(text, span.start.min(text.len()));
    let end = floor_char_boundary(text, span.end.min(text.len()));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..line_start]);
    for ch in text[line_start..line_end].chars() {
        if ch == '\n' {
            out.push('\n');
        } else {
            out.extend(std::iter::repeat_n(' ', ch.len_utf8()));
        }
    }
    out.push_str(&text[line_end..]);
    out
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A line without its `#` comment (a `#` inside a string is kept).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, ch) in line.char_indices() {
        match (quote, ch) {
            (None, '#') => return &line[..i],
            (None, '"' | '\'') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

/// The parts of a dotted key (`auto.rules."my.collection"`), quotes removed.
fn split_dotted(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for ch in key.chars() {
        match (quote, ch) {
            (None, '.') => parts.push(std::mem::take(&mut current)),
            (None, '"' | '\'') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            (_, c) => current.push(c),
        }
    }
    parts.push(current);
    parts.into_iter().map(|p| p.trim().to_owned()).collect()
}

/// The keys leading to the end of `prefix` (text of one line up to an offset):
/// `endpoints = { getAll = { auth_required = ` gives `endpoints`, `getAll`, `auth_required`.
fn inline_key_path(prefix: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut last_word: Option<String> = None;
    let mut chars = prefix.chars().peekable();
    // Depth of `[` arrays opened after the last key, which hold values, not keys.
    let mut array_depth = 0usize;
    while let Some(ch) = chars.next() {
        match ch {
            '"' | '\'' => {
                let mut word = String::new();
                for c in chars.by_ref() {
                    if c == ch {
                        break;
                    }
                    word.push(c);
                }
                last_word = Some(word);
            }
            '=' => {
                if let Some(word) = last_word.take() {
                    current = Some(word);
                }
            }
            '{' => {
                if let Some(key) = current.take() {
                    stack.push(key);
                }
                last_word = None;
            }
            '}' => {
                stack.pop();
                current = None;
                last_word = None;
            }
            '[' => array_depth += 1,
            ']' => array_depth = array_depth.saturating_sub(1),
            ',' => {
                if array_depth == 0 {
                    current = None;
                }
                last_word = None;
            }
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                let mut word = String::from(c);
                while let Some(&next) = chars.peek() {
                    if next.is_ascii_alphanumeric() || next == '_' || next == '-' {
                        word.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                last_word = Some(word);
            }
            '.' => {
                // Dotted key `a.b = 1`: keep the parts together.
                if let Some(word) = last_word.take() {
                    stack.push(word);
                }
            }
            _ => {}
        }
    }
    if let Some(key) = current {
        stack.push(key);
    }
    stack
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let source = Source::new("a = 1\nbb = 2\n");
        assert_eq!(source.position(0), (1, 1));
        assert_eq!(source.position(6), (2, 1));
        assert_eq!(source.position(11), (2, 6));
    }

    #[test]
    fn key_at_follows_headers_and_inline_tables() {
        let text = "[[api]]\n[[api.collection]]\nendpoints = { getAll = { auth_required = 1 } }\n";
        let source = Source::new(text);
        let offset = text.find("= 1").map(|i| i + 2).unwrap_or_default();
        assert_eq!(
            source.key_at(offset),
            "api.collection.endpoints.getAll.auth_required"
        );
    }

    #[test]
    fn key_at_ignores_array_values() {
        let text = "[auto]\ncollections = [\"a\", 1]\n";
        let source = Source::new(text);
        let offset = text.find('1').unwrap_or_default();
        assert_eq!(source.key_at(offset), "auto.collections");
    }

    #[test]
    fn quoted_dotted_headers_keep_their_dots() {
        let text = "[auto.rules.\"my.things\"]\ninsert = 1\n";
        let source = Source::new(text);
        let offset = text.find('1').unwrap_or_default();
        assert_eq!(source.key_at(offset), "auto.rules.my.things.insert");
        assert_eq!(split_dotted("a.\"b.c\".d"), vec!["a", "b.c", "d"]);
    }

    #[test]
    fn blanking_keeps_offsets() {
        let text = "a = 1\nb = \"é\"\nc = 3\n";
        let blanked = blank_lines(text, 6..7);
        assert_eq!(blanked.len(), text.len());
        assert_eq!(blanked.lines().count(), 3);
        assert!(blanked.contains("c = 3"));
        assert!(!blanked.contains('b'));
    }

    #[test]
    fn comments_are_stripped_outside_strings() {
        assert_eq!(strip_comment("[auto] # x"), "[auto] ");
        assert_eq!(strip_comment("a = \"#\" # c"), "a = \"#\" ");
    }
}
