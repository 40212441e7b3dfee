//! The conformance suite: every case below runs against every backend, through the [`Store`]
//! trait only. `conformance_suite!` turns the list of cases into one `#[tokio::test]` per case
//! and backend.

use std::sync::Arc;

use portico_store::{
    Document, Error, PageRead, Projection, Query, Selector, Sort, Store, Update, UpdateOptions,
    UpdateResult, document_id,
};
use serde_json::{Value, json};

use crate::common::StoredTexts;
use crate::common::{all_docs, doc, ids, sel};

/// Runs every case against the backend made by `$open` (an async expression giving a
/// [`crate::common::Fixture`]), in a module named `$backend`.
macro_rules! conformance_suite {
    ($backend:ident, $open:expr) => {
        conformance_suite!(@cases $backend, $open, [
            insert_generates_ids_and_get_finds_them,
            duplicate_ids_are_refused_and_nothing_is_overwritten,
            invalid_documents_are_refused,
            insert_many_returns_ids_in_order,
            insert_many_is_all_or_nothing,
            find_page_is_find_as_stored,
            get_stored_is_get_as_stored,
            a_counted_page_is_the_page_and_its_count,
            insert_stream_is_all_or_nothing,
            selector_operators,
            selector_operators_through_indexes,
            invalid_selectors_name_the_problem,
            find_sorts_skips_limits_and_projects,
            sorted_windows_past_the_bound_are_refused,
            find_one_and_count,
            whole_collection_count_follows_every_write,
            modifiers,
            update_one_or_many,
            upsert_inserts_from_selector_and_update,
            replacement_keeps_the_id,
            updates_given_by_value_are_updates,
            a_failing_modifier_changes_no_document,
            invalid_modifiers_name_the_problem,
            remove_removes_only_matches,
            index_lookups_through_arrays_follow_writes,
            collections_are_listed_and_dropped,
            missing_collections_find_nothing,
            concurrent_updates_lose_nothing,
            conditional_writes_follow_the_etag,
            numbers_are_kept_and_compared_exactly,
            numbers_are_compared_exactly_through_indexes,
            size_and_id_limits_hold_on_every_write,
            unique_indexes_refuse_shared_values,
            unique_indexes_through_arrays_and_nulls,
            unique_indexes_on_updates_and_batches,
            making_an_index_unique,
            concurrent_inserts_of_one_unique_value,
            batch_applies_in_order_and_returns_documents,
            batch_whose_third_write_fails_writes_nothing,
            batch_is_atomic_for_a_concurrent_reader,
            aggregates_group_count_and_compute,
            search_ranks_whole_words_and_follows_writes,
            id_lists_find_by_primary_key,
        ]);
    };
    (@cases $backend:ident, $open:expr, [$($case:ident),* $(,)?]) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let fixture = $open.await;
                    super::$case(fixture.store.clone()).await;
                }
            )*
        }
    };
}

#[cfg(feature = "memory")]
conformance_suite!(memory, crate::common::memory());
#[cfg(feature = "sqlite")]
conformance_suite!(sqlite, crate::common::sqlite());
#[cfg(feature = "postgres")]
conformance_suite!(postgres, crate::common::postgres());

type S = Arc<dyn Store>;

async fn insert(store: &S, collection: &str, v: Value) -> String {
    store
        .insert(collection, doc(v))
        .await
        .expect("insert succeeds")
}

async fn find_ids(store: &S, collection: &str, selector: Value) -> Vec<String> {
    let found = store
        .find(collection, &Query::new(sel(selector.clone())))
        .await
        .unwrap_or_else(|e| panic!("find {selector}: {e}"));
    ids(&found)
}

fn upd(v: Value) -> Update {
    Update::parse(&v).unwrap_or_else(|e| panic!("update {v}: {e}"))
}

const MULTI: UpdateOptions = UpdateOptions::new(true, false);
const ONE: UpdateOptions = UpdateOptions::new(false, false);
const UPSERT: UpdateOptions = UpdateOptions::new(false, true);

async fn insert_generates_ids_and_get_finds_them(store: S) {
    let id = insert(&store, "c", json!({"a": 1, "b": {"c": [1, 2]}})).await;
    assert_eq!(id.len(), 17);
    assert!(portico_store::IdKind::Random.is_valid(&id));
    let got = store.get("c", &id).await.expect("get").expect("found");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        ["_id", "a", "b"],
        "_id comes first"
    );
    assert_eq!(
        serde_json::Value::Object(got),
        json!({"_id": id, "a": 1, "b": {"c": [1, 2]}})
    );
    let other = insert(&store, "c", json!({"a": 2})).await;
    assert_ne!(id, other);
    let mine = insert(&store, "c", json!({"x": 1, "_id": "my-own-id"})).await;
    assert_eq!(mine, "my-own-id");
    assert!(store.get("c", "my-own-id").await.expect("get").is_some());
    assert!(store.get("c", "nope").await.expect("get").is_none());
    assert!(store.get("other", &id).await.expect("get").is_none());
}

async fn duplicate_ids_are_refused_and_nothing_is_overwritten(store: S) {
    insert(&store, "c", json!({"_id": "x", "v": 1})).await;
    let second = store.insert("c", doc(json!({"_id": "x", "v": 2}))).await;
    match second {
        Err(Error::DuplicateId { collection, id }) => {
            assert_eq!((collection.as_str(), id.as_str()), ("c", "x"));
        }
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    let kept = store.get("c", "x").await.expect("get").expect("found");
    assert_eq!(kept.get("v"), Some(&json!(1)));
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 1);
}

async fn insert_many_returns_ids_in_order(store: S) {
    insert(&store, "c", json!({"_id": "before", "v": 0})).await;
    let batch = vec![
        doc(json!({"_id": "m2", "v": 1})),
        doc(json!({"v": 2})),
        doc(json!({"_id": "m1", "v": 3})),
    ];
    let got = store.insert_many("c", batch).await.expect("insert_many");
    assert_eq!(got.len(), 3);
    assert_eq!((got[0].as_str(), got[2].as_str()), ("m2", "m1"));
    assert!(!got[1].is_empty() && got[1] != "m1" && got[1] != "m2");
    for (id, v) in got.iter().zip([1, 2, 3]) {
        let found = store.get("c", id).await.expect("get").expect("found");
        assert_eq!(document_id(&found), Some(id.as_str()));
        assert_eq!(found.get("v"), Some(&json!(v)));
    }
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 4);
    let empty = store
        .insert_many("c", Vec::new())
        .await
        .expect("empty batch");
    assert!(empty.is_empty());
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 4);
}

