//! Publications followed live: `Accept: text/event-stream` on a publication's url, over real
//! HTTP; writes through the API reach the stream; logout ends it; the stream cap answers 503.

use portico_auto::{AutoApi, BearerTokenLayer};
use portico_platform::{LiveConfig, Platform, PlatformConfig, Query, Rules, Selector, hash_token};
use serde_json::{Value, json};

use crate::common::{Server, serve, user_with_token};
use portico_testkit::sse::Sse;

async fn app(p: &Platform) -> Server {
    let owned = |user: Option<String>, doc: portico_platform::Document| async move {
        user.is_some() && doc.get("owner").and_then(Value::as_str) == user.as_deref()
    };
    p.collection("todos").allow(
        Rules::new()
            .insert(owned)
            .update(move |user, doc, _, _| owned(user, doc))
            .remove(owned),
    );
    p.publish("mine", |sub, _args| async move {
        let owner = sub.user_id().unwrap_or_default().to_owned();
        let selector =
            Selector::parse(&json!({"owner": owner})).map_err(portico_platform::Error::from)?;
        Ok(vec![
            sub.platform()
                .collection("todos")
                .cursor(Query::new(selector)),
        ])
    })
    .unwrap();
    serve(
        AutoApi::new(p.clone())
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn a_publication_streams_writes_made_through_the_api() {
    let p = Platform::open("memory:").await.unwrap();
    let s = app(&p).await;
    let (ada, token) = user_with_token(&p, "ada").await;
    let (_bo, other) = user_with_token(&p, "bo").await;
    p.collection("todos")
        .insert(crate::common::doc(
            json!({"_id": "t0", "owner": ada, "title": "first"}),
        ))
        .await
        .unwrap();

    // The snapshot is unchanged.
    let snapshot = s.get_as("/publications/mine", &token).await;
    assert_eq!(
        snapshot.json,
        json!({"todos": [{"_id": "t0", "owner": ada, "title": "first"}]})
    );

    let mut stream = Sse::open(
        s.client
            .get(s.url("/publications/mine"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(
        stream.next().await,
        (
            "added".into(),
            json!({"collection": "todos", "id": "t0", "fields": {"owner": ada, "title": "first"}})
        )
    );
    assert_eq!(stream.next().await, ("ready".into(), json!({})));

    // Another user's document is outside the publication's selector.
    let r = s
        .post_as("/todos", json!({"owner": _bo, "title": "not mine"}), &other)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = s
        .post_as("/todos", json!({"owner": ada, "title": "second"}), &token)
        .await;
    let id = r.json.as_str().unwrap().to_owned();
    assert_eq!(
        stream.next().await,
        (
            "added".into(),
            json!({"collection": "todos", "id": id, "fields": {"owner": ada, "title": "second"}})
        )
    );
    let r = s
        .patch(&format!("/todos/{id}"), json!({"done": true}), Some(&token))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        stream.next().await,
        (
            "changed".into(),
            json!({"collection": "todos", "id": id, "fields": {"done": true}, "cleared": []})
        )
    );
    let r = s.delete(&format!("/todos/{id}"), Some(&token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        stream.next().await,
        ("removed".into(), json!({"collection": "todos", "id": id}))
    );

    // Logout (the token leaves the user's record) ends the stream.
    assert!(
        p.accounts()
            .remove_hashed_token(&ada, &hash_token(&token))
            .await
            .unwrap()
    );
    let end = tokio::time::timeout(std::time::Duration::from_secs(1), stream.next()).await;
    assert_eq!(
        end.expect("ended within 1 s"),
        ("end".into(), json!({"reason": "logged-out"}))
    );
    assert!(stream.ends().await);
}

#[tokio::test]
async fn the_stream_cap_answers_503_with_a_json_error() {
    let mut config = PlatformConfig::default();
    config.live = {
        let mut o = LiveConfig::default();
        o.max_streams = 1;
        o
    };
    let p = Platform::open_with("memory:", config).await.unwrap();
    let s = app(&p).await;
    let mut first = Sse::open(s.client.get(s.url("/publications/mine"))).await;
    assert_eq!(first.next().await.0, "ready");
    let refused = s
        .send(
            s.client
                .get(s.url("/publications/mine"))
                .header("accept", "text/event-stream"),
        )
        .await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.json["error"], "too-many-streams");
    drop(first);
    // The slot is given back when the client goes away.
    for _ in 0..100 {
        if p.open_live_streams() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut again = Sse::open(s.client.get(s.url("/publications/mine"))).await;
    assert_eq!(again.next().await.0, "ready");
}

#[tokio::test]
async fn an_unknown_publication_is_a_404_not_a_stream() {
    let p = Platform::open("memory:").await.unwrap();
    let s = app(&p).await;
    let r = s
        .send(
            s.client
                .get(s.url("/publications/nope"))
                .header("accept", "text/event-stream"),
        )
        .await;
    assert_eq!(r.status, 404);
}
