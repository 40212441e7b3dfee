//! Order-preserving keys: JSON values as bytes that compare, byte by byte, as
//! [`crate::compare_values`] compares the values, for the sorted indexes of every backend.
//!
//! A sorted index keeps, for each document, the keys of the values its sort would look at
//! ([`entries`]), so a database ordering rows by these bytes (`ORDER BY key`, key ranges) gives
//! the store's own order: null < numbers by exact value < strings by code point < objects <
//! arrays < booleans. An index then changes only what a query costs, never its answer.
//!
//! Every value's key is *prefix-free*: no value's key begins another value's key. So comparing
//! two keys never stops at the end of one of them, a range on one value of a compound key is a
//! plain byte range, and keys of several fields compare field by field.
//!
//! | type | bytes |
//! |---|---|
//! | null (and a missing field) | `0x10` |
//! | number | `0x21` negative, `0x22` zero, `0x23` positive, then exponent and digits (see `number.rs`) |
//! | string | `0x30`, the UTF-8 bytes with `0x00` written `0x00 0xFF`, then `0x00 0x01` |
//! | object | `0x40`, for each field `0x01` + the name as a string + the value, then `0x00` |
//! | array | `0x50`, for each element `0x01` + the element, then `0x00` |
//! | false, true | `0x60`, `0x61` |

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Document;
use crate::value::{lookup_branches, numeric_index};

/// The first byte of every number's key; numbers' keys are all `>= NUMBERS.0` and `< NUMBERS.1`.
pub(crate) const NUMBERS: (u8, u8) = (0x21, 0x24);
/// The bounds of strings' keys, as [`NUMBERS`].
pub(crate) const STRINGS: (u8, u8) = (0x30, 0x31);

/// The order-preserving key of `value`.
pub(crate) fn key(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    push(value, &mut out);
    out
}

/// Appends the order-preserving key of `value` to `out`.
pub(crate) fn push(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(0x10),
        Value::Number(n) => crate::number::order_key(n, out),
        Value::String(s) => push_str(s, out),
        Value::Object(m) => {
            out.push(0x40);
            for (name, v) in m {
                out.push(0x01);
                push_str(name, out);
                push(v, out);
            }
            out.push(0x00);
        }
        Value::Array(items) => {
            out.push(0x50);
            for item in items {
                out.push(0x01);
                push(item, out);
            }
            out.push(0x00);
        }
        Value::Bool(false) => out.push(0x60),
        Value::Bool(true) => out.push(0x61),
    }
}

