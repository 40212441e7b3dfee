//! The differential test: random documents (nested objects, arrays, mixed types), random
//! indexes, selectors, sorts, pages, projections, modifiers and removals; every backend must
//! answer exactly as the memory backend without indexes, the reference, does. The memory
//! backend with the random indexes is one of the backends checked, so its index is tested too.

use std::mem::discriminant;

use portico_store::{
    Document, Error, IndexSpec, Projection, Query, Selector, Sort, Store, Update, UpdateOptions,
    document_id,
};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

use crate::common::StoredTexts;
use crate::common::{Fixture, all_docs};

const KEYS: &[&str] = &["a", "b", "c"];
/// Top-level names come up more often than deep paths, so conditions meet values.
const PATHS: &[&str] = &[
    "a", "a", "b", "b", "c", "c", "a.a", "a.b", "b.c", "a.0", "b.1", "a.b.c", "c.0.a", "_id",
];

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1i64..3).prop_map(Value::from),
        select(vec![0.5f64, 1.0, 2.0]).prop_map(Value::from),
        select(vec!["", "a", "ab", "B"]).prop_map(Value::from),
    ]
    .boxed()
}

fn key() -> impl Strategy<Value = String> {
    select(KEYS).prop_map(str::to_string)
}

fn path() -> impl Strategy<Value = String> {
    select(PATHS).prop_map(str::to_string)
}

fn object_of(inner: impl Strategy<Value = Value>, max: usize) -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), inner), 0..max)
        .prop_map(|kvs| Value::Object(kvs.into_iter().collect::<Map<_, _>>()))
}

fn value() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(3, 24, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                object_of(inner, 3),
            ]
        })
        .boxed()
}

fn document() -> BoxedStrategy<Document> {
    prop::collection::vec((key(), value()), 1..4)
        .prop_map(|kvs| kvs.into_iter().collect::<Map<_, _>>())
        .boxed()
}

/// An operator condition on one field (`{"$gt": 1}`, ...), at most one level of nesting.
fn operator() -> BoxedStrategy<Value> {
    let base = || {
        prop_oneof![
            leaf().prop_map(|v| json!({ "$eq": v })),
            (select(vec!["$gt", "$gte", "$lt", "$lte", "$ne"]), leaf())
                .prop_map(|(op, v)| json!({ op: v })),
            (
                select(vec!["$in", "$nin"]),
                prop::collection::vec(leaf(), 0..3)
            )
                .prop_map(|(op, v)| json!({ op: v })),
            (
                select(vec!["$in", "$nin"]),
                prop::collection::vec(value(), 1..3)
            )
                .prop_map(|(op, v)| json!({ op: v })),
            any::<bool>().prop_map(|b| json!({ "$exists": b })),
            (0u64..3).prop_map(|n| json!({ "$size": n })),
            prop::collection::vec(leaf(), 0..3).prop_map(|v| json!({ "$all": v })),
            (select(vec!["^a", "b$", "A", ""]), select(vec!["", "i"]))
                .prop_map(|(r, o)| json!({ "$regex": r, "$options": o })),
        ]
    };
    prop_oneof![
        6 => base(),
        1 => base().prop_map(|op| json!({ "$not": op })),
        1 => base().prop_map(|op| json!({ "$elemMatch": op })),
        1 => (key(), leaf()).prop_map(|(k, v)| json!({ "$elemMatch": { k: v } })),
        1 => (key(), base()).prop_map(|(k, op)| json!({ "$all": [{ "$elemMatch": { k: op } }] })),
        // Two operators on one field.
        1 => (base(), base()).prop_map(|(a, b)| {
            let mut m = a.as_object().cloned().unwrap_or_default();
            for (k, v) in b.as_object().cloned().unwrap_or_default() {
                m.entry(k).or_insert(v);
            }
            Value::Object(m)
        }),
    ]
    .boxed()
}

fn field_condition() -> BoxedStrategy<(String, Value)> {
    (
        path(),
        prop_oneof![3 => leaf(), 1 => value(), 4 => operator()],
    )
        .boxed()
}

