//! Live queries and live publications: the diff rules (a document entering, leaving, changing
//! inside the selector; projection hiding a change; sorted and limited windows), shared
//! evaluation, logout and expiry, the stream cap and the per-subscriber buffer.

use std::time::Duration;

use futures::StreamExt;
use portico_platform::{
    AccountsConfig, LiveCaller, LiveConfig, LiveStream, Platform, PlatformConfig, Query, Selector,
    TOKEN_PATH, Update, hash_token,
};
use portico_store::{Projection, Sort};
use serde_json::{Value, json};

use crate::common::{TestResult, doc};

/// The next event as (name, data); fails after 10 s of silence or when the stream ended.
async fn next(stream: &mut LiveStream) -> Result<(String, Value), Box<dyn std::error::Error>> {
    let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .map_err(|_| "no event within 10 s")?
        .ok_or("the stream ended")?;
    Ok((event.name().to_owned(), event.data()))
}

/// The next `n` events, sorted by (name, id), for writes whose events come in no fixed order.
async fn next_n(
    stream: &mut LiveStream,
    n: usize,
) -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(next(stream).await?);
    }
    out.sort_by_key(|(name, data)| (name.clone(), data["id"].to_string()));
    Ok(out)
}

fn sel(v: Value) -> Selector {
    Selector::parse(&v).unwrap()
}

fn set(v: Value) -> Update {
    Update::parse(&json!({ "$set": v })).unwrap()
}

