//! Index plans: which sorted index (see [`crate::IndexSpec`]) answers a query, over which key
//! range, and whether its order is the query's order and its entries exactly the matches.
//!
//! A plan only narrows and orders the candidates; a backend still checks every candidate with
//! the reference matcher unless the plan is `covered` (then the range holds exactly the matching
//! documents, and a count of entries is the count of matches). Keys are the order-preserving
//! keys of [`crate::order_key`], so a range of keys is a range of the store's own order.
//!
//! What an index can translate, on a path without a numeric part: equality with a string,
//! number or boolean (a document matches when one of its values at the path is that value,
//! exactly when it has that entry), `$in` a list of those, and `$gt $gte $lt $lte` on a number
//! or string (within its type bracket, as the matcher compares). Fields are used from the
//! first: equalities on a prefix of the index's fields, then `$in` or a range on the next one.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use crate::order_key::{self, NUMBERS, STRINGS};
use crate::selector::{CmpOp, Cond};
use crate::{Document, IndexSpec, Selector, Sort};

/// A sorted index as a backend knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SortedIndex {
    /// What it covers.
    pub(crate) spec: IndexSpec,
    /// Its fields' paths, split.
    pub(crate) parts: Vec<Vec<String>>,
    /// Some document has given it more than one entry (an array at an indexed path), so one
    /// document may appear several times in a range.
    pub(crate) multikey: bool,
    /// The backend's name for its table (quoted).
    pub(crate) table: String,
}

/// One end of a key range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bound {
    /// Keys equal to this one are inside.
    Incl(Vec<u8>),
    /// Keys equal to this one are outside.
    Excl(Vec<u8>),
}

impl Bound {
    /// The SQL comparison of this bound as the lower (`lower`) or upper end of a range, and its
    /// key: `>=`/`>` or `<=`/`<`.
    pub(crate) fn sql(&self, lower: bool) -> (&'static str, &[u8]) {
        match (self, lower) {
            (Bound::Incl(k), true) => (">=", k),
            (Bound::Excl(k), true) => (">", k),
            (Bound::Incl(k), false) => ("<=", k),
            (Bound::Excl(k), false) => ("<", k),
        }
    }
}

/// One condition of [`where_clause`] on a key column, for a backend to write with its own
/// placeholders.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) enum KeyTerm<'a> {
    /// Equal to this key.
    Eq(&'a [u8]),
    /// Equal to one of these keys.
    In(&'a [Vec<u8>]),
    /// Compared (`>=`, `>`, `<=`, `<`) with this key.
    Cmp(&'static str, &'a [u8]),
}

/// The WHERE clause (with its leading space, or empty) of `plan` over the index table aliased
/// `x`: each condition written by the backend's `write(column, term)`, which also records the
/// term's parameters. Order keys compare bytewise (`memcmp`) in both backends, the keys' order.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn where_clause(
    plan: &IndexPlan,
    mut write: impl FnMut(&str, KeyTerm<'_>) -> String,
) -> String {
    let mut terms = Vec::new();
    for (i, key) in plan.eq.iter().enumerate() {
        terms.push(write(&format!("x.k{i}"), KeyTerm::Eq(key)));
    }
    let column = format!("x.k{}", plan.eq.len());
    match &plan.last {
        Last::Nothing => {}
        Last::In(keys) => terms.push(write(&column, KeyTerm::In(keys))),
        Last::Range { lo, hi } => {
            for (bound, lower) in [(lo, true), (hi, false)] {
                let (op, key) = bound.sql(lower);
                terms.push(write(&column, KeyTerm::Cmp(op, key)));
            }
        }
    }
    if terms.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", terms.join(" AND "))
    }
}

/// The key columns of `spec`'s table in its directions (`k0, k1 DESC`), each prefixed by
/// `alias` (`x.`): its primary key or btree, and the ORDER BY reading it in order.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn key_columns(spec: &IndexSpec, alias: &str) -> String {
    let cols: Vec<String> = spec
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| format!("{alias}k{i}{}", if f.ascending { "" } else { " DESC" }))
        .collect();
    cols.join(", ")
}

/// The ORDER BY of rows of `index` (aliased `x`) read in `order`: the index's columns in its
/// directions then `id`, or `id` alone. Shared by the SQL backends.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn order_by(index: &SortedIndex, order: Order) -> String {
    match order {
        Order::Id => "x.id".to_string(),
        Order::Index => format!("{}, x.id", key_columns(&index.spec, "x.")),
    }
}