fn selector() -> BoxedStrategy<Value> {
    // Mostly one condition or none, so that a good share of the documents match.
    let leaf_selector = prop::collection::vec(field_condition(), 0..2)
        .prop_map(|kvs| Value::Object(kvs.into_iter().collect::<Map<_, _>>()));
    leaf_selector
        .prop_recursive(2, 8, 3, |inner| {
            (
                select(vec!["$and", "$or", "$nor"]),
                prop::collection::vec(inner, 1..3),
            )
                .prop_map(|(op, subs)| json!({ op: subs }))
        })
        .boxed()
}

/// A selector for updates: often everything, so modifiers meet many different documents.
fn broad_selector() -> BoxedStrategy<Value> {
    prop_oneof![Just(json!({})), selector()].boxed()
}

fn sort() -> BoxedStrategy<Option<Sort>> {
    prop::option::of(prop::collection::vec((path(), any::<bool>()), 0..3))
        .prop_map(|keys| {
            let keys = keys?;
            let mut spec = Map::new();
            for (p, asc) in keys {
                spec.entry(p).or_insert(json!(if asc { 1 } else { -1 }));
            }
            // A total tie-break, so every backend must produce one order.
            spec.entry("_id").or_insert(json!(1));
            Sort::parse(&Value::Object(spec)).ok()
        })
        .boxed()
}

fn projection() -> BoxedStrategy<Option<Projection>> {
    prop::option::of((prop::collection::vec(path(), 1..3), any::<bool>()))
        .prop_map(|p| {
            let (paths, include) = p?;
            let spec: Map<String, Value> = paths
                .into_iter()
                .map(|p| (p, json!(if include { 1 } else { 0 })))
                .collect();
            Projection::parse(&Value::Object(spec)).ok()
        })
        .boxed()
}

fn query() -> BoxedStrategy<Option<Query>> {
    (
        selector(),
        sort(),
        0u64..3,
        prop_oneof![1 => Just(None), 1 => Just(Some(0)), 4 => (1u64..6).prop_map(Some)],
        projection(),
    )
        .prop_map(|(selector, sort, skip, limit, projection)| {
            Some(Query {
                selector: Selector::parse(&selector).ok()?,
                sort,
                skip,
                limit,
                projection,
            })
        })
        .boxed()
}

fn update() -> BoxedStrategy<Value> {
    let op = prop_oneof![
        prop::collection::vec((path(), value()), 1..3)
            .prop_map(|f| json!({ "$set": f.into_iter().collect::<Map<_, _>>() })),
        prop::collection::vec(path(), 1..3).prop_map(|f| {
            json!({ "$unset": f.into_iter().map(|p| (p, json!(1))).collect::<Map<_, _>>() })
        }),
        (
            path(),
            prop_oneof![(-2i64..3).prop_map(Value::from), Just(json!(0.5))]
        )
            .prop_map(|(p, n)| json!({ "$inc": { p: n } })),
        (path(), value()).prop_map(|(p, v)| json!({ "$push": { p: v } })),
        (path(), prop::collection::vec(leaf(), 0..3))
            .prop_map(|(p, v)| json!({ "$push": { p: { "$each": v } } })),
        (path(), leaf()).prop_map(|(p, v)| json!({ "$addToSet": { p: v } })),
        (path(), prop_oneof![leaf(), operator()]).prop_map(|(p, v)| json!({ "$pull": { p: v } })),
    ];
    prop_oneof![
        prop::collection::vec(op, 1..3).prop_map(|ops| {
            let mut m = Map::new();
            for o in ops {
                for (k, v) in o.as_object().cloned().unwrap_or_default() {
                    m.entry(k).or_insert(v);
                }
            }
            Value::Object(m)
        }),
        document().prop_map(Value::Object),
    ]
    .boxed()
}