on_every_backend! {
    async fn documents_enter_change_and_leave(p: Platform) -> TestResult {
        let items = p.collection("items");
        items.insert(doc(json!({"_id": "a1", "kind": "a", "n": 1}))).await?;
        let query = Query::new(sel(json!({"kind": "a"})));
        let mut s = p.live_query("items", query, LiveCaller::anonymous()).await?;
        assert_eq!(
            next(&mut s).await?,
            ("added".into(), json!({"collection": "items", "id": "a1", "fields": {"kind": "a", "n": 1}}))
        );
        assert_eq!(next(&mut s).await?, ("ready".into(), json!({})));

        // Outside the selector: nothing; the next event is the matching insert's.
        items.insert(doc(json!({"_id": "b1", "kind": "b"}))).await?;
        items.insert(doc(json!({"_id": "a2", "kind": "a"}))).await?;
        assert_eq!(
            next(&mut s).await?,
            ("added".into(), json!({"collection": "items", "id": "a2", "fields": {"kind": "a"}}))
        );
        // Changing inside the selector: only the changed fields; a removed field is cleared.
        items.update_by_id("a1", &set(json!({"n": 2, "x": true}))).await?;
        assert_eq!(
            next(&mut s).await?,
            ("changed".into(), json!({"collection": "items", "id": "a1", "fields": {"n": 2, "x": true}, "cleared": []}))
        );
        items.update_by_id("a1", &Update::parse(&json!({"$unset": {"x": 1}}))?).await?;
        assert_eq!(
            next(&mut s).await?,
            ("changed".into(), json!({"collection": "items", "id": "a1", "fields": {}, "cleared": ["x"]}))
        );
        // Leaving and entering by update.
        items.update_by_id("a2", &set(json!({"kind": "b"}))).await?;
        assert_eq!(next(&mut s).await?, ("removed".into(), json!({"collection": "items", "id": "a2"})));
        items.update_by_id("b1", &set(json!({"kind": "a"}))).await?;
        assert_eq!(next(&mut s).await?.0, "added");
        // A multi-document update names no ids: the query runs again.
        items.update(&sel(json!({"kind": "a"})), &set(json!({"m": 1})), portico_platform::UpdateOptions::new(true, false)).await?;
        let events = next_n(&mut s, 2).await?;
        assert_eq!(events[0].1["id"], "a1");
        assert_eq!(events[1].1, json!({"collection": "items", "id": "b1", "fields": {"m": 1}, "cleared": []}));
        // Removed.
        items.remove_by_id("a1").await?;
        assert_eq!(next(&mut s).await?, ("removed".into(), json!({"collection": "items", "id": "a1"})));
        Ok(())
    }

    async fn projection_hides_a_change(p: Platform) -> TestResult {
        let items = p.collection("items");
        items.insert(doc(json!({"_id": "i", "title": "t", "secret": 1}))).await?;
        let query = Query {
            projection: Some(Projection::parse_list("title")?),
            ..Query::default()
        };
        let mut s = p.live_query("items", query, LiveCaller::anonymous()).await?;
        assert_eq!(next(&mut s).await?.1["fields"], json!({"title": "t"}));
        assert_eq!(next(&mut s).await?.0, "ready");
        items.update_by_id("i", &set(json!({"secret": 2}))).await?;
        items.update_by_id("i", &set(json!({"title": "u"}))).await?;
        // The hidden change made no event: the next one is the title's.
        assert_eq!(
            next(&mut s).await?,
            ("changed".into(), json!({"collection": "items", "id": "i", "fields": {"title": "u"}, "cleared": []}))
        );
        Ok(())
    }

    async fn a_sorted_limited_window_stays_right(p: Platform) -> TestResult {
        let scores = p.collection("scores");
        for (id, score) in [("s1", 1), ("s2", 2), ("s3", 3)] {
            scores.insert(doc(json!({"_id": id, "score": score}))).await?;
        }
        let query = Query {
            sort: Some(Sort::parse_list("-score")?),
            limit: Some(2),
            ..Query::default()
        };
        let mut s = p.live_query("scores", query, LiveCaller::anonymous()).await?;
        let first: Vec<Value> = vec![next(&mut s).await?.1["id"].clone(), next(&mut s).await?.1["id"].clone()];
        assert_eq!(first, [json!("s3"), json!("s2")]);
        assert_eq!(next(&mut s).await?.0, "ready");
        // A better score pushes s2 out of the window.
        scores.insert(doc(json!({"_id": "s5", "score": 5}))).await?;
        let events = next_n(&mut s, 2).await?;
        assert_eq!((events[0].0.as_str(), &events[0].1["id"]), ("added", &json!("s5")));
        assert_eq!((events[1].0.as_str(), &events[1].1["id"]), ("removed", &json!("s2")));
        // s3 drops below s2 and s1: s2 moves back in.
        scores.update_by_id("s3", &set(json!({"score": 0}))).await?;
        let events = next_n(&mut s, 2).await?;
        assert_eq!((events[0].0.as_str(), &events[0].1["id"]), ("added", &json!("s2")));
        assert_eq!((events[1].0.as_str(), &events[1].1["id"]), ("removed", &json!("s3")));
        // Removing s5 pulls s1 in.
        scores.remove_by_id("s5").await?;
        let events = next_n(&mut s, 2).await?;
        assert_eq!((events[0].0.as_str(), &events[0].1["id"]), ("added", &json!("s1")));
        assert_eq!((events[1].0.as_str(), &events[1].1["id"]), ("removed", &json!("s5")));
        Ok(())
    }

    async fn identical_queries_share_one_evaluation(p: Platform) -> TestResult {
        let q = || Query::new(sel(json!({"on": true})));
        let mut a = p.live_query("things", q(), LiveCaller::anonymous()).await?;
        let mut b = p.live_query("things", q(), LiveCaller::anonymous()).await?;
        let other = p.live_query("things", Query::new(sel(json!({"on": false}))), LiveCaller::anonymous()).await?;
        assert_eq!(p.open_live_queries(), 2);
        assert_eq!(p.open_live_streams(), 3);
        assert_eq!(next(&mut a).await?.0, "ready");
        assert_eq!(next(&mut b).await?.0, "ready");
        p.collection("things").insert(doc(json!({"_id": "t", "on": true}))).await?;
        assert_eq!(next(&mut a).await?.1["id"], "t");
        assert_eq!(next(&mut b).await?.1["id"], "t");
        drop(other);
        drop(a);
        assert_eq!(p.open_live_queries(), 1);
        drop(b);
        assert_eq!((p.open_live_queries(), p.open_live_streams()), (0, 0));
        Ok(())
    }

    async fn logout_ends_the_stream(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let user = accounts.create_user(portico_platform::NewUser {
            username: Some("ada".into()),
            password: Some(portico_platform::Password::Plain("pw".into())),
            ..Default::default()
        }).await?;
        let token = accounts.new_login_token(&user).await?;
        let caller = LiveCaller::with_token(&user, TOKEN_PATH, hash_token(&token.token));
        let mut s = p.live_query("items", Query::default(), caller).await?;
        assert_eq!(next(&mut s).await?.0, "ready");
        // Another token of the same user changes the record, not this stream.
        accounts.new_login_token(&user).await?;
        p.collection("items").insert(doc(json!({"_id": "x"}))).await?;
        assert_eq!(next(&mut s).await?.0, "added");
        accounts.remove_token(&user, &token.token).await?;
        assert_eq!(next(&mut s).await?, ("end".into(), json!({"reason": "logged-out"})));
        assert!(s.next().await.is_none());
        assert_eq!(p.open_live_streams(), 1, "the stream holds its slot until dropped");
        drop(s);
        assert_eq!(p.open_live_streams(), 0);
        Ok(())
    }

    async fn a_live_publication_merges_its_sources(p: Platform) -> TestResult {
        p.collection("a").insert(doc(json!({"_id": "1", "x": 1}))).await?;
        p.collection("b").insert(doc(json!({"_id": "2", "y": 1, "hidden": 1}))).await?;
        p.publish("both", |sub, _args| async move {
            sub.added("extra", "e", doc(json!({"by": "hand"})));
            let platform = sub.platform();
            Ok(vec![
                platform.collection("a").cursor(Query::default()),
                platform.collection("b").cursor(Query {
                    projection: Some(Projection::parse_list("y").map_err(portico_platform::Error::from)?),
                    ..Query::default()
                }),
            ])
        })?;
        let mut s = p.subscribe_live("both", LiveCaller::anonymous(), vec![]).await?;
        let mut initial = next_n(&mut s, 3).await?;
        initial.sort_by_key(|(_, d)| d["collection"].to_string());
        assert_eq!(initial[0].1, json!({"collection": "a", "id": "1", "fields": {"x": 1}}));
        assert_eq!(initial[1].1, json!({"collection": "b", "id": "2", "fields": {"y": 1}}));
        assert_eq!(initial[2].1, json!({"collection": "extra", "id": "e", "fields": {"by": "hand"}}));
        assert_eq!(next(&mut s).await?.0, "ready");
        p.collection("b").update_by_id("2", &set(json!({"hidden": 2}))).await?;
        p.collection("b").update_by_id("2", &set(json!({"y": 2}))).await?;
        assert_eq!(next(&mut s).await?.1, json!({"collection": "b", "id": "2", "fields": {"y": 2}, "cleared": []}));
        p.collection("a").remove_by_id("1").await?;
        assert_eq!(next(&mut s).await?, ("removed".into(), json!({"collection": "a", "id": "1"})));
        Ok(())
    }
}