/// What a read through a sorted index gives: documents, or their stored texts (a query without
/// projection whose caller sends the text as it is).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
#[derive(Debug)]
pub(crate) enum Rows {
    /// Decoded (and projected) documents.
    Docs(Vec<Document>),
    /// The stored JSON texts.
    Texts(Vec<String>),
}

#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
impl Rows {
    /// The rows as JSON texts (documents encoded).
    pub(crate) fn into_texts(self) -> crate::Result<Vec<String>> {
        match self {
            Rows::Texts(texts) => Ok(texts),
            Rows::Docs(docs) => crate::encode_all(&docs),
        }
    }

    /// The rows as documents (texts decoded).
    pub(crate) fn into_docs(self) -> crate::Result<Vec<Document>> {
        match self {
            Rows::Docs(docs) => Ok(docs),
            Rows::Texts(texts) => texts
                .iter()
                .map(|text| {
                    serde_json::from_str(text).map_err(|e| {
                        crate::Error::Backend(format!("a stored document does not decode: {e}"))
                    })
                })
                .collect(),
        }
    }
}

/// A read through a sorted index: its rows and the total when asked for.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Read {
    /// The page.
    pub(crate) rows: Rows,
    /// The number of matches in all, when asked.
    pub(crate) total: Option<u64>,
}

/// The condition on the field after the equality prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Last {
    /// None.
    Nothing,
    /// The key is one of these (sorted, distinct).
    In(Vec<Vec<u8>>),
    /// The key is within these bounds (both always set: a type bracket's ends at most).
    Range { lo: Bound, hi: Bound },
}

/// How the plan's rows come out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// In the index's order (its fields, then `_id`), which is the query's order: a backend
    /// reads them in it and stops after `skip + limit` matches (multikey: distinct documents).
    Index,
    /// In `_id` order, as the backend sorts the candidates' ids (the query's sort, if any, is
    /// applied to the matches by the caller).
    Id,
}

/// A plan: the index (by position in the list given), the equality keys of its first fields,
/// the condition on the next one, the order, and whether it is exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexPlan {
    /// Which index.
    pub(crate) index: usize,
    /// The keys its first `eq.len()` fields must equal.
    pub(crate) eq: Vec<Vec<u8>>,
    /// The condition on field `eq.len()`.
    pub(crate) last: Last,
    /// The order rows are read in.
    pub(crate) order: Order,
    /// The rows (distinct documents) are exactly the matching documents: no candidate needs
    /// the matcher, and counting entries counts matches.
    pub(crate) covered: bool,
}

/// The most values of a `$in` an index reads one by one; a longer list is left to the matcher.
const MAX_IN: usize = 256;

/// The type bracket (first byte bounds) a range term stays within, when it is one.
type Bracket = Option<(u8, u8)>;

/// What one condition on an index field gives a plan.
enum Term {
    Eq(Vec<u8>),
    In(Vec<Vec<u8>>),
    Lower(Bound),
    Upper(Bound),
}

fn scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// The bracket (first byte bounds) of a range operand's type.
fn bracket(v: &Value) -> Option<(u8, u8)> {
    match v {
        Value::Number(_) => Some(NUMBERS),
        Value::String(_) => Some(STRINGS),
        _ => None,
    }
}

fn term(cond: &Cond) -> Option<(Term, Option<(u8, u8)>)> {
    match cond {
        Cond::Eq(v) if scalar(v) => Some((Term::Eq(order_key::key(v)), None)),
        Cond::In(list) if !list.is_empty() && list.len() <= MAX_IN && list.iter().all(scalar) => {
            let mut keys: Vec<Vec<u8>> = list.iter().map(order_key::key).collect();
            keys.sort();
            keys.dedup();
            Some((Term::In(keys), None))
        }
        Cond::Cmp(op, v) => {
            let b = bracket(v)?;
            let k = order_key::key(v);
            let t = match op {
                CmpOp::Gt => Term::Lower(Bound::Excl(k)),
                CmpOp::Gte => Term::Lower(Bound::Incl(k)),
                CmpOp::Lt => Term::Upper(Bound::Excl(k)),
                CmpOp::Lte => Term::Upper(Bound::Incl(k)),
            };
            Some((t, Some(b)))
        }
        _ => None,
    }
}

