//! Value comparison and path lookup shared by selectors, sort and modifiers.

use std::cmp::Ordering;

use serde_json::{Map, Value};
use smallvec::SmallVec;

/// Type-bracketed total order over JSON values (null < numbers < strings < objects < arrays <
/// booleans, as the reference platform orders them); within a type, the natural order.
///
/// Numbers compare by exact decimal value whatever their spelling (`1` equals `1.0`, big
/// integers and long fractions are never rounded); strings compare
/// by code point; objects compare field by field in their stored order (name, then value), then
/// by length; arrays compare element by element, then by length; `false < true`.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    let by_type = type_rank(a).cmp(&type_rank(b));
    if by_type != Ordering::Equal {
        return by_type;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let o = compare_values(l, r);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            for ((lk, lv), (rk, rv)) in x.iter().zip(y) {
                let o = lk.cmp(rk).then_with(|| compare_values(lv, rv));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => Ordering::Equal,
    }
}

/// Equality in the sense of selectors: `compare_values(a, b) == Equal` (so `1 == 1.0`, and
/// objects are equal only with the same fields in the same order).
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == Ordering::Equal
}

/// The position of a value's type in the type-bracketed order.
pub(crate) fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Number(_) => 1,
        Value::String(_) => 2,
        Value::Object(_) => 3,
        Value::Array(_) => 4,
        Value::Bool(_) => 5,
    }
}

pub(crate) use crate::number::compare_numbers;

/// Splits a dotted path into its parts, refusing an empty path, an empty part (`a..b`) and a
/// part starting with `$` (positional and operator paths are not supported). The error text
/// names the problem and is meant to be wrapped in the caller's error variant.
pub(crate) fn split_path(path: &str) -> std::result::Result<Vec<String>, String> {
    check_path(path)?;
    Ok(path.split('.').map(str::to_string).collect())
}

/// [`split_path`]'s checks, without making the parts.
pub(crate) fn check_path(path: &str) -> std::result::Result<(), String> {
    if path.is_empty() {
        return Err("empty field name".to_string());
    }
    for part in path.split('.') {
        if part.is_empty() {
            return Err(format!("field path {path:?} has an empty part"));
        }
        if part.starts_with('$') {
            return Err(format!(
                "field path {path:?} has a part starting with '$' ({part:?})"
            ));
        }
    }
    Ok(())
}

/// The index a path part names when it is all ASCII digits.
pub(crate) fn numeric_index(part: &str) -> Option<usize> {
    if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
        part.parse().ok()
    } else {
        None
    }
}

/// One place a path lookup arrived at. `value` is `None` where the path is missing (which
/// matches `null` in equality); `dont_iterate` marks an array reached by a numeric index into an
/// array, whose elements are not matched one by one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Branch<'a> {
    pub(crate) value: Option<&'a Value>,
    pub(crate) dont_iterate: bool,
}

#[derive(Clone, Copy)]
enum Container<'a> {
    Object(&'a Map<String, Value>),
    Array(&'a [Value]),
}

fn container(v: &Value) -> Option<Container<'_>> {
    match v {
        Value::Object(m) => Some(Container::Object(m)),
        Value::Array(a) => Some(Container::Array(a)),
        _ => None,
    }
}

/// The branches of one lookup. Nearly every path reaches one or two places, so they live inline:
/// a selector on a dotted path, tried on each element of a huge array (`$elemMatch`), then
/// allocates nothing per element.
pub(crate) type Branches<'a> = SmallVec<[Branch<'a>; 4]>;

/// Every branch a dotted path reaches in `doc`, with the reference platform's rules: an array
/// met before the last part is searched both by a numeric part (`a.0.b`) and element by element
/// (objects only); a missing field yields one `None` branch, except below a numeric index into
/// an array, which yields nothing. With `for_sort`, a numeric part after an array only indexes.
pub(crate) fn lookup_branches<'a>(
    doc: &'a Map<String, Value>,
    parts: &[String],
    for_sort: bool,
) -> Branches<'a> {
    let mut out = Branches::new();
    if !parts.is_empty() {
        lookup_in(Container::Object(doc), parts, for_sort, &mut out);
    }
    out
}

