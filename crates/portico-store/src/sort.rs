//! Sort specifications.

use std::cmp::Ordering;

use serde_json::Value;

use crate::value::{compare_values, lookup_branches, split_path};
use crate::{Document, Error, Result};

/// A parsed sort: a list of (dotted path, ascending) keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sort {
    keys: Vec<(String, bool)>,
    /// The split form of each key's path.
    parts: Vec<Vec<String>>,
}

fn err(msg: impl Into<String>) -> Error {
    Error::InvalidSort(msg.into())
}

impl Sort {
    /// Parses `{"a": 1, "b.c": -1}` or `[["a", "asc"], ["b", "desc"]]`.
    ///
    /// Directions may be `1`/`-1`, `"asc"`/`"desc"` or `"ascending"`/`"descending"`; in the
    /// array form a bare string `"a"` means ascending.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] naming the problem.
    pub fn parse(value: &Value) -> Result<Sort> {
        let mut sort = Sort::default();
        match value {
            Value::Object(m) => {
                for (path, dir) in m {
                    sort.push(path, direction(path, dir)?)?;
                }
            }
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(path) => sort.push(path, true)?,
                        Value::Array(pair) if pair.len() == 2 => {
                            let Value::String(path) = &pair[0] else {
                                return Err(err(format!("sort key {} is not a string", pair[0])));
                            };
                            sort.push(path, direction(path, &pair[1])?)?;
                        }
                        other => {
                            return Err(err(format!(
                                "sort items must be \"path\" or [\"path\", \"asc\"|\"desc\"], not {other}"
                            )));
                        }
                    }
                }
            }
            other => {
                return Err(err(format!(
                    "a sort must be an object or an array, not {other}"
                )));
            }
        }
        Ok(sort)
    }

    /// Parses a comma list such as `-created,title` (a leading `-` means descending).
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] for an empty key or a bad path.
    pub fn parse_list(spec: &str) -> Result<Sort> {
        let mut sort = Sort::default();
        for key in spec.split(',') {
            let key = key.trim();
            let (path, ascending) = match key.strip_prefix('-') {
                Some(rest) => (rest, false),
                None => (key.strip_prefix('+').unwrap_or(key), true),
            };
            sort.push(path, ascending)?;
        }
        Ok(sort)
    }

    /// A sort on one key.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] for a bad path.
    pub fn by(path: &str, ascending: bool) -> Result<Sort> {
        let mut sort = Sort::default();
        sort.push(path, ascending)?;
        Ok(sort)
    }

    /// This sort with one more key, compared when all earlier keys tie.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] for a bad path.
    pub fn then(mut self, path: &str, ascending: bool) -> Result<Sort> {
        self.push(path, ascending)?;
        Ok(self)
    }

    fn push(&mut self, path: &str, ascending: bool) -> Result<()> {
        let parts = split_path(path).map_err(err)?;
        if self.keys.iter().any(|(p, _)| p == path) {
            return Err(err(format!("the sort names {path:?} twice")));
        }
        self.keys.push((path.to_string(), ascending));
        self.parts.push(parts);
        Ok(())
    }

    /// The keys: (dotted path, ascending).
    pub fn keys(&self) -> &[(String, bool)] {
        &self.keys
    }

    /// Compares two documents by this sort (ties keep their order: a stable sort is expected).
    ///
    /// A key's value is the one the path reaches, a missing field counting as `null`. Where the
    /// path reaches several values (through arrays), an ascending key uses the smallest and a
    /// descending key the largest of them, elements of arrays included.
    pub fn compare(&self, a: &Document, b: &Document) -> Ordering {
        for ((_, ascending), parts) in self.keys.iter().zip(&self.parts) {
            let ka = sort_key(a, parts, *ascending);
            let kb = sort_key(b, parts, *ascending);
            let o = compare_values(ka, kb);
            let o = if *ascending { o } else { o.reverse() };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// The values `doc` sorts by, one per key, for comparing many times with
    /// [`Sort::compare_keys`] without looking the paths up again.
    #[cfg_attr(not(feature = "memory"), allow(dead_code))]
    pub(crate) fn sort_keys<'a>(&self, doc: &'a Document) -> Vec<&'a Value> {
        self.keys
            .iter()
            .zip(&self.parts)
            .map(|((_, ascending), parts)| sort_key(doc, parts, *ascending))
            .collect()
    }

    /// Compares the results of [`Sort::sort_keys`] of two documents, as [`Sort::compare`] would.
    #[cfg_attr(not(feature = "memory"), allow(dead_code))]
    pub(crate) fn compare_keys(&self, a: &[&Value], b: &[&Value]) -> Ordering {
        for (((_, ascending), ka), kb) in self.keys.iter().zip(a).zip(b) {
            let o = compare_values(ka, kb);
            let o = if *ascending { o } else { o.reverse() };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}

static NULL: Value = Value::Null;

fn direction(path: &str, dir: &Value) -> Result<bool> {
    match dir {
        Value::Number(n) if n.as_f64() == Some(1.0) => Ok(true),
        Value::Number(n) if n.as_f64() == Some(-1.0) => Ok(false),
        Value::String(s) if matches!(s.as_str(), "asc" | "ascending") => Ok(true),
        Value::String(s) if matches!(s.as_str(), "desc" | "descending") => Ok(false),
        other => Err(err(format!(
            "the direction of {path:?} must be 1, -1, \"asc\" or \"desc\", not {other}"
        ))),
    }
}

/// The value a document sorts by on one key: the smallest (ascending) or largest (descending)
/// value the path reaches, array elements included; `null` when it reaches nothing.
fn sort_key<'a>(doc: &'a Document, parts: &[String], ascending: bool) -> &'a Value {
    let mut best: Option<&'a Value> = None;
    let mut consider = |v: &'a Value| {
        let better = match best {
            None => true,
            Some(b) => {
                let o = compare_values(v, b);
                if ascending {
                    o == Ordering::Less
                } else {
                    o == Ordering::Greater
                }
            }
        };
        if better {
            best = Some(v);
        }
    };
    for branch in lookup_branches(doc, parts, true) {
        match branch.value {
            None => consider(&NULL),
            Some(Value::Array(items)) if !branch.dont_iterate && !items.is_empty() => {
                for item in items {
                    consider(item);
                }
            }
            Some(v) => consider(v),
        }
    }
    best.unwrap_or(&NULL)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    fn sorted(sort: &Sort, docs: Vec<Value>) -> Vec<Value> {
        let mut docs: Vec<Document> = docs.into_iter().map(doc).collect();
        docs.sort_by(|a, b| sort.compare(a, b));
        let mut by_keys = docs.clone();
        by_keys.sort_by(|a, b| sort.compare_keys(&sort.sort_keys(a), &sort.sort_keys(b)));
        assert_eq!(by_keys, docs, "compare_keys agrees with compare");
        docs.into_iter().map(Value::Object).collect()
    }

    #[test]
    fn parses_all_forms() {
        let expect = vec![("a".to_string(), true), ("b.c".to_string(), false)];
        for v in [
            json!({"a": 1, "b.c": -1}),
            json!([["a", "asc"], ["b.c", "desc"]]),
            json!(["a", ["b.c", -1]]),
        ] {
            assert_eq!(
                Sort::parse(&v).map(|s| s.keys().to_vec()).ok(),
                Some(expect.clone())
            );
        }
        let list = Sort::parse_list("a, -b.c").map(|s| s.keys().to_vec()).ok();
        assert_eq!(list, Some(expect));
        for bad in [
            json!({"a": 2}),
            json!("a"),
            json!([["a", "up"]]),
            json!({"": 1}),
        ] {
            assert!(
                matches!(Sort::parse(&bad), Err(Error::InvalidSort(_))),
                "{bad}"
            );
        }
        assert!(Sort::parse_list("a,,b").is_err());
        assert!(Sort::parse_list("a,a").is_err());
    }

    #[test]
    fn orders_by_type_then_value() {
        let sort = Sort::parse_list("a").unwrap_or_default();
        let out = sorted(
            &sort,
            vec![
                json!({"a": "x"}),
                json!({"a": 2}),
                json!({}),
                json!({"a": 1}),
                json!({"a": true}),
            ],
        );
        assert_eq!(
            out,
            vec![
                json!({}),
                json!({"a": 1}),
                json!({"a": 2}),
                json!({"a": "x"}),
                json!({"a": true})
            ]
        );
    }

    #[test]
    fn descending_and_stable_ties() {
        let sort = Sort::parse_list("-a").unwrap_or_default();
        let out = sorted(
            &sort,
            vec![
                json!({"a": 1, "i": 0}),
                json!({"a": 2}),
                json!({"a": 1, "i": 1}),
            ],
        );
        assert_eq!(
            out,
            vec![
                json!({"a": 2}),
                json!({"a": 1, "i": 0}),
                json!({"a": 1, "i": 1})
            ]
        );
    }

    #[test]
    fn arrays_sort_by_min_or_max() {
        let asc = Sort::parse_list("a").unwrap_or_default();
        let desc = Sort::parse_list("-a").unwrap_or_default();
        let docs = vec![json!({"a": [1, 9]}), json!({"a": 5})];
        assert_eq!(sorted(&asc, docs.clone())[0], json!({"a": [1, 9]}));
        assert_eq!(sorted(&desc, docs)[0], json!({"a": [1, 9]}));
    }
}