/// The best plan for `selector` and `sort` among `indexes`, or `None` when no index helps
/// (nothing to narrow by and no sort it serves).
pub(crate) fn choose(
    selector: &Selector,
    sort: Option<&Sort>,
    indexes: &[SortedIndex],
) -> Option<IndexPlan> {
    if indexes.is_empty() || (selector.is_all() && sort.is_none()) {
        return None;
    }
    let (conds, other) = selector.conjunction();
    let mut best: Option<(u32, IndexPlan)> = None;
    for (i, index) in indexes.iter().enumerate() {
        if let Some((score, plan)) = plan_one(i, index, &conds, other, sort)
            && best.as_ref().is_none_or(|(s, _)| score > *s)
        {
            best = Some((score, plan));
        }
    }
    best.map(|(_, plan)| plan)
}

fn plan_one(
    position: usize,
    index: &SortedIndex,
    conds: &[(&str, &[String], &Cond)],
    other: bool,
    sort: Option<&Sort>,
) -> Option<(u32, IndexPlan)> {
    let mut used: HashSet<usize> = HashSet::new();
    // The translatable conditions on field `f`, by their position in `conds`.
    let on_field = |f: usize| -> Vec<(usize, Term, Bracket)> {
        let field = &index.spec.fields[f];
        if !order_key::selectable(&index.parts[f]) {
            return Vec::new();
        }
        conds
            .iter()
            .enumerate()
            .filter(|(_, (path, _, _))| *path == field.path)
            .filter_map(|(n, (_, _, c))| term(c).map(|(t, b)| (n, t, b)))
            .collect()
    };
    let mut eq = Vec::new();
    let mut last = Last::Nothing;
    let fields = index.spec.fields.len();
    while eq.len() < fields {
        let terms = on_field(eq.len());
        if let Some((n, Term::Eq(k), _)) = terms.iter().find(|(_, t, _)| matches!(t, Term::Eq(_))) {
            used.insert(*n);
            eq.push(k.clone());
            continue;
        }
        if let Some((n, Term::In(keys), _)) =
            terms.iter().find(|(_, t, _)| matches!(t, Term::In(_)))
        {
            used.insert(*n);
            last = Last::In(keys.clone());
            break;
        }
        let lower = terms.iter().find(|(_, t, _)| matches!(t, Term::Lower(_)));
        let upper = terms.iter().find(|(_, t, b)| {
            matches!(t, Term::Upper(_)) && lower.is_none_or(|(_, _, lb)| lb == b)
        });
        if lower.is_some() || upper.is_some() {
            let (bracket, lo_n, lo) = match lower {
                Some((n, Term::Lower(b), Some(br))) => (*br, Some(*n), b.clone()),
                _ => match upper {
                    Some((_, _, Some(br))) => (*br, None, Bound::Incl(vec![br.0])),
                    _ => return None,
                },
            };
            // With several values per document, a document may hold a value above the lower
            // bound and another below the upper one without any in between, and it matches:
            // the range then keeps only the lower bound (every match has a value there), the
            // upper one is left to the matcher.
            let (hi_n, hi) = match upper {
                Some((n, Term::Upper(b), _)) if !(index.multikey && lo_n.is_some()) => {
                    (Some(*n), b.clone())
                }
                _ => (None, Bound::Excl(vec![bracket.1])),
            };
            used.extend(lo_n);
            used.extend(hi_n);
            last = Last::Range { lo, hi };
        }
        break;
    }
    let pinned = eq.len();
    let order = served_order(index, pinned, &last, sort);
    if pinned == 0 && last == Last::Nothing && order.is_none() {
        return None;
    }
    let covered = !other && used.len() == conds.len();
    let order = order.unwrap_or(Order::Id);
    let mut score = 10 * pinned as u32;
    score += match last {
        Last::In(_) => 6,
        Last::Range { .. } => 3,
        Last::Nothing => 0,
    };
    if order == Order::Index && sort.is_some() {
        score += 5;
    }
    if covered {
        score += 1;
    }
    Some((
        score,
        IndexPlan {
            index: position,
            eq,
            last,
            order,
            covered,
        },
    ))
}

