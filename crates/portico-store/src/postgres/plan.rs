//! Candidates: how SQL narrows the documents a selector may match, before the reference matcher
//! decides.
//!
//! A primary-key lookup when the selector pins `_id`; an index table when it requires
//! `path == scalar` on an indexed path; otherwise a scan in `_id` order filtered by a jsonpath
//! predicate on the `jsonb` copy of each document, built from the conditions of
//! [`Selector::narrowing`]: equality, ranges, `$in` and `{"$exists": true}` on top-level and
//! dotted paths. Narrowing may keep too many candidates, never too few: every one is then
//! checked with [`Selector::matches`]. What makes the jsonpath filter safe:
//!
//! - It runs in lax mode, where a member accessor on an array looks into its elements and a
//!   filter on an array tests each element, as selectors search arrays on a path and at its end.
//!   A path with a numeric part (`a.0.b`, which selectors read both as an array index and as a
//!   field name) is left to the matcher.
//! - jsonpath compares only values of one type (a number is never greater than a string) and
//!   strings by code point, as the matcher does; booleans are only tested for equality.
//! - Numbers: the matcher compares integers exactly and other numbers as `f64`, PostgreSQL
//!   compares `numeric`s exactly, so two numbers the matcher calls equal may differ in their
//!   20th digit. A number condition is therefore widened by a relative 2^-50 (a few `f64` ulps)
//!   plus 1e-300: every number equal to the operand as `f64` falls inside.
//! - Errors in the filter (there should be none in lax mode) and documents without a `jsonb`
//!   copy keep the row as a candidate.

use serde_json::{Map, Number, Value};

use super::schema::IndexedPath;
use crate::Selector;
use crate::index_key::value_key;
use crate::selector::{CmpOp, Narrow, Narrowing};
use crate::value::numeric_index;

/// Where the candidates of a selector come from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// The one document with this `_id`.
    Id(String),
    /// The documents with one of these `_id`s (`{"_id": {"$in": [...]}}`), by primary key.
    Ids(Vec<String>),
    /// The documents whose index on `path` holds `key`, in `_id` order.
    Index {
        /// The indexed path.
        path: String,
        /// The index key of the required value.
        key: Vec<u8>,
    },
    /// Every document in `_id` order, kept when `filter` (a jsonpath predicate and its
    /// variables) may hold.
    Scan {
        /// The predicate for `jsonb_path_match` and its `vars` object, when there is one.
        filter: Option<(String, String)>,
    },
}

/// True when narrowing `selector` could use an index: it has an equality on some path.
pub(crate) fn may_use_index(selector: &Selector) -> bool {
    !selector.equalities().is_empty()
}

/// The cheapest way to find the candidates of `selector`, given the collection's indexes.
pub(crate) fn plan(selector: &Selector, indexes: &[IndexedPath]) -> Plan {
    if let Some(id) = selector.id_equality() {
        return Plan::Id(id.to_owned());
    }
    if let Some(ids) = selector.id_set() {
        return Plan::Ids(ids.into_iter().map(str::to_owned).collect());
    }
    for (path, value) in selector.equalities() {
        if !indexes.iter().any(|i| i.path == path) {
            continue;
        }
        if let Some(key) = value_key(value) {
            return Plan::Index {
                path: path.to_owned(),
                key: key.into_bytes(),
            };
        }
    }
    Plan::Scan {
        filter: jsonpath_filter(&selector.narrowing()),
    }
}

