//! Publications as endpoints: several collections, url arguments, custom urls and methods.

use portico_auto::AutoApi;
use portico_platform::{MethodError, Platform, PublicationOptions, Query, Selector};
use serde_json::{Value, json};

use crate::common::{Server, doc, platform, serve};

async fn seeded() -> Platform {
    let p = platform().await;
    let lists = p.collection("lists");
    let todos = p.collection("todos");
    lists
        .insert(doc(json!({"_id": "l1", "name": "Home"})))
        .await
        .unwrap();
    lists
        .insert(doc(json!({"_id": "l2", "name": "Work"})))
        .await
        .unwrap();
    for (id, list, title) in [
        ("t1", "l1", "Milk"),
        ("t2", "l1", "Eggs"),
        ("t3", "l2", "Report"),
    ] {
        todos
            .insert(doc(json!({"_id": id, "listId": list, "title": title})))
            .await
            .unwrap();
    }
    p
}

async fn app(p: &Platform) -> Server {
    serve(AutoApi::new(p.clone()).router().unwrap()).await
}

fn by_list(list: &str) -> Query {
    Query::new(Selector::parse(&json!({"listId": list})).unwrap())
}

#[tokio::test]
async fn one_publication_over_two_collections() {
    let p = seeded().await;
    p.publish("everything", |sub, _args| async move {
        let platform = sub.platform();
        Ok(vec![
            platform.collection("lists").cursor(Query::default()),
            platform.collection("todos").cursor(Query::default()),
        ])
    })
    .unwrap();
    let s = app(&p).await;
    let r = s.get("/publications/everything").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let lists = r.json["lists"].as_array().unwrap();
    let todos = r.json["todos"].as_array().unwrap();
    assert_eq!(lists.len(), 2);
    assert_eq!(todos.len(), 3);
    assert!(
        todos
            .iter()
            .all(|t| t["_id"].is_string() && t["title"].is_string())
    );
    assert!(lists.contains(&json!({"_id": "l2", "name": "Work"})));
}

