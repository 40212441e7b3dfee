//! Sorted indexes in the `portico` binary: `indexes = [...]` of `[[api.collection]]` and
//! `[auto.indexes]` made at start, sorted and filtered lists served through them with the
//! same answers as without (and no window cap), `portico indexes list|drop`, the slow-scan log
//! line with the index that would serve a query, and `/metrics` with the store's own search and
//! aggregates.

use serde_json::{Value, json};

use super::common::{Http, Workspace, text};

const CONFIG: &str = r#"
[metrics]
[log]
slow_scan_docs = 500
[[api]]
api_path = "api/"
auth_failure_delay_ms = 0
[[api.collection]]
name = "items"
auth_required = false
indexes = ["-score", ["city", "-score"], { fields = ["code"], unique = true }]
search = ["name"]
[auto]
collections = ["items"]
[auto.indexes]
items = ["tags"]
"#;

const N: usize = 10_100;
const CITIES: [&str; 4] = ["Oslo", "Bergen", "Tromsø", "Bodø"];

fn item(i: usize) -> Value {
    json!({
        "_id": format!("i{i:05}"),
        "name": format!("item {i}"),
        "code": format!("c{i}"),
        // Repeating scores, so ties are broken by `_id`; some are not numbers at all.
        "score": if i.is_multiple_of(97) { json!("n/a") } else { json!((i * 7919) % 1000) },
        "city": CITIES[i % 4],
        "tags": if i.is_multiple_of(5) { json!(["a", "b"]) } else { json!(["c"]) },
        "other": i % 3,
    })
}

/// The items as the store orders them by `-score` (type brackets: strings above numbers; ties in
/// `_id` order).
fn by_score_desc(items: &[Value]) -> Vec<Value> {
    let mut sorted = items.to_vec();
    sorted.sort_by(|a, b| {
        portico_store::compare_values(&b["score"], &a["score"])
            .then_with(|| a["_id"].as_str().cmp(&b["_id"].as_str()))
    });
    sorted
}

fn ids(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .filter_map(|v| v["_id"].as_str().map(str::to_owned))
        .collect()
}

async fn page(server: &Http, query: &str) -> (Vec<String>, Option<String>) {
    let r = server
        .call("GET", &format!("/api/items?{query}"), None, &[])
        .await;
    assert_eq!(r.status, 200, "{query}: {}", r.raw);
    let data = r.body["data"].as_array().cloned().unwrap_or_default();
    (ids(&data), r.header("x-total-count").map(str::to_owned))
}

