//! Full-text search over chosen fields of a collection ([`crate::Store::search`]): the words
//! of a query, each required, matched against the words of the fields' strings (whole words,
//! case-insensitive), best matches first.
//!
//! This file holds what every backend shares: the [`Search`] request, how text is cut into
//! words ([`words`]), and the reference answer over documents read one by one ([`over`]),
//! which the memory backend gives. SQLite answers from an FTS5 table and PostgreSQL from a
//! `tsvector` column with a GIN index, both kept in step with every write by the database
//! itself (triggers, a generated column).

use std::cmp::Ordering;

use serde_json::Value;

use crate::{Document, Error, Projection, Result, Selector};

/// The most words one search may have (more are refused).
pub const MAX_SEARCH_WORDS: usize = 16;
/// The most fields one collection may search.
pub const MAX_SEARCH_FIELDS: usize = 16;

/// A full-text search of a collection: which fields are searched, the words asked for, and the
/// selector, skip, limit and projection of the page.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Search {
    /// The top-level fields searched (the collection's search fields: the ones its index
    /// covers, see [`crate::Store::ensure_search`]).
    pub fields: Vec<String>,
    /// What the caller typed; cut into words by [`words`].
    pub text: String,
    /// Which documents may match at all (a `where`, an owner scope).
    pub selector: Selector,
    /// Matches passed over.
    pub skip: u64,
    /// Matches returned at most; `None` for all.
    pub limit: Option<u64>,
    /// Which fields of each match are returned.
    pub projection: Option<Projection>,
}

impl Search {
    /// A search of `fields` for `text`, over every document, unpaged.
    pub fn new(fields: Vec<String>, text: impl Into<String>) -> Search {
        Search {
            fields,
            text: text.into(),
            ..Search::default()
        }
    }

    /// The words of the text, checked.
    ///
    /// # Errors
    /// [`Error::InvalidSelector`] for more than [`MAX_SEARCH_WORDS`] words.
    pub fn words(&self) -> Result<Vec<String>> {
        let words = words(&self.text);
        if words.len() > MAX_SEARCH_WORDS {
            return Err(Error::InvalidSelector(format!(
                "a search may have at most {MAX_SEARCH_WORDS} words"
            )));
        }
        Ok(words)
    }
}

/// Checks a collection's search fields: 1 to [`MAX_SEARCH_FIELDS`] top-level names of ASCII
/// letters, digits, `_` and `-` (they are written into the database's index definitions), not
/// `_id`, without repeats.
///
/// # Errors
/// [`Error::InvalidName`] naming what is wrong.
pub fn check_fields(fields: &[String]) -> Result<()> {
    if fields.is_empty() || fields.len() > MAX_SEARCH_FIELDS {
        return Err(Error::InvalidName(format!(
            "a search covers 1 to {MAX_SEARCH_FIELDS} fields"
        )));
    }
    for (i, field) in fields.iter().enumerate() {
        let plain = field
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if field.is_empty() || field == "_id" || !plain {
            return Err(Error::InvalidName(format!(
                "{field:?} cannot be searched: give a top-level field of letters, digits, _ and - other than _id"
            )));
        }
        if fields[..i].contains(field) {
            return Err(Error::InvalidName(format!("{field:?} is named twice")));
        }
    }
    Ok(())
}

/// The words of `text`: its runs of letters and digits, lowercased.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Every string held at `value` (through arrays and objects), in order.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// How well `doc` matches `wanted` (every word must be among the words of the fields'
/// strings): the number of times the wanted words occur, `None` when one is missing.
fn score(doc: &Document, fields: &[String], wanted: &[String]) -> Option<usize> {
    let mut texts = Vec::new();
    for field in fields {
        if let Some(value) = doc.get(field) {
            strings(value, &mut texts);
        }
    }
    let found: Vec<String> = texts.iter().flat_map(|t| words(t)).collect();
    let mut total = 0;
    for word in wanted {
        let n = found.iter().filter(|w| *w == word).count();
        if n == 0 {
            return None;
        }
        total += n;
    }
    Some(total)
}