/// A jsonpath predicate every document matching all of `narrowing` satisfies, with its
/// variables as a JSON object; `None` when nothing can be translated.
pub(crate) fn jsonpath_filter(narrowing: &[Narrowing<'_>]) -> Option<(String, String)> {
    let mut vars = Map::new();
    let mut terms = Vec::new();
    for n in narrowing {
        let Some(path) = jsonpath_path(n.parts) else {
            continue;
        };
        let term = match n.narrow {
            Narrow::Exists => Some(format!("exists({path})")),
            Narrow::Eq(v) => equal(v, &mut vars).map(|c| format!("exists({path} ? ({c}))")),
            Narrow::Cmp(op, v) => {
                compare(op, v, &mut vars).map(|c| format!("exists({path} ? ({c}))"))
            }
            Narrow::In(list) => list
                .iter()
                .map(|v| equal(v, &mut vars))
                .collect::<Option<Vec<_>>>()
                .map(|cs| format!("exists({path} ? ({}))", cs.join(" || "))),
        };
        terms.extend(term);
    }
    if terms.is_empty() {
        return None;
    }
    Some((terms.join(" && "), Value::Object(vars).to_string()))
}

/// `$."a"."b"` for the parts `["a", "b"]`; `None` when a part is numeric (see the module docs).
fn jsonpath_path(parts: &[String]) -> Option<String> {
    let mut out = String::from("$");
    for part in parts {
        if numeric_index(part).is_some() {
            return None;
        }
        out.push('.');
        // A JSON string literal is a jsonpath string literal.
        out.push_str(&Value::String(part.clone()).to_string());
    }
    Some(out)
}

/// Adds `value` to `vars` and returns its jsonpath variable.
fn var(vars: &mut Map<String, Value>, value: Value) -> String {
    let name = format!("v{}", vars.len());
    vars.insert(name.clone(), value);
    format!("${name}")
}

/// `lo` and `hi` around `n`: every number equal to `n` as `f64` lies between them.
fn window(n: &Number) -> Option<(Value, Value)> {
    let f = n.as_f64().filter(|f| f.is_finite())?;
    let slack = f.abs() * f64::powi(2.0, -50) + 1e-300;
    let lo = Number::from_f64(f - slack)?;
    let hi = Number::from_f64(f + slack)?;
    Some((Value::Number(lo), Value::Number(hi)))
}

/// The filter condition on `@` for equality with the scalar `v`.
fn equal(v: &Value, vars: &mut Map<String, Value>) -> Option<String> {
    match v {
        Value::String(_) | Value::Bool(_) => Some(format!("@ == {}", var(vars, v.clone()))),
        Value::Number(n) => {
            let (lo, hi) = window(n)?;
            Some(format!(
                "(@ >= {} && @ <= {})",
                var(vars, lo),
                var(vars, hi)
            ))
        }
        _ => None,
    }
}

/// The filter condition on `@` for the range `op v` (a number or a string).
fn compare(op: CmpOp, v: &Value, vars: &mut Map<String, Value>) -> Option<String> {
    match v {
        Value::String(_) => {
            let sym = match op {
                CmpOp::Gt => ">",
                CmpOp::Gte => ">=",
                CmpOp::Lt => "<",
                CmpOp::Lte => "<=",
            };
            Some(format!("@ {sym} {}", var(vars, v.clone())))
        }
        Value::Number(n) => {
            let (lo, hi) = window(n)?;
            Some(match op {
                CmpOp::Gt | CmpOp::Gte => format!("@ >= {}", var(vars, lo)),
                CmpOp::Lt | CmpOp::Lte => format!("@ <= {}", var(vars, hi)),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(v: Value) -> Option<(String, String)> {
        let selector = Selector::parse(&v).expect("selector");
        jsonpath_filter(&selector.narrowing())
    }

    #[test]
    fn conditions_become_jsonpath_terms() {
        let (path, vars) =
            filter(json!({"a.b": "x", "n": {"$gt": 2}, "t": {"$exists": true}})).expect("a filter");
        assert_eq!(
            path,
            "exists($.\"a\".\"b\" ? (@ == $v0)) && exists($.\"n\" ? (@ >= $v1)) && exists($.\"t\")"
        );
        assert!(vars.starts_with("{\"v0\":\"x\",\"v1\":1.99"), "{vars}");
        let (path, _) = filter(json!({"k": {"$in": ["a", true]}})).expect("a filter");
        assert_eq!(path, "exists($.\"k\" ? (@ == $v0 || @ == $v1))");
    }

    #[test]
    fn what_cannot_be_translated_is_left_to_the_matcher() {
        assert_eq!(filter(json!({"a.0": 1})), None);
        assert_eq!(filter(json!({"a": null})), None);
        assert_eq!(filter(json!({"$or": [{"a": 1}, {"b": 2}]})), None);
        assert_eq!(filter(json!({"a": {"$in": ["x", null]}})), None);
        assert_eq!(filter(json!({"a": {"$gt": true}})), None);
        assert_eq!(filter(json!({"a": {"$exists": false}})), None);
        // Quotes in field names stay inside the jsonpath string literal.
        let (path, _) = filter(json!({"a\"b": 1})).expect("a filter");
        assert!(path.starts_with("exists($.\"a\\\"b\" ?"), "{path}");
    }
}
