//! Relations and search through the platform: `Platform::expand_as` reads one query per
//! relation for a whole page (counted on a store wrapped around the backend's), shows related
//! documents through their field rules and `users` as `_id` and `profile`; `Collection::search`
//! over the index `ensure_search_indexes` makes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use std::collections::BTreeMap;

use portico_platform::{
    Collection, CollectionOptions, Document, Expand, FieldRules, NewUser, Page, PageRead, Platform,
    Query, ReadAccess, RelatedField, RelatedRead, Relations, Selector, Stored, Update,
    UpdateOptions, UpdateResult,
};
use portico_store::{Search, Store, fallback};
use serde_json::json;

use crate::common::{TestResult, doc};

/// A counted page of `query` with the documents of `related` read along, the page as JSON texts.
async fn texts_of(
    collection: &Collection,
    query: Query,
    related: &[RelatedField],
) -> Result<(Vec<String>, u64, Vec<RelatedRead>), Box<dyn std::error::Error>> {
    let read = PageRead::new(query).counted(true).related(related.to_vec());
    let page = collection.find_page(&read).await?;
    let texts = page
        .docs
        .into_iter()
        .map(Stored::into_text)
        .collect::<Result<_, _>>()?;
    Ok((texts, page.total.unwrap_or_default(), page.related))
}

/// The backend's store, counting the reads that may answer many documents.
struct Counting {
    inner: Arc<dyn Store>,
    finds: AtomicUsize,
}

#[async_trait]
impl Store for Counting {
    async fn insert(&self, c: &str, d: Document) -> portico_store::Result<String> {
        self.inner.insert(c, d).await
    }
    async fn insert_many(&self, c: &str, d: Vec<Document>) -> portico_store::Result<Vec<String>> {
        self.inner.insert_many(c, d).await
    }
    async fn find(&self, c: &str, q: &Query) -> portico_store::Result<Vec<Document>> {
        self.finds.fetch_add(1, Ordering::SeqCst);
        self.inner.find(c, q).await
    }
    // A page read by the backend's own (one statement with its related documents where the
    // backend can), not counted as a find.
    async fn find_page(&self, c: &str, r: &PageRead) -> portico_store::Result<Page> {
        self.inner.find_page(c, r).await
    }
    async fn find_one(&self, c: &str, s: &Selector) -> portico_store::Result<Option<Document>> {
        self.finds.fetch_add(1, Ordering::SeqCst);
        self.inner.find_one(c, s).await
    }
    async fn get(&self, c: &str, id: &str) -> portico_store::Result<Option<Document>> {
        self.finds.fetch_add(1, Ordering::SeqCst);
        self.inner.get(c, id).await
    }
    async fn count(&self, c: &str, s: &Selector) -> portico_store::Result<u64> {
        self.inner.count(c, s).await
    }
    async fn update(
        &self,
        c: &str,
        s: &Selector,
        u: &Update,
        o: UpdateOptions,
    ) -> portico_store::Result<UpdateResult> {
        self.inner.update(c, s, u, o).await
    }
    async fn remove(&self, c: &str, s: &Selector) -> portico_store::Result<u64> {
        self.inner.remove(c, s).await
    }
    async fn ensure_index(&self, c: &str, p: &str) -> portico_store::Result<()> {
        self.inner.ensure_index(c, p).await
    }
    async fn ensure_unique_index(&self, c: &str, p: &str) -> portico_store::Result<()> {
        self.inner.ensure_unique_index(c, p).await
    }
    async fn drop_collection(&self, c: &str) -> portico_store::Result<()> {
        self.inner.drop_collection(c).await
    }
    async fn list_collections(&self) -> portico_store::Result<Vec<String>> {
        self.inner.list_collections().await
    }
    async fn ensure_search(&self, c: &str, f: &[String]) -> portico_store::Result<()> {
        self.inner.ensure_search(c, f).await
    }
    async fn search(&self, c: &str, s: &Search) -> portico_store::Result<(Vec<Document>, u64)> {
        self.inner.search(c, s).await
    }
    // Through this store's own `find` (counted), as a plain backend would.
    async fn insert_stored(&self, c: &str, d: Document) -> portico_store::Result<(String, Stored)> {
        fallback::insert_stored(self, c, d).await
    }
    async fn insert_stream(
        &self,
        c: &str,
        b: portico_store::DocumentBatches,
    ) -> portico_store::Result<u64> {
        fallback::insert_stream(self, c, b).await
    }
    async fn get_stored(&self, c: &str, id: &str) -> portico_store::Result<Option<Stored>> {
        fallback::get_stored(self, c, id).await
    }
    async fn aggregate(
        &self,
        c: &str,
        a: &portico_store::Aggregate,
    ) -> portico_store::Result<Vec<Document>> {
        fallback::aggregate(self, c, a).await
    }
    async fn update_owned(
        &self,
        c: &str,
        s: &Selector,
        u: portico_store::Update,
        o: portico_store::UpdateOptions,
    ) -> portico_store::Result<portico_store::UpdateResult> {
        fallback::update_owned(self, c, s, u, o).await
    }
    async fn ensure_sorted_index(
        &self,
        c: &str,
        spec: &portico_store::IndexSpec,
    ) -> portico_store::Result<()> {
        self.inner.ensure_sorted_index(c, spec).await
    }
    async fn sorted_indexes(
        &self,
        c: &str,
    ) -> portico_store::Result<Vec<portico_store::IndexSpec>> {
        self.inner.sorted_indexes(c).await
    }
    async fn drop_sorted_index(
        &self,
        c: &str,
        spec: &portico_store::IndexSpec,
    ) -> portico_store::Result<bool> {
        self.inner.drop_sorted_index(c, spec).await
    }
    async fn change_stamp(&self, _c: &str) -> Option<u64> {
        None
    }
    async fn batch(
        &self,
        _ops: Vec<portico_store::BatchOp>,
    ) -> Result<Vec<portico_store::BatchOutcome>, portico_store::BatchError> {
        Err(portico_store::BatchError::new(
            0,
            portico_store::BatchFailure::Unsupported,
        ))
    }
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<portico_store::Change>> {
        None
    }

