//! Publications: cursors over one or several collections, by-hand documents, the user id.

use portico_platform::{Error, MethodError, Platform, PublicationOptions, Query, Selector};
use serde_json::{Value, json};

use crate::common::{TestResult, doc};

on_every_backend! {
    async fn a_publication_over_two_collections(p: Platform) -> TestResult {
        let authors = p.collection("authors");
        let books = p.collection("books");
        authors.insert(doc(json!({"_id": "a1", "name": "Le Guin"}))).await?;
        authors.insert(doc(json!({"_id": "a2", "name": "Herbert"}))).await?;
        books.insert(doc(json!({"_id": "b1", "author": "a1", "title": "The Dispossessed"}))).await?;
        books.insert(doc(json!({"_id": "b2", "author": "a2", "title": "Dune"}))).await?;
        books.insert(doc(json!({"_id": "b3", "author": "a1", "title": "Earthsea"}))).await?;
        p.publish("authorWithBooks", |sub, args| async move {
            let author: String = portico_platform::arg(&args, 0)?;
            let platform = sub.platform();
            Ok(vec![
                platform.collection("authors").cursor(Query::new(Selector::by_id(&author))),
                platform.collection("books").cursor(Query::new(
                    Selector::parse(&json!({"author": author})).map_err(Error::from)?,
                )),
            ])
        })?;
        let result = p.subscribe("authorWithBooks", None, vec![json!("a1")]).await?;
        assert_eq!(result.keys().collect::<Vec<_>>(), ["authors", "books"]);
        assert_eq!(result["authors"], json!([{"_id": "a1", "name": "Le Guin"}]));
        let mut titles: Vec<&str> = result["books"]
            .as_array()
            .ok_or("books")?
            .iter()
            .filter_map(|b| b["title"].as_str())
            .collect();
        titles.sort_unstable();
        assert_eq!(titles, ["Earthsea", "The Dispossessed"]);

        // A collection with no match is present, empty.
        let result = p.subscribe("authorWithBooks", None, vec![json!("a9")]).await?;
        assert_eq!(Value::Object(result), json!({"authors": [], "books": []}));
        // Arguments of the wrong shape.
        let err = p.subscribe("authorWithBooks", None, vec![json!(3)]).await.err().ok_or("bad arg")?;
        assert_eq!(err.error, "invalid-arguments");
        Ok(())
    }

    async fn a_publication_that_checks_the_user(p: Platform) -> TestResult {
        let notes = p.collection("notes");
        notes.insert(doc(json!({"owner": "u1", "text": "mine"}))).await?;
        notes.insert(doc(json!({"owner": "u2", "text": "theirs"}))).await?;
        p.publish("myNotes", |sub, _| async move {
            let Some(user) = sub.user_id() else {
                return Err(MethodError::new("not-authorized", "Log in first").with_status(401));
            };
            let selector = Selector::parse(&json!({"owner": user})).map_err(Error::from)?;
            Ok(vec![sub.platform().collection("notes").cursor(Query::new(selector))])
        })?;
        let err = p.subscribe("myNotes", None, vec![]).await.err().ok_or("refused")?;
        assert_eq!((err.error.as_str(), err.status), ("not-authorized", Some(401)));
        let result = p.subscribe("myNotes", Some("u1".into()), vec![]).await?;
        let docs = result["notes"].as_array().ok_or("notes")?;
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["text"], json!("mine"));
        Ok(())
    }
}

#[tokio::test]
async fn publications_driven_by_hand() -> TestResult {
    let p = Platform::open("memory:").await?;
    p.publish("counts", |sub, _| async move {
        sub.added("stats", "a", doc(json!({"n": 1, "label": "A"})));
        sub.added("stats", "b", doc(json!({"n": 2})));
        sub.added("stats", "c", doc(json!({"n": 3})));
        sub.changed("stats", "a", doc(json!({"n": 10, "label": null})));
        sub.changed("stats", "zzz", doc(json!({"n": 0})));
        sub.removed("stats", "b");
        sub.added("other", "x", doc(json!({})));
        sub.removed("other", "x");
        sub.ready();
        assert!(sub.is_ready());
        Ok(vec![])
    })?;
    let result = p.subscribe("counts", Some("u".into()), vec![]).await?;
    assert_eq!(
        Value::Object(result),
        json!({"stats": [{"_id": "a", "n": 10}, {"_id": "c", "n": 3}], "other": []})
    );
    Ok(())
}

#[tokio::test]
async fn the_registry_lists_publications_and_refuses_duplicates() -> TestResult {
    let p = Platform::open("memory:").await?;
    let err = p
        .subscribe("missing", None, vec![])
        .await
        .err()
        .ok_or("unknown")?;
    assert_eq!(
        (err.error.as_str(), err.status),
        ("publication-not-found", Some(404))
    );
    p.publish_with_options(
        "byAuthor",
        {
            let mut o = PublicationOptions::default();
            o.url = Some("authors/:0/books".into());
            o.http_method = Some(portico_platform::HttpMethod::Post);
            o.args_extractor = None;
            o
        },
        |_, _| async { Ok(vec![]) },
    )?;
    p.publish("all", |_, _| async { Ok(vec![]) })?;
    assert!(matches!(
        p.publish("all", |_, _| async { Ok(vec![]) }),
        Err(Error::Duplicate(_))
    ));
    let names: Vec<String> = p.publications().into_iter().map(|i| i.name).collect();
    assert_eq!(names, ["all", "byAuthor"]);
    let info = p.publication_info("byAuthor").ok_or("info")?;
    assert_eq!(info.options.url.as_deref(), Some("authors/:0/books"));
    assert!(p.publication_info("nope").is_none());

    p.publish("panics", |_, _| async { panic!("publication bug") })?;
    let err = p
        .subscribe("panics", None, vec![])
        .await
        .err()
        .ok_or("caught")?;
    assert!(err.internal);
    Ok(())
}