#[tokio::test]
async fn a_publication_by_hand_streams_its_calls() -> TestResult {
    let p = Platform::open("memory:").await?;
    p.publish("ticker", |sub, _args| async move {
        sub.added("ticks", "t1", doc(json!({"n": 1})));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            sub.ready();
            sub.changed("ticks", "t1", doc(json!({"n": 2, "old": null})));
            sub.added("ticks", "t2", doc(json!({"n": 1})));
            sub.removed("ticks", "t1");
            while !sub.is_stopped() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        Ok(vec![])
    })?;
    let mut s = p
        .subscribe_live("ticker", LiveCaller::anonymous(), vec![])
        .await?;
    assert_eq!(
        next(&mut s).await?.1,
        json!({"collection": "ticks", "id": "t1", "fields": {"n": 1}})
    );
    // No cursor and no ready() before the handler returned: ready comes when it calls it.
    assert_eq!(next(&mut s).await?.0, "ready");
    assert_eq!(
        next(&mut s).await?.1,
        json!({"collection": "ticks", "id": "t1", "fields": {"n": 2}, "cleared": []})
    );
    assert_eq!(next(&mut s).await?.1["id"], "t2");
    assert_eq!(
        next(&mut s).await?,
        ("removed".into(), json!({"collection": "ticks", "id": "t1"}))
    );
    Ok(())
}

fn limited(max_streams: usize, buffer: usize) -> PlatformConfig {
    {
        let mut o = PlatformConfig::default();
        o.live = {
            let mut o = LiveConfig::default();
            o.max_streams = max_streams;
            o.buffer = buffer;
            o
        };
        o
    }
}

#[tokio::test]
async fn the_stream_cap_refuses_with_503() -> TestResult {
    let p = Platform::open_with("memory:", limited(2, 16)).await?;
    let a = p
        .live_query("c", Query::default(), LiveCaller::anonymous())
        .await?;
    let _b = p
        .live_query("c", Query::default(), LiveCaller::anonymous())
        .await?;
    let refused = p
        .live_query("c", Query::default(), LiveCaller::anonymous())
        .await
        .unwrap_err();
    assert_eq!(
        (refused.error.as_str(), refused.status),
        ("too-many-streams", Some(503))
    );
    drop(a);
    p.live_query("c", Query::default(), LiveCaller::anonymous())
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_slow_subscriber_is_ended_not_buffered() -> TestResult {
    let p = Platform::open_with("memory:", limited(10, 4)).await?;
    let mut slow = p
        .live_query("c", Query::default(), LiveCaller::anonymous())
        .await?;
    let mut fast = p
        .live_query("c", Query::default(), LiveCaller::anonymous())
        .await?;
    let c = p.collection("c");
    for i in 0..10 {
        c.insert(doc(json!({"_id": format!("d{i}")}))).await?;
        // The fast reader keeps up.
        loop {
            let (name, data) = next(&mut fast).await?;
            if name == "added" && data["id"] == format!("d{i}") {
                break;
            }
        }
    }
    // The slow one never read: its buffer of 4 overflowed and its stream ends.
    let mut names = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), slow.next()).await? {
        names.push((event.name(), event.data()));
    }
    assert_eq!(names, [("end", json!({"reason": "slow-subscriber"}))]);
    Ok(())
}

