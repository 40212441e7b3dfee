//! Tests of what is particular to the SQLite backend: opening files, table names, index tables,
//! transactions. The behaviour every backend shares is checked by the conformance suite.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::index::keys;
use super::plan::{Plan, plan};
use super::schema::{collection_table, index_table};
use super::*;
use crate::{PageRead, RelatedField, RelatedRead};
use crate::{Query, Sort, document_id};

/// The pages of [`Store::find_page`] as JSON texts, for tests that compare what a reply would
/// embed: a decoded document is encoded, stored text is given as it is.
trait StoredTexts {
    /// The page of `query` as texts, and its total.
    async fn page_counted(&self, c: &str, query: &Query) -> crate::Result<(Vec<String>, u64)>;
    /// The page of `query` as texts, its total, and the related documents read along.
    async fn page_counted_related(
        &self,
        c: &str,
        query: &Query,
        related: &[RelatedField],
    ) -> crate::Result<(Vec<String>, u64, Vec<RelatedRead>)>;
}

impl<S: Store + ?Sized> StoredTexts for S {
    async fn page_counted(&self, c: &str, query: &Query) -> crate::Result<(Vec<String>, u64)> {
        let (texts, total, _) = self.page_counted_related(c, query, &[]).await?;
        Ok((texts, total))
    }

    async fn page_counted_related(
        &self,
        c: &str,
        query: &Query,
        related: &[RelatedField],
    ) -> crate::Result<(Vec<String>, u64, Vec<RelatedRead>)> {
        let read = PageRead::new(query.clone())
            .counted(true)
            .related(related.to_vec());
        let mut page = self.find_page(c, &read).await?;
        let related = std::mem::take(&mut page.related);
        let total = page.total.unwrap_or_default();
        Ok((page.into_texts()?, total, related))
    }
}

fn doc(v: Value) -> Document {
    match v {
        Value::Object(m) => m,
        other => panic!("test documents are objects, not {other}"),
    }
}

fn sel(v: Value) -> Selector {
    match Selector::parse(&v) {
        Ok(s) => s,
        Err(e) => panic!("bad test selector {v}: {e}"),
    }
}

fn upd(v: Value) -> Update {
    match Update::parse(&v) {
        Ok(u) => u,
        Err(e) => panic!("bad test update {v}: {e}"),
    }
}

async fn open_temp() -> (TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("store.db"))
        .await
        .expect("open store");
    (dir, store)
}

/// A second, plain connection on the store's file, to look at the tables as SQLite sees them.
fn raw(store: &SqliteStore) -> rusqlite::Connection {
    rusqlite::Connection::open(store.path()).expect("raw connection")
}

