//! Collections: server writes, allow/deny rules on client writes, schemas, id kinds.

use std::sync::{Arc, Mutex};

use portico_platform::{
    CollectionOptions, Error, IdKind, Platform, Query, Rules, Selector, Update, UpdateOptions,
};
use serde_json::{Value, json};

use crate::common::{TestResult, doc};

fn owner_is_user(user: &Option<String>, d: &portico_platform::Document) -> bool {
    user.is_some() && d.get("owner").and_then(Value::as_str) == user.as_deref()
}

on_every_backend! {
    async fn timestamped_collections_stamp_every_write(p: Platform) -> TestResult {
        let notes = p.define_collection("notes", { let mut o = CollectionOptions::default(); o.timestamps = true; o })?;
        notes.allow(Rules::new().insert(|_, _| async { true }).update(|_, _, _, _| async { true }));
        let plain = p.collection("plain");
        let id = notes.insert(doc(json!({"text": "a", "createdAt": "forged"}))).await?;
        let first = notes.get(&id).await?.ok_or("inserted")?;
        let created = first["createdAt"].as_str().ok_or("createdAt")?.to_owned();
        assert_ne!(created, "forged");
        assert!(created.ends_with('Z') && created.len() == 24, "{created}");
        assert_eq!(first["updatedAt"], json!(created));
        std::thread::sleep(std::time::Duration::from_millis(5));
        notes.update_by_id(&id, &Update::parse(&json!({"$set": {"text": "b"}}))?).await?;
        let changed = notes.get(&id).await?.ok_or("kept")?;
        assert_eq!(changed["createdAt"], json!(created));
        assert!(changed["updatedAt"].as_str() > Some(created.as_str()), "{changed:?}");
        // A replacement keeps createdAt.
        notes.update_by_id(&id, &Update::parse(&json!({"text": "c"}))?).await?;
        let replaced = notes.get(&id).await?.ok_or("kept")?;
        assert_eq!((replaced["text"].clone(), replaced["createdAt"].clone()), (json!("c"), json!(created)));
        // Client writes too.
        let client = notes.client_insert(None, doc(json!({"text": "d"}))).await?;
        assert!(notes.get(&client).await?.ok_or("client")?.contains_key("createdAt"));
        notes.client_update(None, &client, &json!({"$inc": {"n": 1}})).await?;
        assert!(notes.get(&client).await?.ok_or("client")?.contains_key("updatedAt"));
        let upserted = notes
            .update(&Selector::by_id("fresh"), &Update::parse(&json!({"$set": {"x": 1}}))?, UpdateOptions::new(false, true))
            .await?;
        assert_eq!(upserted.upserted_id.as_deref(), Some("fresh"));
        assert!(notes.get("fresh").await?.ok_or("upserted")?.contains_key("createdAt"));
        // Collections declared without timestamps are left alone.
        let bare = plain.insert(doc(json!({"text": "e"}))).await?;
        assert!(!plain.get(&bare).await?.ok_or("bare")?.contains_key("createdAt"));
        Ok(())
    }

    async fn roles_and_services_of_accounts_are_never_client_writable(p: Platform) -> TestResult {
        let users = p.collection("users");
        // The most open rules there are: still no client reaches roles or services.
        users.allow(
            Rules::new()
                .insert(|_, _| async { true })
                .update(|_, _, _, _| async { true })
                .remove(|_, _| async { true }),
        );
        let id = users.insert(doc(json!({"username": "al", "roles": []}))).await?;
        for body in [
            json!({"username": "x", "roles": ["admin"]}),
            json!({"username": "y", "services": {"resume": {"loginTokens": [{"hashedToken": "h"}]}}}),
        ] {
            assert!(matches!(
                users.client_insert(None, doc(body)).await,
                Err(Error::ProtectedField(_))
            ));
        }
        for modifier in [
            json!({"$set": {"roles": ["admin"]}}),
            json!({"$push": {"roles": "admin"}}),
            json!({"$set": {"services.resume.loginTokens": []}}),
            json!({"$unset": {"services": 1}}),
            json!({"$set": {"profile.name": "Al", "roles.0": "admin"}}),
        ] {
            let refused = users.client_update(Some(&id), &id, &modifier).await;
            assert!(matches!(refused, Err(Error::ProtectedField(_))), "{modifier}: {refused:?}");
        }
        assert_eq!(users.get(&id).await?.ok_or("kept")?["roles"], json!([]));
        assert_eq!(users.count(&Selector::all()).await?, 1);
        // Other fields, and the same names in other collections, stay writable.
        assert_eq!(users.client_update(Some(&id), &id, &json!({"$set": {"profile.name": "Al"}})).await?, 1);
        let notes = p.collection("notes");
        notes.allow(Rules::new().insert(|_, _| async { true }));
        notes.client_insert(None, doc(json!({"roles": ["any"], "services": 1}))).await?;
        Ok(())
    }

    async fn without_rules_client_writes_are_refused(p: Platform) -> TestResult {
        let notes = p.collection("notes");
        let id = notes.insert(doc(json!({"text": "server wrote this"}))).await?;
        assert!(matches!(
            notes.client_insert(Some("u1"), doc(json!({"text": "x"}))).await,
            Err(Error::AccessDenied)
        ));
        assert!(matches!(
            notes.client_update(Some("u1"), &id, &json!({"$set": {"text": "y"}})).await,
            Err(Error::AccessDenied)
        ));
        assert!(matches!(notes.client_remove(Some("u1"), &id).await, Err(Error::AccessDenied)));
        // Rules for another operation do not open this one.
        notes.allow(Rules::new().insert(|_, _| async { true }));
        assert!(matches!(notes.client_remove(Some("u1"), &id).await, Err(Error::AccessDenied)));
        assert_eq!(notes.count(&Selector::all()).await?, 1);
        assert_eq!(notes.get(&id).await?.ok_or("kept")?["text"], json!("server wrote this"));
        Ok(())
    }

    async fn allow_rules_decide_per_user_and_document(p: Platform) -> TestResult {
        let notes = p.collection("notes");
        notes.allow(
            Rules::new()
                .insert(|user, d| async move { owner_is_user(&user, &d) })
                .update(|user, d, _fields, _modifier| async move { owner_is_user(&user, &d) })
                .remove(|user, d| async move { owner_is_user(&user, &d) }),
        );
        let id = notes.client_insert(Some("u1"), doc(json!({"owner": "u1", "text": "a"}))).await?;
        assert_eq!(id.len(), 17);
        assert!(matches!(
            notes.client_insert(Some("u2"), doc(json!({"owner": "u1"}))).await,
            Err(Error::AccessDenied)
        ));
        assert!(matches!(
            notes.client_insert(None, doc(json!({"owner": "u1"}))).await,
            Err(Error::AccessDenied)
        ));
        for bad in [json!({"owner": "u1", "$set": {"a": 1}}), json!({"owner": "u1", "a": {"b.c": 1}}), json!({"owner": "u1", "l": [{"$x": 1}]}), json!({"owner": "u1", "l": [[{"a.b": 1}]]})] {
            assert!(matches!(notes.client_insert(Some("u1"), doc(bad)).await, Err(Error::InvalidArgument(_))));
        }
        assert_eq!(notes.client_update(Some("u1"), &id, &json!({"$set": {"text": "b"}})).await?, 1);
        assert!(matches!(
            notes.client_update(Some("u2"), &id, &json!({"$set": {"text": "c"}})).await,
            Err(Error::AccessDenied)
        ));
        assert_eq!(notes.get(&id).await?.ok_or("doc")?["text"], json!("b"));
        // Missing documents: nothing to do, no error.
        assert_eq!(notes.client_update(Some("u1"), "nope", &json!({"$set": {"a": 1}})).await?, 0);
        assert_eq!(notes.client_remove(Some("u1"), "nope").await?, 0);
        assert!(matches!(notes.client_remove(Some("u2"), &id).await, Err(Error::AccessDenied)));
        assert_eq!(notes.client_remove(Some("u1"), &id).await?, 1);
        assert!(notes.get(&id).await?.is_none());
        Ok(())
    }

    async fn conditional_client_writes_need_the_current_tag(p: Platform) -> TestResult {
        use portico_platform::IfMatch;
        let notes = p.collection("notes");
        notes.allow(Rules::new().update(|_, _, _, _| async { true }).remove(|_, _| async { true }));
        let id = notes.insert(doc(json!({"n": 1}))).await?;
        let tag = portico_store::etag(&notes.get(&id).await?.ok_or("inserted")?);
        let by_tag = IfMatch::Tags(vec!["other".into(), tag.clone()]);
        let set = |n: i64| json!({"$set": {"n": n}});
        assert_eq!(notes.client_update_if(None, &id, &set(2), &by_tag).await?, 1);
        // The same tag again: the document has changed since.
        assert!(matches!(notes.client_update_if(None, &id, &set(3), &by_tag).await, Err(Error::PreconditionFailed)));
        assert!(matches!(notes.client_remove_if(None, &id, &by_tag).await, Err(Error::PreconditionFailed)));
        assert_eq!(notes.get(&id).await?.ok_or("kept")?["n"], json!(2));
        assert_eq!(notes.client_update_if(None, &id, &set(4), &IfMatch::Any).await?, 1);
        assert_eq!(notes.client_remove_if(None, &id, &IfMatch::Any).await?, 1);
        // `*` on a missing document fails; no condition is a count of 0.
        assert!(matches!(notes.client_update_if(None, &id, &set(5), &IfMatch::Any).await, Err(Error::PreconditionFailed)));
        assert_eq!(notes.client_update_if(None, &id, &set(5), &IfMatch::Absent).await?, 0);
        assert_eq!(Error::PreconditionFailed.status_code(), 412);
        Ok(())
    }

    async fn a_deny_overrides_every_allow(p: Platform) -> TestResult {
        let posts = p.collection("posts");
        posts.allow(
            Rules::new()
                .insert(|_, _| async { true })
                .update(|_, _, _, _| async { true })
                .remove(|_, _| async { true }),
        );
        posts.deny(
            Rules::new()
                .insert(|_, d| async move { d.get("locked") == Some(&json!(true)) })
                .update(|_, _, fields, _| async move { fields.iter().any(|f| f == "owner") })
                .remove(|_, d| async move { d.get("locked") == Some(&json!(true)) }),
        );
        assert!(matches!(
            posts.client_insert(Some("u"), doc(json!({"locked": true}))).await,
            Err(Error::AccessDenied)
        ));
        let id = posts.client_insert(Some("u"), doc(json!({"owner": "u", "n": 1}))).await?;
        assert!(matches!(
            posts.client_update(Some("u"), &id, &json!({"$set": {"owner": "v"}})).await,
            Err(Error::AccessDenied)
        ));
        assert_eq!(posts.client_update(Some("u"), &id, &json!({"$inc": {"n": 1}})).await?, 1);
        let locked = posts.insert(doc(json!({"locked": true}))).await?;
        assert!(matches!(posts.client_remove(Some("u"), &locked).await, Err(Error::AccessDenied)));
        assert_eq!(posts.client_remove(Some("u"), &id).await?, 1);
        Ok(())
    }

    async fn update_rules_see_the_document_fields_and_modifier(p: Platform) -> TestResult {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let items = p.collection("items");
        let log = seen.clone();
        items.allow(Rules::new().update(move |user, d, fields, modifier| {
            let log = log.clone();
            async move {
                if let Ok(mut log) = log.lock() {
                    log.push((user, d.get("n").cloned(), fields, modifier));
                }
                true
            }
        }));
        let id = items.insert(doc(json!({"n": 1}))).await?;
        let modifier = json!({"$set": {"a.b": 2, "c": 3}, "$inc": {"n": 1}});
        items.client_update(Some("u9"), &id, &modifier).await?;
        let log = seen.lock().map_err(|_| "lock")?.clone();
        assert_eq!(
            log,
            vec![(Some("u9".to_string()), Some(json!(1)), vec!["a".to_string(), "c".into(), "n".into()], modifier)]
        );
        let stored = items.get(&id).await?.ok_or("doc")?;
        assert_eq!(stored["a"], json!({"b": 2}));
        assert_eq!(stored["n"], json!(2));
        // A client may not replace a document, nor send a malformed modifier.
        assert!(matches!(
            items.client_update(Some("u9"), &id, &json!({"whole": "doc"})).await,
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            items.client_update(Some("u9"), &id, &json!({"$set": {"x": {"$where": "1"}}})).await,
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            items.client_update(Some("u9"), &id, &json!({"$push": {"list": {"a.b": 1}}})).await,
            Err(Error::InvalidArgument(_))
        ));
        assert!(items.get(&id).await?.ok_or("doc")?.get("x").is_none());
        let bad = items.client_update(Some("u9"), &id, &json!({"$rename": {"a": "b"}})).await;
        assert!(bad.as_ref().is_err_and(Error::is_client_error), "{bad:?}");
        Ok(())
    }

    async fn schemas_refuse_bad_documents_and_write_nothing(p: Platform) -> TestResult {
        let schema = json!({
            "type": "object",
            "properties": {"title": {"type": "string", "minLength": 1}, "stars": {"type": "integer", "maximum": 5}},
            "required": ["title"],
            "additionalProperties": false
        });
        let books = p.define_collection("books", { let mut o = CollectionOptions::default(); o.schema = Some(schema); o })?;
        books.allow(Rules::new().insert(|_, _| async { true }).update(|_, _, _, _| async { true }));
        let id = books.insert(doc(json!({"title": "Dune", "stars": 5}))).await?;
        match books.insert(doc(json!({"stars": 9, "extra": true}))).await {
            Err(e @ Error::Validation(_)) => {
                assert_eq!(e.status_code(), 400);
                let Error::Validation(failures) = &e else { unreachable!() };
                assert_eq!(failures.len(), 3, "{failures:?}");
                assert!(failures.iter().any(|f| f.starts_with("/stars:")), "{failures:?}");
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
        assert!(matches!(
            books.client_insert(Some("u"), doc(json!({"title": ""}))).await,
            Err(Error::Validation(_))
        ));
        // Updates are checked on the document they would produce.
        assert!(matches!(
            books.client_update(Some("u"), &id, &json!({"$inc": {"stars": 1}})).await,
            Err(Error::Validation(_))
        ));
        assert!(matches!(
            books.update(&Selector::by_id(&id), &Update::parse(&json!({"$unset": {"title": ""}}))?, UpdateOptions::default()).await,
            Err(Error::Validation(_))
        ));
        assert!(matches!(
            books.update(&Selector::parse(&json!({"title": "New"}))?, &Update::parse(&json!({"$set": {"stars": "x"}}))?, UpdateOptions::new(false, true)).await,
            Err(Error::Validation(_))
        ));
        assert_eq!(books.count(&Selector::all()).await?, 1);
        assert_eq!(books.get(&id).await?.ok_or("kept")?["stars"], json!(5));
        let after = books.update_by_id(&id, &Update::parse(&json!({"$set": {"stars": 4}}))?).await?;
        assert_eq!(after.ok_or("updated")?["stars"], json!(4));
        assert!(books.update_by_id("missing", &Update::parse(&json!({"$set": {"stars": 4}}))?).await?.is_none());
        Ok(())
    }

    async fn insert_many_checks_every_document_then_writes_all_or_nothing(p: Platform) -> TestResult {
        let schema = json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]});
        let books = p.define_collection("books", { let mut o = CollectionOptions::default(); o.id_kind = IdKind::ObjectId; o.schema = Some(schema); o })?;
        let ids = books.insert_many(vec![doc(json!({"_id": "b1", "title": "A"})), doc(json!({"title": "B"}))]).await?;
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], "b1");
        assert!(ids[1].len() == 24 && ids[1].bytes().all(|b| b.is_ascii_hexdigit()), "{}", ids[1]);
        assert_eq!(books.get(&ids[1]).await?.ok_or("second")?["title"], json!("B"));
        // A document the schema refuses, anywhere in the batch: nothing written.
        assert!(matches!(
            books.insert_many(vec![doc(json!({"_id": "b2", "title": "C"})), doc(json!({"_id": "b3"}))]).await,
            Err(Error::Validation(_))
        ));
        // A bad `_id`: nothing written.
        assert!(matches!(
            books.insert_many(vec![doc(json!({"_id": "b2", "title": "C"})), doc(json!({"_id": 7, "title": "D"}))]).await,
            Err(Error::InvalidArgument(_))
        ));
        // An `_id` that exists already, or repeats in the batch: nothing written.
        for batch in [
            vec![doc(json!({"_id": "b2", "title": "C"})), doc(json!({"_id": "b1", "title": "again"}))],
            vec![doc(json!({"_id": "b2", "title": "C"})), doc(json!({"_id": "b2", "title": "twice"}))],
        ] {
            match books.insert_many(batch).await {
                Err(Error::Store(portico_store::Error::DuplicateId { id, .. })) => assert!(id == "b1" || id == "b2", "{id}"),
                other => panic!("expected a duplicate id, got {other:?}"),
            }
        }
        assert!(books.get("b2").await?.is_none());
        assert_eq!(books.get("b1").await?.ok_or("kept")?["title"], json!("A"));
        assert_eq!(books.count(&Selector::all()).await?, 2);
        assert!(books.insert_many(Vec::new()).await?.is_empty());
        Ok(())
    }

    async fn object_id_collections_make_hex_ids(p: Platform) -> TestResult {
        let things = p.define_collection("things", { let mut o = CollectionOptions::default(); o.id_kind = IdKind::ObjectId; o })?;
        assert_eq!(things.id_kind(), IdKind::ObjectId);
        things.allow(Rules::new().insert(|_, _| async { true }));
        let id = things.insert(doc(json!({"a": 1}))).await?;
        assert!(id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        let id = things.client_insert(None, doc(json!({"a": 2}))).await?;
        assert_eq!(id.len(), 24);
        assert!(matches!(
            things.client_insert(None, doc(json!({"_id": "short", "a": 3}))).await,
            Err(Error::InvalidArgument(_))
        ));
        let upserted = things
            .update(&Selector::parse(&json!({"a": 9}))?, &Update::parse(&json!({"$set": {"b": 1}}))?, UpdateOptions::new(false, true))
            .await?
            .upserted_id
            .ok_or("upserted")?;
        assert_eq!(upserted.len(), 24, "{upserted}");
        // A duplicate id is a conflict, never an overwrite.
        let dup = things.insert(doc(json!({"_id": id, "a": 4}))).await;
        assert!(dup.as_ref().is_err_and(Error::is_client_error), "{dup:?}");
        Ok(())
    }

    async fn server_side_reads_and_writes(p: Platform) -> TestResult {
        let c = p.collection("c");
        for n in 0..5 {
            c.insert(doc(json!({"n": n, "even": n % 2 == 0}))).await?;
        }
        let even = Selector::parse(&json!({"even": true}))?;
        assert_eq!(c.count(&even).await?, 3);
        let found = c.find(&Query::new(even.clone())).await?;
        assert_eq!(found.len(), 3);
        assert!(c.find_one(&Selector::parse(&json!({"n": 4}))?).await?.is_some());
        let result = c
            .update(&even, &Update::parse(&json!({"$set": {"seen": true}}))?, UpdateOptions::new(true, false))
            .await?;
        assert_eq!(result.matched, 3);
        assert_eq!(c.remove(&even).await?, 3);
        let first = c.find_one(&Selector::all()).await?.ok_or("one left")?;
        let id = first["_id"].as_str().ok_or("id")?.to_string();
        assert!(c.remove_by_id(&id).await?);
        assert!(!c.remove_by_id(&id).await?);
        assert_eq!(c.count(&Selector::all()).await?, 1);
        Ok(())
    }
}

#[tokio::test]
async fn collections_are_declared_once() -> TestResult {
    let p = Platform::open("memory:").await?;
    let a = p.collection("a");
    let a_again = p.collection("a");
    // Clones share rules.
    a.allow(Rules::new().insert(|_, _| async { true }));
    a_again.client_insert(None, doc(json!({"x": 1}))).await?;
    assert!(
        p.define_collection("a", CollectionOptions::default())
            .is_ok()
    );
    assert!(matches!(
        p.define_collection("a", {
            let mut o = CollectionOptions::default();
            o.id_kind = IdKind::ObjectId;
            o
        }),
        Err(Error::Duplicate(_))
    ));
    assert!(matches!(
        p.define_collection("b", {
            let mut o = CollectionOptions::default();
            o.schema = Some(json!({"type": 5}));
            o
        }),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        p.define_collection("", CollectionOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    p.collection("z");
    assert_eq!(p.collection_names(), ["a", "z"]);
    assert!(p.get_collection("b").is_none());
    Ok(())
}