fn push_str(s: &str, out: &mut Vec<u8>) {
    out.push(STRINGS.0);
    for &b in s.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// The keys of the values a document sorts by on `parts` (see [`crate::Sort`]): each value the
/// path reaches, the elements of an array there instead of the array (an empty array is itself),
/// and `null` for a missing field or when the path reaches nothing. The smallest of them is the
/// document's ascending sort value and the largest its descending one; for a path without a
/// numeric part they are also exactly the values a selector's equality or range on the path
/// looks at (a scalar operand is found among them when the document matches).
pub(crate) fn path_keys(doc: &Document, parts: &[String]) -> BTreeSet<Vec<u8>> {
    let mut out = BTreeSet::new();
    for branch in lookup_branches(doc, parts, true) {
        match branch.value {
            None => {
                out.insert(key(&Value::Null));
            }
            Some(Value::Array(items)) if !branch.dont_iterate && !items.is_empty() => {
                for item in items {
                    out.insert(key(item));
                }
            }
            Some(v) => {
                out.insert(key(v));
            }
        }
    }
    if out.is_empty() {
        out.insert(key(&Value::Null));
    }
    out
}

/// True when selectors on `parts` read the same values as the sort does: no part is numeric
/// (a numeric part after an array is an index for a sort, and also an element search for a
/// selector).
pub(crate) fn selectable(parts: &[String]) -> bool {
    parts.iter().all(|p| numeric_index(p).is_none())
}

/// The most entries one document may give one index (the product of its fields' values): a
/// document with a large array in each of two indexed fields is refused rather than indexed
/// under every pair.
pub const MAX_INDEX_ENTRIES: usize = 1_000;

/// The entries a document gives an index over `fields` (split paths): one row of keys, a key per
/// field, for every combination of the fields' [`path_keys`]. `None` when there would be more
/// than [`MAX_INDEX_ENTRIES`].
pub(crate) fn entries(doc: &Document, fields: &[Vec<String>]) -> Option<Vec<Vec<Vec<u8>>>> {
    let mut rows: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
    for parts in fields {
        let keys = path_keys(doc, parts);
        if rows.len().saturating_mul(keys.len()) > MAX_INDEX_ENTRIES {
            return None;
        }
        let mut next = Vec::with_capacity(rows.len() * keys.len());
        for row in &rows {
            for k in &keys {
                let mut r = row.clone();
                r.push(k.clone());
                next.push(r);
            }
        }
        rows = next;
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::compare_values;

    fn num(text: &str) -> Value {
        Value::Number(serde_json::from_str(text).unwrap_or_else(|_| serde_json::Number::from(0)))
    }

    #[test]
    fn type_brackets_and_values_order() {
        let ordered = [
            json!(null),
            num("-1e400"),
            num("-18446744073709551617"),
            num("-18446744073709551616"),
            num("-2"),
            num("-1.5"),
            num("-1"),
            num("-0.001"),
            num("-1e-300"),
            json!(0),
            num("1e-300"),
            num("0.001"),
            num("0.0012"),
            json!(1),
            num("1.5"),
            json!(2),
            json!(10),
            num("18446744073709551616"),
            num("18446744073709551617"),
            num("1e400"),
            json!(""),
            json!("\u{0}"),
            json!("\u{0}\u{0}"),
            json!("\u{1}"),
            json!("a"),
            json!("a\u{0}"),
            json!("ab"),
            json!("b"),
            json!("é"),
            json!("😀"),
            json!({}),
            json!({"a": 1}),
            json!({"a": 1, "b": 2}),
            json!({"a": 2}),
            json!({"b": 0}),
            json!([]),
            json!([null]),
            json!([1]),
            json!([1, 2]),
            json!([2]),
            json!(false),
            json!(true),
        ];
        for (i, a) in ordered.iter().enumerate() {
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(key(a).cmp(&key(b)), i.cmp(&j), "{a} vs {b}");
                assert_eq!(compare_values(a, b), i.cmp(&j), "{a} vs {b} (reference)");
            }
        }
    }

    #[test]
    fn equal_numbers_share_a_key() {
        for (a, b) in [
            ("1", "1.0"),
            ("1", "10e-1"),
            ("0", "-0.0"),
            ("120", "1.2e2"),
        ] {
            assert_eq!(key(&num(a)), key(&num(b)), "{a} {b}");
        }
    }

    #[test]
    fn arrays_give_their_elements_and_missing_is_null() {
        let d = json!({"a": [3, 1, [2]], "o": [{"b": 1}, {"c": 2}], "e": [], "s": [1, 2]});
        let d = d.as_object().cloned().unwrap_or_default();
        let parts = |p: &str| p.split('.').map(str::to_string).collect::<Vec<_>>();
        let keys = |p: &str| path_keys(&d, &parts(p));
        assert_eq!(
            keys("a"),
            [key(&json!(1)), key(&json!(3)), key(&json!([2]))].into()
        );
        assert_eq!(keys("o.b"), [key(&json!(null)), key(&json!(1))].into());
        assert_eq!(keys("e"), [key(&json!([]))].into());
        assert_eq!(keys("missing"), [key(&json!(null))].into());
        assert_eq!(keys("s.x"), [key(&json!(null))].into());
        let rows = entries(&d, &[parts("a"), parts("s")]).unwrap_or_default();
        assert_eq!(rows.len(), 6);
        let big: Vec<Value> = (0..100).map(|i| json!(i)).collect();
        let d = json!({"x": big, "y": big});
        let d = d.as_object().cloned().unwrap_or_default();
        assert!(entries(&d, &[parts("x"), parts("y")]).is_none());
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            (any::<i32>(), -30i32..30).prop_map(|(m, e)| num(&format!("{m}e{e}"))),
            "[a-c\u{0}\u{1}é😀]{0,4}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[ab]{1,2}", inner), 0..3)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn keys_order_as_the_reference(a in value(), b in value()) {
            let by_key = key(&a).cmp(&key(&b));
            let reference = compare_values(&a, &b);
            prop_assert_eq!(by_key, reference, "{} vs {}", a, b);
            // Prefix-free: a key never begins a different value's key.
            if by_key != Ordering::Equal {
                let (ka, kb) = (key(&a), key(&b));
                prop_assert!(!kb.starts_with(&ka) && !ka.starts_with(&kb));
            }
        }
    }
}