/// A sorted index over one to three random paths, each ascending or descending.
fn sorted_index() -> BoxedStrategy<Option<IndexSpec>> {
    prop::collection::vec((path(), any::<bool>()), 1..4)
        .prop_map(|fields| {
            let mut names: Vec<String> = Vec::new();
            for (p, asc) in fields {
                if !names.iter().any(|n| n.trim_start_matches('-') == p) {
                    names.push(if asc { p } else { format!("-{p}") });
                }
            }
            IndexSpec::new(names).ok()
        })
        .boxed()
}

/// One random scenario: documents, indexes, and operations on them.
#[derive(Debug, Clone)]
struct Scenario {
    docs: Vec<Document>,
    indexes: Vec<String>,
    sorted: Vec<Option<IndexSpec>>,
    index_first: bool,
    queries: Vec<Option<Query>>,
    updates: Vec<(Value, Value, bool, bool)>,
    removal: Value,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(document(), 2..12),
        prop::collection::vec(path(), 0..3),
        prop::collection::vec(sorted_index(), 0..3),
        any::<bool>(),
        prop::collection::vec(query(), 1..4),
        prop::collection::vec(
            (broad_selector(), update(), any::<bool>(), any::<bool>()),
            1..4,
        ),
        selector(),
    )
        .prop_map(
            |(docs, indexes, sorted, index_first, queries, updates, removal)| {
                // Ids in a scrambled order, so natural order and insertion order differ.
                let docs = docs
                    .into_iter()
                    .enumerate()
                    .map(|(i, mut d)| {
                        d.insert("_id".into(), json!(format!("d{:02}", (i * 7) % 12)));
                        d
                    })
                    .collect();
                Scenario {
                    docs,
                    indexes,
                    sorted,
                    index_first,
                    queries,
                    updates,
                    removal,
                }
            },
        )
}

/// What an operation returned, reduced to what every backend must agree on.
fn outcome<T: PartialEq + std::fmt::Debug>(r: Result<T, Error>) -> Result<T, String> {
    r.map_err(|e| format!("{:?}", discriminant(&e)))
}

/// Success, or the kind of error.
fn kind<T>(r: &Result<T, Error>) -> Result<(), String> {
    r.as_ref()
        .map(|_| ())
        .map_err(|e| format!("{:?}", discriminant(e)))
}

async fn run(s: &Scenario, reference: &dyn Store, other: &dyn Store, name: &str) {
    const C: &str = "diff";
    // The reference gets no index: it answers every query by scanning, the plainest meaning.
    let sorted: Vec<&IndexSpec> = s.sorted.iter().flatten().collect();
    for (store, indexes, sorted) in [
        (reference, &[][..], &[][..]),
        (other, &s.indexes[..], &sorted[..]),
    ] {
        if s.index_first {
            for p in indexes {
                store.ensure_index(C, p).await.expect("ensure_index");
            }
            for spec in sorted {
                store
                    .ensure_sorted_index(C, spec)
                    .await
                    .expect("ensure_sorted_index");
            }
        }
        for d in &s.docs {
            // Duplicate ids are refused alike (checked below through the contents).
            let _ = store.insert(C, d.clone()).await;
        }
        if !s.index_first {
            for p in indexes {
                store.ensure_index(C, p).await.expect("ensure_index");
            }
            for spec in sorted {
                store
                    .ensure_sorted_index(C, spec)
                    .await
                    .expect("ensure_sorted_index");
            }
        }
    }
    assert_eq!(
        all_docs(other, C).await,
        all_docs(reference, C).await,
        "{name}: after inserts"
    );
    queries_agree(s, reference, other, name, "after inserts").await;
    writes_agree(s, reference, other, name).await;
    queries_agree(s, reference, other, name, "after writes").await;
}