async fn insert_many_is_all_or_nothing(store: S) {
    insert(&store, "c", json!({"_id": "x", "v": 1})).await;
    let against_existing = vec![
        doc(json!({"_id": "a"})),
        doc(json!({"_id": "x", "v": 2})),
        doc(json!({"_id": "b"})),
    ];
    match store.insert_many("c", against_existing).await {
        Err(Error::DuplicateId { collection, id }) => {
            assert_eq!((collection.as_str(), id.as_str()), ("c", "x"));
        }
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    let within_batch = vec![
        doc(json!({"_id": "a"})),
        doc(json!({"_id": "b"})),
        doc(json!({"_id": "a", "v": 3})),
    ];
    match store.insert_many("c", within_batch).await {
        Err(Error::DuplicateId { collection, id }) => {
            assert_eq!((collection.as_str(), id.as_str()), ("c", "a"));
        }
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    let invalid = vec![doc(json!({"_id": "a"})), doc(json!({"_id": 5}))];
    assert!(matches!(
        store.insert_many("c", invalid).await,
        Err(Error::InvalidDocument(_))
    ));
    // Nothing of the failed batches was written; the existing document is untouched.
    for id in ["a", "b"] {
        assert!(store.get("c", id).await.expect("get").is_none(), "{id}");
    }
    let kept = store.get("c", "x").await.expect("get").expect("found");
    assert_eq!(kept.get("v"), Some(&json!(1)));
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 1);
    assert_eq!(find_ids(&store, "c", json!({})).await, ["x"]);
    // A failed batch into a new collection leaves it empty.
    let into_new = vec![doc(json!({"_id": "n"})), doc(json!({"_id": "n"}))];
    assert!(store.insert_many("fresh", into_new).await.is_err());
    assert_eq!(
        store.count("fresh", &Selector::all()).await.expect("count"),
        0
    );
    large_batches_are_all_or_nothing(&store).await;
}

/// Batches of `size` documents `{prefix}{i}` (with an indexed field), `batches` of them.
fn numbered_batches(
    prefix: &str,
    batches: usize,
    size: usize,
) -> Vec<Result<Vec<Document>, Error>> {
    (0..batches)
        .map(|b| {
            Ok((0..size)
                .map(|i| doc(json!({"_id": format!("{prefix}{}", b * size + i), "k": i})))
                .collect())
        })
        .collect()
}

async fn insert_stream_is_all_or_nothing(store: S) {
    store.ensure_index("st", "k").await.expect("index");
    insert(&store, "st", json!({"_id": "x", "k": -1})).await;
    let stream = |items: Vec<Result<Vec<Document>, Error>>| -> portico_store::DocumentBatches {
        Box::new(items.into_iter())
    };
    // Several batches, then an error of the stream itself: nothing written.
    let mut failing = numbered_batches("a", 3, 700);
    failing.push(Err(Error::InvalidDocument("the file ends early".into())));
    match store.insert_stream("st", stream(failing)).await {
        Err(Error::InvalidDocument(m)) => assert_eq!(m, "the file ends early"),
        other => panic!("expected the stream's error, got {other:?}"),
    }
    // An existing `_id`, and one repeated across batches, in the last batch: nothing written.
    for last in ["x", "a5"] {
        let mut batches = numbered_batches("a", 3, 700);
        batches.push(Ok(vec![
            doc(json!({"_id": "z"})),
            doc(json!({"_id": last})),
        ]));
        match store.insert_stream("st", stream(batches)).await {
            Err(Error::DuplicateId { id, .. }) => assert_eq!(id, last),
            other => panic!("expected DuplicateId {last}, got {other:?}"),
        }
    }
    assert_eq!(store.count("st", &Selector::all()).await.expect("count"), 1);
    assert_eq!(
        find_ids(&store, "st", json!({"k": 5})).await,
        Vec::<String>::new()
    );
    assert!(store.get("st", "z").await.expect("get").is_none());
    // A good stream writes every document, counted and indexed; into a new collection too.
    let n = store
        .insert_stream("st", stream(numbered_batches("a", 3, 700)))
        .await
        .expect("stream");
    assert_eq!(n, 2100);
    assert_eq!(
        store.count("st", &Selector::all()).await.expect("count"),
        2101
    );
    assert_eq!(
        find_ids(&store, "st", json!({"k": 5})).await,
        ["a1405", "a5", "a705"]
    );
    let n = store
        .insert_stream("fresh", stream(numbered_batches("f", 2, 3)))
        .await
        .expect("stream");
    assert_eq!(n, 6);
    assert_eq!(
        store.count("fresh", &Selector::all()).await.expect("count"),
        6
    );
    let empty = store
        .insert_stream("st", stream(Vec::new()))
        .await
        .expect("empty stream");
    assert_eq!(empty, 0);
}

/// Batches larger than a backend's write chunk: a duplicate `_id` or unique key deep inside one
/// still names the document and writes nothing; a good one is fully indexed.
async fn large_batches_are_all_or_nothing(store: &S) {
    store.ensure_index("big", "tag").await.expect("index");
    store
        .ensure_unique_index("big", "email")
        .await
        .expect("unique index");
    let batch = |n: usize| -> Vec<portico_store::Document> {
        (0..n)
            .map(|i| {
                doc(json!({"_id": format!("d{i:05}"), "tag": ["t", i % 7], "email": format!("{i}@x")}))
            })
            .collect()
    };
    let mut dup_id = batch(2500);
    dup_id[2400] = doc(json!({"_id": "d01234", "email": "other@x"}));
    match store.insert_many("big", dup_id).await {
        Err(Error::DuplicateId { id, .. }) => assert_eq!(id, "d01234"),
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    let mut dup_key = batch(2500);
    dup_key[1900] = doc(json!({"_id": "zz", "email": "3@x"}));
    match store.insert_many("big", dup_key).await {
        Err(Error::DuplicateKey { path, .. }) => assert_eq!(path, "email"),
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    assert_eq!(
        store.count("big", &Selector::all()).await.expect("count"),
        0
    );
    store.insert_many("big", batch(2500)).await.expect("insert");
    assert_eq!(
        store.count("big", &Selector::all()).await.expect("count"),
        2500
    );
    let by_tag = Selector::parse(&json!({"tag": 3})).expect("selector");
    assert_eq!(store.count("big", &by_tag).await.expect("count"), 357);
    let by_email = Selector::parse(&json!({"email": "2499@x"})).expect("selector");
    let found = store.find_one("big", &by_email).await.expect("find");
    assert_eq!(
        found.and_then(|d| d.get("_id").cloned()),
        Some(json!("d02499"))
    );
    assert!(
        store
            .insert("big", doc(json!({"email": "17@x"})))
            .await
            .is_err()
    );
}

/// `find_page` answers what `find` does, each document as stored (its compact JSON text, or the
/// decoded document): pages of the whole collection (which backends read as stored text) and
/// everything else alike; without `count`, no total.
async fn find_page_is_find_as_stored(store: S) {
    for i in 0..30 {
        insert(
            &store,
            "j",
            json!({"_id": format!("k{i:02}"), "n": i, "s": "é\u{1F600}", "o": {"b": [1, 2.5]}}),
        )
        .await;
    }
    let page = |skip: u64, limit: Option<u64>| Query {
        skip,
        limit,
        ..Query::new(Selector::all())
    };
    let mut filtered = Query::new(Selector::parse(&json!({"n": {"$gte": 10}})).expect("selector"));
    filtered.limit = Some(5);
    for (name, query) in [
        ("first page", page(0, Some(20))),
        ("later page", page(20, Some(20))),
        ("everything", page(0, None)),
        ("past the end", page(40, Some(5))),
        ("no rows", page(0, Some(0))),
        ("filtered", filtered),
    ] {
        let expected: Vec<String> = store
            .find("j", &query)
            .await
            .expect("find")
            .iter()
            .map(|d| serde_json::to_string(d).expect("encode"))
            .collect();
        let texts = store.page_texts("j", &query).await.expect("find_page");
        assert_eq!(texts, expected, "{name}");
        let page = store
            .find_page("j", &PageRead::new(query.clone()))
            .await
            .expect("find_page");
        assert_eq!(page.total, None, "{name}: not counted");
        for (stored, text) in page.docs.into_iter().zip(&expected) {
            assert_eq!(
                stored.etag(),
                portico_store::etag_of_json(text.as_bytes()),
                "{name}"
            );
        }
    }
    assert!(
        store
            .page_texts("nothing-here", &page(0, Some(20)))
            .await
            .expect("missing")
            .is_empty()
    );
}

/// A counted `find_page` is the page with `count` of the query's selector, for pages of the
/// whole collection (read in one snapshot where the backend can) and filtered ones alike.
async fn a_counted_page_is_the_page_and_its_count(store: S) {
    for i in 0..12 {
        insert(&store, "fc", json!({"_id": format!("k{i:02}"), "n": i})).await;
    }
    let page = |skip: u64, limit: Option<u64>| Query {
        skip,
        limit,
        ..Query::new(Selector::all())
    };
    let mut filtered = Query::new(Selector::parse(&json!({"n": {"$gte": 5}})).expect("selector"));
    filtered.limit = Some(3);
    for (name, query, total) in [
        ("first page", page(0, Some(5)), 12),
        ("later page", page(10, Some(5)), 12),
        ("past the end", page(20, Some(5)), 12),
        ("no rows", page(0, Some(0)), 12),
        ("filtered", filtered, 7),
    ] {
        let expected = store.page_texts("fc", &query).await.expect("find_page");
        let (texts, n) = store.page_counted("fc", &query).await.expect("counted");
        assert_eq!(texts, expected, "{name}");
        assert_eq!(n, total, "{name}");
    }
    let (texts, n) = store
        .page_counted("nothing-here", &page(0, Some(5)))
        .await
        .expect("missing");
    assert!(texts.is_empty());
    assert_eq!(n, 0);
    // A name with a quote, and a collection that exists but is empty.
    insert(&store, "it's", json!({"_id": "q1", "n": 1})).await;
    let (texts, n) = store
        .page_counted("it's", &page(0, Some(5)))
        .await
        .expect("quoted name");
    assert_eq!(texts, vec![r#"{"_id":"q1","n":1}"#.to_owned()]);
    assert_eq!(n, 1);
    store
        .remove("it's", &Selector::all())
        .await
        .expect("remove");
    let (texts, n) = store
        .page_counted("it's", &page(0, Some(5)))
        .await
        .expect("emptied");
    assert!(texts.is_empty());
    assert_eq!(n, 0);
    // The reader is usable afterwards (no transaction left open): a write shows at once.
    insert(&store, "fc", json!({"_id": "k99", "n": 99})).await;
    let (_, n) = store
        .page_counted("fc", &page(0, Some(5)))
        .await
        .expect("again");
    assert_eq!(n, 13);
}

/// `get_stored` answers what `get` does, as stored (its compact JSON text, or the decoded
/// document), and the entity tag of that text is the document's.
async fn get_stored_is_get_as_stored(store: S) {
    insert(
        &store,
        "g",
        json!({"_id": "a", "n": 12.50, "big": 12345678901234567890_u64, "s": "é\u{1F600}\"", "o": {"b": [1, 2.5, null]}}),
    )
    .await;
    let doc = store.get("g", "a").await.expect("get").expect("found");
    let text = store
        .get_text("g", "a")
        .await
        .expect("get_stored")
        .expect("found");
    assert_eq!(text, serde_json::to_string(&doc).expect("encode"));
    assert_eq!(
        portico_store::etag_of_json(text.as_bytes()),
        portico_store::etag(&doc)
    );
    assert_eq!(store.get_text("g", "b").await.expect("missing id"), None);
    assert_eq!(
        store
            .get_text("nothing-here", "a")
            .await
            .expect("missing collection"),
        None
    );
    // After a write, the new text.
    store
        .update(
            "g",
            &sel(json!({"_id": "a"})),
            &Update::parse(&json!({"$set": {"n": 13}})).expect("update"),
            UpdateOptions::default(),
        )
        .await
        .expect("update");
    let text = store
        .get_text("g", "a")
        .await
        .expect("get_stored")
        .expect("found");
    assert!(text.contains("\"n\":13"), "{text}");
}

async fn invalid_documents_are_refused(store: S) {
    for bad in [
        json!({"_id": 5}),
        json!({"_id": ""}),
        json!({"$set": {"a": 1}}),
    ] {
        match store.insert("c", doc(bad.clone())).await {
            Err(e @ Error::InvalidDocument(_)) => assert!(e.is_client_error()),
            other => panic!("{bad} should be an invalid document, got {other:?}"),
        }
    }
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 0);
    let unnamed = store.insert("", doc(json!({"a": 1}))).await;
    assert!(matches!(unnamed, Err(Error::InvalidName(_))), "{unnamed:?}");
}

/// Documents for the selector table: ids say what they hold.
async fn operator_fixture(store: &S) {
    for d in [
        json!({"_id": "n1", "n": 1, "s": "apple", "t": ["x", "y"], "o": {"p": 1, "q": "a"}}),
        json!({"_id": "n2", "n": 2.0, "s": "Banana", "t": ["y"], "o": {"p": 2}}),
        json!({"_id": "n3", "n": 3, "s": "cherry", "t": [], "o": {"q": "b"}}),
        json!({"_id": "ns", "n": "10", "s": null}),
        json!({"_id": "na", "n": [1, 5], "t": ["x", "z", "x"]}),
        json!({"_id": "ob", "arr": [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}], "o": {"p": [7, 8]}}),
        json!({"_id": "nested", "arr": [[1, 2], [3]], "deep": {"a": {"b": {"c": true}}}}),
        json!({"_id": "empty"}),
    ] {
        insert(store, "ops", d).await;
    }
}

/// (selector, ids it must find in `_id` order).
fn operator_table() -> Vec<(Value, Vec<&'static str>)> {
    vec![
        (
            json!({}),
            vec!["empty", "n1", "n2", "n3", "na", "nested", "ns", "ob"],
        ),
        (json!("n2"), vec!["n2"]),
        (json!({"_id": "n3"}), vec!["n3"]),
        // Equality: numbers by value, arrays by element and as a whole, missing as null.
        (json!({"n": 1}), vec!["n1", "na"]),
        (json!({"n": 2}), vec!["n2"]),
        (json!({"n": "10"}), vec!["ns"]),
        (json!({"t": "x"}), vec!["n1", "na"]),
        (json!({"t": ["x", "y"]}), vec!["n1"]),
        (json!({"t": ["y", "x"]}), vec![]),
        (json!({"t": []}), vec!["n3"]),
        (
            json!({"s": null}),
            vec!["empty", "na", "nested", "ns", "ob"],
        ),
        (json!({"o": {"p": 1, "q": "a"}}), vec!["n1"]),
        (json!({"o": {"q": "a", "p": 1}}), vec![]),
        (json!({"o.p": 2}), vec!["n2"]),
        (json!({"o.p": 8}), vec!["ob"]),
        (json!({"o.p.1": 8}), vec!["ob"]),
        (json!({"arr.k": 2}), vec!["ob"]),
        (json!({"arr.1.v": "b"}), vec!["ob"]),
        (json!({"arr": [3]}), vec!["nested"]),
        (json!({"arr.0": [1, 2]}), vec!["nested"]),
        (json!({"deep.a.b.c": true}), vec!["nested"]),
        // $eq and $ne.
        (json!({"n": {"$eq": 3}}), vec!["n3"]),
        (
            json!({"n": {"$ne": 1}}),
            vec!["empty", "n2", "n3", "nested", "ns", "ob"],
        ),
        (json!({"s": {"$ne": null}}), vec!["n1", "n2", "n3"]),
        // Comparisons stay within a type: "10" is not > 2, numbers are not > "a".
        (json!({"n": {"$gt": 2}}), vec!["n3", "na"]),
        (json!({"n": {"$gte": 2}}), vec!["n2", "n3", "na"]),
        (json!({"n": {"$lt": 2}}), vec!["n1", "na"]),
        (json!({"n": {"$lte": 1.0}}), vec!["n1", "na"]),
        (json!({"n": {"$gt": 1, "$lt": 3}}), vec!["n2", "na"]),
        (json!({"n": {"$gt": "1"}}), vec!["ns"]),
        (json!({"s": {"$gte": "a"}}), vec!["n1", "n3"]),
        (json!({"s": {"$lt": "a"}}), vec!["n2"]),
        // $in, $nin.
        (json!({"n": {"$in": [3, "10"]}}), vec!["n3", "ns"]),
        (json!({"t": {"$in": ["z", "q"]}}), vec!["na"]),
        (
            json!({"s": {"$in": [null]}}),
            vec!["empty", "na", "nested", "ns", "ob"],
        ),
        (
            json!({"n": {"$nin": [1, 2, 3]}}),
            vec!["empty", "nested", "ns", "ob"],
        ),
        // $exists.
        (
            json!({"t": {"$exists": true}}),
            vec!["n1", "n2", "n3", "na"],
        ),
        (
            json!({"s": {"$exists": true}}),
            vec!["n1", "n2", "n3", "ns"],
        ),
        (
            json!({"o.q": {"$exists": false}}),
            vec!["empty", "n2", "na", "nested", "ns", "ob"],
        ),
        (json!({"arr.v": {"$exists": true}}), vec!["ob"]),
        // $and, $or, $nor.
        (json!({"$and": [{"t": "y"}, {"n": {"$gt": 1}}]}), vec!["n2"]),
        (json!({"$or": [{"n": 3}, {"t": "z"}]}), vec!["n3", "na"]),
        (
            json!({"$nor": [{"n": {"$exists": true}}, {"arr": {"$exists": true}}]}),
            vec!["empty"],
        ),
        (json!({"$or": [{"n": 1}], "t": "y"}), vec!["n1"]),
        // $not.
        (
            json!({"n": {"$not": {"$gt": 1}}}),
            vec!["empty", "n1", "nested", "ns", "ob"],
        ),
        (
            json!({"s": {"$not": {"$regex": "an"}}}),
            vec!["empty", "n1", "n3", "na", "nested", "ns", "ob"],
        ),
        // $all.
        (json!({"t": {"$all": ["x", "y"]}}), vec!["n1"]),
        (json!({"t": {"$all": ["x"]}}), vec!["n1", "na"]),
        (json!({"t": {"$all": []}}), vec![]),
        (
            json!({"arr": {"$all": [{"$elemMatch": {"k": 2}}]}}),
            vec!["ob"],
        ),
        // $size.
        (json!({"t": {"$size": 0}}), vec!["n3"]),
        (json!({"t": {"$size": 2}}), vec!["n1"]),
        (json!({"n": {"$size": 2}}), vec!["na"]),
        // $elemMatch: on objects, and on values.
        (
            json!({"arr": {"$elemMatch": {"k": 1, "v": "a"}}}),
            vec!["ob"],
        ),
        (json!({"arr": {"$elemMatch": {"k": 1, "v": "b"}}}), vec![]),
        (json!({"n": {"$elemMatch": {"$gt": 4}}}), vec!["na"]),
        (json!({"n": {"$elemMatch": {"$gt": 1, "$lt": 5}}}), vec![]),
        (json!({"arr": {"$elemMatch": {"$size": 1}}}), vec!["nested"]),
        // $regex with $options.
        (json!({"s": {"$regex": "^b"}}), vec![]),
        (json!({"s": {"$regex": "^b", "$options": "i"}}), vec!["n2"]),
        (json!({"s": {"$regex": "an+a"}}), vec!["n2"]),
        (json!({"t": {"$regex": "z"}}), vec!["na"]),
        (json!({"n": {"$regex": "1"}}), vec!["ns"]),
    ]
}

async fn check_operator_table(store: &S) {
    for (selector, expected) in operator_table() {
        let found = find_ids(store, "ops", selector.clone()).await;
        assert_eq!(found, expected, "selector {selector}");
        let count = store
            .count("ops", &sel(selector.clone()))
            .await
            .expect("count");
        assert_eq!(count, expected.len() as u64, "count of {selector}");
    }
}

async fn selector_operators(store: S) {
    operator_fixture(&store).await;
    check_operator_table(&store).await;
}

async fn selector_operators_through_indexes(store: S) {
    operator_fixture(&store).await;
    for path in [
        "n",
        "t",
        "s",
        "o.p",
        "arr.k",
        "arr.1.v",
        "deep.a.b.c",
        "_id",
    ] {
        store.ensure_index("ops", path).await.expect("ensure_index");
    }
    check_operator_table(&store).await;
}

async fn invalid_selectors_name_the_problem(_store: S) {
    for (bad, named) in [
        (json!({"a": {"$foo": 1}}), "$foo"),
        (json!({"$bar": [{"a": 1}]}), "$bar"),
        (json!({"a": {"$in": 5}}), "$in"),
        (json!({"a": {"$nin": "x"}}), "$nin"),
        (json!({"a": {"$all": 1}}), "$all"),
        (json!({"a": {"$size": 1.5}}), "$size"),
        (json!({"a": {"$exists": "yes"}}), "$exists"),
        (json!({"a": {"$elemMatch": 3}}), "$elemMatch"),
        (json!({"a": {"$not": 3}}), "$not"),
        (json!({"a": {"$regex": "(unclosed"}}), "$regex"),
        (json!({"a": {"$regex": 5}}), "$regex"),
        (json!({"a": {"$regex": "x", "$options": "z"}}), "option"),
        (json!({"a": {"$options": "i"}}), "$options"),
        (json!({"$or": []}), "$or"),
        (json!({"$and": [1]}), "$and"),
        (json!({"$nor": {}}), "$nor"),
        (json!({"a": {"$gt": 1, "b": 1}}), "\"b\""),
        (json!({"a..b": 1}), "a..b"),
        (json!({"$where": "this.a"}), "$where"),
    ] {
        match Selector::parse(&bad) {
            Err(e @ Error::InvalidSelector(_)) => {
                assert!(e.is_client_error());
                assert!(
                    e.to_string().contains(named),
                    "{bad}: {e} should name {named}"
                );
            }
            other => panic!("{bad} should be an invalid selector, got {other:?}"),
        }
    }
}

async fn find_sorts_skips_limits_and_projects(store: S) {
    for (id, n, title) in [
        ("a", 2, "x"),
        ("b", 1, "z"),
        ("c", 2, "y"),
        ("d", 3, "w"),
        ("e", 1, "v"),
    ] {
        let d = json!({"_id": id, "n": n, "title": title, "meta": {"secret": id, "public": n}});
        insert(&store, "s", d).await;
    }
    let q = |sort: &str, skip: u64, limit: Option<u64>| Query {
        sort: Some(Sort::parse_list(sort).expect("sort")),
        skip,
        limit,
        ..Query::default()
    };
    let run = |query: Query| {
        let store = store.clone();
        async move { ids(&store.find("s", &query).await.expect("find")) }
    };
    assert_eq!(run(q("n,title", 0, None)).await, ["e", "b", "a", "c", "d"]);
    assert_eq!(run(q("-n,title", 0, None)).await, ["d", "a", "c", "e", "b"]);
    // Ties keep the natural order (by `_id`).
    assert_eq!(run(q("-n", 0, None)).await, ["d", "a", "c", "b", "e"]);
    assert_eq!(run(q("-n", 1, Some(2))).await, ["a", "c"]);
    assert_eq!(run(q("-n", 4, Some(10))).await, ["e"]);
    assert_eq!(run(q("-n", 5, Some(1))).await, Vec::<String>::new());
    assert_eq!(run(q("n", 0, Some(0))).await, Vec::<String>::new());
    assert_eq!(run(q("title", 0, Some(2))).await, ["e", "d"]);
    // No sort: natural order, skip and limit still apply.
    let unsorted = Query {
        skip: 1,
        limit: Some(2),
        ..Query::new(sel(json!({"n": {"$gte": 1}})))
    };
    assert_eq!(run(unsorted).await, ["b", "c"]);
    // Projections.
    let projected = |p: Value| {
        let store = store.clone();
        async move {
            let query = Query {
                projection: Some(Projection::parse(&p).expect("projection")),
                ..Query::new(Selector::by_id("d"))
            };
            let found = store.find("s", &query).await.expect("find");
            Value::Object(found.into_iter().next().expect("one document"))
        }
    };
    assert_eq!(
        projected(json!({"title": 1})).await,
        json!({"_id": "d", "title": "w"})
    );
    assert_eq!(
        projected(json!({"meta.public": 1, "_id": 0})).await,
        json!({"meta": {"public": 3}})
    );
    assert_eq!(
        projected(json!({"meta.secret": 0, "n": 0})).await,
        json!({"_id": "d", "title": "w", "meta": {"public": 3}})
    );
    let listed = Query {
        projection: Some(Projection::parse_list("title,n").expect("projection")),
        sort: Some(Sort::parse(&json!({"n": -1, "_id": 1})).expect("sort")),
        limit: Some(1),
        ..Query::default()
    };
    let found = store.find("s", &listed).await.expect("find");
    assert_eq!(
        found.into_iter().map(Value::Object).collect::<Vec<_>>(),
        [json!({"_id": "d", "n": 3, "title": "w"})]
    );
}

async fn sorted_windows_past_the_bound_are_refused(store: S) {
    for (id, n) in [("a", 2), ("b", 1), ("c", 3)] {
        insert(&store, "w", json!({"_id": id, "n": n})).await;
    }
    let max = portico_store::MAX_SORTED_WINDOW;
    let q = |sort: bool, skip: u64, limit: Option<u64>| Query {
        sort: sort.then(|| Sort::parse_list("-n").expect("sort")),
        skip,
        limit,
        ..Query::default()
    };
    // At the bound: answered (past the end, so empty), on `find` and `find_page`.
    let at = q(true, max - 1, Some(1));
    assert!(store.find("w", &at).await.expect("at the bound").is_empty());
    assert!(store.page_texts("w", &at).await.expect("json").is_empty());
    assert_eq!(
        ids(&store
            .find("w", &q(true, 1, Some(max - 1)))
            .await
            .expect("find")),
        ["a", "b"]
    );
    // One past it, by skip, by limit, or by a skip without limit: refused as bad input.
    for query in [
        q(true, max, Some(1)),
        q(true, 0, Some(max + 1)),
        q(true, max + 1, None),
        q(true, u64::MAX, Some(u64::MAX)),
    ] {
        for err in [
            store.find("w", &query).await.err(),
            store.page_texts("w", &query).await.err(),
        ] {
            let err = err.expect("refused");
            assert!(matches!(err, Error::InvalidSort(_)), "{err:?}");
            assert!(err.is_client_error(), "{err}");
            let text = err.to_string();
            assert!(text.contains(&max.to_string()), "{text}");
            assert!(text.contains("\"n\": {\"$gt\""), "{text}");
        }
    }
    // Without a sort, any skip streams: nothing is held, nothing is refused.
    let unsorted = store.find("w", &q(false, max * 10, Some(max * 10))).await;
    assert!(unsorted.expect("unsorted").is_empty());
    assert_eq!(
        ids(&store
            .find("w", &q(false, 1, Some(max * 10)))
            .await
            .expect("find")),
        ["b", "c"]
    );
}

async fn find_one_and_count(store: S) {
    for i in 0..6 {
        insert(
            &store,
            "f",
            json!({"_id": format!("d{i}"), "even": i % 2 == 0, "i": i}),
        )
        .await;
    }
    let one = store
        .find_one("f", &sel(json!({"even": false})))
        .await
        .expect("find_one")
        .expect("some");
    assert_eq!(
        document_id(&one),
        Some("d1"),
        "the first match in natural order"
    );
    assert!(
        store
            .find_one("f", &sel(json!({"i": 99})))
            .await
            .expect("find_one")
            .is_none()
    );
    assert_eq!(
        store
            .count("f", &sel(json!({"even": true})))
            .await
            .expect("count"),
        3
    );
    assert_eq!(store.count("f", &Selector::all()).await.expect("count"), 6);
    assert_eq!(
        store
            .count("f", &sel(json!({"i": {"$gte": 4}})))
            .await
            .expect("count"),
        2
    );
}

async fn modifiers(store: S) {
    insert(
        &store,
        "m",
        json!({"_id": "m", "n": 1, "f": 1.5, "s": "x", "list": [1, 2, 3, 2], "set": ["a"], "o": {"k": 1}}),
    )
    .await;
    let cases = [
        (
            json!({"$set": {"s": "y", "o.k": 2, "new.deep.field": true}}),
            json!({"_id": "m", "n": 1, "f": 1.5, "s": "y", "list": [1, 2, 3, 2], "set": ["a"], "o": {"k": 2}, "new": {"deep": {"field": true}}}),
        ),
        (
            json!({"$unset": {"new": "", "o.k": 1, "missing.path": 1}}),
            json!({"_id": "m", "n": 1, "f": 1.5, "s": "y", "list": [1, 2, 3, 2], "set": ["a"], "o": {}}),
        ),
        (
            json!({"$inc": {"n": 2, "f": -0.5, "fresh": 5}}),
            json!({"_id": "m", "n": 3, "f": 1.0, "s": "y", "list": [1, 2, 3, 2], "set": ["a"], "o": {}, "fresh": 5}),
        ),
        (
            json!({"$push": {"list": 4, "pushed": {"$each": [1, 1]}}}),
            json!({"_id": "m", "n": 3, "f": 1.0, "s": "y", "list": [1, 2, 3, 2, 4], "set": ["a"], "o": {}, "fresh": 5, "pushed": [1, 1]}),
        ),
        (
            json!({"$pull": {"list": 2, "pushed": {"$gte": 1}}}),
            json!({"_id": "m", "n": 3, "f": 1.0, "s": "y", "list": [1, 3, 4], "set": ["a"], "o": {}, "fresh": 5, "pushed": []}),
        ),
        (
            json!({"$addToSet": {"set": {"$each": ["a", "b", "b"]}, "set2": "z"}}),
            json!({"_id": "m", "n": 3, "f": 1.0, "s": "y", "list": [1, 3, 4], "set": ["a", "b"], "o": {}, "fresh": 5, "pushed": [], "set2": ["z"]}),
        ),
        (
            json!({"$set": {"list.0": 10, "_id": "m"}}),
            json!({"_id": "m", "n": 3, "f": 1.0, "s": "y", "list": [10, 3, 4], "set": ["a", "b"], "o": {}, "fresh": 5, "pushed": [], "set2": ["z"]}),
        ),
    ];
    for (modifier, expected) in cases {
        let r = store
            .update("m", &Selector::by_id("m"), &upd(modifier.clone()), ONE)
            .await
            .unwrap_or_else(|e| panic!("{modifier}: {e}"));
        assert_eq!(r.matched, 1, "{modifier}");
        assert_eq!(r.modified, 1, "{modifier}");
        let now = store.get("m", "m").await.expect("get").expect("found");
        assert_eq!(Value::Object(now), expected, "after {modifier}");
    }
    // A modifier that changes nothing matches but modifies nothing.
    let same = store
        .update(
            "m",
            &Selector::by_id("m"),
            &upd(json!({"$set": {"s": "y"}})),
            ONE,
        )
        .await
        .expect("update");
    assert_eq!((same.matched, same.modified), (1, 0));
    // $pull with a selector on object elements.
    insert(
        &store,
        "m",
        json!({"_id": "p", "items": [{"k": 1, "x": 1}, {"k": 2}, {"k": 1}]}),
    )
    .await;
    store
        .update(
            "m",
            &Selector::by_id("p"),
            &upd(json!({"$pull": {"items": {"k": 1}}})),
            ONE,
        )
        .await
        .expect("pull");
    let p = store.get("m", "p").await.expect("get").expect("found");
    assert_eq!(p.get("items"), Some(&json!([{"k": 2}])));
}

async fn update_one_or_many(store: S) {
    for i in 0..4 {
        insert(
            &store,
            "u",
            json!({"_id": format!("u{i}"), "g": i < 3, "v": 0}),
        )
        .await;
    }
    let inc = upd(json!({"$inc": {"v": 1}}));
    let one = store
        .update("u", &sel(json!({"g": true})), &inc, ONE)
        .await
        .expect("update");
    assert_eq!(
        one,
        UpdateResult {
            matched: 1,
            modified: 1,
            upserted_id: None
        }
    );
    let many = store
        .update("u", &sel(json!({"g": true})), &inc, MULTI)
        .await
        .expect("update");
    assert_eq!(
        many,
        UpdateResult {
            matched: 3,
            modified: 3,
            upserted_id: None
        }
    );
    let docs = all_docs(store.as_ref(), "u").await;
    let vs: Vec<&Value> = docs.iter().filter_map(|d| d.get("v")).collect();
    assert_eq!(vs, [&json!(2), &json!(1), &json!(1), &json!(0)]);
    let none = store
        .update("u", &sel(json!({"g": "no"})), &inc, MULTI)
        .await
        .expect("update");
    assert_eq!(none, UpdateResult::default());
}

async fn upsert_inserts_from_selector_and_update(store: S) {
    let selector = sel(json!({"name": "ada", "profile.lang": "en", "age": {"$gt": 3}}));
    let inc = upd(json!({"$inc": {"visits": 1}}));
    let first = store
        .update("up", &selector, &inc, UPSERT)
        .await
        .expect("upsert");
    assert_eq!((first.matched, first.modified), (0, 0));
    let id = first.upserted_id.expect("an id for the inserted document");
    let created = store.get("up", &id).await.expect("get").expect("found");
    assert_eq!(
        Value::Object(created),
        json!({"_id": id, "name": "ada", "profile": {"lang": "en"}, "visits": 1})
    );
    // Now nothing matches the `$gt` (no age): a second upsert inserts again.
    let second = store
        .update("up", &selector, &inc, UPSERT)
        .await
        .expect("upsert");
    assert!(second.upserted_id.is_some());
    // With a matching document, an upsert is an update.
    let by_name = sel(json!({"name": "ada"}));
    let third = store
        .update("up", &by_name, &inc, UPSERT)
        .await
        .expect("upsert");
    assert_eq!(
        (third.matched, third.modified, third.upserted_id),
        (1, 1, None)
    );
    // The selector's `_id` becomes the new document's id; a replacement upsert uses its fields.
    let r = store
        .update(
            "up",
            &Selector::by_id("fixed"),
            &upd(json!({"k": "v"})),
            UPSERT,
        )
        .await
        .expect("upsert");
    assert_eq!(r.upserted_id.as_deref(), Some("fixed"));
    let fixed = store.get("up", "fixed").await.expect("get").expect("found");
    assert_eq!(Value::Object(fixed), json!({"_id": "fixed", "k": "v"}));
    assert_eq!(store.count("up", &Selector::all()).await.expect("count"), 3);
}

async fn replacement_keeps_the_id(store: S) {
    insert(&store, "r", json!({"_id": "r1", "a": 1, "b": 2})).await;
    let replace = Update::replace(doc(json!({"c": 3}))).expect("replacement");
    assert!(replace.is_replacement());
    let r = store
        .update("r", &Selector::by_id("r1"), &replace, ONE)
        .await
        .expect("replace");
    assert_eq!((r.matched, r.modified), (1, 1));
    let now = store.get("r", "r1").await.expect("get").expect("found");
    assert_eq!(Value::Object(now), json!({"_id": "r1", "c": 3}));
    // The same `_id` may be repeated; another one is refused and changes nothing.
    let same = upd(json!({"_id": "r1", "d": 4}));
    store
        .update("r", &Selector::by_id("r1"), &same, ONE)
        .await
        .expect("same id");
    let other = upd(json!({"_id": "r2", "e": 5}));
    let refused = store.update("r", &Selector::by_id("r1"), &other, ONE).await;
    assert!(
        matches!(refused, Err(Error::InvalidModifier(_))),
        "{refused:?}"
    );
    let now = store.get("r", "r1").await.expect("get").expect("found");
    assert_eq!(Value::Object(now), json!({"_id": "r1", "d": 4}));
    assert!(store.get("r", "r2").await.expect("get").is_none());
}

/// [`Store::update_owned`] (which a backend may drop the update in once it has made the new
/// text, before writing it) does what [`Store::update`] does: with and without index rows, a
/// last document left unchanged, a failure on the last document, upserts.
async fn updates_given_by_value_are_updates(store: S) {
    for collection in ["plain", "indexed"] {
        if collection == "indexed" {
            store.ensure_index(collection, "g").await.expect("index");
        }
        for i in 0..3 {
            insert(
                &store,
                collection,
                json!({"_id": format!("o{i}"), "g": 1, "v": i}),
            )
            .await;
        }
        // Every document but the last changes; the last is already so.
        let set = upd(json!({"$set": {"v": 2}}));
        let r = store
            .update_owned(collection, &sel(json!({"g": 1})), set, MULTI)
            .await
            .expect("update");
        assert_eq!((r.matched, r.modified, r.upserted_id), (3, 2, None));
        let replace = Update::replace(doc(json!({"g": 2, "w": "x"}))).expect("replacement");
        let r = store
            .update_owned(collection, &Selector::by_id("o1"), replace, ONE)
            .await
            .expect("replace");
        assert_eq!((r.matched, r.modified), (1, 1));
        let now = store.get(collection, "o1").await.expect("get").expect("o1");
        assert_eq!(Value::Object(now), json!({"_id": "o1", "g": 2, "w": "x"}));
        // Found through the index (when there is one) by its new value only.
        let by_g = |g: i64| Query::new(sel(json!({"g": g})));
        assert_eq!(
            ids(&store.find(collection, &by_g(2)).await.expect("find")),
            ["o1"]
        );
        assert_eq!(
            ids(&store.find(collection, &by_g(1)).await.expect("find")),
            ["o0", "o2"]
        );
        // A modifier that fails on the last matching document changes none of them.
        store
            .update(
                collection,
                &Selector::by_id("o2"),
                &upd(json!({"$set": {"v": "s"}})),
                ONE,
            )
            .await
            .expect("set a string");
        let inc = upd(json!({"$inc": {"v": 1}}));
        let failed = store
            .update_owned(collection, &sel(json!({"g": 1})), inc, MULTI)
            .await;
        assert!(
            matches!(failed, Err(Error::InvalidModifier(_))),
            "{failed:?}"
        );
        let o0 = store.get(collection, "o0").await.expect("get").expect("o0");
        assert_eq!(o0.get("v"), Some(&json!(2)));
        // A replacement may not change `_id`.
        let other = upd(json!({"_id": "elsewhere", "g": 3}));
        let refused = store
            .update_owned(collection, &Selector::by_id("o0"), other, ONE)
            .await;
        assert!(
            matches!(refused, Err(Error::InvalidModifier(_))),
            "{refused:?}"
        );
        // Nothing matches: an upsert inserts from the selector and the update.
        let r = store
            .update_owned(
                collection,
                &sel(json!({"_id": "o9", "g": 4})),
                upd(json!({"$set": {"v": 9}})),
                UPSERT,
            )
            .await
            .expect("upsert");
        assert_eq!((r.matched, r.upserted_id.as_deref()), (0, Some("o9")));
        let o9 = store.get(collection, "o9").await.expect("get").expect("o9");
        assert_eq!(Value::Object(o9), json!({"_id": "o9", "g": 4, "v": 9}));
        assert_eq!(
            ids(&store.find(collection, &by_g(4)).await.expect("find")),
            ["o9"]
        );
    }
}

async fn a_failing_modifier_changes_no_document(store: S) {
    for (id, v) in [
        ("a", json!(1)),
        ("b", json!(2)),
        ("c", json!("three")),
        ("d", json!(4)),
    ] {
        insert(&store, "t", json!({"_id": id, "v": v, "w": 0})).await;
    }
    let before = all_docs(store.as_ref(), "t").await;
    for bad in [
        json!({"$set": {"w": 1}, "$inc": {"v": 1}}),
        json!({"$set": {"w": 1}, "$push": {"v": 1}}),
        json!({"$set": {"w": 1}, "$addToSet": {"v": 1}}),
        json!({"$set": {"w": 1}, "$pull": {"v": 1}}),
        json!({"$set": {"w": 1, "v.x": 1}}),
        json!({"$set": {"w": 1, "_id": "z"}}),
    ] {
        let result = store
            .update("t", &Selector::all(), &upd(bad.clone()), MULTI)
            .await;
        match result {
            Err(e @ Error::InvalidModifier(_)) => assert!(e.is_client_error(), "{e}"),
            other => panic!("{bad} should fail as an invalid modifier, got {other:?}"),
        }
        assert_eq!(
            all_docs(store.as_ref(), "t").await,
            before,
            "{bad} changed documents"
        );
    }
}

async fn invalid_modifiers_name_the_problem(_store: S) {
    for (bad, named) in [
        (json!({"$foo": {"a": 1}}), "$foo"),
        (json!({"$set": {"a": 1}, "b": 2}), "mixes"),
        (json!({"$set": [1]}), "$set"),
        (json!({"$set": {}}), "$set"),
        (json!({"$inc": {"a": "1"}}), "$inc"),
        (json!({"$unset": {"_id": 1}}), "_id"),
        (json!({"$inc": {"_id": 1}}), "_id"),
        (json!({"$set": {"": 1}}), "empty"),
        (json!({"$set": {"a.$": 1}}), "$"),
        (json!({"$set": {"$a": 1}}), "$a"),
        (json!({"$set": {"a": 1}, "$unset": {"a": 1}}), "conflicting"),
        (json!({"$set": {"a.b": 1}, "$inc": {"a": 1}}), "conflicting"),
        (json!({"$push": {"a": {"$each": 1}}}), "$each"),
        (json!({"$push": {"a": {"$slice": 2}}}), "$slice"),
        (json!({"$pull": {"a": {"$nope": 1}}}), "$nope"),
        (json!({"$x": 1}), "$x"),
        (json!({"a": 1, "$set": {"b": 1}}), "mixes"),
        (json!("text"), "object"),
    ] {
        match Update::parse(&bad) {
            Err(e @ Error::InvalidModifier(_)) => {
                assert!(
                    e.to_string().contains(named),
                    "{bad}: {e} should name {named}"
                );
            }
            other => panic!("{bad} should be an invalid modifier, got {other:?}"),
        }
    }
    assert!(matches!(
        Update::set(doc(json!({"_id": "x"}))),
        Err(Error::InvalidModifier(_))
    ));
    assert!(matches!(
        Update::replace(doc(json!({"$set": 1}))),
        Err(Error::InvalidModifier(_))
    ));
}

async fn remove_removes_only_matches(store: S) {
    for i in 0..5 {
        insert(&store, "rm", json!({"_id": format!("r{i}"), "i": i})).await;
    }
    assert_eq!(
        store
            .remove("rm", &sel(json!({"i": {"$gte": 3}})))
            .await
            .expect("remove"),
        2
    );
    assert_eq!(
        store
            .remove("rm", &sel(json!({"i": 99})))
            .await
            .expect("remove"),
        0
    );
    assert_eq!(
        store
            .remove("rm", &Selector::by_id("r0"))
            .await
            .expect("remove"),
        1
    );
    assert_eq!(ids(&all_docs(store.as_ref(), "rm").await), ["r1", "r2"]);
    assert_eq!(
        store.remove("rm", &Selector::all()).await.expect("remove"),
        2
    );
    assert_eq!(store.count("rm", &Selector::all()).await.expect("count"), 0);
}

async fn index_lookups_through_arrays_follow_writes(store: S) {
    let path = "services.resume.loginTokens.hashedToken";
    store
        .ensure_index("users", path)
        .await
        .expect("ensure_index");
    store
        .ensure_index("users", path)
        .await
        .expect("ensure_index again is a no-op");
    store
        .ensure_index("users", "n")
        .await
        .expect("ensure_index");
    let token = |t: &str| json!({"when": "2026-01-01", "hashedToken": t});
    insert(&store, "users", json!({"_id": "u1", "n": 1, "services": {"resume": {"loginTokens": [token("t1"), token("t2")]}}})).await;
    insert(
        &store,
        "users",
        json!({"_id": "u2", "n": 2.0, "services": {"resume": {"loginTokens": [token("t3")]}}}),
    )
    .await;
    insert(&store, "users", json!({"_id": "u3", "n": [2, 3]})).await;
    let by_token = |t: &str| json!({ path: t });
    assert_eq!(find_ids(&store, "users", by_token("t2")).await, ["u1"]);
    assert_eq!(find_ids(&store, "users", by_token("t3")).await, ["u2"]);
    assert_eq!(
        find_ids(&store, "users", by_token("t9")).await,
        Vec::<String>::new()
    );
    // Numbers are equal by value; array elements are found too.
    assert_eq!(
        find_ids(&store, "users", json!({"n": 2})).await,
        ["u2", "u3"]
    );
    assert_eq!(find_ids(&store, "users", json!({"n": 3.0})).await, ["u3"]);
    // The index follows updates and removals.
    let push = upd(json!({"$push": {"services.resume.loginTokens": token("t9")}}));
    store
        .update("users", &Selector::by_id("u2"), &push, ONE)
        .await
        .expect("push");
    assert_eq!(find_ids(&store, "users", by_token("t9")).await, ["u2"]);
    let pull = upd(json!({"$pull": {"services.resume.loginTokens": {"hashedToken": "t1"}}}));
    store
        .update("users", &Selector::by_id("u1"), &pull, ONE)
        .await
        .expect("pull");
    assert_eq!(
        find_ids(&store, "users", by_token("t1")).await,
        Vec::<String>::new()
    );
    assert_eq!(find_ids(&store, "users", by_token("t2")).await, ["u1"]);
    store
        .remove("users", &Selector::by_id("u2"))
        .await
        .expect("remove");
    assert_eq!(
        find_ids(&store, "users", by_token("t9")).await,
        Vec::<String>::new()
    );
    // An index made after the documents covers them too.
    store
        .ensure_index("users", "services.resume.loginTokens.when")
        .await
        .expect("late index");
    let by_when = json!({"services.resume.loginTokens.when": "2026-01-01"});
    assert_eq!(find_ids(&store, "users", by_when).await, ["u1"]);
    for bad in ["", "a..b", "a.$", "$x"] {
        let r = store.ensure_index("users", bad).await;
        assert!(matches!(r, Err(Error::InvalidName(_))), "{bad:?}: {r:?}");
    }
}

async fn total(store: &S, collection: &str) -> u64 {
    store
        .count(collection, &Selector::all())
        .await
        .expect("count")
}

/// The count of a whole collection (which a backend may keep instead of counting) against the
/// documents actually there, after every kind of write that adds or removes documents.
async fn whole_collection_count_follows_every_write(store: S) {
    let c = "counted";
    assert_eq!(total(&store, c).await, 0, "a missing collection");
    for i in 0..5 {
        insert(&store, c, json!({"_id": format!("d{i}"), "i": i})).await;
    }
    assert_eq!(total(&store, c).await, 5);
    assert!(
        store.insert(c, doc(json!({"_id": "d0"}))).await.is_err(),
        "duplicate refused"
    );
    assert_eq!(total(&store, c).await, 5, "a refused insert adds nothing");

    let upserted = store
        .update(
            c,
            &sel(json!({"i": 10})),
            &upd(json!({"$set": {"u": true}})),
            UPSERT,
        )
        .await
        .expect("upsert inserts");
    assert!(upserted.upserted_id.is_some());
    assert_eq!(total(&store, c).await, 6, "an upsert that inserts");
    store
        .update(
            c,
            &sel(json!({"i": 10})),
            &upd(json!({"$set": {"u": false}})),
            UPSERT,
        )
        .await
        .expect("upsert updates");
    store
        .update(c, &Selector::all(), &upd(json!({"$inc": {"i": 1}})), MULTI)
        .await
        .expect("update all");
    assert_eq!(total(&store, c).await, 6, "updates add nothing");
    assert!(
        store
            .update(c, &Selector::all(), &upd(json!({"$inc": {"u": 1}})), MULTI)
            .await
            .is_err()
    );
    // The upserted document holds `u: false`, which `$inc` cannot apply to.
    assert_eq!(total(&store, c).await, 6, "a failed update changes nothing");

    assert_eq!(
        store
            .remove(c, &sel(json!({"i": {"$lt": 3}})))
            .await
            .expect("remove"),
        2
    );
    assert_eq!(total(&store, c).await, 4, "after removing some");
    assert_eq!(
        store
            .remove(c, &sel(json!({"i": 999})))
            .await
            .expect("remove"),
        0
    );
    assert_eq!(total(&store, c).await, 4, "removing nothing");
    assert_eq!(store.remove(c, &Selector::all()).await.expect("remove"), 4);
    assert_eq!(total(&store, c).await, 0, "after removing all");

    insert(&store, c, json!({"_id": "again"})).await;
    insert(&store, c, json!({"_id": "and again"})).await;
    assert_eq!(total(&store, c).await, 2);
    store.drop_collection(c).await.expect("drop");
    assert_eq!(total(&store, c).await, 0, "after dropping");
    insert(&store, c, json!({"_id": "after drop"})).await;
    assert_eq!(
        total(&store, c).await,
        1,
        "a re-created collection starts from zero"
    );
    // Other collections keep their own counts.
    insert(&store, "other", json!({"_id": "x"})).await;
    assert_eq!(total(&store, "other").await, 1);
    assert_eq!(total(&store, c).await, 1);
    assert_eq!(
        total(&store, c).await,
        all_docs(store.as_ref(), c).await.len() as u64
    );
}

async fn collections_are_listed_and_dropped(store: S) {
    assert_eq!(
        store.list_collections().await.expect("list"),
        Vec::<String>::new()
    );
    insert(&store, "zeta", json!({"a": 1})).await;
    insert(&store, "alpha", json!({"a": 1})).await;
    store.ensure_index("alpha", "a").await.expect("index");
    assert_eq!(
        store.list_collections().await.expect("list"),
        ["alpha", "zeta"]
    );
    store.drop_collection("alpha").await.expect("drop");
    store
        .drop_collection("never-existed")
        .await
        .expect("dropping a missing one is fine");
    assert_eq!(store.list_collections().await.expect("list"), ["zeta"]);
    assert_eq!(
        store.count("alpha", &Selector::all()).await.expect("count"),
        0
    );
    // A dropped collection can be made again, without its old index getting in the way.
    insert(&store, "alpha", json!({"_id": "again", "a": 2})).await;
    assert_eq!(find_ids(&store, "alpha", json!({"a": 2})).await, ["again"]);
}

async fn missing_collections_find_nothing(store: S) {
    let all = Selector::all();
    assert!(
        store
            .find("ghost", &Query::default())
            .await
            .expect("find")
            .is_empty()
    );
    assert!(
        store
            .find_one("ghost", &all)
            .await
            .expect("find_one")
            .is_none()
    );
    assert!(store.get("ghost", "x").await.expect("get").is_none());
    assert_eq!(store.count("ghost", &all).await.expect("count"), 0);
    assert_eq!(store.remove("ghost", &all).await.expect("remove"), 0);
    let set = upd(json!({"$set": {"a": 1}}));
    let r = store
        .update("ghost", &all, &set, MULTI)
        .await
        .expect("update");
    assert_eq!(r, UpdateResult::default());
    assert_eq!(
        store.list_collections().await.expect("list"),
        Vec::<String>::new()
    );
}

async fn concurrent_updates_lose_nothing(store: S) {
    const INCS: usize = 40;
    const FIELDS: usize = 20;
    insert(&store, "hot", json!({"_id": "doc", "count": 0})).await;
    let mut tasks = Vec::new();
    for i in 0..INCS.max(FIELDS) {
        if i < INCS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let inc = upd(json!({"$inc": {"count": 1}}));
                store
                    .update("hot", &Selector::by_id("doc"), &inc, ONE)
                    .await
            }));
        }
        if i < FIELDS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let set = upd(json!({"$set": {format!("field{i}"): i}}));
                store
                    .update("hot", &Selector::by_id("doc"), &set, ONE)
                    .await
            }));
        }
    }
    for task in tasks {
        let r = task.await.expect("task").expect("update");
        assert_eq!((r.matched, r.modified), (1, 1));
    }
    let d = store.get("hot", "doc").await.expect("get").expect("found");
    assert_eq!(d.get("count"), Some(&json!(INCS)));
    for i in 0..FIELDS {
        assert_eq!(d.get(&format!("field{i}")), Some(&json!(i)), "field{i}");
    }
}