fn table_names(store: &SqliteStore) -> BTreeSet<String> {
    let conn = raw(store);
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .expect("prepare");
    stmt.query_map([], |row| row.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// Checks that the index table of `path` holds exactly the keys recomputed from the documents.
async fn assert_index_consistent(store: &SqliteStore, collection: &str, path: &str) {
    let docs = store
        .find(collection, &Query::default())
        .await
        .expect("find all");
    let mut expected = BTreeSet::new();
    for d in &docs {
        let id = document_id(d)
            .expect("stored documents have an id")
            .to_string();
        for key in keys(d, path) {
            expected.insert((key, id.clone()));
        }
    }
    let conn = raw(store);
    let mut stmt = conn
        .prepare(&format!(
            "SELECT value, id FROM {}",
            index_table(collection, path)
        ))
        .expect("index table exists");
    let actual: BTreeSet<(String, String)> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    assert_eq!(actual, expected, "index on {path:?} of {collection:?}");
}

fn ids(docs: &[Document]) -> Vec<&str> {
    docs.iter().filter_map(document_id).collect()
}

#[tokio::test]
async fn a_missing_file_is_created_and_data_survives_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("new.db");
    assert!(!path.exists());
    let store = SqliteStore::open(&path).await.expect("open");
    let id = store
        .insert("things", doc(json!({"a": 1})))
        .await
        .expect("insert");
    drop(store);
    assert!(path.exists());

    let store = SqliteStore::open(&path).await.expect("reopen");
    let found = store.get("things", &id).await.expect("get");
    assert_eq!(found, Some(doc(json!({"_id": id, "a": 1}))));
    let mode: String = raw(&store)
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .expect("journal mode");
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn a_path_in_a_missing_directory_is_an_open_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("no-such-dir").join("store.db");
    match SqliteStore::open(&path).await {
        Err(Error::Open(message)) => {
            assert!(message.contains("no-such-dir"), "{message}");
            assert!(message.contains("cannot be opened"), "{message}");
        }
        other => panic!("expected Error::Open, got {other:?}"),
    }
}

#[tokio::test]
async fn paths_sqlite_would_keep_in_memory_are_refused() {
    for path in ["", ":memory:"] {
        match SqliteStore::open(path).await {
            Err(Error::Open(message)) => assert!(message.contains("memory:"), "{message}"),
            other => panic!("expected Error::Open for {path:?}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_uri_is_not_interpreted() {
    // As a URI this would be an in-memory database; as a file name it is the relative path
    // `file:/tmp/...`, whose directory does not exist.
    let dir = tempfile::tempdir().expect("temp dir");
    let uri = format!("file:{}?mode=memory", dir.path().join("x.db").display());
    assert!(
        matches!(SqliteStore::open(&uri).await, Err(Error::Open(_))),
        "{uri}"
    );
}

#[tokio::test]
async fn a_directory_is_an_open_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    assert!(matches!(
        SqliteStore::open(dir.path()).await,
        Err(Error::Open(_))
    ));
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_an_open_error_and_is_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("notes.txt");
    let text = "These are my notes, not a database. ".repeat(50);
    std::fs::write(&path, &text).expect("write file");
    match SqliteStore::open(&path).await {
        Err(Error::Open(message)) => {
            assert!(message.contains("not a SQLite database"), "{message}");
            assert!(message.contains("notes.txt"), "{message}");
        }
        other => panic!("expected Error::Open, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&path).expect("read file"), text);
}

#[tokio::test]
async fn hostile_collection_names_are_plain_names() {
    let (_dir, store) = open_temp().await;
    store
        .insert("y", doc(json!({"_id": "keep", "v": 1})))
        .await
        .expect("insert y");
    let names = [
        "x\"; DROP TABLE y; --",
        "y\"",
        "portico_collections",
        "c_79",
        "ünïcödé 集合",
        "a.b$c",
    ];
    for name in names {
        store
            .insert(name, doc(json!({"_id": "1", "name": name})))
            .await
            .unwrap_or_else(|e| panic!("insert into {name:?}: {e}"));
        store
            .ensure_index(name, "name")
            .await
            .unwrap_or_else(|e| panic!("index {name:?}: {e}"));
        let found = store
            .find(name, &Query::new(sel(json!({"name": name}))))
            .await
            .expect("find");
        assert_eq!(ids(&found), ["1"], "{name:?}");
    }
    assert_eq!(
        store.get("y", "keep").await.expect("get"),
        Some(doc(json!({"_id": "keep", "v": 1})))
    );
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.push("y".to_string());
    expected.sort();
    assert_eq!(store.list_collections().await.expect("list"), expected);

    assert!(matches!(
        store.insert("", doc(json!({}))).await,
        Err(Error::InvalidName(_))
    ));
    store
        .drop_collection("x\"; DROP TABLE y; --")
        .await
        .expect("drop");
    assert_eq!(store.count("y", &Selector::all()).await.expect("count"), 1);
    assert_eq!(
        store
            .count("x\"; DROP TABLE y; --", &Selector::all())
            .await
            .expect("count"),
        0
    );
}

#[tokio::test]
async fn a_missing_collection_reads_as_empty_and_is_not_created_by_reads() {
    let (_dir, store) = open_temp().await;
    assert!(
        store
            .find("nothing", &Query::default())
            .await
            .expect("find")
            .is_empty()
    );
    assert_eq!(store.get("nothing", "x").await.expect("get"), None);
    assert_eq!(
        store
            .count("nothing", &Selector::all())
            .await
            .expect("count"),
        0
    );
    assert_eq!(
        store
            .remove("nothing", &Selector::all())
            .await
            .expect("remove"),
        0
    );
    let result = store
        .update(
            "nothing",
            &Selector::all(),
            &upd(json!({"$set": {"a": 1}})),
            UpdateOptions::default(),
        )
        .await
        .expect("update");
    assert_eq!(result, UpdateResult::default());
    store.drop_collection("nothing").await.expect("drop");
    assert!(store.list_collections().await.expect("list").is_empty());
}

#[tokio::test]
async fn duplicate_ids_are_refused_and_nothing_is_overwritten() {
    let (_dir, store) = open_temp().await;
    store
        .insert("c", doc(json!({"_id": "a", "v": 1})))
        .await
        .expect("insert");
    match store.insert("c", doc(json!({"_id": "a", "v": 2}))).await {
        Err(Error::DuplicateId { collection, id }) => {
            assert_eq!((collection.as_str(), id.as_str()), ("c", "a"));
        }
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    let many = store
        .insert_many(
            "c",
            vec![doc(json!({"_id": "b"})), doc(json!({"_id": "a", "v": 3}))],
        )
        .await;
    assert!(matches!(many, Err(Error::DuplicateId { .. })), "{many:?}");
    // All or nothing: "b" was rolled back with the failing "a".
    assert_eq!(store.get("c", "b").await.expect("get"), None);
    assert_eq!(
        store.get("c", "a").await.expect("get"),
        Some(doc(json!({"_id": "a", "v": 1})))
    );
}

#[tokio::test]
async fn index_tables_follow_inserts_updates_and_removes() {
    let (_dir, store) = open_temp().await;
    let c = "users";
    store
        .insert(
            "users",
            doc(json!({"_id": "u1", "emails": [{"address": "a@x"}], "tags": [1, 2]})),
        )
        .await
        .expect("insert");
    // Built from existing documents, then kept up to date.
    store
        .ensure_index(c, "emails.address")
        .await
        .expect("index");
    store.ensure_index(c, "tags").await.expect("index");
    store
        .ensure_index(c, "tags")
        .await
        .expect("index again is a no-op");
    store
        .insert_many(
            c,
            vec![
                doc(json!({"_id": "u2", "emails": [{"address": "b@x"}, {"address": "c@x"}], "tags": 3})),
                doc(json!({"_id": "u3", "tags": [[4], "five", true, null, 1.5, {"o": 1}]})),
            ],
        )
        .await
        .expect("insert many");
    let check = || async {
        assert_index_consistent(&store, c, "emails.address").await;
        assert_index_consistent(&store, c, "tags").await;
    };
    check().await;

    let steps = [
        (
            json!({"_id": "u1"}),
            json!({"$push": {"emails": {"address": "d@x"}}}),
        ),
        (
            json!({"_id": "u2"}),
            json!({"$pull": {"emails": {"address": "b@x"}}}),
        ),
        (json!({"tags": 3}), json!({"$set": {"tags": [3, 30]}})),
        (json!({}), json!({"$addToSet": {"tags": 99}})),
        (json!({"_id": "u3"}), json!({"only": "replacement"})),
    ];
    for (s, u) in steps {
        let result = store
            .update(
                c,
                &sel(s.clone()),
                &upd(u.clone()),
                UpdateOptions {
                    multi: true,
                    upsert: false,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("update {s} {u}: {e}"));
        assert!(result.modified > 0, "{s} {u}");
        check().await;
    }
    let found = store
        .find(c, &Query::new(sel(json!({"emails.address": "d@x"}))))
        .await
        .expect("find");
    assert_eq!(ids(&found), ["u1"]);
    let found = store
        .find(c, &Query::new(sel(json!({"tags": 99}))))
        .await
        .expect("find");
    assert_eq!(ids(&found), ["u1", "u2"]);

    assert_eq!(
        store
            .remove(c, &sel(json!({"tags": 30})))
            .await
            .expect("remove"),
        1
    );
    check().await;
    store
        .update(
            c,
            &sel(json!({"emails.address": "new@x"})),
            &upd(json!({"$set": {"tags": [7]}})),
            UpdateOptions {
                multi: false,
                upsert: true,
            },
        )
        .await
        .expect("upsert");
    check().await;
    assert_eq!(
        store
            .count(c, &sel(json!({"emails.address": "new@x", "tags": 7})))
            .await
            .expect("count"),
        1
    );
    assert_eq!(
        store.remove(c, &Selector::all()).await.expect("remove all"),
        3
    );
    check().await;
}

#[tokio::test]
async fn indexed_equalities_narrow_through_the_index_table() {
    let (_dir, store) = open_temp().await;
    store.ensure_index("c", "a.b").await.expect("index");
    let read = |s: Selector| {
        let store = store.clone();
        async move {
            store
                .with_reader(move |conn| plan(conn, "c", &s))
                .await
                .expect("plan")
        }
    };
    assert_eq!(
        read(sel(json!({"a.b": 1.0, "x": 2}))).await,
        Plan::Index {
            path: "a.b".into(),
            key: super::index::value_key(&json!(1)).expect("scalar key"),
        }
    );
    assert_eq!(
        read(sel(json!({"_id": "k", "a.b": 1}))).await,
        Plan::Id("k".into())
    );
    let scan = |needles: &[&str]| Plan::Scan {
        needles: needles.iter().map(|n| n.to_string()).collect(),
        numbers: Vec::new(),
        sizes: Vec::new(),
    };
    let numbers = |numbers: &[(&str, Value)]| Plan::Scan {
        needles: Vec::new(),
        numbers: numbers
            .iter()
            .filter_map(|(p, v)| Some((p.to_string(), v.as_number()?.clone())))
            .collect(),
        sizes: Vec::new(),
    };
    assert_eq!(
        read(sel(json!({"x": 2}))).await,
        numbers(&[("$.\"x\"", json!(2))])
    );
    // Dotted paths, and numbers too large for SQLite and the matcher to agree, are left alone.
    assert_eq!(
        read(sel(
            json!({"x.y": 2, "big": 9_007_199_254_740_993u64, "q\"": 1, "f": 0.5})
        ))
        .await,
        scan(&[])
    );
    // Strings and booleans are looked for in the stored text, as serde_json writes them.
    assert_eq!(
        read(sel(json!({"x": "a\"b", "y": true, "z.w": 1}))).await,
        scan(&["\"a\\\"b\"", "true"])
    );
    // A top-level `$size` is counted by SQLite; a dotted one is left to the matcher.
    assert_eq!(
        read(sel(json!({"a": {"$size": 3}, "b.c": {"$size": 1}}))).await,
        Plan::Scan {
            needles: Vec::new(),
            numbers: Vec::new(),
            sizes: vec![("$.\"a\"".to_string(), 3)],
        }
    );
    // `null` also matches a missing field, which the index cannot list.
    assert_eq!(read(sel(json!({"a.b": null}))).await, scan(&[]));

    // Numbers equal by value find each other through the index; the matcher has the last word.
    store
        .insert_many(
            "c",
            vec![
                doc(json!({"_id": "1", "a": {"b": 1}})),
                doc(json!({"_id": "2", "a": [{"b": 1.0}, {"b": 2}]})),
                doc(json!({"_id": "3", "a": {"b": [5, 1]}})),
                doc(json!({"_id": "4", "a": {"b": "1"}})),
                doc(json!({"_id": "5"})),
            ],
        )
        .await
        .expect("insert");
    let found = store
        .find("c", &Query::new(sel(json!({"a.b": 1}))))
        .await
        .expect("find");
    assert_eq!(ids(&found), ["1", "2", "3"]);
    let found = store
        .find(
            "c",
            &Query::new(sel(json!({"a.b": 1, "_id": {"$gt": "1"}}))),
        )
        .await
        .expect("find");
    assert_eq!(ids(&found), ["2", "3"]);
    let found = store
        .find("c", &Query::new(sel(json!({"a.b": null}))))
        .await
        .expect("find");
    assert_eq!(ids(&found), ["5"]);
}

#[tokio::test]
async fn a_failing_multi_update_rolls_back_every_document() {
    let (_dir, store) = open_temp().await;
    store.ensure_index("c", "n").await.expect("index");
    let before = vec![
        doc(json!({"_id": "a", "n": 1})),
        doc(json!({"_id": "b", "n": 2})),
        doc(json!({"_id": "c", "n": "three"})),
        doc(json!({"_id": "d", "n": 4})),
    ];
    store
        .insert_many("c", before.clone())
        .await
        .expect("insert");
    let result = store
        .update(
            "c",
            &Selector::all(),
            &upd(json!({"$inc": {"n": 10}})),
            UpdateOptions {
                multi: true,
                upsert: false,
            },
        )
        .await;
    assert!(
        matches!(result, Err(Error::InvalidModifier(_))),
        "{result:?}"
    );
    assert_eq!(
        store.find("c", &Query::default()).await.expect("find"),
        before
    );
    assert_index_consistent(&store, "c", "n").await;
    assert_eq!(
        store
            .count("c", &sel(json!({"n": 11})))
            .await
            .expect("count"),
        0
    );

    // A failing upsert inserts nothing either.
    let result = store
        .update(
            "c",
            &sel(json!({"n": "hundred"})),
            &upd(json!({"$inc": {"n": 1}})),
            UpdateOptions {
                multi: false,
                upsert: true,
            },
        )
        .await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 4);
}

#[tokio::test]
async fn sorted_pages_keep_only_what_they_return_and_break_ties_by_id() {
    let (_dir, store) = open_temp().await;
    let docs: Vec<Document> = (0..200)
        .map(|i| doc(json!({"_id": format!("{i:03}"), "k": (i * 7) % 13, "odd": i % 2 == 1})))
        .collect();
    store.insert_many("c", docs.clone()).await.expect("insert");
    let sort = Sort::parse(&json!({"k": -1})).expect("sort");
    let selector = sel(json!({"odd": true}));
    let mut expected: Vec<Document> = docs
        .iter()
        .filter(|d| selector.matches(d))
        .cloned()
        .collect();
    expected.sort_by(|a, b| sort.compare(a, b));
    for (skip, limit) in [
        (0, Some(1)),
        (0, Some(20)),
        (15, Some(20)),
        (90, Some(20)),
        (7, None),
    ] {
        let query = Query {
            selector: selector.clone(),
            sort: Some(sort.clone()),
            skip,
            limit,
            projection: None,
        };
        let found = store.find("c", &query).await.expect("find");
        let want: Vec<Document> = expected
            .iter()
            .skip(skip as usize)
            .take(limit.map_or(usize::MAX, |l| l as usize))
            .cloned()
            .collect();
        assert_eq!(ids(&found), ids(&want), "skip {skip} limit {limit:?}");
    }
    // Without a selector, SQLite does the skipping and limiting.
    let query = Query {
        skip: 195,
        limit: Some(10),
        ..Query::default()
    };
    let found = store.find("c", &query).await.expect("find");
    assert_eq!(ids(&found), ["195", "196", "197", "198", "199"]);
}

#[tokio::test]
async fn dropping_a_collection_drops_its_tables() {
    let (_dir, store) = open_temp().await;
    store
        .insert("gone", doc(json!({"a": [1, 2]})))
        .await
        .expect("insert");
    store.ensure_index("gone", "a").await.expect("index");
    store
        .insert("kept", doc(json!({"a": 1})))
        .await
        .expect("insert");
    let tables = table_names(&store);
    let gone_table = collection_table("gone").trim_matches('"').to_string();
    let gone_index = index_table("gone", "a").trim_matches('"').to_string();
    assert!(
        tables.contains(&gone_table) && tables.contains(&gone_index),
        "{tables:?}"
    );

    store.drop_collection("gone").await.expect("drop");
    let tables = table_names(&store);
    assert!(
        !tables.contains(&gone_table) && !tables.contains(&gone_index),
        "{tables:?}"
    );
    assert_eq!(store.list_collections().await.expect("list"), ["kept"]);

    // A new collection of the same name starts empty, without the old index.
    store
        .insert("gone", doc(json!({"_id": "n", "a": 1})))
        .await
        .expect("insert");
    assert_eq!(
        store.count("gone", &Selector::all()).await.expect("count"),
        1
    );
    assert!(!table_names(&store).contains(&gone_index));
}

#[tokio::test]
async fn bad_index_paths_are_invalid_names() {
    let (_dir, store) = open_temp().await;
    for path in ["", "a..b", "$where", "a.$"] {
        assert!(
            matches!(
                store.ensure_index("c", path).await,
                Err(Error::InvalidName(_))
            ),
            "{path:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_lose_no_increment() {
    // Two stores are two writer connections, as two processes would have: SQLite's write lock
    // (BEGIN IMMEDIATE) serialises their read-modify-writes, not our mutex.
    let (_dir, first) = open_temp().await;
    let second = SqliteStore::open(first.path()).await.expect("second store");
    first
        .insert("c", doc(json!({"_id": "x", "n": 0})))
        .await
        .expect("insert");
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        tasks.push(tokio::spawn(async move {
            store
                .update(
                    "c",
                    &Selector::by_id("x"),
                    &upd(json!({"$inc": {"n": 1}, "$set": {format!("f{i}"): i}})),
                    UpdateOptions::default(),
                )
                .await
        }));
    }
    for task in tasks {
        let result = task.await.expect("task").expect("update");
        assert_eq!(result.modified, 1);
    }
    let stored = second.get("c", "x").await.expect("get").expect("present");
    assert_eq!(stored.get("n"), Some(&json!(40)));
    assert_eq!(stored.len(), 42);
}

#[tokio::test]
async fn quick_first_match_only_answers_point_reads_within_budget() {
    let (_dir, store) = open_temp().await;
    store.ensure_index("c", "k").await.expect("index");
    let docs: Vec<Document> = (0..40)
        .map(|i| doc(json!({"_id": format!("{i:02}"), "k": "same", "n": i})))
        .collect();
    store.insert_many("c", docs).await.expect("insert");
    let quick = |s: Value, budget: usize| {
        let store = store.clone();
        async move {
            let s = sel(s);
            store
                .with_reader(move |conn| super::query::find_first_quick(conn, "c", &s, budget))
                .await
                .expect("quick find")
        }
    };
    let by_id = quick(json!({"_id": "07"}), 16).await;
    assert_eq!(
        by_id.flatten().and_then(|d| d.get("n").cloned()),
        Some(json!(7))
    );
    assert_eq!(quick(json!({"_id": "nope"}), 16).await, Some(None));
    let early = quick(json!({"k": "same", "n": 3}), 16).await;
    assert_eq!(
        early.flatten().and_then(|d| d.get("n").cloned()),
        Some(json!(3))
    );
    // The match is the 31st candidate: past the budget, so the caller must do the full read.
    assert_eq!(quick(json!({"k": "same", "n": 30}), 16).await, None);
    // No index to narrow with: never quick.
    assert_eq!(quick(json!({"n": 1}), 16).await, None);
    // Through the trait, every case gets its answer.
    let found = store
        .find_one("c", &sel(json!({"k": "same", "n": 30})))
        .await
        .expect("find_one");
    assert_eq!(found.and_then(|d| d.get("n").cloned()), Some(json!(30)));
    assert_eq!(
        store
            .find_one("missing", &sel(json!({"_id": "x"})))
            .await
            .expect("find_one"),
        None
    );
}

#[tokio::test]
async fn text_narrowed_scans_miss_no_match() {
    let (_dir, store) = open_temp().await;
    let values = [
        json!("plain"),
        json!("quote \" and \\ backslash"),
        json!("tab\tnew\nline\u{1}"),
        json!("ünïcödé ✓ 😀"),
        json!(""),
        json!(true),
        json!(false),
    ];
    let mut docs = Vec::new();
    for (i, v) in values.iter().enumerate() {
        docs.push(doc(json!({"_id": format!("{i}-top"), "f": v})));
        docs.push(doc(json!({"_id": format!("{i}-array"), "f": ["other", v]})));
        docs.push(doc(
            json!({"_id": format!("{i}-nested"), "g": [{"f": 0}, {"f": v}]}),
        ));
    }
    store.insert_many("c", docs.clone()).await.expect("insert");
    for v in &values {
        for s in [
            json!({"f": v}),
            json!({"g.f": v}),
            json!({"$and": [{"f": v}, {"_id": {"$ne": "x"}}]}),
        ] {
            let selector = sel(s.clone());
            let mut want: Vec<&Document> = docs.iter().filter(|d| selector.matches(d)).collect();
            want.sort_by_key(|d| document_id(d));
            assert!(!want.is_empty(), "{s}");
            let found = store
                .find("c", &Query::new(selector.clone()))
                .await
                .expect("find");
            assert_eq!(found.iter().collect::<Vec<_>>(), want, "{s}");
            assert_eq!(
                store.count("c", &selector).await.expect("count"),
                want.len() as u64,
                "{s}"
            );
        }
    }
}

#[tokio::test]
async fn quick_finds_answer_as_full_finds_or_step_aside() {
    let (_dir, store) = open_temp().await;
    store.ensure_index("c", "tags").await.expect("index");
    let docs: Vec<Document> = (0..60)
        .map(|i| {
            let tag = if i % 10 == 0 { "rare" } else { "common" };
            doc(json!({"_id": format!("{i:02}"), "tags": [tag, "all"], "n": i % 4, "x": i}))
        })
        .collect();
    store.insert_many("c", docs).await.expect("insert");
    let both = |query: Query| {
        let store = store.clone();
        async move {
            let q = query.clone();
            let quick = store
                .with_reader(move |conn| super::query::find_quick(conn, "c", &q, 16, (32, 4_000)))
                .await
                .expect("quick find");
            let full = store
                .with_reader(move |conn| super::query::find(conn, "c", &query))
                .await
                .expect("full find");
            (quick, full)
        }
    };
    let projection = crate::Projection::parse(&json!({"n": 1})).expect("projection");
    let queries = [
        Query::new(sel(json!({"tags": "rare"}))),
        Query::new(sel(json!({"tags": "rare", "n": 0}))),
        Query {
            sort: Some(Sort::parse(&json!({"n": -1, "x": 1})).expect("sort")),
            skip: 1,
            limit: Some(3),
            projection: Some(projection),
            ..Query::new(sel(json!({"tags": "rare"})))
        },
        Query::new(sel(json!({"_id": "10"}))),
        Query::new(sel(json!({"_id": "10", "n": 3}))),
        Query::new(sel(json!({"tags": "none"}))),
    ];
    for query in queries {
        let (quick, full) = both(query.clone()).await;
        assert_eq!(quick.as_ref(), Some(&full), "{query:?}");
    }
    // 54 entries for "common": more than the budget, so the quick path steps aside; likewise
    // for a selector no index narrows.
    for s in [json!({"tags": "common"}), json!({"n": 1})] {
        let (quick, full) = both(Query::new(sel(s.clone()))).await;
        assert_eq!(quick, None, "{s}");
        assert!(!full.is_empty());
    }
    // Through the trait, both paths give the same answers.
    let all = store
        .find("c", &Query::new(sel(json!({"tags": "all"}))))
        .await
        .expect("find");
    assert_eq!(all.len(), 60);
    let rare = store
        .find("c", &Query::new(sel(json!({"tags": "rare"}))))
        .await
        .expect("find");
    assert_eq!(ids(&rare), ["00", "10", "20", "30", "40", "50"]);
}

#[tokio::test]
async fn number_narrowed_scans_miss_no_match() {
    let (_dir, store) = open_temp().await;
    let stored = [
        json!(7),
        json!(7.0),
        json!(-7),
        json!([1, 7]),
        json!([[7]]),
        json!("7"),
        json!(true),
        json!(1),
        json!(1.0),
        json!({"a": 7}),
        json!(0),
        json!(-0.0),
        json!(2.5),
        json!(1e15),
        json!(1_000_000_000_000_000u64),
        json!(9_007_199_254_740_993u64),
        json!(null),
    ];
    let mut docs: Vec<Document> = stored
        .iter()
        .enumerate()
        .map(|(i, v)| doc(json!({"_id": format!("{i:02}"), "f": v})))
        .collect();
    docs.push(doc(json!({"_id": "missing"})));
    store.insert_many("c", docs.clone()).await.expect("insert");
    let wanted = [
        json!(7),
        json!(7.0),
        json!(-7),
        json!(1),
        json!(0),
        json!(-0.0),
        json!(2.5),
        json!(1e15),
        json!(1_000_000_000_000_000u64),
        json!(9_007_199_254_740_993u64),
        json!(3),
    ];
    for v in wanted {
        for s in [json!({"f": v}), json!({"f": v, "_id": {"$gte": "0"}})] {
            let selector = sel(s.clone());
            let want: Vec<&Document> = docs.iter().filter(|d| selector.matches(d)).collect();
            let found = store
                .find("c", &Query::new(selector.clone()))
                .await
                .expect("find");
            assert_eq!(found.iter().collect::<Vec<_>>(), want, "{s}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_collection_counts_survive_reopening_and_bulk_inserts() {
    let (dir, store) = open_temp().await;
    let docs = (0..50).map(|i| doc(json!({"_id": format!("b{i:02}"), "i": i})));
    store.insert_many("bulk", docs).await.expect("insert_many");
    let failing = vec![doc(json!({"_id": "new"})), doc(json!({"_id": "b01"}))];
    assert!(store.insert_many("bulk", failing).await.is_err());
    store
        .insert("small", doc(json!({"a": 1})))
        .await
        .expect("insert");
    store
        .remove("bulk", &sel(json!({"i": {"$gte": 40}})))
        .await
        .expect("remove");
    assert_eq!(
        store.count("bulk", &Selector::all()).await.expect("count"),
        40
    );
    drop(store);

    let store = SqliteStore::open(dir.path().join("store.db"))
        .await
        .expect("reopen");
    assert_eq!(
        store.count("bulk", &Selector::all()).await.expect("count"),
        40
    );
    assert_eq!(
        store.count("small", &Selector::all()).await.expect("count"),
        1
    );
    // The kept count is what a scan finds.
    let n: i64 = raw(&store)
        .query_row(
            &format!("SELECT COUNT(*) FROM {}", collection_table("bulk")),
            [],
            |row| row.get(0),
        )
        .expect("scan count");
    assert_eq!(n, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_kept_counts_gets_them_when_opened() {
    let (dir, store) = open_temp().await;
    for i in 0..7 {
        store
            .insert("old", doc(json!({"_id": format!("o{i}")})))
            .await
            .expect("insert");
    }
    drop(store);
    // As a file written before the counts were kept.
    let path = dir.path().join("store.db");
    rusqlite::Connection::open(&path)
        .expect("raw connection")
        .execute_batch("DROP TABLE portico_counts")
        .expect("drop counts");

    let store = SqliteStore::open(&path).await.expect("reopen");
    assert_eq!(
        store.count("old", &Selector::all()).await.expect("count"),
        7
    );
    store
        .insert("old", doc(json!({"_id": "o7"})))
        .await
        .expect("insert");
    assert_eq!(
        store.count("old", &Selector::all()).await.expect("count"),
        8
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_pages_read_inline_agree_with_large_pages() {
    let (_dir, store) = open_temp().await;
    let docs = (0..80).map(|i| doc(json!({"_id": format!("p{i:02}"), "i": i, "x": "y"})));
    store.insert_many("pages", docs).await.expect("insert_many");
    let page = |skip, limit| Query {
        skip,
        limit: Some(limit),
        projection: Some(crate::Projection::parse_list("i").expect("projection")),
        ..Query::default()
    };
    // skip + limit within the inline budget, and beyond it (the blocking pool).
    let small = store.find("pages", &page(5, 20)).await.expect("small page");
    let large = store.find("pages", &page(0, 60)).await.expect("large page");
    assert_eq!(small.len(), 20);
    assert_eq!(small[..], large[5..25]);
    assert_eq!(small[0], doc(json!({"_id": "p05", "i": 5})));
    let past_end = store.find("pages", &page(25, 5)).await.expect("page");
    assert_eq!(ids(&past_end), ["p25", "p26", "p27", "p28", "p29"]);
    assert!(
        store
            .find("nothing", &page(0, 20))
            .await
            .expect("missing")
            .is_empty()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any double, in any of the spellings clients use, and any integer beyond 64 bits, comes
    /// back from a SQLite round trip spelled as it was sent, and finds itself by equality.
    #[test]
    fn random_numbers_round_trip_exactly(
        f in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL,
        big in proptest::prelude::any::<u128>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let (_dir, store) = open_temp().await;
            let texts = [format!("{f}"), format!("{f:e}"), format!("{f:.16e}"), format!("{big}0"), format!("-{big}")];
            for (i, text) in texts.iter().enumerate() {
                let id = format!("d{i}");
                let v: Value = serde_json::from_str(&format!(r#"{{"_id":"{id}","x":{text}}}"#)).expect("JSON");
                store.insert("n", doc(v)).await.expect("insert");
                let got = store.get("n", &id).await.expect("get").expect("found");
                // serde_json writes an exponent's sign (`e290` comes back `e+290`); nothing else
                // of the spelling changes.
                let spelled = text.replace('e', "e+").replace("e+-", "e-");
                assert_eq!(got["x"].to_string(), spelled);
                if i < 3 {
                    assert_eq!(got["x"].as_f64().map(f64::to_bits), Some(f.to_bits()));
                }
                let selector: Value = serde_json::from_str(&format!(r#"{{"x":{text}}}"#)).expect("JSON");
                let found = store.find("n", &Query::new(sel(selector))).await.expect("find");
                assert!(found.iter().any(|d| d["_id"] == id.as_str()), "{text} finds itself");
            }
        });
    }
}

/// Concurrent single inserts are committed in groups: every one is answered for itself (a
/// duplicate `_id` fails alone, the others of its group are written), every acknowledged one is
/// in the file after reopening, and the kept count matches. A unique index refusing one insert
/// of a group leaves the rest of the group written too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_commit_in_groups_and_fail_alone() {
    let (dir, store) = open_temp().await;
    store.ensure_unique_index("items", "email").await.unwrap();
    store
        .insert("items", doc(json!({"_id": "taken", "email": "e-taken"})))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for n in 0..200 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let d = match n % 10 {
                // A duplicate `_id`, and a duplicate unique value: both must fail alone.
                3 => json!({"_id": "taken", "email": format!("e{n}")}),
                7 => json!({"_id": format!("d{n:03}"), "email": "e-taken"}),
                _ => json!({"_id": format!("d{n:03}"), "email": format!("e{n}")}),
            };
            (n, store.insert("items", doc(d)).await)
        }));
    }
    let mut acknowledged = Vec::new();
    for task in tasks {
        let (n, result) = task.await.unwrap();
        match (n % 10, result) {
            (3, Err(Error::DuplicateId { .. })) | (7, Err(Error::DuplicateKey { .. })) => {}
            (3 | 7, other) => panic!("insert {n} should fail alone: {other:?}"),
            (_, Ok(id)) => acknowledged.push(id),
            (_, Err(e)) => panic!("insert {n} failed: {e}"),
        }
    }
    assert_eq!(acknowledged.len(), 160);
    drop(store);
    let store = SqliteStore::open(dir.path().join("store.db"))
        .await
        .unwrap();
    for id in &acknowledged {
        assert!(store.get("items", id).await.unwrap().is_some(), "{id}");
    }
    assert_eq!(store.count("items", &Selector::all()).await.unwrap(), 161);
    let counted = store
        .find("items", &Query::new(Selector::all()))
        .await
        .unwrap()
        .len();
    assert_eq!(counted, 161);
    assert_index_consistent(&store, "items", "email").await;
}

/// An insert that finds SQLite's write lock held by another connection (another process, in
/// effect) is not refused: the group waits in the blocking pool and commits once the lock is
/// released. One that runs on the async worker while the lock is free commits at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_wait_for_a_write_lock_held_elsewhere() {
    let (_dir, store) = open_temp().await;
    store
        .insert("items", doc(json!({"_id": "first"})))
        .await
        .expect("insert with the lock free");
    let other = raw(&store);
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let mut tasks = Vec::new();
    for n in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .insert("items", doc(json!({"_id": format!("d{n:02}")})))
                .await
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        tasks.iter().all(|t| !t.is_finished()),
        "no insert is answered while another connection holds the write lock"
    );
    other.execute_batch("COMMIT").expect("release the lock");
    for task in tasks {
        task.await
            .expect("task")
            .expect("insert after the lock is released");
    }
    assert_eq!(
        store.count("items", &Selector::all()).await.expect("count"),
        21
    );
}

/// A caller that goes away while its insert waits for a group (a client that disconnects)
/// does not block the inserts after it. On one thread, so that the caller is dropped at each
/// step of its insert in turn (after 0, 1, 2 or 3 turns of the scheduler).
#[tokio::test(flavor = "current_thread")]
async fn an_abandoned_insert_blocks_no_later_insert() {
    let (_dir, store) = open_temp().await;
    for round in 0..50 {
        let leader = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .insert("items", doc(json!({"_id": format!("gone{round:02}")})))
                    .await
            })
        };
        for _ in 0..round % 4 {
            tokio::task::yield_now().await;
        }
        leader.abort();
        let after = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            store.insert("items", doc(json!({"_id": format!("kept{round:02}")}))),
        )
        .await
        .expect("a later insert is answered");
        after.expect("insert");
    }
    let kept = store
        .count(
            "items",
            &Selector::parse(&json!({"_id": {"$regex": "^kept"}})).expect("selector"),
        )
        .await
        .expect("count");
    assert_eq!(kept, 50);
}

/// Writes reach the database file through the checkpoint thread, not only the WAL: the writer's
/// own threshold (64 MiB) is far above what is written here, so the file grows only if the
/// thread checkpoints.
#[tokio::test]
async fn the_checkpoint_thread_moves_writes_into_the_database_file() {
    let (dir, store) = open_temp().await;
    let file = dir.path().join("store.db");
    let size = || std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let before = size();
    // 30 writes of 20 KB: about 200 WAL pages, under even SQLite's default threshold (1,000).
    let payload = "x".repeat(20_000);
    for i in 0..30 {
        store
            .insert("c", doc(json!({"_id": format!("d{i}"), "p": payload})))
            .await
            .expect("insert");
    }
    let mut grew = false;
    for _ in 0..80 {
        if size() > before + 500_000 {
            grew = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(grew, "database file {before} -> {} bytes", size());
    // Everything is still there, read through the pool.
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 30);
}

/// A stream loads with a larger page cache and puts SQLite's default back after, also when
/// it fails.
#[tokio::test]
async fn a_stream_puts_the_page_cache_back() {
    let (_dir, store) = open_temp().await;
    let cache = |store: &SqliteStore| {
        store
            .pool
            .write(|conn| Ok(conn.pragma_query_value(None, "cache_size", |r| r.get::<_, i64>(0))?))
            .expect("cache_size")
    };
    let before = cache(&store);
    let docs: crate::DocumentBatches =
        Box::new(vec![Ok(vec![doc(json!({"_id": "a"})), doc(json!({"_id": "b"}))])].into_iter());
    assert_eq!(store.insert_stream("s", docs).await.expect("stream"), 2);
    assert_eq!(cache(&store), before);
    let failing: crate::DocumentBatches =
        Box::new(vec![Ok(vec![doc(json!({"_id": "c"})), doc(json!({"_id": "a"}))])].into_iter());
    assert!(store.insert_stream("s", failing).await.is_err());
    assert_eq!(cache(&store), before);
    assert_eq!(store.count("s", &Selector::all()).await.expect("count"), 2);
}

/// A small page, its total and the documents its relation fields name, in one read
/// transaction: ids each once (strings, or the strings of an array), in page then array order;
/// the documents as their stored text; a related document changed is seen by the next read; at
/// most `INLINE_RELATED` ids in all are looked up (the caller reads the others).
#[tokio::test]
async fn small_pages_read_their_related_documents_along() {
    let (_dir, store) = open_temp().await;
    for d in [
        json!({"_id": "p0", "author": "u2", "tags": ["g1", "missing", "g0", 7, "g1", ["g2"]]}),
        json!({"_id": "p1", "author": "u1", "tags": "g2", "meta": {"author": "u3"}}),
        json!({"_id": "p2", "author": {"_id": "u3"}, "tags": []}),
        json!({"_id": "p3", "author": "nobody"}),
    ] {
        store.insert("posts", doc(d)).await.expect("insert post");
    }
    for d in [
        json!({"_id": "u1", "name": "One"}),
        json!({"_id": "u2", "name": "Two"}),
        json!({"_id": "u3", "name": "Three"}),
    ] {
        store.insert("people", doc(d)).await.expect("insert person");
    }
    for i in 0..3 {
        store
            .insert("tags", doc(json!({"_id": format!("g{i}"), "n": i})))
            .await
            .expect("insert tag");
    }
    let follow = [
        RelatedField::new("author", "people", 1000),
        RelatedField::new("tags", "tags", 1000),
        RelatedField::new("author", "nowhere", 1000),
    ];
    let query = Query {
        limit: Some(20),
        ..Query::default()
    };
    let found = |read: &RelatedRead| -> Vec<(String, String)> {
        let mut texts = read.texts.clone();
        texts.sort();
        texts
    };
    let (page, total, reads) = store
        .page_counted_related("posts", &query, &follow)
        .await
        .expect("page");
    assert_eq!((page.len(), total, reads.len()), (4, 4, 3));
    assert_eq!(reads[0].field, "author");
    assert_eq!(reads[0].ids, ["u2", "u1", "nobody"]);
    let person =
        |id: &str, name: &str| (id.to_owned(), json!({"_id": id, "name": name}).to_string());
    assert_eq!(found(&reads[0]), [person("u1", "One"), person("u2", "Two")]);
    assert_eq!(reads[1].ids, ["g1", "missing", "g0", "g2"]);
    assert_eq!(
        found(&reads[1])
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        ["g0", "g1", "g2"]
    );
    // A related collection that does not exist: looked up, nothing found.
    assert_eq!(reads[2].ids, ["u2", "u1", "nobody"]);
    assert!(reads[2].texts.is_empty());

    store
        .update(
            "people",
            &sel(json!({"_id": "u1"})),
            &upd(json!({"$set": {"name": "Uno"}})),
            UpdateOptions::default(),
        )
        .await
        .expect("update person");
    let (_, _, reads) = store
        .page_counted_related("posts", &query, &follow[..1])
        .await
        .expect("after the write");
    assert_eq!(found(&reads[0]), [person("u1", "Uno"), person("u2", "Two")]);

    // More ids than the budget: the first ones, in page order; the rest are the caller's.
    let many: Vec<String> = (0..INLINE_RELATED + 10)
        .map(|i| format!("m{i:03}"))
        .collect();
    store
        .insert("lists", doc(json!({"_id": "l0", "items": many})))
        .await
        .expect("insert list");
    let follow = [
        RelatedField::new("items", "tags", 1000),
        RelatedField::new("items", "people", 1000),
    ];
    let (_, _, reads) = store
        .page_counted_related("lists", &query, &follow)
        .await
        .expect("many ids");
    assert_eq!(reads[0].ids, many[..INLINE_RELATED]);
    assert!(reads[1].ids.is_empty(), "the budget is for the whole page");

    // Past the end: the total, nothing looked up.
    let past = Query {
        skip: 10,
        limit: Some(5),
        ..Query::default()
    };
    let (page, total, reads) = store
        .page_counted_related("posts", &past, &follow[..1])
        .await
        .expect("past the end");
    assert_eq!((page.len(), total), (0, 4));
    assert!(reads.iter().all(|r| r.ids.is_empty() && r.texts.is_empty()));
}

/// The rows of the sorted index `spec` of `collection`, recomputed from the documents, equal
/// the rows of its table: an index never disagrees with the data it indexes.
fn assert_sorted_consistent(store: &SqliteStore, collection: &str, spec: &crate::IndexSpec) {
    let conn = raw(store);
    let n = spec.fields.len();
    let cols: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT id, {} FROM {}",
            cols.join(", "),
            schema::sorted_table(collection, spec)
        ))
        .expect("prepare");
    let stored: BTreeSet<(String, Vec<Vec<u8>>)> = stmt
        .query_map([], |row| {
            let id: String = row.get(0)?;
            let keys = (0..n)
                .map(|i| row.get::<_, Vec<u8>>(i + 1))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((id, keys))
        })
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    let mut docs = conn
        .prepare(&format!(
            "SELECT id, doc FROM {}",
            collection_table(collection)
        ))
        .expect("prepare");
    let expected: BTreeSet<(String, Vec<Vec<u8>>)> = docs
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .expect("query")
        .map(|r| r.expect("row"))
        .flat_map(|(id, text)| {
            let d: Document = serde_json::from_str(&text).expect("document");
            crate::order_key::entries(&d, &spec.split_paths())
                .expect("entries")
                .into_iter()
                .map(move |keys| (id.clone(), keys))
        })
        .collect();
    assert_eq!(stored, expected, "index {spec} of {collection}");
}

#[tokio::test]
async fn a_sorted_index_serves_sorts_past_the_window_and_stays_consistent() {
    let (_dir, store) = open_temp().await;
    let cities = ["Oslo", "Bergen", "Tromsø"];
    let docs: Vec<Document> = (0..10_050)
        .map(|i| {
            doc(json!({
                "_id": format!("d{i:05}"),
                "score": (i * 37) % 1000,
                "city": cities[i % 3],
                "tags": if i % 10 == 0 { json!(["x", "y"]) } else { json!("z") },
            }))
        })
        .collect();
    store
        .insert_many("items", docs.clone())
        .await
        .expect("insert");
    let far = Query {
        sort: Some(Sort::parse_list("-score").expect("sort")),
        skip: 10_000,
        limit: Some(20),
        ..Query::default()
    };
    // Without an index the window is refused.
    assert!(matches!(
        store.find("items", &far).await,
        Err(Error::InvalidSort(_))
    ));
    let by_score = crate::IndexSpec::new(["-score"]).expect("spec");
    let by_city = crate::IndexSpec::new(["city", "-score"]).expect("spec");
    let by_tag = crate::IndexSpec::new(["tags"]).expect("spec");
    for spec in [&by_score, &by_city, &by_tag] {
        store
            .ensure_sorted_index("items", spec)
            .await
            .expect("index");
        // Again: a no-op.
        store
            .ensure_sorted_index("items", spec)
            .await
            .expect("index");
    }
    let listed = store.sorted_indexes("items").await.expect("list");
    assert_eq!(listed.len(), 3);
    let sort = Sort::parse_list("-score").expect("sort");
    let mut expected = docs.clone();
    expected.sort_by(|a, b| sort.compare(a, b));
    let page = store
        .find("items", &far)
        .await
        .expect("served by the index");
    assert_eq!(ids(&page), ids(&expected[10_000..10_020]));
    // Equality prefix, then the sort; the total counted in the index.
    let oslo = Query {
        selector: sel(json!({"city": "Oslo"})),
        sort: Some(sort.clone()),
        limit: Some(5),
        ..Query::default()
    };
    let (texts, total) = store.page_counted("items", &oslo).await.expect("list");
    let want: Vec<&Document> = expected.iter().filter(|d| d["city"] == "Oslo").collect();
    assert_eq!(total, want.len() as u64);
    let got: Vec<Document> = texts
        .iter()
        .map(|t| serde_json::from_str(t).expect("json"))
        .collect();
    let want_ids: Vec<&str> = want[..5].iter().filter_map(|d| document_id(d)).collect();
    assert_eq!(ids(&got), want_ids);
    // Pages on both sides of the joined read's longest skip (the later ones read ids first).
    for skip in [1, 63, 64, 65, 100, 3000] {
        let query = Query {
            skip,
            ..oslo.clone()
        };
        let (texts, total) = store.page_counted("items", &query).await.expect("list");
        assert_eq!(total, want.len() as u64);
        let got: Vec<Document> = texts
            .iter()
            .map(|t| serde_json::from_str(t).expect("json"))
            .collect();
        let want_ids: Vec<&str> = want[skip as usize..(skip as usize + 5).min(want.len())]
            .iter()
            .filter_map(|d| document_id(d))
            .collect();
        assert_eq!(ids(&got), want_ids, "skip {skip}");
        assert_eq!(
            ids(&store.find("items", &query).await.expect("find")),
            want_ids
        );
    }
    // Without a sort, a large range is paged in `_id` order (the index counts the total).
    let unsorted = Query {
        selector: sel(json!({"city": "Bergen"})),
        skip: 7,
        limit: Some(5),
        ..Query::default()
    };
    let bergen: Vec<&Document> = docs.iter().filter(|d| d["city"] == "Bergen").collect();
    let (texts, total) = store.page_counted("items", &unsorted).await.expect("list");
    assert_eq!(total, bergen.len() as u64);
    let got: Vec<Document> = texts
        .iter()
        .map(|t| serde_json::from_str(t).expect("json"))
        .collect();
    let want_ids: Vec<&str> = bergen[7..12]
        .iter()
        .filter_map(|d| document_id(d))
        .collect();
    assert_eq!(ids(&got), want_ids);
    assert_eq!(
        ids(&store.find("items", &unsorted).await.expect("find")),
        want_ids
    );
    // A multikey index: each document once.
    let x = store
        .count("items", &sel(json!({"tags": {"$in": ["x", "y"]}})))
        .await
        .expect("count");
    assert_eq!(x, 1005);
    // Writes keep every index: update, replace, remove.
    store
        .update(
            "items",
            &sel(json!({"city": "Bergen"})),
            &upd(json!({"$inc": {"score": 1}, "$set": {"tags": ["y", "w"]}})),
            UpdateOptions::new(true, false),
        )
        .await
        .expect("update");
    store
        .remove("items", &sel(json!({"score": {"$lt": 100}})))
        .await
        .expect("remove");
    for spec in [&by_score, &by_city, &by_tag] {
        assert_sorted_consistent(&store, "items", spec);
    }
    assert!(
        store
            .drop_sorted_index("items", &by_tag)
            .await
            .expect("drop")
    );
    assert!(
        !store
            .drop_sorted_index("items", &by_tag)
            .await
            .expect("drop")
    );
    assert_eq!(store.sorted_indexes("items").await.expect("list").len(), 2);
}

#[tokio::test]
async fn a_document_with_too_many_index_entries_is_refused_and_nothing_is_written() {
    let (_dir, store) = open_temp().await;
    let spec = crate::IndexSpec::new(["a", "b"]).expect("spec");
    store.ensure_sorted_index("c", &spec).await.expect("index");
    let big: Vec<Value> = (0..100).map(|i| json!(i)).collect();
    let refused = store.insert("c", doc(json!({"a": big, "b": big}))).await;
    assert!(
        matches!(refused, Err(Error::InvalidDocument(_))),
        "{refused:?}"
    );
    assert_eq!(store.count("c", &Selector::all()).await.expect("count"), 0);
    store
        .insert("c", doc(json!({"a": big, "b": 1})))
        .await
        .expect("one array is fine");
    assert_sorted_consistent(&store, "c", &spec);
}

#[tokio::test]
async fn indexes_kept_between_reads_follow_changes_made_by_another_store_on_the_file() {
    // Two stores on one file stand for two processes: each change to the index catalog made
    // through one is seen by the other's next read, whatever it kept of the catalog.
    let (dir, first) = open_temp().await;
    let second = SqliteStore::open(dir.path().join("store.db"))
        .await
        .expect("second store");
    let spec = crate::IndexSpec::new(["-score"]).expect("spec");
    first
        .ensure_sorted_index("items", &spec)
        .await
        .expect("index");
    for (id, score) in [("a", json!(3)), ("b", json!(1)), ("c", json!(2))] {
        first
            .insert("items", doc(json!({"_id": id, "score": score})))
            .await
            .expect("insert");
    }
    let query = Query {
        sort: Some(Sort::parse_list("-score").expect("sort")),
        limit: Some(10),
        ..Query::default()
    };
    let page = |store: &SqliteStore| {
        let store = store.clone();
        let query = query.clone();
        async move {
            let (texts, total) = store.page_counted("items", &query).await.expect("page");
            let ids: Vec<String> = texts
                .iter()
                .map(|t| {
                    let v: Value = serde_json::from_str(t).expect("json");
                    v["_id"].as_str().expect("id").to_owned()
                })
                .collect();
            (ids, total)
        }
    };
    assert_eq!(
        page(&first).await,
        (vec!["a".into(), "c".into(), "b".into()], 3)
    );
    // The other store's write makes the index multikey: a document with two entries is
    // listed once, at its highest score.
    second
        .insert("items", doc(json!({"_id": "d", "score": [0, 5]})))
        .await
        .expect("insert");
    assert_eq!(
        page(&first).await,
        (vec!["d".into(), "a".into(), "c".into(), "b".into()], 4)
    );
    // Dropped by the other store: the read scans again, with the same answer.
    assert!(
        second
            .drop_sorted_index("items", &spec)
            .await
            .expect("drop")
    );
    assert_eq!(
        page(&first).await,
        (vec!["d".into(), "a".into(), "c".into(), "b".into()], 4)
    );
    assert!(
        first
            .sorted_indexes("items")
            .await
            .expect("list")
            .is_empty()
    );
    // Made again by the other store: served again, same answer.
    second
        .ensure_sorted_index("items", &spec)
        .await
        .expect("index");
    assert_eq!(
        page(&first).await,
        (vec!["d".into(), "a".into(), "c".into(), "b".into()], 4)
    );
}

#[tokio::test]
async fn an_inline_total_is_counted_only_within_its_budget_and_the_reader_stays_usable() {
    let (_dir, store) = open_temp().await;
    let spec = crate::IndexSpec::new(["city", "-score"]).expect("spec");
    store
        .ensure_sorted_index("items", &spec)
        .await
        .expect("index");
    let docs: Vec<Document> = (0..300)
        .map(|i| doc(json!({"_id": format!("d{i:03}"), "city": "Oslo", "score": i})))
        .chain((0..50).map(|i| doc(json!({"_id": format!("r{i:03}"), "city": "Rome", "score": i}))))
        .collect();
    store.insert_many("items", docs).await.expect("insert");
    // A range on the second field: not a kept prefix count, so the entries are counted.
    let query = Query {
        selector: crate::Selector::parse(&json!({"city": "Oslo", "score": {"$gte": 0}}))
            .expect("selector"),
        sort: Some(Sort::parse_list("-score").expect("sort")),
        limit: Some(3),
        ..Query::default()
    };
    let (small, large) = store
        .pool
        .read(|conn| {
            let small = sorted::read_quick(conn, "items", &query, true, true, (32, 50))?;
            let large = sorted::read_quick(conn, "items", &query, true, true, (32, 1_000))?;
            Ok((small.is_none(), large.map(|read| read.total)))
        })
        .expect("reads");
    // 300 entries take more steps than 50 entries may: not counted inline.
    assert!(
        small,
        "a total over the budget is left to the blocking pool"
    );
    // The same connection counts a range within the budget after that (the progress handler
    // that stopped the first count is gone).
    assert_eq!(large, Some(Some(300)));
    let (page, total) = store.page_counted("items", &query).await.expect("page");
    assert_eq!(total, 300);
    assert_eq!(page.len(), 3);
}

/// The keys of the prefix count rows of `spec` in `portico_counts` lie in `[marker, end)`.
fn prefix_keys(collection: &str, spec: &crate::IndexSpec) -> (Vec<u8>, Vec<u8>) {
    let table = schema::sorted_table(collection, spec);
    let mut marker = table.clone().into_bytes();
    marker.push(0);
    let mut end = table.into_bytes();
    end.push(1);
    (marker, end)
}

/// Checks that the kept prefix counts of `spec` (see `prefixes.rs`) are exactly the documents
/// per distinct prefix recomputed from the stored documents, and that the marker is there.
fn assert_prefix_counts_consistent(store: &SqliteStore, collection: &str, spec: &crate::IndexSpec) {
    let conn = raw(store);
    let (marker, end) = prefix_keys(collection, spec);
    let mut stmt = conn
        .prepare("SELECT name, n FROM portico_counts WHERE name >= ?1 AND name < ?2")
        .expect("prepare");
    let mut stored: std::collections::BTreeMap<Vec<u8>, i64> = stmt
        .query_map([&marker, &end], |row| {
            let name: Vec<u8> = row.get(0)?;
            Ok((name[marker.len()..].to_vec(), row.get(1)?))
        })
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    assert_eq!(stored.remove(&Vec::new()), Some(0), "the marker of {spec}");
    let mut docs = conn
        .prepare(&format!("SELECT doc FROM {}", collection_table(collection)))
        .expect("prepare");
    let mut expected: std::collections::BTreeMap<Vec<u8>, i64> = Default::default();
    for text in docs
        .query_map([], |row| row.get::<_, String>(0))
        .expect("query")
        .map(|r| r.expect("row"))
    {
        let d: Document = serde_json::from_str(&text).expect("document");
        let entries = crate::order_key::entries(&d, &spec.split_paths()).expect("entries");
        for len in 1..spec.fields.len() {
            let prefixes: BTreeSet<Vec<u8>> = entries
                .iter()
                .map(|row| crate::index_plan::encode_prefix(&row[..len]))
                .collect();
            for prefix in prefixes {
                *expected.entry(prefix).or_default() += 1;
            }
        }
    }
    assert_eq!(stored, expected, "prefix counts of {spec}");
}

/// The documents of `selector` as a scan finds them, for comparing totals with.
async fn scanned(store: &SqliteStore, selector: &Selector) -> u64 {
    let query = Query {
        selector: selector.clone(),
        ..Query::default()
    };
    store.find("items", &query).await.expect("find").len() as u64
}

/// The count and a sorted page's total of each of `lists` agree with a scan.
async fn totals_agree(store: &SqliteStore, lists: &[Value], when: &str) {
    for list in lists {
        let selector = sel(list.clone());
        let want = scanned(store, &selector).await;
        let count = store.count("items", &selector).await.expect("count");
        assert_eq!(count, want, "{when}: count {list}");
        let query = Query {
            selector,
            sort: Some(Sort::parse_list("-score").expect("sort")),
            limit: Some(3),
            ..Query::default()
        };
        let (_, total) = store.page_counted("items", &query).await.expect("page");
        assert_eq!(total, want, "{when}: total of {list}");
    }
}

#[tokio::test]
async fn prefix_counts_follow_every_write_and_are_the_totals_of_lists_pinning_a_prefix() {
    let (_dir, store) = open_temp().await;
    let by_city = crate::IndexSpec::new(["city", "-score"]).expect("spec");
    let by_tag = crate::IndexSpec::new(["tags", "owner", "-n"]).expect("spec");
    store
        .ensure_sorted_index("items", &by_city)
        .await
        .expect("index");
    let cities = [
        json!("Oslo"),
        json!("Rome"),
        json!(7),
        json!(null),
        json!(["Oslo", "Rome"]),
    ];
    let docs: Vec<Document> = (0..60)
        .map(|i| {
            let tags = if i % 3 == 0 {
                json!(["a", "b", "a"])
            } else {
                json!("a")
            };
            let owner = if i % 2 == 0 { "ann" } else { "bob" };
            let mut d = json!({"_id": format!("d{i:02}"), "score": i % 7, "n": i,
                "owner": owner, "tags": tags});
            if i % 11 != 0 {
                d["city"] = cities[i % cities.len()].clone();
            }
            doc(d)
        })
        .collect();
    store.insert_many("items", docs).await.expect("insert");
    // Made after the documents: its counts come from filling it.
    store
        .ensure_sorted_index("items", &by_tag)
        .await
        .expect("index");
    let check = || {
        assert_prefix_counts_consistent(&store, "items", &by_city);
        assert_prefix_counts_consistent(&store, "items", &by_tag);
    };
    check();
    let lists = [
        json!({"city": "Oslo"}),
        json!({"city": 7}),
        json!({"city": "Paris"}),
        json!({"tags": "a"}),
        json!({"tags": "b", "owner": "ann"}),
        json!({"tags": "c", "owner": "bob"}),
    ];
    totals_agree(&store, &lists, "after inserts").await;

    let one = UpdateOptions::new(false, false);
    let many = UpdateOptions::new(true, false);
    let moved = upd(json!({"$set": {"city": "Rome"}}));
    store
        .update("items", &sel(json!({"city": "Oslo"})), &moved, one)
        .await
        .expect("update");
    let pushed = upd(json!({"$push": {"tags": "c"}}));
    let bobs_arrays = sel(json!({"owner": "bob", "tags": "b"}));
    store
        .update("items", &bobs_arrays, &pushed, many)
        .await
        .expect("update");
    let unset = upd(json!({"$unset": {"city": ""}}));
    store
        .update("items", &sel(json!({"score": 3})), &unset, many)
        .await
        .expect("update");
    check();
    totals_agree(&store, &lists, "after updates").await;
    store
        .remove("items", &sel(json!({"n": {"$lt": 20}})))
        .await
        .expect("remove");
    check();
    totals_agree(&store, &lists, "after a removal").await;

    // The total of a list pinning a prefix is the kept count: one row read, not a count.
    let conn = raw(&store);
    let (marker, end) = prefix_keys("items", &by_city);
    let tamper = "UPDATE portico_counts SET n = n + 1000 WHERE name > ?1 AND name < ?2";
    assert!(conn.execute(tamper, [&marker, &end]).expect("tamper") > 0);
    let seven = sel(json!({"city": 7}));
    let want = scanned(&store, &seven).await;
    assert_eq!(
        store.count("items", &seven).await.expect("count"),
        want + 1000
    );
    // A range is still counted.
    let ranged = sel(json!({"city": 7, "score": {"$gte": 0}}));
    assert_eq!(store.count("items", &ranged).await.expect("count"), want);
    let untamper = "UPDATE portico_counts SET n = n - 1000 WHERE name > ?1 AND name < ?2";
    conn.execute(untamper, [&marker, &end]).expect("untamper");
    check();

    store
        .remove("items", &Selector::all())
        .await
        .expect("remove all");
    check();
    assert!(
        store
            .drop_sorted_index("items", &by_tag)
            .await
            .expect("drop")
    );
    let (marker, end) = prefix_keys("items", &by_tag);
    let left: i64 = conn
        .query_row(
            "SELECT count(*) FROM portico_counts WHERE name >= ?1 AND name < ?2",
            [&marker, &end],
            |row| row.get(0),
        )
        .expect("count rows");
    assert_eq!(left, 0, "a dropped index keeps no counts");
}

#[tokio::test]
async fn a_compound_index_made_before_prefix_counts_gets_them_when_opened() {
    let (dir, store) = open_temp().await;
    let spec = crate::IndexSpec::new(["city", "tags", "-n"]).expect("spec");
    store
        .ensure_sorted_index("items", &spec)
        .await
        .expect("index");
    let cities = ["Oslo", "Rome", "Bergen"];
    let tags = [json!("x"), json!(["x", "y"]), json!("z")];
    let docs: Vec<Document> = (0..40)
        .map(|i| {
            doc(
                json!({"_id": format!("d{i:02}"), "n": i, "city": cities[i % 3],
                "tags": tags[i % 3].clone()}),
            )
        })
        .collect();
    store.insert_many("items", docs).await.expect("insert");
    drop(store);
    let path = dir.path().join("store.db");
    rusqlite::Connection::open(&path)
        .expect("raw connection")
        .execute_batch("DELETE FROM portico_counts WHERE typeof(name) = 'blob'")
        .expect("forget counts");
    let store = SqliteStore::open(&path).await.expect("reopen");
    assert_prefix_counts_consistent(&store, "items", &spec);
    let rome = sel(json!({"city": "Rome"}));
    assert_eq!(store.count("items", &rome).await.expect("count"), 13);
    let rome_y = sel(json!({"city": "Rome", "tags": "y"}));
    assert_eq!(store.count("items", &rome_y).await.expect("count"), 13);
}