/// Every query of `s` answers alike on both stores: `find`, `count`, `find_one`, and the list
/// page with its total (a counted `find_page`).
async fn queries_agree(
    s: &Scenario,
    reference: &dyn Store,
    other: &dyn Store,
    name: &str,
    when: &str,
) {
    const C: &str = "diff";
    for q in s.queries.iter().flatten() {
        let want_page = outcome(reference.find(C, q).await);
        let want_total = outcome(reference.count(C, &q.selector).await);
        let got = outcome(other.page_counted(C, q).await).map(|(texts, total)| {
            let docs: Vec<Document> = texts
                .iter()
                .map(|t| serde_json::from_str(t).expect("a JSON object"))
                .collect();
            (docs, total)
        });
        match (&want_page, &want_total, &got) {
            (Ok(page), Ok(total), Ok((got_page, got_total))) => {
                assert_eq!(got_page, page, "{name} {when}: list page {q:?}");
                assert_eq!(got_total, total, "{name} {when}: list total {q:?}");
            }
            (Err(_), _, got) | (_, Err(_), got) => {
                assert!(got.is_err(), "{name} {when}: list {q:?} should fail")
            }
            (Ok(_), Ok(_), Err(e)) => panic!("{name} {when}: list {q:?} failed: {e}"),
        }
    }
}

/// The updates and the removal of `s`, on both stores, with the same outcomes and contents.
async fn writes_agree(s: &Scenario, reference: &dyn Store, other: &dyn Store, name: &str) {
    const C: &str = "diff";
    for q in s.queries.iter().flatten() {
        let want = outcome(reference.find(C, q).await);
        let got = outcome(other.find(C, q).await);
        assert_eq!(got, want, "{name}: find {q:?}");
        let want = outcome(reference.count(C, &q.selector).await);
        assert_eq!(
            outcome(other.count(C, &q.selector).await),
            want,
            "{name}: count {q:?}"
        );
        let want = outcome(reference.find_one(C, &q.selector).await);
        let got = outcome(other.find_one(C, &q.selector).await);
        assert_eq!(got, want, "{name}: find_one {q:?}");
    }
    for (selector, update, multi, upsert) in &s.updates {
        let (Ok(selector), Ok(update)) = (Selector::parse(selector), Update::parse(update)) else {
            continue;
        };
        let options = UpdateOptions::new(*multi, *upsert);
        let want = reference.update(C, &selector, &update, options).await;
        let got = other.update(C, &selector, &update, options).await;
        match (&want, &got) {
            (Ok(w), Ok(g)) => {
                assert_eq!(
                    (w.matched, w.modified),
                    (g.matched, g.modified),
                    "{name}: update {update:?}"
                );
                assert_eq!(
                    w.upserted_id.is_some(),
                    g.upserted_id.is_some(),
                    "{name}: upsert"
                );
                if let (Some(wid), Some(gid)) = (&w.upserted_id, &g.upserted_id) {
                    // New ids are random: compare the inserted documents without them, then
                    // take them out so the stores hold the same documents again.
                    let strip = |d: Option<Document>| {
                        d.map(|mut d| {
                            d.remove("_id");
                            d
                        })
                    };
                    let wd = strip(reference.get(C, wid).await.expect("get"));
                    let gd = strip(other.get(C, gid).await.expect("get"));
                    assert!(wd.is_some(), "{name}: upserted document exists");
                    assert_eq!(gd, wd, "{name}: upserted document");
                    reference
                        .remove(C, &Selector::by_id(wid))
                        .await
                        .expect("remove");
                    other
                        .remove(C, &Selector::by_id(gid))
                        .await
                        .expect("remove");
                }
            }
            (w, g) => assert_eq!(
                kind(g),
                kind(w),
                "{name}: update {update:?} on {selector:?}"
            ),
        }
        assert_eq!(
            all_docs(other, C).await,
            all_docs(reference, C).await,
            "{name}: after update {update:?}"
        );
    }
    if let Ok(removal) = Selector::parse(&s.removal) {
        let want = outcome(reference.remove(C, &removal).await);
        assert_eq!(
            outcome(other.remove(C, &removal).await),
            want,
            "{name}: remove {removal:?}"
        );
    }
    let want = all_docs(reference, C).await;
    assert_eq!(all_docs(other, C).await, want, "{name}: final contents");
    for d in &want {
        let id = document_id(d).unwrap_or_default();
        assert_eq!(
            other.get(C, id).await.expect("get").as_ref(),
            Some(d),
            "{name}: get {id}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_backend_answers_as_memory_does(s in scenario()) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let reference: Fixture = crate::common::memory().await;
            let backends: Vec<(&str, Fixture)> = vec![
                ("memory with indexes", crate::common::memory().await),
                ("sqlite", crate::common::sqlite().await),
                #[cfg(feature = "postgres")]
                ("postgres", crate::common::postgres_shared("diff").await),
            ];
            for (name, fixture) in &backends {
                run(&s, reference.store.as_ref(), fixture.store.as_ref(), name).await;
                // The reference store was changed by the run: start the next backend afresh.
                reference.store.drop_collection("diff").await.expect("drop");
            }
        });
    }
}