/// A write whose selector carries the document's entity tag applies only while the document is
/// unchanged; racing writers with the same tag: exactly one wins.
async fn conditional_writes_follow_the_etag(store: S) {
    insert(&store, "e", json!({"_id": "d", "n": 1})).await;
    let current = store.get("e", "d").await.unwrap().unwrap();
    let tag = portico_store::etag(&current);
    let stale = "0".repeat(32);
    let set = |n: i64| Update::parse(&json!({"$set": {"n": n}})).unwrap();
    let by_tag = |t: &str| Selector::by_id("d").and_etag(t);
    let r = store
        .update("e", &by_tag(&stale), &set(5), UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(r.matched, 0);
    assert_eq!(store.remove("e", &by_tag(&stale)).await.unwrap(), 0);
    // Two writers read the same tag; only the first write matches it.
    let mut winners = 0;
    let tasks: Vec<_> = (0..2)
        .map(|n| {
            let store = store.clone();
            let selector = by_tag(&tag);
            let update = set(10 + n);
            tokio::spawn(async move {
                store
                    .update("e", &selector, &update, UpdateOptions::default())
                    .await
                    .unwrap()
                    .matched
            })
        })
        .collect();
    for task in tasks {
        winners += task.await.unwrap();
    }
    assert_eq!(winners, 1);
    let after = store.get("e", "d").await.unwrap().unwrap();
    assert_ne!(portico_store::etag(&after), tag);
    assert_eq!(store.remove("e", &by_tag(&tag)).await.unwrap(), 0);
    assert_eq!(
        store
            .remove("e", &by_tag(&portico_store::etag(&after)))
            .await
            .unwrap(),
        1
    );
}

/// Numbers whose `f64` or `u64` forms would lose something: each document holds one in `x`
/// (and in an array in `xs`), written as text so the test controls the exact spelling.
const EXACT_NUMBERS: [(&str, &str); 9] = [
    ("tiny", "2.8535563002202693e-175"),
    ("tiny_rounded", "2.853556300220269e-175"),
    ("u64max", "18446744073709551615"),
    ("big", "18446744073709551616"),
    ("big1", "18446744073709551617"),
    ("negbig", "-18446744073709551617"),
    ("p53", "9007199254740993"),
    ("one", "1.0"),
    ("huge", "1e+400"),
];

async fn exact_number_fixture(store: &S) {
    for (id, text) in EXACT_NUMBERS {
        let v: Value = serde_json::from_str(&format!(
            r#"{{"_id":"{id}","x":{text},"xs":[0,{text}],"o":{{"x":{text}}}}}"#
        ))
        .expect("fixture JSON");
        insert(store, "exact", v).await;
    }
}

async fn check_exact_numbers(store: &S) {
    // Every number comes back spelled as it was sent.
    for (id, text) in EXACT_NUMBERS {
        let got = store.get("exact", id).await.expect("get").expect("found");
        assert_eq!(got["x"].to_string(), text, "x of {id}");
        assert_eq!(got["xs"][1].to_string(), text, "xs of {id}");
    }
    let s = |text: &str| -> Value { serde_json::from_str(text).expect("selector JSON") };
    for (selector, expected) in [
        (r#"{"x": 18446744073709551617}"#, vec!["big1"]),
        (r#"{"x": 18446744073709551616}"#, vec!["big"]),
        (r#"{"x": 1.8446744073709551616e19}"#, vec!["big"]),
        (r#"{"xs": 18446744073709551617}"#, vec!["big1"]),
        (r#"{"o.x": 18446744073709551617}"#, vec!["big1"]),
        (r#"{"x": 2.8535563002202693e-175}"#, vec!["tiny"]),
        (r#"{"xs": 2.853556300220269e-175}"#, vec!["tiny_rounded"]),
        (r#"{"x": 9007199254740993}"#, vec!["p53"]),
        (r#"{"x": 9007199254740992}"#, vec![]),
        (r#"{"x": 1}"#, vec!["one"]),
        (r#"{"x": 1e400}"#, vec!["huge"]),
        (
            r#"{"x": {"$gt": 18446744073709551616}}"#,
            vec!["big1", "huge"],
        ),
        (
            r#"{"x": {"$gte": 18446744073709551615, "$lt": 18446744073709551617}}"#,
            vec!["big", "u64max"],
        ),
        (r#"{"x": {"$lt": 0}}"#, vec!["negbig"]),
        (
            r#"{"x": {"$gt": 0, "$lt": 1e-100}}"#,
            vec!["tiny", "tiny_rounded"],
        ),
        (
            r#"{"x": {"$gt": 2.853556300220269e-175, "$lt": 1}}"#,
            vec!["tiny"],
        ),
        (
            r#"{"x": {"$in": [18446744073709551617, 1]}}"#,
            vec!["big1", "one"],
        ),
    ] {
        let mut found = find_ids(store, "exact", s(selector)).await;
        found.sort();
        let mut expected: Vec<&str> = expected;
        expected.sort();
        assert_eq!(found, expected, "selector {selector}");
    }
    // Sort orders by exact value.
    let sorted = store
        .find(
            "exact",
            &Query {
                sort: Some(Sort::parse_list("x").expect("sort")),
                ..Query::new(sel(json!({})))
            },
        )
        .await
        .expect("sorted find");
    assert_eq!(
        ids(&sorted),
        [
            "negbig",
            "tiny_rounded",
            "tiny",
            "one",
            "p53",
            "u64max",
            "big",
            "big1",
            "huge"
        ]
    );
    // `$inc` on a big integer is exact.
    let inc: Value = serde_json::from_str(r#"{"$inc": {"x": 2}}"#).expect("JSON");
    store
        .update(
            "exact",
            &sel(json!({"_id": "u64max"})),
            &upd(inc),
            UpdateOptions::default(),
        )
        .await
        .expect("inc");
    let got = store
        .get("exact", "u64max")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(got["x"].to_string(), "18446744073709551617");
}

async fn numbers_are_kept_and_compared_exactly(store: S) {
    exact_number_fixture(&store).await;
    check_exact_numbers(&store).await;
}

async fn numbers_are_compared_exactly_through_indexes(store: S) {
    exact_number_fixture(&store).await;
    for path in ["x", "xs", "o.x"] {
        store
            .ensure_index("exact", path)
            .await
            .expect("ensure_index");
    }
    check_exact_numbers(&store).await;
}

async fn size_and_id_limits_hold_on_every_write(store: S) {
    use portico_store::{MAX_DOCUMENT_BYTES, MAX_ID_BYTES};
    let long_id = "i".repeat(MAX_ID_BYTES + 1);
    let err = store.insert("lim", doc(json!({"_id": long_id}))).await;
    assert!(matches!(err, Err(Error::IdTooLong { .. })), "{err:?}");
    let id = "i".repeat(MAX_ID_BYTES);
    insert(&store, "lim", json!({"_id": id, "n": 1})).await;

    let big = "x".repeat(MAX_DOCUMENT_BYTES);
    let err = store.insert("lim", doc(json!({"big": big.clone()}))).await;
    assert!(
        matches!(err, Err(Error::DocumentTooLarge { .. })),
        "{err:?}"
    );
    let half = "x".repeat(MAX_DOCUMENT_BYTES / 2);
    insert(&store, "lim", json!({"_id": "grow", "a": half.clone()})).await;
    // An update that would take the document over the limit changes nothing.
    let err = store
        .update(
            "lim",
            &sel(json!({"_id": "grow"})),
            &upd(json!({"$set": {"b": half}})),
            UpdateOptions::default(),
        )
        .await;
    assert!(
        matches!(err, Err(Error::DocumentTooLarge { .. })),
        "{err:?}"
    );
    let err = store
        .update(
            "lim",
            &sel(json!({"_id": "new"})),
            &upd(json!({"$set": {"big": big}})),
            UpdateOptions::new(false, true),
        )
        .await;
    assert!(
        matches!(err, Err(Error::DocumentTooLarge { .. })),
        "{err:?}"
    );
    let got = store.get("lim", "grow").await.expect("get").expect("found");
    assert!(got.get("b").is_none());
    assert_eq!(total(&store, "lim").await, 2);
}

/// True when `r` is the duplicate-key error of `collection` and `path`.
fn is_duplicate_key<T: std::fmt::Debug>(
    r: &Result<T, Error>,
    collection: &str,
    path: &str,
) -> bool {
    matches!(r, Err(Error::DuplicateKey { collection: c, path: p }) if c == collection && p == path)
}

async fn unique_indexes_refuse_shared_values(store: S) {
    store
        .ensure_unique_index("people", "nameLower")
        .await
        .expect("unique index");
    // Calling it again, or asking for a plain index on the path, changes nothing.
    store
        .ensure_unique_index("people", "nameLower")
        .await
        .expect("again");
    store
        .ensure_index("people", "nameLower")
        .await
        .expect("plain");
    store
        .ensure_unique_index("people", "_id")
        .await
        .expect("_id is unique");
    assert!(matches!(
        store.ensure_unique_index("people", "a..b").await,
        Err(Error::InvalidName(_))
    ));
    insert(&store, "people", json!({"_id": "p1", "nameLower": "ann"})).await;
    let again = store
        .insert("people", doc(json!({"_id": "p2", "nameLower": "ann"})))
        .await;
    assert!(is_duplicate_key(&again, "people", "nameLower"), "{again:?}");
    assert_eq!(store.get("people", "p2").await.expect("get"), None);
    assert_eq!(total(&store, "people").await, 1);
    // Numbers are one value across representations.
    insert(&store, "people", json!({"_id": "n1", "nameLower": 1})).await;
    let one = store
        .insert("people", doc(json!({"_id": "n2", "nameLower": 1.0})))
        .await;
    assert!(is_duplicate_key(&one, "people", "nameLower"), "{one:?}");
    // The index still finds, and a freed value can be taken again.
    assert_eq!(
        find_ids(&store, "people", json!({"nameLower": "ann"})).await,
        ["p1"]
    );
    store
        .remove("people", &sel(json!({"_id": "p1"})))
        .await
        .expect("remove");
    insert(&store, "people", json!({"_id": "p3", "nameLower": "ann"})).await;
    assert_eq!(
        find_ids(&store, "people", json!({"nameLower": "ann"})).await,
        ["p3"]
    );
    // Other collections are not constrained.
    insert(&store, "others", json!({"nameLower": "ann"})).await;
    insert(&store, "others", json!({"nameLower": "ann"})).await;
}

async fn unique_indexes_through_arrays_and_nulls(store: S) {
    store
        .ensure_unique_index("users", "emails.address")
        .await
        .expect("unique index");
    insert(
        &store,
        "users",
        json!({"_id": "u1", "emails": [{"address": "a"}, {"address": "b"}]}),
    )
    .await;
    let taken = store
        .insert(
            "users",
            doc(json!({"_id": "u2", "emails": [{"address": "c"}, {"address": "b"}]})),
        )
        .await;
    assert!(
        is_duplicate_key(&taken, "users", "emails.address"),
        "{taken:?}"
    );
    // A document may repeat a value within itself.
    insert(
        &store,
        "users",
        json!({"_id": "u3", "emails": [{"address": "d"}, {"address": "d"}]}),
    )
    .await;
    // Missing and null are no values: any number of documents may have them.
    insert(&store, "users", json!({"_id": "u4"})).await;
    insert(&store, "users", json!({"_id": "u5"})).await;
    insert(
        &store,
        "users",
        json!({"_id": "u6", "emails": [{"address": null}]}),
    )
    .await;
    insert(
        &store,
        "users",
        json!({"_id": "u7", "emails": [{"address": null}]}),
    )
    .await;
    assert_eq!(total(&store, "users").await, 6);
    assert_eq!(
        find_ids(&store, "users", json!({"emails.address": "b"})).await,
        ["u1"]
    );
}

async fn unique_indexes_on_updates_and_batches(store: S) {
    store
        .ensure_unique_index("names", "key")
        .await
        .expect("unique index");
    insert(&store, "names", json!({"_id": "a", "key": "x", "n": 1})).await;
    insert(&store, "names", json!({"_id": "b", "key": "y", "n": 1})).await;
    // Taking another document's value fails and changes nothing.
    let take = store
        .update(
            "names",
            &Selector::by_id("b"),
            &upd(json!({"$set": {"key": "x"}})),
            ONE,
        )
        .await;
    assert!(is_duplicate_key(&take, "names", "key"), "{take:?}");
    let b = store.get("names", "b").await.expect("get").expect("b");
    assert_eq!(b.get("key"), Some(&json!("y")));
    // Keeping one's own value is fine.
    let keep = store
        .update(
            "names",
            &Selector::by_id("a"),
            &upd(json!({"$set": {"key": "x", "n": 2}})),
            ONE,
        )
        .await
        .expect("own value");
    assert_eq!(keep.modified, 1);
    // A multi-update making two documents share a value changes neither.
    let both = store
        .update(
            "names",
            &sel(json!({})),
            &upd(json!({"$set": {"key": "z"}})),
            MULTI,
        )
        .await;
    assert!(is_duplicate_key(&both, "names", "key"), "{both:?}");
    assert_eq!(
        find_ids(&store, "names", json!({"key": "z"})).await,
        Vec::<String>::new()
    );
    assert_eq!(
        find_ids(&store, "names", json!({"n": {"$gte": 1}})).await,
        ["a", "b"]
    );
    // An upsert inserting a taken value fails.
    let up = store
        .update(
            "names",
            &sel(json!({"key": "x", "n": 9})),
            &upd(json!({"$set": {"m": 1}})),
            UPSERT,
        )
        .await;
    assert!(is_duplicate_key(&up, "names", "key"), "{up:?}");
    // A value given up can be taken by another document.
    store
        .update(
            "names",
            &Selector::by_id("a"),
            &upd(json!({"$set": {"key": "w"}})),
            ONE,
        )
        .await
        .expect("give up x");
    store
        .update(
            "names",
            &Selector::by_id("b"),
            &upd(json!({"$set": {"key": "x"}})),
            ONE,
        )
        .await
        .expect("take x");
    // A batch is all or none, against the collection and within itself.
    let with_taken = store
        .insert_many(
            "names",
            vec![
                doc(json!({"_id": "c", "key": "c"})),
                doc(json!({"_id": "d", "key": "w"})),
            ],
        )
        .await;
    assert!(
        is_duplicate_key(&with_taken, "names", "key"),
        "{with_taken:?}"
    );
    let within = store
        .insert_many(
            "names",
            vec![
                doc(json!({"_id": "e", "key": "v"})),
                doc(json!({"_id": "f", "key": "v"})),
            ],
        )
        .await;
    assert!(is_duplicate_key(&within, "names", "key"), "{within:?}");
    assert_eq!(total(&store, "names").await, 2);
    assert_eq!(ids(&all_docs(store.as_ref(), "names").await), ["a", "b"]);
}

async fn making_an_index_unique(store: S) {
    insert(&store, "tags", json!({"_id": "1", "t": "x"})).await;
    insert(&store, "tags", json!({"_id": "2", "t": "x"})).await;
    insert(&store, "tags", json!({"_id": "3", "t": "y"})).await;
    // Shared values: refused, and nothing changes (duplicates can still be written).
    let shared = store.ensure_unique_index("tags", "t").await;
    assert!(is_duplicate_key(&shared, "tags", "t"), "{shared:?}");
    insert(&store, "tags", json!({"_id": "4", "t": "y"})).await;
    // A plain index with shared values stays plain when it cannot be made unique.
    store.ensure_index("tags", "t").await.expect("plain index");
    let shared = store.ensure_unique_index("tags", "t").await;
    assert!(is_duplicate_key(&shared, "tags", "t"), "{shared:?}");
    insert(&store, "tags", json!({"_id": "5", "t": "x"})).await;
    assert_eq!(
        find_ids(&store, "tags", json!({"t": "x"})).await,
        ["1", "2", "5"]
    );
    // Once the values are distinct, the plain index becomes unique.
    store
        .remove("tags", &sel(json!({"_id": {"$in": ["2", "4", "5"]}})))
        .await
        .expect("remove");
    store
        .ensure_unique_index("tags", "t")
        .await
        .expect("unique now");
    let dup = store
        .insert("tags", doc(json!({"_id": "6", "t": "y"})))
        .await;
    assert!(is_duplicate_key(&dup, "tags", "t"), "{dup:?}");
    assert_eq!(find_ids(&store, "tags", json!({"t": "y"})).await, ["3"]);
}

async fn concurrent_inserts_of_one_unique_value(store: S) {
    const WRITERS: usize = 12;
    store
        .ensure_unique_index("accounts", "nameLower")
        .await
        .expect("unique index");
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .insert(
                    "accounts",
                    doc(json!({"_id": format!("a{i}"), "nameLower": "ann"})),
                )
                .await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(_) => won += 1,
            Err(Error::DuplicateKey { .. }) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(total(&store, "accounts").await, 1);
}

async fn batch_applies_in_order_and_returns_documents(store: Arc<dyn Store>) {
    use portico_store::{BatchOp, BatchOutcome};
    store
        .insert("b", doc(json!({"_id": "old", "n": 1})))
        .await
        .unwrap();
    let done = store
        .batch(vec![
            BatchOp::Insert {
                collection: "b".into(),
                doc: doc(json!({"_id": "new", "n": 5})),
            },
            BatchOp::Update {
                collection: "b".into(),
                selector: sel(json!({"_id": "new"})),
                update: Update::parse(&json!({"$inc": {"n": 1}})).unwrap(),
            },
            BatchOp::Remove {
                collection: "b".into(),
                selector: sel(json!({"_id": "old"})),
            },
            BatchOp::Insert {
                collection: "other".into(),
                doc: doc(json!({"x": true})),
            },
        ])
        .await
        .unwrap();
    assert_eq!(done.len(), 4);
    assert_eq!(
        done[0],
        BatchOutcome::Inserted(doc(json!({"_id": "new", "n": 5})))
    );
    assert_eq!(
        done[1],
        BatchOutcome::Updated(doc(json!({"_id": "new", "n": 6})))
    );
    assert_eq!(
        done[2],
        BatchOutcome::Removed(doc(json!({"_id": "old", "n": 1})))
    );
    let BatchOutcome::Inserted(generated) = &done[3] else {
        panic!("{:?}", done[3])
    };
    assert!(document_id(generated).is_some());
    assert_eq!(ids(&all_docs(store.as_ref(), "b").await), ["new"]);
    assert_eq!(store.count("b", &Selector::all()).await.unwrap(), 1);
    assert_eq!(store.count("other", &Selector::all()).await.unwrap(), 1);
}

async fn batch_whose_third_write_fails_writes_nothing(store: Arc<dyn Store>) {
    use portico_store::{BatchFailure, BatchOp};
    store
        .insert("b", doc(json!({"_id": "keep", "n": 1})))
        .await
        .unwrap();
    let third_fails = |third: BatchOp| {
        vec![
            BatchOp::Insert {
                collection: "b".into(),
                doc: doc(json!({"_id": "a"})),
            },
            BatchOp::Update {
                collection: "b".into(),
                selector: sel(json!({"_id": "keep"})),
                update: Update::parse(&json!({"$set": {"n": 2}})).unwrap(),
            },
            third,
            BatchOp::Insert {
                collection: "b".into(),
                doc: doc(json!({"_id": "z"})),
            },
        ]
    };
    let cases = [
        BatchOp::Insert {
            collection: "b".into(),
            doc: doc(json!({"_id": "a"})),
        },
        BatchOp::Remove {
            collection: "b".into(),
            selector: sel(json!({"_id": "missing"})),
        },
        BatchOp::Update {
            collection: "b".into(),
            selector: sel(json!({"_id": "keep"})),
            update: Update::parse(&json!({"$push": {"n": 1}})).unwrap(),
        },
        BatchOp::Remove {
            collection: "fresh".into(),
            selector: Selector::all(),
        },
    ];
    for third in cases {
        let err = store.batch(third_fails(third)).await.unwrap_err();
        assert_eq!(err.index, 2, "{err}");
        if matches!(err.failure, BatchFailure::Unsupported) {
            panic!("{err}");
        }
        assert_eq!(
            all_docs(store.as_ref(), "b").await,
            vec![doc(json!({"_id": "keep", "n": 1}))]
        );
        assert_eq!(store.count("b", &Selector::all()).await.unwrap(), 1);
        assert_eq!(store.count("b", &sel(json!({"n": 2}))).await.unwrap(), 0);
    }
    assert!(matches!(
        store
            .batch(vec![BatchOp::Remove {
                collection: "b".into(),
                selector: sel(json!({"_id": "x"}))
            }])
            .await
            .unwrap_err()
            .failure,
        BatchFailure::NoMatch
    ));
}

async fn batch_is_atomic_for_a_concurrent_reader(store: Arc<dyn Store>) {
    use portico_store::BatchOp;
    // Each batch moves one unit from account a to account b: a reader must always see the sum.
    store
        .insert("acct", doc(json!({"_id": "a", "n": 1000})))
        .await
        .unwrap();
    store
        .insert("acct", doc(json!({"_id": "b", "n": 0})))
        .await
        .unwrap();
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                let step = |id: &str, by: i64| BatchOp::Update {
                    collection: "acct".into(),
                    selector: sel(json!({"_id": id})),
                    update: Update::parse(&json!({"$inc": {"n": by}})).unwrap(),
                };
                store
                    .batch(vec![step("a", -1), step("b", 1)])
                    .await
                    .unwrap();
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let docs = store.find("acct", &Query::default()).await.unwrap();
        let sum: i64 = docs.iter().map(|d| d["n"].as_i64().unwrap()).sum();
        assert_eq!(sum, 1000, "a reader saw half a batch: {docs:?}");
        reads += 1;
        tokio::task::yield_now().await;
    }
    writer.await.unwrap();
    let docs = store.find("acct", &Query::default()).await.unwrap();
    assert_eq!(docs[0]["n"], 800);
    assert_eq!(docs[1]["n"], 200);
    assert!(reads > 0);
}

async fn aggregates_group_count_and_compute(store: S) {
    for v in [
        json!({"_id": "1", "s": "open", "o": "ann", "n": 1, "m": {"x": 2.5}}),
        json!({"_id": "2", "s": "open", "o": ["ann", "bob"], "n": 3}),
        json!({"_id": "3", "s": "done", "o": "bob", "n": "x"}),
        json!({"_id": "4", "o": "ann", "n": 10}),
        json!({"_id": "5", "s": null, "o": {"a": "ann"}, "n": -4}),
        json!({"_id": "6", "s": ["a", "b"], "o": "ann", "n": 2}),
    ] {
        insert(&store, "agg", v).await;
    }
    let run = |selector: Value, group: Option<&str>| {
        let store = store.clone();
        let group = group.map(str::to_owned);
        async move {
            let mut spec = portico_store::Aggregate::new(sel(selector));
            spec.group = group;
            spec.count = true;
            spec.sum = vec!["n".into(), "m.x".into()];
            spec.avg = vec!["n".into()];
            spec.min = vec!["n".into()];
            spec.max = vec!["n".into()];
            let rows = store.aggregate("agg", &spec).await.expect("aggregate");
            Value::Array(rows.into_iter().map(Value::Object).collect())
        }
    };
    let everything = json!([
        {"_id": null, "count": 2, "sum_n": 6, "sum_m.x": 0, "avg_n": 3.0, "min_n": -4, "max_n": 10},
        {"_id": "done", "count": 1, "sum_n": 0, "sum_m.x": 0, "avg_n": null, "min_n": null, "max_n": null},
        {"_id": "open", "count": 2, "sum_n": 4, "sum_m.x": 2.5, "avg_n": 2.0, "min_n": 1, "max_n": 3},
        {"_id": ["a", "b"], "count": 1, "sum_n": 2, "sum_m.x": 0, "avg_n": 2.0, "min_n": 2, "max_n": 2},
    ]);
    // In SQL (no selector, or string equalities) and through the matcher ($gt) alike.
    assert_eq!(run(json!({}), Some("s")).await, everything);
    assert_eq!(
        run(json!({"n": {"$exists": true}}), Some("s")).await,
        everything
    );
    // An owner scope: equal, or an array element; an object holding the value is not.
    let owned = run(json!({"o": "ann"}), Some("s")).await;
    let counts: Vec<(Value, Value)> = owned
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| (r["_id"].clone(), r["count"].clone()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        counts,
        [
            (json!(null), json!(1)),
            (json!("open"), json!(2)),
            (json!(["a", "b"]), json!(1))
        ]
    );
    let via_matcher = run(json!({"$or": [{"o": "ann"}]}), Some("s")).await;
    assert_eq!(owned, via_matcher);
    // Without a group: one row, also when nothing matches.
    let one = run(json!({"o": "bob"}), None).await;
    assert_eq!(
        one,
        json!([{"_id": null, "count": 2, "sum_n": 3, "sum_m.x": 0, "avg_n": 3.0, "min_n": 3, "max_n": 3}])
    );
    let none = run(json!({"o": "nobody"}), None).await;
    assert_eq!(none[0]["count"], 0);
    let ghost = store
        .aggregate("ghost", &portico_store::Aggregate::new(Selector::all()))
        .await
        .expect("aggregate of a missing collection");
    assert_eq!(ghost.len(), 1);
    // Sorted by a figure and limited.
    let mut spec = portico_store::Aggregate::new(Selector::all());
    spec.group = Some("o".into());
    spec.count = true;
    spec.sort = Some(Sort::parse_list("-count").expect("sort"));
    spec.limit = Some(1);
    let top = store.aggregate("agg", &spec).await.expect("aggregate");
    assert_eq!(top.len(), 1);
    assert_eq!(top[0]["_id"], json!("ann"));
    assert_eq!(top[0]["count"], json!(3));
    let mut bad = portico_store::Aggregate::new(Selector::all());
    bad.sum = vec!["a.0".into()];
    assert!(store.aggregate("agg", &bad).await.is_err());
}

async fn search_ranks_whole_words_and_follows_writes(store: S) {
    let fields = vec!["title".to_owned(), "tags".to_owned()];
    // Made before any document and before the collection exists: it follows what comes.
    store
        .ensure_search("txt", &fields)
        .await
        .expect("ensure_search");
    store
        .ensure_search("txt", &fields)
        .await
        .expect("again: a no-op");
    for v in [
        // a, b and d have five words each: b, with three times the word, ranks first on
        // every backend (BM25 and ts_rank weigh lengths and counts differently otherwise).
        json!({"_id": "a", "title": "Red apple pear plum fig", "k": 1}),
        json!({"_id": "b", "title": "apple APPLE apple", "tags": ["red", {"x": "fruit"}], "k": 2}),
        json!({"_id": "c", "title": "pineapple", "other": "red apple", "k": 3}),
        json!({"_id": "d", "title": 7, "tags": "red-apple one two three", "k": 4}),
    ] {
        insert(&store, "txt", v).await;
    }
    let search = |text: &str, selector: Value, skip: u64, limit: Option<u64>| {
        let store = store.clone();
        let mut search = portico_store::Search::new(fields.clone(), text);
        search.selector = sel(selector);
        search.skip = skip;
        search.limit = limit;
        async move {
            let (docs, total) = store.search("txt", &search).await.expect("search");
            (ids(&docs), total)
        }
    };
    let (found, total) = search("RED apple", json!({}), 0, None).await;
    assert_eq!(total, 3);
    assert_eq!(found[0], "b", "most occurrences first: {found:?}");
    let mut rest = found[1..].to_vec();
    rest.sort();
    assert_eq!(rest, ["a", "d"]);
    assert_eq!(
        search("apple", json!({"k": {"$gte": 2}}), 1, Some(1))
            .await
            .1,
        2
    );
    assert_eq!(search("fruit", json!({}), 0, None).await.0, ["b"]);
    assert_eq!(
        search("pine", json!({}), 0, None).await.1,
        0,
        "whole words only"
    );
    assert_eq!(search("\" OR * title:x", json!({}), 0, None).await.1, 0);
    assert_eq!(search("  ", json!({}), 0, None).await.1, 0);
    // The index follows updates, replacements, removals and batches.
    store
        .update(
            "txt",
            &sel(json!({"_id": "c"})),
            &upd(json!({"$set": {"title": "red apple"}})),
            ONE,
        )
        .await
        .expect("update");
    store
        .update(
            "txt",
            &sel(json!({"_id": "a"})),
            &upd(json!({"title": "green pear"})),
            ONE,
        )
        .await
        .expect("replace");
    store
        .remove("txt", &sel(json!({"_id": "d"})))
        .await
        .expect("remove");
    let mut found = search("red apple", json!({}), 0, None).await.0;
    found.sort();
    assert_eq!(found, ["b", "c"]);
    let ops = vec![
        portico_store::BatchOp::Insert {
            collection: "txt".into(),
            doc: doc(json!({"_id": "e", "title": "pear"})),
        },
        portico_store::BatchOp::Remove {
            collection: "txt".into(),
            selector: sel(json!({"_id": "a"})),
        },
    ];
    store.batch(ops).await.expect("batch");
    assert_eq!(search("pear", json!({}), 0, None).await.0, ["e"]);
    // Dropped with its collection.
    store.drop_collection("txt").await.expect("drop");
    assert_eq!(search("pear", json!({}), 0, None).await.1, 0);
}

async fn id_lists_find_by_primary_key(store: S) {
    for id in ["a", "b", "c", "d"] {
        insert(&store, "ids", json!({"_id": id, "n": id})).await;
    }
    let found = find_ids(&store, "ids", json!({"_id": {"$in": ["d", "x", "b"]}})).await;
    assert_eq!(found, ["b", "d"]);
    let found = find_ids(
        &store,
        "ids",
        json!({"$and": [{"_id": {"$in": ["a", "b", 3]}}, {"n": {"$ne": "a"}}]}),
    )
    .await;
    assert_eq!(found, ["b"]);
    let found = find_ids(&store, "ids", json!({"_id": {"$in": []}})).await;
    assert!(found.is_empty());
}