#[tokio::test]
async fn an_expired_token_ends_the_stream() -> TestResult {
    let mut config = PlatformConfig::default();
    config.accounts = {
        let mut o = AccountsConfig::default();
        o.token_lifetime = chrono::Duration::milliseconds(1500);
        o
    };
    let p = Platform::open_with("memory:", config).await?;
    let user = p
        .accounts()
        .create_user(portico_platform::NewUser {
            username: Some("bo".into()),
            password: Some(portico_platform::Password::Plain("pw".into())),
            ..Default::default()
        })
        .await?;
    let token = p.accounts().new_login_token(&user).await?;
    let caller = LiveCaller::with_token(&user, TOKEN_PATH, hash_token(&token.token));
    let mut s = p.live_query("c", Query::default(), caller).await?;
    assert_eq!(next(&mut s).await?.0, "ready");
    assert_eq!(
        next(&mut s).await?,
        ("end".into(), json!({"reason": "expired"}))
    );
    Ok(())
}

on_every_backend! {
    async fn field_rules_shape_live_events_publications_and_client_writes(p: Platform) -> TestResult {
        let rules = portico_platform::FieldRules::new()
            .field("notes", ["owner:ownerId".parse::<portico_platform::ReadRule>()?])?;
        let staff = p.define_collection(
            "staff",
            { let mut o = portico_platform::CollectionOptions::default(); o.field_rules = rules; o },
        )?;
        staff.insert(doc(json!({"_id": "e1", "ownerId": "u1", "notes": "mine", "n": 1}))).await?;
        // A projection without the owner field still decides ownership on the whole document.
        let query = Query {
            projection: Some(Projection::parse(&json!({"notes": 1, "n": 1}))?),
            ..Query::new(sel(json!({})))
        };
        let mut owner = p.live_query("staff", query.clone(), LiveCaller::trusted("u1")).await?;
        let mut other = p.live_query("staff", query, LiveCaller::trusted("u2")).await?;
        assert_eq!(next(&mut owner).await?.1["fields"], json!({"notes": "mine", "n": 1}));
        assert_eq!(next(&mut other).await?.1["fields"], json!({"n": 1}));
        assert_eq!(next(&mut owner).await?.0, "ready");
        assert_eq!(next(&mut other).await?.0, "ready");
        staff.update_by_id("e1", &set(json!({"notes": "changed", "n": 2}))).await?;
        assert_eq!(next(&mut owner).await?.1["fields"], json!({"notes": "changed", "n": 2}));
        assert_eq!(next(&mut other).await?.1["fields"], json!({"n": 2}));

        p.publish("staff", |sub, _args| async move {
            sub.added("staff", "by-hand", doc(json!({"ownerId": "u1", "notes": "hand"})));
            Ok(vec![sub.platform().collection("staff").cursor(Query::new(Selector::all()))])
        })?;
        let seen = p.subscribe("staff", Some("u2".into()), vec![]).await?;
        assert!(!Value::Object(seen.clone()).to_string().contains("notes"), "{seen:?}");
        let seen = p.subscribe("staff", Some("u1".into()), vec![]).await?;
        assert!(Value::Object(seen).to_string().contains("hand"));

        // Client writes: the owner may write the field, another caller may not.
        staff.allow(portico_platform::Rules::new().update(|_u, _d, _f, _m| async { true }));
        let refused = staff.client_update(Some("u2"), "e1", &json!({"$set": {"notes": "x"}})).await;
        assert!(matches!(refused, Err(portico_platform::Error::FieldDenied(ref f)) if f == "notes"), "{refused:?}");
        assert_eq!(staff.client_update(Some("u1"), "e1", &json!({"$set": {"notes": "y"}})).await?, 1);
        Ok(())
    }
}