#[tokio::test]
async fn url_argument_publication() {
    let p = seeded().await;
    p.publish_with_options(
        "list-todos",
        {
            let mut o = PublicationOptions::default();
            o.url = Some("lists/:0/todos".into());
            o
        },
        |sub, args| async move {
            let list: String = portico_platform::arg(&args, 0)?;
            Ok(vec![
                sub.platform().collection("todos").cursor(by_list(&list)),
            ])
        },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s.get("/lists/l1/todos").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let titles: Vec<&str> = r.json["todos"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["title"].as_str())
        .collect();
    assert_eq!(titles.len(), 2);
    assert!(titles.contains(&"Milk") && titles.contains(&"Eggs"));
    // A list with nothing: the collection is present and empty.
    let r = s.get("/lists/none/todos").await;
    assert_eq!((r.status, r.json), (200, json!({"todos": []})));
}

#[tokio::test]
async fn custom_url_post_publication_takes_body_args() {
    let p = seeded().await;
    p.publish_with_options(
        "search",
        {
            let mut o = PublicationOptions::default();
            o.url = Some("search/todos".into());
            o.http_method = Some(portico_platform::HttpMethod::Post);
            o
        },
        |sub, args| async move {
            let filter: Value = portico_platform::arg(&args, 0)?;
            let selector = Selector::parse(&filter)
                .map_err(|e| MethodError::invalid_arguments(e.to_string()))?;
            Ok(vec![
                sub.platform()
                    .collection("todos")
                    .cursor(Query::new(selector)),
            ])
        },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s.post("/search/todos", json!({"title": "Report"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json,
        json!({"todos": [{"_id": "t3", "listId": "l2", "title": "Report"}]})
    );
    // GET is not how this one is called.
    assert_eq!(s.get("/search/todos").await.status, 405);
    // A publication's own error is a 400 JSON error.
    let r = s
        .post("/search/todos", json!({"title": {"$nosuch": 1}}))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["error"], "invalid-arguments");
}

#[tokio::test]
async fn publication_by_hand_and_for_the_calling_user() {
    let p = platform().await;
    p.publish("me", |sub, _args| async move {
        let id = sub.user_id().unwrap_or("nobody").to_owned();
        sub.added("people", &id, crate::common::doc(json!({"seen": true})));
        sub.ready();
        Ok(vec![])
    })
    .unwrap();
    let s = app(&p).await;
    let r = s.get("/publications/me").await;
    assert_eq!(
        (r.status, r.json),
        (200, json!({"people": [{"_id": "nobody", "seen": true}]}))
    );
}

#[tokio::test]
async fn publication_errors_follow_the_status_rules() {
    let p = platform().await;
    p.publish("forbidden", |_sub, _args| async move {
        Err::<Vec<portico_platform::Cursor>, _>(
            MethodError::new("not-authorized", "Sign in first").with_status(401),
        )
    })
    .unwrap();
    p.publish("broken", |_sub, _args| async move {
        Err::<Vec<portico_platform::Cursor>, _>(MethodError::internal("disk exploded"))
    })
    .unwrap();
    let s = app(&p).await;
    let r = s.get("/publications/forbidden").await;
    assert_eq!(r.status, 401);
    assert_eq!(
        r.json,
        json!({"error": "not-authorized", "reason": "Sign in first"})
    );
    let r = s.get("/publications/broken").await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.json,
        json!({"error": "internal-server-error", "reason": "Internal server error"})
    );
    assert!(!r.text.contains("disk"));
}

#[tokio::test]
async fn publication_args_extractor_reads_the_query_string() {
    let p = seeded().await;
    p.publish_with_options(
        "todos-by-title",
        {
            let mut o = PublicationOptions::default();
            o.args_extractor = Some(portico_auto::args_extractor(
                |req: portico_auto::ArgsRequest| async move {
                    let title = req
                        .query
                        .get("title")
                        .cloned()
                        .ok_or_else(|| MethodError::invalid_arguments("?title= is required"))?;
                    Ok(vec![title])
                },
            ));
            o
        },
        |sub, args| async move {
            let title: String = portico_platform::arg(&args, 0)?;
            let selector = Selector::parse(&json!({"title": title}))
                .map_err(|e| MethodError::invalid_arguments(e.to_string()))?;
            Ok(vec![
                sub.platform()
                    .collection("todos")
                    .cursor(Query::new(selector)),
            ])
        },
    )
    .unwrap();
    let s = app(&p).await;
    let r = s.get("/publications/todos-by-title?title=Eggs").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json,
        json!({"todos": [{"_id": "t2", "listId": "l1", "title": "Eggs"}]})
    );
    let r = s.get("/publications/todos-by-title").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json["reason"], "?title= is required");
}

#[tokio::test]
async fn a_sorted_cursor_past_the_window_is_400_saying_how_to_page() {
    let p = seeded().await;
    let max = portico_store::MAX_SORTED_WINDOW;
    let mut options = PublicationOptions::default();
    options.url = Some("deep/:0".into());
    p.publish_with_options("deep", options, move |sub, args| async move {
        let skip: String = portico_platform::arg(&args, 0)?;
        let skip: u64 = skip
            .parse()
            .map_err(|_| MethodError::invalid_arguments("skip is a number"))?;
        let query = Query {
            sort: Some(
                portico_store::Sort::parse_list("title")
                    .map_err(|e| MethodError::from(portico_platform::Error::from(e)))?,
            ),
            skip,
            limit: Some(1),
            ..Query::default()
        };
        Ok(vec![sub.platform().collection("todos").cursor(query)])
    })
    .unwrap();
    let s = app(&p).await;
    let within = s.get(&format!("/deep/{}", max - 1)).await;
    assert_eq!(within.status, 200, "{}", within.text);
    let past = s.get(&format!("/deep/{max}")).await;
    assert_eq!(past.status, 400, "{}", past.text);
    assert!(past.text.contains(&max.to_string()), "{}", past.text);
    assert!(past.text.contains("$gt"), "{}", past.text);
}