fn enc(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn declared_indexes_serve_sorted_and_filtered_lists_with_the_same_answers() {
    let ws = Workspace::new();
    let items: Vec<Value> = (0..N).map(item).collect();
    std::fs::write(
        ws.path("items.json"),
        serde_json::to_vec(&items).expect("json"),
    )
    .expect("write");
    let out = ws.import("items", "items.json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    ws.config(CONFIG);
    let server = ws.serve_logging("info");

    let sorted = by_score_desc(&items);
    // The 20 highest scores, with the total.
    let (got, total) = page(&server, "limit=20&sort=-score").await;
    assert_eq!(got, ids(&sorted[..20]));
    assert_eq!(total.as_deref(), Some(N.to_string().as_str()));
    // Among Oslo's, with their total (counted in the index).
    let oslo: Vec<Value> = sorted
        .iter()
        .filter(|v| v["city"] == "Oslo")
        .cloned()
        .collect();
    let query = format!(
        "limit=20&skip=40&sort=-score&where={}",
        enc(r#"{"city":"Oslo"}"#)
    );
    let (got, total) = page(&server, &query).await;
    assert_eq!(got, ids(&oslo[40..60]));
    assert_eq!(total.as_deref(), Some(oslo.len().to_string().as_str()));
    // total=false: the same page, no count, and a `next` link for a full page.
    let r = server
        .call(
            "GET",
            "/api/items?limit=20&sort=-score&total=false",
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.header("x-total-count"), None);
    assert!(
        r.header("link").is_some_and(|l| l.contains("rel=\"next\"")),
        "{:?}",
        r.header("link")
    );
    let data = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(ids(&data), ids(&sorted[..20]));
    let r = server
        .call("GET", "/api/items?total=maybe", None, &[])
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    // A range on the indexed field, sorted by it.
    let query = format!(
        "limit=15&sort=-score&where={}",
        enc(r#"{"score":{"$gte":500,"$lt":700}}"#)
    );
    let in_range: Vec<Value> = sorted
        .iter()
        .filter(|v| v["score"].as_u64().is_some_and(|s| (500..700).contains(&s)))
        .cloned()
        .collect();
    let (got, total) = page(&server, &query).await;
    assert_eq!(got, ids(&in_range[..15]));
    assert_eq!(total.as_deref(), Some(in_range.len().to_string().as_str()));
    // Past the 10,000 window a sorted page is served through the index...
    let (got, _) = page(&server, "limit=20&skip=10050&sort=-score").await;
    assert_eq!(got, ids(&sorted[10_050..10_070]));
    // ...and still refused for a sort no index serves.
    let r = server
        .call(
            "GET",
            "/api/items?limit=20&skip=10050&sort=-other",
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    // An array field indexed from [auto.indexes]: each document once.
    let query = format!("limit=1&where={}", enc(r#"{"tags":{"$in":["a","b"]}}"#));
    let (_, total) = page(&server, &query).await;
    assert_eq!(total.as_deref(), Some((N / 5).to_string().as_str()));
    // A unique index refuses a taken value.
    let r = server
        .call(
            "POST",
            "/api/items",
            Some(json!({"code": "c7", "score": 1})),
            &[],
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.raw);
    // Writes keep the index: a new best score is first at once.
    let r = server
        .call(
            "POST",
            "/api/items",
            // Strings sort above numbers: "zzz" is the highest score there is.
            Some(json!({"_id": "zz-new", "score": "zzz", "city": "Oslo"})),
            &[],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.raw);
    let query = format!("limit=1&sort=-score&where={}", enc(r#"{"city":"Oslo"}"#));
    assert_eq!(page(&server, &query).await.0, ["zz-new"]);

    // A query no index serves reads every document: logged once with the index that would
    // serve it, and counted.
    let query = format!("limit=5&sort=name&where={}", enc(r#"{"other":1}"#));
    page(&server, &query).await;
    page(&server, &query).await;
    // Search and aggregates with [metrics] on are the database's own (not the in-memory
    // fallbacks of an unforwarded store call).
    let r = server
        .call("GET", "/api/items?search=item&limit=3", None, &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = server
        .call("GET", "/api/items?group=city&count=true", None, &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let metrics = server.call("GET", "/metrics", None, &[]).await.raw;
    for operation in [
        "search",
        "aggregate",
        "ensure_search",
        "ensure_sorted_index",
    ] {
        assert!(
            metrics.contains(&format!("operation=\"{operation}\"")),
            "the store's {operation} is timed as itself: {metrics}"
        );
    }
    let slow = metrics
        .lines()
        .find(|l| l.starts_with("portico_slow_queries_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse::<u64>().ok());
    assert!(slow.is_some_and(|n| n >= 2), "{metrics}");
    let (_, log) = server.stop();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("slow query")).collect();
    assert_eq!(lines.len(), 1, "once per shape: {log}");
    assert!(
        lines[0].contains(r#"indexes = [["other","name"]]"#),
        "the line names the index that would serve it: {}",
        lines[0]
    );
    assert!(log.contains("index made"), "{log}");

    // The indexes are listed, and only an explicit command drops one.
    let out = ws.run(&["indexes", "list", "--config", "portico.toml"]);
    let listed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for line in [
        "items\t-score\tdeclared",
        "items\tcity,-score\tdeclared",
        "items\ttags\tdeclared",
        "items\tcode unique\tdeclared",
    ] {
        assert!(listed.contains(line), "{line:?} in {listed}");
    }
    let out = ws.run(&[
        "indexes",
        "drop",
        "--config",
        "portico.toml",
        "--collection",
        "items",
        "city,-score",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(
        &ws.run(&["indexes", "list", "--config", "portico.toml"])
            .stdout,
    );
    assert!(!listed.contains("city,-score"), "{listed}");
}

#[tokio::test]
async fn a_bad_index_is_a_config_mistake_with_its_line() {
    let ws = Workspace::new();
    let message = ws.check_refuses(
        r#"
[[api]]
[[api.collection]]
name = "items"
indexes = ["-score", ["a", "a"], { fields = ["x", "y"], unique = true }]
"#,
    );
    assert!(message.contains("api.collection.indexes"), "{message}");
    assert!(message.contains("named twice"), "{message}");
    assert!(
        message.contains("a unique index has one field"),
        "{message}"
    );
}

#[tokio::test]
async fn check_lists_the_declared_indexes() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let out = ws.run(&["check", "--config", "portico.toml"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("indexes of items: -score; city,-score; code unique; tags"),
        "{stdout}"
    );
}