fn lookup_in<'a>(c: Container<'a>, parts: &[String], for_sort: bool, out: &mut Branches<'a>) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    let in_array = matches!(c, Container::Array(_));
    let first_level = match c {
        Container::Object(m) => m.get(first.as_str()),
        Container::Array(a) => match numeric_index(first) {
            Some(i) if i < a.len() => Some(&a[i]),
            _ => return,
        },
    };
    if rest.is_empty() {
        out.push(Branch {
            value: first_level,
            dont_iterate: in_array && first_level.is_some_and(Value::is_array),
        });
        return;
    }
    let Some(next) = first_level.and_then(container) else {
        if !in_array {
            out.push(Branch {
                value: None,
                dont_iterate: false,
            });
        }
        return;
    };
    lookup_in(next, rest, for_sort, out);
    if let Container::Array(elements) = next {
        let numeric_next = numeric_index(&rest[0]).is_some();
        if !(for_sort && numeric_next) {
            for e in elements {
                if let Value::Object(m) = e {
                    lookup_in(Container::Object(m), rest, for_sort, out);
                }
            }
        }
    }
}

/// Calls `f` on every value the branches offer to a matcher: each element of a (non
/// `dont_iterate`) array, then the array itself, and `None` for a missing field. Stops and
/// returns true at the first `f` that returns true.
pub(crate) fn any_expanded<'a>(
    branches: &[Branch<'a>],
    mut f: impl FnMut(Option<&'a Value>) -> bool,
) -> bool {
    for b in branches {
        if let Some(Value::Array(a)) = b.value
            && !b.dont_iterate
            && a.iter().any(|e| f(Some(e)))
        {
            return true;
        }
        if f(b.value) {
            return true;
        }
    }
    false
}

/// The values found at a dotted `path` in `doc`, descending into arrays (array elements and
/// numeric path parts), as selector matching sees them.
///
/// An array met before the last part is searched element by element (its object elements) and,
/// when the next part is numeric, by index. The value at the last part is returned as is, so an
/// array there is one value (a matcher also looks at its elements). Missing fields yield nothing.
/// An invalid path (empty, or with an empty or `$` part) finds nothing.
pub fn lookup_path<'a>(doc: &'a serde_json::Map<String, Value>, path: &str) -> Vec<&'a Value> {
    let Ok(parts) = split_path(path) else {
        return Vec::new();
    };
    lookup_branches(doc, &parts, false)
        .into_iter()
        .filter_map(|b| b.value)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn type_brackets_order() {
        let ordered = [
            json!(null),
            json!(-5),
            json!(1),
            json!(1.5),
            json!(""),
            json!("a"),
            json!("b"),
            json!({}),
            json!({"a": 1}),
            json!([]),
            json!([1]),
            json!(false),
            json!(true),
        ];
        for (i, a) in ordered.iter().enumerate() {
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(compare_values(a, b), i.cmp(&j), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(compare_values(&json!(1), &json!(1.0)), Ordering::Equal);
        assert_eq!(
            compare_values(&json!(u64::MAX), &json!(-1)),
            Ordering::Greater
        );
        assert_eq!(compare_values(&json!(2), &json!(10)), Ordering::Less);
        assert_eq!(compare_values(&json!(100), &json!("1")), Ordering::Less);
    }

    #[test]
    fn objects_compare_in_field_order() {
        assert_ne!(
            compare_values(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})),
            Ordering::Equal
        );
        assert_eq!(
            compare_values(&json!({"a": 1, "b": 2}), &json!({"a": 1, "b": 2.0})),
            Ordering::Equal
        );
    }

    #[test]
    fn lookup_descends_into_arrays() {
        let doc = obj(json!({"a": [{"b": 1}, {"b": [2, 3]}, {"c": 4}, 5], "x": {"y": 1}}));
        assert_eq!(lookup_path(&doc, "a.b"), vec![&json!(1), &json!([2, 3])]);
        assert_eq!(lookup_path(&doc, "a.0.b"), vec![&json!(1)]);
        assert_eq!(lookup_path(&doc, "a.3"), vec![&json!(5)]);
        assert_eq!(lookup_path(&doc, "x.y"), vec![&json!(1)]);
        assert!(lookup_path(&doc, "x.z").is_empty());
        assert!(lookup_path(&doc, "a..b").is_empty());
    }

    #[test]
    fn missing_branches() {
        let doc = obj(json!({"a": [{"b": 1}, {"c": 2}], "n": [1, 2]}));
        let parts = split_path("a.b").unwrap_or_default();
        let branches = lookup_branches(&doc, &parts, false);
        assert_eq!(branches.len(), 2);
        assert!(branches[1].value.is_none());
        // Non-object elements are not searched: no missing branch.
        let parts = split_path("n.b").unwrap_or_default();
        assert!(lookup_branches(&doc, &parts, false).is_empty());
    }

    #[test]
    fn paths_are_validated() {
        assert!(split_path("").is_err());
        assert!(split_path("a..b").is_err());
        assert!(split_path("a.$").is_err());
        assert_eq!(
            split_path("a.b").ok(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
    }
}
