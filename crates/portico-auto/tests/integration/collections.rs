//! Collection writes: insert, update, remove through allow/deny rules; configure options.

use portico_auto::{AutoApi, AutoConfig, BearerTokenLayer};
use portico_platform::{Platform, Rules};
use serde_json::{Value, json};

use crate::common::{Server, doc, platform, serve, user_with_token};

/// `notes`: a signed-in user may insert notes they own, and change or remove their own notes,
/// but never a note marked `locked`.
fn notes_rules(p: &Platform) {
    let notes = p.collection("notes");
    let owns = |user: Option<String>, doc: &portico_platform::Document| {
        user.is_some() && doc.get("owner").and_then(Value::as_str) == user.as_deref()
    };
    notes.allow(
        Rules::new()
            .insert(move |user, doc| async move { owns(user, &doc) })
            .update(move |user, doc, _fields, _modifier| async move { owns(user, &doc) })
            .remove(move |user, doc| async move { owns(user, &doc) }),
    );
    notes.deny(
        Rules::new()
            .update(|_user, doc, _fields, _modifier| async move {
                doc.get("locked") == Some(&json!(true))
            })
            .remove(|_user, doc| async move { doc.get("locked") == Some(&json!(true)) }),
    );
}

async fn app(p: &Platform, config: AutoConfig) -> Server {
    serve(
        AutoApi::new(p.clone())
            .configure(config)
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn insert_allowed_and_denied() {
    let p = platform().await;
    notes_rules(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    let s = app(&p, AutoConfig::default()).await;

    let r = s
        .post_as("/notes", json!({"owner": ada, "text": "hi"}), &token)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json.as_str().expect("the new _id").to_owned();
    let stored = p.collection("notes").get(&id).await.unwrap().unwrap();
    assert_eq!(stored["text"], "hi");

    // Someone else's note, or no user at all: refused, and nothing is written.
    let r = s
        .post_as("/notes", json!({"owner": "bob", "text": "x"}), &token)
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json,
        json!({"error": "access-denied", "reason": "Access denied"})
    );
    let r = s
        .post("/notes", json!({"owner": ada, "text": "anon"}))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        p.collection("notes")
            .count(&Default::default())
            .await
            .unwrap(),
        1
    );

    // A client may choose its own string id.
    let r = s
        .post_as("/notes", json!({"_id": "mine", "owner": ada}), &token)
        .await;
    assert_eq!((r.status, r.json), (200, json!("mine")));
    // Taking an id that exists is a conflict (409, as on the routes door), and overwrites
    // nothing.
    let r = s
        .post_as(
            "/notes",
            json!({"_id": "mine", "owner": ada, "text": "other"}),
            &token,
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        p.collection("notes")
            .get("mine")
            .await
            .unwrap()
            .unwrap()
            .get("text")
            .is_none()
    );
}

#[tokio::test]
async fn update_allowed_denied_and_missing() {
    let p = platform().await;
    notes_rules(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    let notes = p.collection("notes");
    notes
        .insert(doc(json!({"_id": "n1", "owner": ada, "text": "a"})))
        .await
        .unwrap();
    notes
        .insert(doc(
            json!({"_id": "n2", "owner": ada, "text": "b", "locked": true}),
        ))
        .await
        .unwrap();
    notes
        .insert(doc(json!({"_id": "n3", "owner": "bob", "text": "c"})))
        .await
        .unwrap();
    let s = app(&p, AutoConfig::default()).await;

    let r = s
        .patch(
            "/notes/n1",
            json!({"text": "changed", "meta.tags": ["x"]}),
            Some(&token),
        )
        .await;
    assert_eq!((r.status, r.json), (200, json!(1)), "{}", r.text);
    let n1 = notes.get("n1").await.unwrap().unwrap();
    assert_eq!(n1["text"], "changed");
    assert_eq!(n1["meta"], json!({"tags": ["x"]}));

    for (id, why) in [("n2", "denied by a deny rule"), ("n3", "not the owner")] {
        let r = s
            .patch(
                &format!("/notes/{id}"),
                json!({"text": "hacked"}),
                Some(&token),
            )
            .await;
        assert_eq!(r.status, 403, "{why}");
        assert_eq!(r.json["reason"], "Access denied");
        assert_ne!(notes.get(id).await.unwrap().unwrap()["text"], "hacked");
    }
    // Anonymous: refused.
    let r = s.patch("/notes/n1", json!({"text": "anon"}), None).await;
    assert_eq!(r.status, 403);
    // No such document: nothing to update.
    let r = s
        .patch("/notes/nope", json!({"text": "x"}), Some(&token))
        .await;
    assert_eq!((r.status, r.json), (200, json!(0)));
}

#[tokio::test]
async fn remove_allowed_and_denied() {
    let p = platform().await;
    notes_rules(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    let notes = p.collection("notes");
    notes
        .insert(doc(json!({"_id": "n1", "owner": ada})))
        .await
        .unwrap();
    notes
        .insert(doc(json!({"_id": "n2", "owner": ada, "locked": true})))
        .await
        .unwrap();
    let s = app(&p, AutoConfig::default()).await;

    let r = s.delete("/notes/n2", Some(&token)).await;
    assert_eq!(r.status, 403);
    assert!(notes.get("n2").await.unwrap().is_some());
    let r = s.delete("/notes/n1", None).await;
    assert_eq!(r.status, 403);
    let r = s.delete("/notes/n1", Some(&token)).await;
    assert_eq!((r.status, r.json), (200, json!(1)));
    assert!(notes.get("n1").await.unwrap().is_none());
    let r = s.delete("/notes/n1", Some(&token)).await;
    assert_eq!((r.status, r.json), (200, json!(0)));
}

#[tokio::test]
async fn smuggled_modifiers_and_id_changes_are_400_and_write_nothing() {
    let p = platform().await;
    notes_rules(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    let notes = p.collection("notes");
    notes
        .insert(doc(json!({"_id": "n1", "owner": ada, "text": "keep"})))
        .await
        .unwrap();
    let s = app(&p, AutoConfig::default()).await;
    let before = notes.get("n1").await.unwrap();

    for body in [
        json!({"$unset": {"text": 1}}),
        json!({"text": "x", "$set": {"owner": "bob"}}),
        json!({"_id": "other"}),
        json!({"text": {"$inc": 1}}),
        json!({"a..b": 1}),
        json!([1, 2]),
        json!("text"),
        json!({}),
    ] {
        let r = s.patch("/notes/n1", body.clone(), Some(&token)).await;
        assert_eq!(r.status, 400, "{body} -> {}", r.text);
        assert!(r.json["error"].is_string() && r.json["reason"].is_string());
    }
    assert_eq!(notes.get("n1").await.unwrap(), before);

    for body in [
        json!({"$set": {"owner": ada}}),
        json!({"owner": ada, "a.b": 1}),
        json!({"owner": ada, "_id": 7}),
    ] {
        let r = s.post_as("/notes", body.clone(), &token).await;
        assert_eq!(r.status, 400, "{body} -> {}", r.text);
    }
    assert_eq!(notes.count(&Default::default()).await.unwrap(), 1);

    // Malformed JSON never reaches the collection either.
    let r = s
        .send(
            s.client
                .patch(s.url("/notes/n1"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body("{\"text\": "),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-json");
    assert_eq!(notes.get("n1").await.unwrap(), before);
}

#[tokio::test]
async fn collections_option_chooses_endpoints() {
    let p = platform().await;
    for name in ["a", "b"] {
        p.collection(name)
            .allow(Rules::new().insert(|_u, _d| async { true }));
    }
    let none = app(&p, {
        let mut o = AutoConfig::default();
        o.collections = Some(vec![]);
        o
    })
    .await;
    let r = none.post("/a", json!({"x": 1})).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json["error"], "not-found");

    let only_b = app(&p, {
        let mut o = AutoConfig::default();
        o.collections = Some(vec!["b".into()]);
        o
    })
    .await;
    assert_eq!(only_b.post("/a", json!({"x": 1})).await.status, 404);
    assert_eq!(only_b.post("/b", json!({"x": 1})).await.status, 200);

    let all = app(&p, AutoConfig::default()).await;
    assert_eq!(all.post("/a", json!({"x": 1})).await.status, 200);
}

#[tokio::test]
async fn object_id_collections() {
    let p = platform().await;
    let things = p.collection("things");
    things.allow(
        Rules::new()
            .insert(|_u, _d| async { true })
            .update(|_u, _d, _f, _m| async { true })
            .remove(|_u, _d| async { true }),
    );
    let s = app(&p, {
        let mut o = AutoConfig::default();
        o.object_id_collections = vec!["things".into()];
        o
    })
    .await;
    let r = s.post("/things", json!({"n": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.json.as_str().unwrap().to_owned();
    assert_eq!(id.len(), 24);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));

    let r = s
        .patch("/things/not-an-object-id", json!({"n": 2}), None)
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-id");
    let r = s.delete("/things/zzzzzzzzzzzzzzzzzzzzzzzz", None).await;
    assert_eq!(r.status, 400);
    let r = s.post("/things", json!({"_id": "short"})).await;
    assert_eq!(r.status, 400);

    let r = s
        .patch(&format!("/things/{id}"), json!({"n": 2}), None)
        .await;
    assert_eq!((r.status, r.json), (200, json!(1)));
    assert_eq!(things.get(&id).await.unwrap().unwrap()["n"], 2);
    let r = s.delete(&format!("/things/{id}"), None).await;
    assert_eq!((r.status, r.json), (200, json!(1)));
}

#[tokio::test]
async fn collection_without_rules_refuses_client_writes() {
    let p = platform().await;
    p.collection("secrets");
    let s = app(&p, AutoConfig::default()).await;
    let r = s.post("/secrets", json!({"x": 1})).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.json["reason"], "Access denied");
}

#[tokio::test]
async fn collections_declared_with_object_ids_are_object_id_collections() {
    let p = platform().await;
    let things = p
        .define_collection("things", {
            let mut o = portico_platform::CollectionOptions::default();
            o.id_kind = portico_platform::IdKind::ObjectId;
            o
        })
        .unwrap();
    things.allow(
        Rules::new()
            .insert(|_u, _d| async { true })
            .remove(|_u, _d| async { true }),
    );
    let s = app(&p, AutoConfig::default()).await;
    let r = s.post("/things", json!({"n": 1})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json.as_str().map(str::len), Some(24));
    let r = s.delete("/things/not-hex", None).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-id");
}

/// With no allow rule for an operation, the answer is 403 whatever the id: a missing id must
/// not answer differently from an existing one (that would tell which ids exist).
#[tokio::test]
async fn writes_without_an_allow_rule_are_403_for_every_id() {
    let p = platform().await;
    let vault = p.collection("vault");
    // Inserts are allowed; updates and removes have no allow rule.
    vault.allow(Rules::new().insert(|_u, _d| async { true }));
    vault
        .insert(doc(json!({"_id": "exists", "n": 1})))
        .await
        .unwrap();
    let s = app(&p, AutoConfig::default()).await;
    for id in ["exists", "missing"] {
        let r = s
            .patch(&format!("/vault/{id}"), json!({"n": 2}), None)
            .await;
        assert_eq!(r.status, 403, "PATCH {id}: {}", r.text);
        assert_eq!(r.json["reason"], "Access denied");
        let r = s.delete(&format!("/vault/{id}"), None).await;
        assert_eq!(r.status, 403, "DELETE {id}: {}", r.text);
    }
    assert_eq!(vault.get("exists").await.unwrap().unwrap()["n"], 1);
    // A duplicate id on insert is a 409 (someone who knows an id can learn that it exists;
    // generated ids are 17 random characters, and nothing of the document is sent).
    let r = s.post("/vault", json!({"_id": "exists"})).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(!r.text.contains("\"n\""));
}