// Properties of the pure parts every backend relies on, over the same random values.
proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `compare_values` is a total order: antisymmetric, transitive, and `Equal` only for
    /// values a selector treats as equal.
    #[test]
    fn compare_values_is_a_total_order(a in value(), b in value(), c in value()) {
        use std::cmp::Ordering::*;
        use portico_store::compare_values as cmp;
        prop_assert_eq!(cmp(&a, &b), cmp(&b, &a).reverse());
        prop_assert_eq!(cmp(&a, &a), Equal);
        if cmp(&a, &b) != Greater && cmp(&b, &c) != Greater {
            prop_assert_ne!(cmp(&a, &c), Greater);
        }
        let mut doc = Map::new();
        doc.insert("f".into(), a.clone());
        let equal = Selector::parse(&json!({ "f": { "$eq": b.clone() } })).expect("selector");
        if cmp(&a, &b) == Equal {
            prop_assert!(equal.matches(&doc), "{} should equal {}", a, b);
        }
    }

    /// An update either applies, keeping `_id`, or fails and leaves the document as it was.
    #[test]
    fn updates_are_all_or_nothing(d in document(), u in update()) {
        let Ok(update) = Update::parse(&u) else { return Ok(()); };
        let mut d = d;
        d.insert("_id".into(), json!("the-id"));
        let before = d.clone();
        match update.apply(&mut d) {
            Ok(()) => prop_assert_eq!(document_id(&d), Some("the-id")),
            Err(e) => {
                prop_assert!(matches!(e, Error::InvalidModifier(_)), "{e:?}");
                prop_assert_eq!(d, before);
            }
        }
    }

    /// A selector and its `$nor` negation split the documents between them, and `equalities()`
    /// only names conditions every match satisfies.
    #[test]
    fn selectors_split_documents_and_equalities_hold(d in document(), s in selector()) {
        let Ok(sel) = Selector::parse(&s) else { return Ok(()); };
        let negated = Selector::parse(&json!({ "$nor": [s.clone()] })).expect("negation");
        prop_assert_ne!(sel.matches(&d), negated.matches(&d));
        if sel.matches(&d) {
            for (path, value) in sel.equalities() {
                let found = portico_store::lookup_path(&d, path);
                let holds = found.iter().any(|v| {
                    portico_store::compare_values(v, value).is_eq()
                        || v.as_array().is_some_and(|items| {
                            items.iter().any(|e| portico_store::compare_values(e, value).is_eq())
                        })
                });
                prop_assert!(holds, "{} == {} does not hold in {:?}", path, value, d);
            }
        }
    }

    /// Inclusion and exclusion of the same top-level fields split a document's fields.
    #[test]
    fn inclusion_and_exclusion_are_complements(d in document(), keys in prop::collection::btree_set(key(), 1..3)) {
        let spec = |on: i32| {
            let m: Map<String, Value> = keys.iter().map(|k| (k.clone(), json!(on))).collect();
            Projection::parse(&Value::Object(m)).expect("projection")
        };
        let included = spec(1).apply(&d);
        let excluded = spec(0).apply(&d);
        for (k, v) in &d {
            let inside = included.get(k) == Some(v);
            let outside = excluded.get(k) == Some(v);
            prop_assert!(inside || outside, "{k} is lost");
            prop_assert!(!(inside && outside) || k == "_id", "{k} is in both");
        }
        prop_assert_eq!(included.len() + excluded.len(), d.len());
    }
}