    fn bus(&self) -> Option<std::sync::Arc<dyn portico_store::Bus>> {
        None
    }
    async fn close(&self) {
        self.inner.close().await;
    }
}

on_every_backend! {
    async fn expand_reads_one_query_per_relation(p: Platform) -> TestResult {
        let counting = Arc::new(Counting { inner: p.store().clone(), finds: AtomicUsize::new(0) });
        let p = Platform::with_store(counting.clone()).await?;
        let ann = p.accounts().create_user(NewUser {
            username: Some("ann".into()),
            profile: Some(json!({"name": "Ann"})),
            ..NewUser::default()
        }).await?;
        let mut people = CollectionOptions::default();
        people.relations = Relations::new().field("team", "teams")?.field("account", "users")?;
        people.field_rules = FieldRules::new().field("phone", ["role:hr".parse()?])?;
        p.define_collection("people", people)?;
        p.define_collection("teams", CollectionOptions::default())?;
        let mut posts = CollectionOptions::default();
        posts.relations = Relations::new().field("author", "people")?.field("tags", "tags")?;
        p.define_collection("posts", posts)?;
        for i in 0..5 {
            p.collection("people").insert(doc(json!({
                "_id": format!("u{i}"), "name": format!("P{i}"), "phone": "555", "team": "t1", "account": ann
            }))).await?;
        }
        p.collection("teams").insert(doc(json!({"_id": "t1", "name": "core"}))).await?;
        for i in 0..10 {
            p.collection("tags").insert(doc(json!({"_id": format!("g{i}"), "n": i}))).await?;
        }
        let mut page: Vec<Document> = (0..40)
            .map(|i| doc(json!({
                "_id": format!("p{i}"),
                "author": format!("u{}", i % 6),
                "tags": [format!("g{}", i % 10), "missing", format!("g{}", (i + 1) % 10)]
            })))
            .collect();
        let expand: Expand = "author,tags,author.team,author.account".parse()?;
        counting.finds.store(0, Ordering::SeqCst);
        p.expand_as("posts", None, &mut page, &expand).await?;
        // author, tags, then team and account of the authors: four reads for 40 documents.
        assert_eq!(counting.finds.load(Ordering::SeqCst), 4);
        let first = &page[0]["expand"];
        assert_eq!(first["author"]["name"], "P0");
        assert!(first["author"].get("phone").is_none(), "hidden by field rules: {first}");
        assert_eq!(first["author"]["expand"]["team"]["name"], "core");
        let account = first["author"]["expand"]["account"].as_object().ok_or("account")?;
        assert_eq!(account.keys().collect::<Vec<_>>(), ["_id", "profile"]);
        assert_eq!(first["tags"], json!([{"_id": "g0", "n": 0}, {"_id": "g1", "n": 1}]));
        // u5 does not exist: no author under expand, the tags still.
        assert!(page[5]["expand"].get("author").is_none());
        assert_eq!(page[5]["expand"]["tags"].as_array().map(Vec::len), Some(2));
        // Not a relation: refused before anything is read.
        let wrong: Expand = "title".parse()?;
        assert!(p.expand_as("posts", None, &mut page, &wrong).await.is_err());
        Ok(())
    }

    async fn expand_read_shows_only_what_the_caller_may_read(p: Platform) -> TestResult {
        let counting = Arc::new(Counting { inner: p.store().clone(), finds: AtomicUsize::new(0) });
        let p = Platform::with_store(counting.clone()).await?;
        let mut people = CollectionOptions::default();
        people.relations = Relations::new().field("team", "teams")?;
        people.field_rules = FieldRules::new().field("phone", ["role:hr".parse()?])?;
        p.define_collection("people", people)?;
        p.define_collection("teams", CollectionOptions::default())?;
        p.define_collection("tags", CollectionOptions::default())?;
        let mut posts = CollectionOptions::default();
        posts.relations = Relations::new().field("author", "people")?.field("tags", "tags")?;
        p.define_collection("posts", posts)?;
        for (id, owner) in [("u1", "ann"), ("u2", "bob"), ("u3", "ann")] {
            p.collection("people").insert(doc(json!({
                "_id": id, "ownerId": owner, "name": id.to_uppercase(), "phone": "555", "team": "t1"
            }))).await?;
        }
        p.collection("teams").insert(doc(json!({"_id": "t1", "name": "core"}))).await?;
        for i in 0..3 {
            p.collection("tags").insert(doc(json!({"_id": format!("g{i}"), "n": i}))).await?;
        }
        for post in [
            json!({"_id": "p0", "author": "u1", "tags": ["g2", "missing", "g0", 3]}),
            json!({"_id": "p1", "author": "u2", "tags": "g1"}),
            json!({"_id": "p2", "author": "gone", "tags": []}),
            json!({"_id": "p3", "author": "u3"}),
        ] {
            p.collection("posts").insert(doc(post)).await?;
        }
        // Ann reads people she owns, without their phone; every tag; no team.
        let mut access = BTreeMap::new();
        let ann_only = Selector::parse(&json!({"ownerId": "ann"}))?;
        access.insert(
            "people".to_owned(),
            ReadAccess::new(p.collection("people").field_view(Some("ann")).await?).scoped(ann_only),
        );
        access.insert("tags".to_owned(), ReadAccess::default());
        let expand: Expand = "author.team,tags".parse()?;
        let related = p.related_fields("posts", &expand, &access)?;
        assert_eq!(
            related.iter().map(|r| (r.field.as_str(), r.collection.as_str())).collect::<Vec<_>>(),
            [("author", "people"), ("tags", "tags")]
        );
        let query = Query { limit: Some(20), ..Query::default() };
        let (texts, total, along) = texts_of(&p.collection("posts"), query, &related).await?;
        assert_eq!((texts.len(), total), (4, 4));
        let mut page: Vec<Document> = texts
            .iter()
            .map(|t| serde_json::from_str(t))
            .collect::<Result<_, _>>()?;
        // The related documents read along (PostgreSQL) are the whole stored ones, Bob's too:
        // what is shown is decided below.
        let read_along = !along.is_empty();
        counting.finds.store(0, Ordering::SeqCst);
        p.expand_read("posts", &mut page, &expand, &access, along).await?;
        // Read along: no query for author or tags (the team has no access entry); otherwise
        // one each.
        assert_eq!(counting.finds.load(Ordering::SeqCst), if read_along { 0 } else { 2 });
        let shown = serde_json::to_string(&page)?;
        assert!(!shown.contains("U2") && !shown.contains("bob"), "Bob's person leaked: {shown}");
        assert!(!shown.contains("555"), "a hidden field leaked: {shown}");
        assert!(!shown.contains("core"), "an unreadable collection leaked: {shown}");
        assert_eq!(page[0]["expand"]["author"]["name"], "U1");
        assert_eq!(
            page[0]["expand"]["tags"],
            json!([{"_id": "g2", "n": 2}, {"_id": "g0", "n": 0}])
        );
        assert!(page[1]["expand"].get("author").is_none(), "{:?}", page[1]);
        assert_eq!(page[1]["expand"]["tags"], json!({"_id": "g1", "n": 1}));
        assert!(page[2]["expand"].get("author").is_none(), "a missing id: {:?}", page[2]);
        assert_eq!(page[2]["expand"]["tags"], json!([]));
        assert_eq!(page[3]["expand"]["author"]["name"], "U3");
        assert_eq!(p.store().count("posts", &Selector::all()).await?, 4);
        Ok(())
    }

    async fn expand_texts_puts_in_what_expand_read_shows(p: Platform) -> TestResult {
        let counting = Arc::new(Counting { inner: p.store().clone(), finds: AtomicUsize::new(0) });
        let p = Platform::with_store(counting.clone()).await?;
        let ann = p.accounts().create_user(NewUser {
            username: Some("ann".into()),
            profile: Some(json!({"name": "Ann"})),
            ..NewUser::default()
        }).await?;
        let mut people = CollectionOptions::default();
        people.relations = Relations::new().field("team", "teams")?;
        people.field_rules = FieldRules::new().field("phone", ["role:hr".parse()?])?;
        p.define_collection("people", people)?;
        p.define_collection("teams", CollectionOptions::default())?;
        p.define_collection("tags", CollectionOptions::default())?;
        let mut posts = CollectionOptions::default();
        posts.relations = Relations::new()
            .field("author", "people")?
            .field("tags", "tags")?
            .field("autör", "tags")?
            .field("account", "users")?;
        p.define_collection("posts", posts)?;
        for (id, owner) in [("u1", "ann"), ("u2", "bob")] {
            p.collection("people").insert(doc(json!({
                "_id": id, "ownerId": owner, "name": id.to_uppercase(), "phone": "555", "team": "t1"
            }))).await?;
        }
        p.collection("teams").insert(doc(json!({"_id": "t1", "name": "core"}))).await?;
        for i in 0..3 {
            p.collection("tags").insert(doc(json!({"_id": format!("g{i}"), "n": i, "é": "\"q\""}))).await?;
        }
        // Every shape a relation field may have, and the same name in nested objects.
        for post in [
            json!({"_id": "p0", "author": "u1", "tags": ["g2", "missing", "g0", 3, ["g1"], "g2"], "account": ann}),
            json!({"_id": "p1", "author": "u2", "tags": "g1", "meta": {"author": "u1", "tags": ["g0"]}}),
            json!({"_id": "p2", "author": null, "tags": [], "list": [{"author": "u1"}]}),
            json!({"_id": "p3", "author": {"_id": "u1"}, "tags": {"_id": "g0"}, "autör": "g1"}),
            json!({"_id": "p4", "title": "no relation at all"}),
            json!({"_id": "p5", "author": 7, "tags": [null, {}], "account": "nobody"}),
        ] {
            p.collection("posts").insert(doc(post)).await?;
        }
        // Ann reads the people she owns, without their phone; every tag and team; accounts.
        let mut access = BTreeMap::new();
        let ann_only = Selector::parse(&json!({"ownerId": "ann"}))?;
        access.insert(
            "people".to_owned(),
            ReadAccess::new(p.collection("people").field_view(Some("ann")).await?).scoped(ann_only),
        );
        for open in ["tags", "teams", "users"] {
            access.insert(open.to_owned(), ReadAccess::default());
        }
        let expand: Expand = "author.team,tags,autör,account".parse()?;
        let related = p.related_fields("posts", &expand, &access)?;
        let query = Query { limit: Some(20), ..Query::default() };
        let posts = p.collection("posts");
        let (texts, _, along) = texts_of(&posts, query.clone(), &related).await?;
        let (_, _, along_again) = texts_of(&posts, query, &related).await?;
        assert_eq!(texts.len(), 6);
        // The decoded page expanded (the reference), against the texts expanded as text.
        let mut page: Vec<Document> =
            texts.iter().map(|t| serde_json::from_str(t)).collect::<Result<_, _>>()?;
        p.expand_read("posts", &mut page, &expand, &access, along).await?;
        let read_along = !along_again.is_empty();
        counting.finds.store(0, Ordering::SeqCst);
        let out = p.expand_texts("posts", texts.clone(), &expand, &access, along_again).await?;
        // Read along: the nested team only; otherwise one query per relation and the team.
        let finds = counting.finds.load(Ordering::SeqCst);
        assert_eq!(finds, if read_along { 1 } else { 5 }, "queries");
        for (text, doc) in out.iter().zip(&page) {
            assert_eq!(text, &serde_json::to_string(doc)?, "byte for byte");
        }
        let shown = out.join("\n");
        assert!(!shown.contains("U2") && !shown.contains("bob"), "Bob's person leaked: {shown}");
        assert!(!shown.contains("555"), "a hidden field leaked: {shown}");
        let value: Vec<serde_json::Value> =
            out.iter().map(|t| serde_json::from_str(t)).collect::<Result<_, _>>()?;
        assert_eq!(value[0]["expand"]["author"]["expand"]["team"]["name"], "core");
        assert_eq!(
            value[0]["expand"]["tags"].as_array().map(|a| a.iter().map(|t| t["n"].clone()).collect::<Vec<_>>()),
            Some(vec![json!(2), json!(0), json!(2)])
        );
        let account = value[0]["expand"]["account"].as_object().ok_or("account")?;
        assert_eq!(account.keys().collect::<Vec<_>>(), ["_id", "profile"]);
        assert_eq!(value[1]["expand"], json!({"tags": {"_id": "g1", "n": 1, "é": "\"q\""}}));
        assert_eq!(value[2]["expand"], json!({"tags": []}));
        assert_eq!(value[3]["expand"], json!({"autör": {"_id": "g1", "n": 1, "é": "\"q\""}}));
        assert!(value[4].get("expand").is_none(), "nothing to expand: {}", out[4]);
        assert_eq!(out[4], texts[4], "left as stored");
        assert_eq!(value[5]["expand"], json!({"tags": []}));

        // Texts as a store may hold them: whitespace, escaped names, a member named twice,
        // nothing at all; and ones that already hold `expand` (put in by decoding the page).
        let hand = |t: &str| t.to_owned();
        let cases: Vec<(Vec<String>, Vec<serde_json::Value>)> = vec![
            (
                vec![
                    hand(" {\n \"_id\" : \"w\", \"auth\\u006fr\" : \"u1\" ,\"tags\":\"g0\" }\n "),
                    hand(r#"{"_id":"d","tags":"g0","tags":["g1"],"aut\u00f6r":"g2"}"#),
                    hand("{}"),
                ],
                vec![
                    json!({"_id": "w", "author": "u1", "tags": "g0", "expand": {
                        "author": {"_id": "u1", "ownerId": "ann", "name": "U1", "team": "t1",
                                   "expand": {"team": {"_id": "t1", "name": "core"}}},
                        "tags": {"_id": "g0", "n": 0, "é": "\"q\""}}}),
                    json!({"_id": "d", "tags": ["g1"], "autör": "g2", "expand": {
                        "autör": {"_id": "g2", "n": 2, "é": "\"q\""},
                        "tags": [{"_id": "g1", "n": 1, "é": "\"q\""}]}}),
                    json!({}),
                ],
            ),
            (
                vec![
                    hand(r#"{"_id":"e","tags":"g0","expand":{"kept":1}}"#),
                    hand(r#"{"_id":"f","tags":"g1","expand":5}"#),
                ],
                vec![
                    json!({"_id": "e", "tags": "g0", "expand": {"kept": 1, "tags": {"_id": "g0", "n": 0, "é": "\"q\""}}}),
                    json!({"_id": "f", "tags": "g1", "expand": {"tags": {"_id": "g1", "n": 1, "é": "\"q\""}}}),
                ],
            ),
        ];
        for (texts, want) in cases {
            let out = p.expand_texts("posts", texts, &expand, &access, Vec::new()).await?;
            let got: Vec<serde_json::Value> =
                out.iter().map(|t| serde_json::from_str(t)).collect::<Result<_, _>>()?;
            assert_eq!(got, want, "{out:?}");
        }
        // Not one JSON object: an error, not a reply.
        for bad in ["[1]", "{\"_id\":\"x\"", "{\"_id\":\"x\"} {}"] {
            assert!(p.expand_texts("posts", vec![bad.to_owned()], &expand, &access, Vec::new()).await.is_err(), "{bad}");
        }
        Ok(())
    }

    async fn collections_search_their_fields(p: Platform) -> TestResult {
        let mut options = CollectionOptions::default();
        options.search = vec!["title".into()];
        let notes = p.define_collection("notes", options)?;
        p.ensure_search_indexes().await?;
        notes.insert(doc(json!({"_id": "a", "title": "Red apple", "x": 1}))).await?;
        notes.insert(doc(json!({"_id": "b", "title": "green apple", "x": 2}))).await?;
        let mut search = Search::new(Vec::new(), "APPLE");
        search.selector = Selector::parse(&json!({"x": {"$gt": 1}}))?;
        let (found, total) = notes.search(&search).await?;
        assert_eq!((found.len(), total), (1, 1));
        assert_eq!(found[0]["_id"], "b");
        assert!(p.collection("other").search(&search).await.is_err(), "no search fields");
        Ok(())
    }
}