/// The reference answer of `search` over `docs` (every document of the collection, or at least
/// those the selector may match): the page of matches, best first (ties in `_id` order), and
/// how many there are in all.
///
/// # Errors
/// As [`Search::words`].
pub(crate) fn over(search: &Search, docs: Vec<Document>) -> Result<(Vec<Document>, u64)> {
    let wanted = search.words()?;
    if wanted.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let mut matches: Vec<(usize, Document)> = docs
        .into_iter()
        .filter_map(|doc| score(&doc, &search.fields, &wanted).map(|s| (s, doc)))
        .collect();
    matches.sort_by(|(a, da), (b, db)| match b.cmp(a) {
        Ordering::Equal => crate::document_id(da).cmp(&crate::document_id(db)),
        other => other,
    });
    let mut pager = Pager::new(search);
    for (_, doc) in matches {
        pager.offer(doc);
    }
    Ok(pager.finish())
}

/// Collects the page of `search` out of matches offered in rank order, counting them all.
pub(crate) struct Pager<'a> {
    search: &'a Search,
    page: Vec<Document>,
    total: u64,
}

impl<'a> Pager<'a> {
    pub(crate) fn new(search: &'a Search) -> Pager<'a> {
        Pager {
            search,
            page: Vec::new(),
            total: 0,
        }
    }

    /// Takes the next match in rank order when it matches the selector: kept when it falls in
    /// the page, counted either way.
    pub(crate) fn offer(&mut self, doc: Document) {
        if !self.search.selector.matches(&doc) {
            return;
        }
        let end = self
            .search
            .limit
            .map(|l| self.search.skip.saturating_add(l));
        if self.total >= self.search.skip && end.is_none_or(|e| self.total < e) {
            self.page.push(match &self.search.projection {
                Some(p) => p.apply(&doc),
                None => doc,
            });
        }
        self.total += 1;
    }

    /// The page and the number of matches.
    pub(crate) fn finish(self) -> (Vec<Document>, u64) {
        (self.page, self.total)
    }
}

/// `docs` (a page already cut) as `search`'s projection shows them.
pub(crate) fn project(search: &Search, docs: Vec<Document>) -> Vec<Document> {
    match &search.projection {
        Some(p) => docs.iter().map(|doc| p.apply(doc)).collect(),
        None => docs,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Document {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn words_are_lowercased_runs_of_letters_and_digits() {
        assert_eq!(
            words("Hello, wörld! x2 -- a_b"),
            vec!["hello", "wörld", "x2", "a", "b"]
        );
        assert!(words(" \"*:^ ").is_empty());
    }

    #[test]
    fn every_word_must_match_and_more_occurrences_rank_first() {
        let docs = vec![
            doc(json!({"_id": "a", "title": "apple pie", "body": "crust"})),
            doc(json!({"_id": "b", "title": "Apple apple", "body": ["pie", {"x": "apple"}]})),
            doc(json!({"_id": "c", "title": "apple", "other": "pie"})),
            doc(json!({"_id": "d", "title": 5, "body": "pie applesauce"})),
        ];
        let fields = vec!["title".to_owned(), "body".to_owned()];
        let (page, total) = over(&Search::new(fields.clone(), "APPLE pie"), docs.clone()).unwrap();
        assert_eq!(total, 2);
        let ids: Vec<_> = page.iter().filter_map(crate::document_id).collect();
        assert_eq!(ids, vec!["b", "a"]);
        let mut search = Search::new(fields, "pie");
        search.skip = 1;
        search.limit = Some(1);
        search.selector = Selector::parse(&json!({"_id": {"$ne": "b"}})).unwrap();
        let (page, total) = over(&search, docs).unwrap();
        assert_eq!(total, 2);
        assert_eq!(
            page.iter()
                .filter_map(crate::document_id)
                .collect::<Vec<_>>(),
            vec!["d"]
        );
    }

    #[test]
    fn fields_and_word_counts_are_bounded() {
        assert!(check_fields(&["title".into()]).is_ok());
        for bad in [
            vec![],
            vec!["_id".to_owned()],
            vec!["a.b".to_owned()],
            vec!["a".into(), "a".into()],
        ] {
            assert!(check_fields(&bad).is_err(), "{bad:?}");
        }
        let many = (0..=MAX_SEARCH_WORDS)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(Search::new(vec!["t".into()], many).words().is_err());
    }
}