/// `Some(Order::Index)` when reading the index's rows in order (after `pinned` equalities and
/// `last`) gives the query's order; `None` otherwise.
///
/// Without a sort the query's order is `_id` order, which the index gives only when every field
/// is pinned by an equality. With one, the sort's keys (leaving out pinned fields, whose values
/// are then one per document, unless documents may hold several) must be the remaining fields
/// of the index, in its directions, all of them: a further index field would break ties that
/// the query breaks by `_id`. The first row of a document in index order is then its sort value
/// (an ascending key reads the smallest of a document's values first, a descending key the
/// largest), so documents in order of their first row are in the sort's order.
fn served_order(
    index: &SortedIndex,
    pinned: usize,
    last: &Last,
    sort: Option<&Sort>,
) -> Option<Order> {
    let fields = &index.spec.fields;
    let Some(sort) = sort else {
        return (pinned == fields.len()).then_some(Order::Index);
    };
    // A document's sort value is the smallest (largest) of all its values at the path, while a
    // `$in` or a range reads only some of its entries: the first one read may be another.
    if matches!(last, Last::In(_)) || (index.multikey && matches!(last, Last::Range { .. })) {
        return None;
    }
    let mut all = sort.keys();
    // A last key of `_id` ascending is the tie-break every sort has anyway.
    if let Some((last_key, rest)) = all.split_last()
        && last_key.0 == "_id"
        && last_key.1
    {
        all = rest;
    }
    let keys: Vec<&(String, bool)> = all
        .iter()
        .filter(|(path, _)| index.multikey || !fields[..pinned].iter().any(|f| &f.path == path))
        .collect();
    let rest = &fields[pinned..];
    let same = keys.len() == rest.len()
        && keys
            .iter()
            .zip(rest)
            .all(|((path, ascending), f)| *path == f.path && *ascending == f.ascending);
    same.then_some(Order::Index)
}

/// The most-used shape of a query an index would serve: equality fields first, then the sort's
/// keys, then a range field; for the slow-query log's suggestion.
// Not called yet outside the tests (the slow-query log is to use it).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn suggestion(selector: &Selector, sort: Option<&Sort>) -> Option<IndexSpec> {
    let (conds, _) = selector.conjunction();
    let mut fields: Vec<String> = Vec::new();
    let push = |name: String, fields: &mut Vec<String>| {
        let path = name.trim_start_matches('-');
        if !fields.iter().any(|f| f.trim_start_matches('-') == path) {
            fields.push(name);
        }
    };
    for (path, parts, cond) in &conds {
        if *path != "_id"
            && order_key::selectable(parts)
            && matches!(term(cond), Some((Term::Eq(_), _)))
        {
            push(path.to_string(), &mut fields);
        }
    }
    if let Some(sort) = sort {
        for (path, ascending) in sort.keys() {
            let name = if *ascending {
                path.clone()
            } else {
                format!("-{path}")
            };
            push(name, &mut fields);
        }
    } else {
        for (path, parts, cond) in &conds {
            if *path != "_id"
                && order_key::selectable(parts)
                && matches!(
                    term(cond),
                    Some((Term::In(_) | Term::Lower(_) | Term::Upper(_), _))
                )
            {
                push(path.to_string(), &mut fields);
                break;
            }
        }
    }
    fields.truncate(crate::index_spec::MAX_INDEX_FIELDS);
    IndexSpec::new(fields).ok()
}

/// True when `index` keeps counts of its key prefixes (see `sqlite/prefixes.rs`): it has two
/// fields or more.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn keeps_prefix_counts(index: &SortedIndex) -> bool {
    index.spec.fields.len() >= 2
}

/// A prefix of keys as one byte string: its length, then each key's length (4 bytes, big
/// endian) and bytes. Prefixes of different lengths never share one.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn encode_prefix(keys: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + keys.iter().map(|k| k.len() + 4).sum::<usize>());
    out.push(u8::try_from(keys.len()).unwrap_or(u8::MAX));
    for key in keys {
        out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(key);
    }
    out
}

/// How one document's move from the entries `old` to `new` in `index` changes its prefix
/// counts: each encoded prefix it leaves (`-1`) or joins (`+1`), once per distinct prefix
/// however many entries share it. Nothing for an index that keeps no counts.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn prefix_changes(
    index: &SortedIndex,
    old: &BTreeSet<Vec<Vec<u8>>>,
    new: &BTreeSet<Vec<Vec<u8>>>,
) -> Vec<(Vec<u8>, i64)> {
    let mut changes = Vec::new();
    if !keeps_prefix_counts(index) {
        return changes;
    }
    for len in 1..index.spec.fields.len() {
        let prefixes = |rows: &BTreeSet<Vec<Vec<u8>>>| -> BTreeSet<Vec<u8>> {
            rows.iter().map(|row| encode_prefix(&row[..len])).collect()
        };
        let (before, after) = (prefixes(old), prefixes(new));
        changes.extend(before.difference(&after).map(|p| (p.clone(), -1)));
        changes.extend(after.difference(&before).map(|p| (p.clone(), 1)));
    }
    changes
}

