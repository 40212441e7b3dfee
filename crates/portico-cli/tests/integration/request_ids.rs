//! `X-Request-Id` on every reply and `[log] format = "json"`, through the binary.

use serde_json::Value;

use super::common::Workspace;

const API: &str = "[[api]]\n[[api.collection]]\nname = \"items\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reply_has_a_request_id_and_json_log_lines_carry_it() {
    let ws = Workspace::new();
    // The test client connects from 127.0.0.1: a trusted proxy here.
    ws.config(&format!(
        "trusted_proxies = [\"127.0.0.1\"]\n[log]\nformat = \"json\"\n{API}"
    ));
    let server = ws.serve_binary();
    let mut seen = Vec::new();
    for path in [
        "/api/items",
        "/no/such/path",
        "/healthz",
        "/_/",
        "/_/api/me",
    ] {
        let reply = server.call("GET", path, None, &[]).await;
        let id = reply.header("x-request-id").map(str::to_owned);
        let id = id.unwrap_or_else(|| panic!("{path}: no X-Request-Id"));
        assert_eq!(id.len(), 17, "{path}: {id}");
        seen.push(id);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5, "ids repeat: {seen:?}");
    let kept = server
        .call(
            "GET",
            "/api/items",
            None,
            &[("X-Request-Id", "proxy-abc-123")],
        )
        .await;
    assert_eq!(kept.header("x-request-id"), Some("proxy-abc-123"));
    let too_long = "a".repeat(200);
    let replaced = server
        .call(
            "GET",
            "/api/items",
            None,
            &[("X-Request-Id", too_long.as_str())],
        )
        .await;
    assert_ne!(replaced.header("x-request-id"), Some(too_long.as_str()));
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    assert!(
        lines
            .iter()
            .all(|l| l["timestamp"].is_string() && l["level"].is_string())
    );
    let requests: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "portico::request")
        .collect();
    assert_eq!(requests.len(), 7, "{log}");
    for id in seen.iter().map(String::as_str).chain(["proxy-abc-123"]) {
        assert!(
            requests.iter().any(|l| l["request_id"] == id),
            "no request line with {id}: {log}"
        );
    }
    let proxied = requests
        .iter()
        .find(|l| l["request_id"] == "proxy-abc-123")
        .unwrap();
    assert_eq!(proxied["status"], 200);
    assert_eq!(proxied["uri"], "/api/items");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_sent_by_a_client_that_is_not_a_trusted_proxy_is_replaced() {
    let ws = Workspace::new();
    ws.config(API);
    let server = ws.serve_binary();
    let reply = server
        .call(
            "GET",
            "/api/items",
            None,
            &[("X-Request-Id", "chosen-by-client")],
        )
        .await;
    let id = reply.header("x-request-id").unwrap_or_default().to_owned();
    assert!(!id.is_empty() && id != "chosen-by-client", "{id}");
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");
    // Text lines by default, with the id in the request line.
    assert!(log.contains(&format!("request_id={id}")), "{log}");
    assert!(!log.contains("chosen-by-client"), "{log}");
}
