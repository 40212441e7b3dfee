//! getAll beyond the spec: where, sort, limit/skip, fields, X-Total-Count, Link, 400s.

use portico_routes::{Api, ApiOptions, CollectionOptions};
use serde_json::{Value, json};

use super::common::{call, memory, opts};

async fn seeded(n: usize, options: ApiOptions, coll: CollectionOptions) -> axum::Router {
    let platform = memory().await;
    let books = platform.collection("books");
    for i in 0..n {
        let doc = json!({"title": format!("t{:03}", i), "year": 2000 + (i % 7) as i64, "n": i, "secret": "s"});
        let Value::Object(doc) = doc else {
            unreachable!()
        };
        books.insert(doc).await.unwrap();
    }
    let mut api = Api::new(options, platform.clone()).unwrap();
    api.add_collection(books, coll).unwrap();
    api.router()
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[tokio::test]
async fn default_page_is_100_with_total_and_next_link() {
    let r = seeded(120, opts(), CollectionOptions::new()).await;
    let resp = call(&r, "GET", "/api/books", None).await;
    assert_eq!(resp.json()["data"].as_array().unwrap().len(), 100);
    assert_eq!(resp.header("x-total-count"), Some("120"));
    let link = resp.header("link").unwrap();
    assert!(
        link.contains("</api/books?skip=100&limit=100>; rel=\"next\""),
        "{link}"
    );
    assert!(!link.contains("prev"));
    let last = call(&r, "GET", "/api/books?skip=100", None).await;
    assert_eq!(last.json()["data"].as_array().unwrap().len(), 20);
    let link = last.header("link").unwrap();
    assert!(
        link.contains("rel=\"prev\"") && !link.contains("next"),
        "{link}"
    );
}

#[tokio::test]
async fn where_sort_limit_skip_fields() {
    let r = seeded(30, opts(), CollectionOptions::new()).await;
    let filter = enc(r#"{"year": {"$gte": 2005}}"#);
    let uri =
        format!("/api/books?where={filter}&sort=-year,title&limit=3&skip=1&fields=title,year");
    let resp = call(&r, "GET", &uri, None).await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    // year 2005: n = 5,12,19,26; year 2006: n = 6,13,20,27. Sorted -year,title: t006,t013,t020,t027,t005...
    let data = resp.json()["data"].clone();
    let titles: Vec<&str> = data
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["t013", "t020", "t027"]);
    for d in data.as_array().unwrap() {
        let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
        assert!(
            keys.iter()
                .all(|k| ["_id", "title", "year"].contains(&k.as_str())),
            "{keys:?}"
        );
    }
    assert_eq!(resp.header("x-total-count"), Some("8"));
    let link = resp.header("link").unwrap();
    assert!(
        link.contains("skip=4&limit=3>; rel=\"next\"")
            && link.contains("skip=0&limit=3>; rel=\"prev\""),
        "{link}"
    );
    assert!(
        link.contains("where="),
        "the filter is kept in links: {link}"
    );
}

#[tokio::test]
async fn bad_where_and_sort_are_400_naming_the_problem() {
    let r = seeded(3, opts(), CollectionOptions::new()).await;
    for (query, word) in [
        ("where=not-json", "where"),
        (
            &*format!("where={}", enc(r#"{"a": {"$bogus": 1}}"#)),
            "where",
        ),
        (&*format!("where={}", enc("[1]")), "where"),
        ("sort=a,,b", "sort"),
        ("limit=ten", "limit"),
        ("skip=-2", "skip"),
    ] {
        let resp = call(&r, "GET", &format!("/api/books?{query}"), None).await;
        assert_eq!(resp.status, 400, "{query}");
        let msg = resp.json()["message"].as_str().unwrap_or("").to_owned();
        assert!(msg.contains(word), "{query}: {msg}");
    }
}

#[tokio::test]
async fn limits_are_clamped_to_the_configured_maximum() {
    let r = seeded(
        30,
        {
            let mut o = opts();
            o.max_page_size = 10;
            o
        },
        CollectionOptions::new(),
    )
    .await;
    let resp = call(&r, "GET", "/api/books?limit=1000", None).await;
    assert_eq!(resp.json()["data"].as_array().unwrap().len(), 10);
    let r = seeded(
        30,
        opts(),
        CollectionOptions::new()
            .max_page_size(5)
            .default_page_size(4),
    )
    .await;
    assert_eq!(
        call(&r, "GET", "/api/books", None).await.json()["data"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        call(&r, "GET", "/api/books?limit=50", None).await.json()["data"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

#[tokio::test]
async fn links_keep_the_outer_prefix_when_nested() {
    let r = seeded(5, opts(), CollectionOptions::new()).await;
    let nested = axum::Router::new().nest("/outer", r);
    let resp = call(&nested, "GET", "/outer/api/books?limit=2", None).await;
    let link = resp.header("link").unwrap();
    assert_eq!(link, "</outer/api/books?skip=2&limit=2>; rel=\"next\"");
}

#[tokio::test]
async fn sorted_lists_past_the_window_are_400_saying_how_to_page() {
    let r = seeded(5, opts(), CollectionOptions::new()).await;
    let max = portico_store::MAX_SORTED_WINDOW;
    // Up to the bound, a sorted page is answered (here past the end: empty).
    let at = call(
        &r,
        "GET",
        &format!("/api/books?sort=-n&skip={}&limit=1", max - 1),
        None,
    )
    .await;
    assert_eq!(at.status, 200, "{}", at.text);
    assert_eq!(at.json()["data"], json!([]));
    // Past it: a JSend error naming the bound and the way to page, not a 500.
    let past = call(
        &r,
        "GET",
        &format!("/api/books?sort=-n&skip={max}&limit=1"),
        None,
    )
    .await;
    assert_eq!(past.status, 400, "{}", past.text);
    let body = past.json();
    assert_eq!(body["status"], "error", "{body}");
    let msg = body["message"].as_str().unwrap_or("").to_owned();
    assert!(msg.contains(&max.to_string()), "{msg}");
    assert!(msg.contains(r#"where {"n": {"$gt""#), "{msg}");
    // The filter on the sort field it suggests pages on.
    let filter = enc(r#"{"n": {"$lt": 2}}"#);
    let next = call(
        &r,
        "GET",
        &format!("/api/books?sort=-n&where={filter}"),
        None,
    )
    .await;
    let titles: Vec<Value> = next.json()["data"]
        .as_array()
        .map(|a| a.iter().map(|d| d["title"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(titles, [json!("t001"), json!("t000")]);
    // Without a sort, any skip is answered.
    let unsorted = call(&r, "GET", &format!("/api/books?skip={}", max * 100), None).await;
    assert_eq!(unsorted.status, 200, "{}", unsorted.text);
    assert_eq!(unsorted.json()["data"], json!([]));
}