/// The encoded prefix `plan` pins when it pins a proper prefix of `index` by equality and
/// nothing else, and holds exactly the matches: its total is then that prefix's kept count.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn pinned_prefix(index: &SortedIndex, plan: &IndexPlan) -> Option<Vec<u8>> {
    let pins = keeps_prefix_counts(index)
        && plan.covered
        && matches!(plan.last, Last::Nothing)
        && !plan.eq.is_empty()
        && plan.eq.len() < index.spec.fields.len();
    pins.then(|| encode_prefix(&plan.eq))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn index(spec: serde_json::Value, multikey: bool) -> SortedIndex {
        let spec = IndexSpec::parse(&spec).unwrap_or_else(|e| panic!("{e}"));
        SortedIndex {
            parts: spec.split_paths(),
            spec,
            multikey,
            table: String::new(),
        }
    }

    fn plan(sel: serde_json::Value, sort: &str, indexes: &[SortedIndex]) -> Option<IndexPlan> {
        let selector = Selector::parse(&sel).unwrap_or_default();
        let sort = (!sort.is_empty()).then(|| Sort::parse_list(sort).unwrap_or_default());
        choose(&selector, sort.as_ref(), indexes)
    }

    #[test]
    fn equality_prefix_then_sort() {
        let ix = [index(json!(["city", "-score"]), false)];
        let p = plan(json!({"city": "Oslo"}), "-score", &ix).unwrap_or_else(|| panic!("plan"));
        assert_eq!(p.eq, vec![order_key::key(&json!("Oslo"))]);
        assert_eq!(p.order, Order::Index);
        assert!(p.covered);
        // A sort the index does not end with: candidates narrowed, order left to the caller.
        let p = plan(json!({"city": "Oslo"}), "score", &ix).unwrap_or_else(|| panic!("plan"));
        assert_eq!(p.order, Order::Id);
        // A sort on a field the index does not start with and no equality: no plan.
        assert!(plan(json!({}), "-score", &ix).is_none());
        assert!(plan(json!({"score": 3}), "", &ix).is_none());
    }

    #[test]
    fn sort_alone_and_ranges() {
        let ix = [index(json!("-score"), false)];
        let p = plan(json!({}), "-score", &ix).unwrap_or_else(|| panic!("plan"));
        assert_eq!((p.order, p.covered), (Order::Index, true));
        let p = plan(json!({"score": {"$gte": 5, "$lt": 9}}), "-score", &ix)
            .unwrap_or_else(|| panic!("plan"));
        assert!(matches!(p.last, Last::Range { .. }) && p.covered);
        // Two bounds on a multikey field are not exact, and the range keeps only the lower one
        // (a document with 3 and 12 matches, with no value in between).
        let ix = [index(json!("-score"), true)];
        let p = plan(json!({"score": {"$gte": 5, "$lt": 9}}), "-score", &ix)
            .unwrap_or_else(|| panic!("plan"));
        assert!(!p.covered);
        // Nor is a multikey range read in the sort's order (a document with 3 and 7 sorts by
        // 3, and its first entry from 5 is 7).
        assert_eq!(p.order, Order::Id);
        let (lo, hi) = (order_key::key(&json!(5)), vec![NUMBERS.1]);
        assert_eq!(
            p.last,
            Last::Range {
                lo: Bound::Incl(lo),
                hi: Bound::Excl(hi)
            }
        );
        // Conditions the index cannot translate leave the plan uncovered.
        let p = plan(json!({"score": {"$gte": 5}, "x": 1}), "-score", &ix)
            .unwrap_or_else(|| panic!("plan"));
        assert!(!p.covered);
        let p =
            plan(json!({"$or": [{"a": 1}], "score": 1}), "", &ix).unwrap_or_else(|| panic!("plan"));
        assert!(!p.covered);
    }

    #[test]
    fn suggestions_put_equalities_first() {
        let sel = Selector::parse(&json!({"n": {"$gt": 1}, "city": "Oslo"})).unwrap_or_default();
        let sort = Sort::parse_list("-createdAt").ok();
        let s = suggestion(&sel, sort.as_ref()).map(|s| s.to_string());
        assert_eq!(s.as_deref(), Some("city,-createdAt"));
        let s = suggestion(&sel, None).map(|s| s.to_string());
        assert_eq!(s.as_deref(), Some("city,n"));
    }
}
