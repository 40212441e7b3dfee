//! The slow-scan log: a query that decides more than [`slow_scan_docs`] documents with the
//! matcher (no index narrowed or ordered it enough) is logged once per shape, with the
//! `indexes = [...]` line that would serve it, and counted ([`slow_scans`], for `/metrics`).

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Query, Selector, Sort};

/// The default of [`set_slow_scan_docs`]: a query reading more documents than this is slow.
pub const DEFAULT_SLOW_SCAN_DOCS: u64 = 1_000;

static THRESHOLD: AtomicU64 = AtomicU64::new(DEFAULT_SLOW_SCAN_DOCS);
static SLOW: AtomicU64 = AtomicU64::new(0);
/// Shapes logged already; at most [`MAX_SHAPES`] are remembered (then each is counted only).
static LOGGED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
const MAX_SHAPES: usize = 1_000;

/// Sets how many documents a query may read and decide one by one before it counts as slow
/// (process-wide; 0 turns the log and the count off).
pub fn set_slow_scan_docs(n: u64) {
    THRESHOLD.store(n, Ordering::Relaxed);
}

/// How many documents a query may read before it counts as slow ([`set_slow_scan_docs`]).
pub fn slow_scan_docs() -> u64 {
    THRESHOLD.load(Ordering::Relaxed)
}

/// How many queries read more than [`slow_scan_docs`] documents since the process started.
pub fn slow_scans() -> u64 {
    SLOW.load(Ordering::Relaxed)
}

/// A query's shape: its conditions' paths and operators, and its sort (values left out, so
/// one shape is logged once whatever the values).
fn shape(selector: &Selector, sort: Option<&Sort>) -> String {
    let (conds, other) = selector.conjunction();
    let mut parts: Vec<String> = conds
        .iter()
        .map(|(path, _, cond)| format!("{path}:{}", cond.operator()))
        .collect();
    parts.sort();
    parts.dedup();
    if other {
        parts.push("$or/$nor".to_string());
    }
    let sort = sort.map_or(String::new(), |s| {
        let keys: Vec<String> = s
            .keys()
            .iter()
            .map(|(p, asc)| if *asc { p.clone() } else { format!("-{p}") })
            .collect();
        format!(" sort {}", keys.join(","))
    });
    format!("{{{}}}{sort}", parts.join(", "))
}

/// Notes that answering `selector` (sorted by `sort`) on `collection` read `scanned` documents.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn note(collection: &str, selector: &Selector, sort: Option<&Sort>, scanned: u64) {
    let threshold = slow_scan_docs();
    if threshold == 0 || scanned <= threshold {
        return;
    }
    SLOW.fetch_add(1, Ordering::Relaxed);
    let shape = shape(selector, sort);
    let key = format!("{collection}\u{0}{shape}");
    {
        let mut logged = LOGGED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = logged.get_or_insert_with(HashSet::new);
        if set.contains(&key) || set.len() >= MAX_SHAPES {
            return;
        }
        set.insert(key);
    }
    let suggestion = crate::index_plan::suggestion(selector, sort).map_or_else(
        || "no index serves it (its conditions are not equalities, $in or ranges on fields, or it sorts on nothing)".to_string(),
        |spec| format!("indexes = [{}] on the collection would serve it", spec.to_value()),
    );
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    tracing::warn!(
        collection,
        shape = shape.as_str(),
        scanned,
        slow_scan_docs = threshold,
        "slow query: it read {scanned} documents of {collection} one by one; {suggestion} \
         (logged once per shape)"
    );
    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    let _ = (suggestion, shape);
}

/// [`note`] for a [`Query`].
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn note_query(collection: &str, query: &Query, scanned: u64) {
    note(collection, &query.selector, query.sort.as_ref(), scanned);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shapes_leave_values_out() {
        let a = Selector::parse(&json!({"city": "Oslo", "n": {"$gte": 3}})).unwrap_or_default();
        let b = Selector::parse(&json!({"n": {"$gte": 9}, "city": "Bergen"})).unwrap_or_default();
        let sort = Sort::parse_list("-createdAt").ok();
        assert_eq!(shape(&a, sort.as_ref()), shape(&b, sort.as_ref()));
        assert_eq!(
            shape(&a, sort.as_ref()),
            "{city:$eq, n:$gte} sort -createdAt"
        );
    }
}
