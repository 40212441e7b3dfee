//! The whole flow on a real SQLite file: register, write through rules, publish, restart.

use portico_auto::{AutoApi, AutoConfig, BearerTokenLayer, LoginOptions};
use portico_platform::{MethodError, Platform, Query, Rules, Selector};
use serde_json::{Value, json};

use crate::common::{Server, serve};

async fn open(path: &std::path::Path) -> Platform {
    let p = Platform::open(&format!("sqlite:{}", path.display()))
        .await
        .expect("sqlite platform");
    let todos = p.collection("todos");
    let owns = |user: Option<String>, doc: &portico_platform::Document| {
        user.is_some() && doc.get("owner").and_then(Value::as_str) == user.as_deref()
    };
    todos.allow(
        Rules::new()
            .insert(move |u, d| async move { owns(u, &d) })
            .update(move |u, d, _f, _m| async move { owns(u, &d) })
            .remove(move |u, d| async move { owns(u, &d) }),
    );
    p.publish("my-todos", |sub, _args| async move {
        let owner = sub.user_id().unwrap_or_default().to_owned();
        let selector = Selector::parse(&json!({"owner": owner}))
            .map_err(|e| MethodError::internal(e.to_string()))?;
        Ok(vec![
            sub.platform()
                .collection("todos")
                .cursor(Query::new(selector)),
        ])
    })
    .unwrap();
    p.method("count", |inv, _args| async move {
        let n = inv
            .platform()
            .collection("todos")
            .count(&Selector::all())
            .await
            .map_err(MethodError::from)?;
        Ok::<Value, MethodError>(json!(n))
    })
    .unwrap();
    p
}

async fn app(p: &Platform) -> Server {
    serve(
        AutoApi::new(p.clone())
            .configure({
                let mut o = AutoConfig::default();
                o.collections = Some(vec!["todos".into()]);
                o
            })
            .with_login(LoginOptions::default())
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn full_flow_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auto.db");

    let (user, token, kept) = {
        let p = open(&path).await;
        let s = app(&p).await;
        let r = s
            .post(
                "/users/register",
                json!({"username": "ada", "password": "pw-long-1"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let user = r.json["id"].as_str().unwrap().to_owned();
        let token = r.json["token"].as_str().unwrap().to_owned();

        let mut ids = Vec::new();
        for title in ["one", "two", "three"] {
            let r = s
                .post_as("/todos", json!({"owner": user, "title": title}), &token)
                .await;
            assert_eq!(r.status, 200, "{}", r.text);
            ids.push(r.json.as_str().unwrap().to_owned());
        }
        let r = s
            .patch(
                &format!("/todos/{}", ids[0]),
                json!({"done": true}),
                Some(&token),
            )
            .await;
        assert_eq!(r.json, json!(1));
        let r = s
            .patch(
                &format!("/todos/{}", ids[0]),
                json!({"$unset": {"title": 1}}),
                Some(&token),
            )
            .await;
        assert_eq!(r.status, 400);
        let r = s.delete(&format!("/todos/{}", ids[1]), Some(&token)).await;
        assert_eq!(r.json, json!(1));
        let r = s.delete(&format!("/todos/{}", ids[2]), None).await;
        assert_eq!(r.status, 403);

        let r = s.get_as("/publications/my-todos", &token).await;
        assert_eq!(r.json["todos"].as_array().unwrap().len(), 2);
        (user, token, ids[0].clone())
    };

    // A new process on the same file: data, rules (redeclared) and the token are all there.
    let p = open(&path).await;
    let s = app(&p).await;
    let r = s.get_as("/publications/my-todos", &token).await;
    assert_eq!(r.status, 200);
    let todos = r.json["todos"].as_array().unwrap();
    assert_eq!(todos.len(), 2);
    let first = todos.iter().find(|t| t["_id"] == kept.as_str()).unwrap();
    assert_eq!(
        (first["title"].clone(), first["done"].clone()),
        (json!("one"), json!(true))
    );
    assert_eq!(first["owner"], json!(user));
    let r = s.post_empty("/methods/count").await;
    assert_eq!(r.json, json!(2));
    let r = s
        .post(
            "/users/login",
            json!({"username": "ada", "password": "pw-long-1"}),
        )
        .await;
    assert_eq!(r.status, 200);
}
