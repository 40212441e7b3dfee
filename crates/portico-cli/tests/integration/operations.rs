//! What a running server offers its operators and client generators: `/openapi.json` (and
//! `portico openapi`), the health probes and Prometheus metrics.

use super::common::{Process, Workspace, text};

const CONFIG: &str = "[[api]]\nversion = \"v1\"\nuse_default_auth = true\n[[api.collection]]\nname = \"items\"\nauth_required = false\n[auto]\ncollections = [\"widgets\"]\n";

#[tokio::test]
async fn the_served_document_is_the_printed_one_and_describes_both_doors() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let printed = ws.run(&["openapi", "--config", "portico.toml"]);
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    let printed: serde_json::Value =
        serde_json::from_slice(&printed.stdout).expect("portico openapi prints JSON");
    let server = ws.serve();
    let served = server.call("GET", "/openapi.json", None, &[]).await;
    assert_eq!(served.status, 200, "{}", served.raw);
    assert_eq!(served.body, printed);
    assert_eq!(served.body["openapi"], "3.1.0");
    let paths = &served.body["paths"];
    for (path, method) in [
        ("/api/v1/items", "get"),
        ("/api/v1/items/{id}", "patch"),
        ("/api/v1/login", "post"),
        ("/widgets", "post"),
        ("/widgets/{_id}", "delete"),
        ("/healthz", "get"),
        ("/readyz", "get"),
    ] {
        assert!(paths[path][method].is_object(), "{path} {method}: {paths}");
    }
    // The routes door's replies are JSend; the auto API's are plain.
    assert_eq!(
        paths["/api/v1/items"]["get"]["responses"]["2XX"]["content"]["application/json"]["schema"]
            ["properties"]["status"]["const"],
        "success"
    );
    assert_eq!(
        paths["/widgets"]["post"]["responses"]["default"]["content"]["application/json"]["schema"]
            ["$ref"],
        "#/components/schemas/AutoError"
    );
    assert_eq!(
        served.body["components"]["securitySchemes"]["authToken"]["name"],
        "X-Auth-Token"
    );
}

#[tokio::test]
async fn openapi_false_turns_the_route_off() {
    let ws = Workspace::new();
    ws.config(&format!("openapi = false\n{CONFIG}"));
    let check = ws.run(&["check", "--config", "portico.toml"]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    let server = ws.serve();
    let reply = server.call("GET", "/openapi.json", None, &[]).await;
    assert_eq!(reply.status, 404, "{}", reply.raw);
    // The command still prints the document (the config's routes are what it describes).
    let printed = ws.run(&["openapi", "--config", "portico.toml"]);
    assert!(printed.status.success(), "{}", text(&printed.stderr));
}

#[tokio::test]
async fn health_and_readiness_answer_ok() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    let health = server.call("GET", "/healthz", None, &[]).await;
    assert_eq!(
        (health.status, health.body["status"].as_str()),
        (200, Some("ok"))
    );
    let ready = server.call("GET", "/readyz", None, &[]).await;
    assert_eq!(
        (ready.status, ready.body["status"].as_str()),
        (200, Some("ok"))
    );
}

#[tokio::test]
async fn readiness_is_503_while_the_store_fails_and_liveness_stays() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    assert_eq!(server.call("GET", "/readyz", None, &[]).await.status, 200);
    // Make the store fail the probe's lookup for real: another process writes a row that is not
    // JSON where the probe reads (the accounts table, id `readyz-probe`), as a damaged database
    // would hold. SQLite then answers the lookup with an error.
    let db = rusqlite::Connection::open(ws.path("portico.db")).expect("open the database");
    db.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    let table = format!("\"c_{}\"", hex::encode(portico_platform::USERS));
    db.execute(
        &format!("INSERT INTO {table} (id, doc) VALUES ('readyz-probe', 'not json')"),
        [],
    )
    .expect("write the damaged row");
    let ready = server.call("GET", "/readyz", None, &[]).await;
    assert_eq!(ready.status, 503, "{}", ready.raw);
    assert_eq!(ready.body["status"], "unavailable");
    assert_eq!(server.call("GET", "/healthz", None, &[]).await.status, 200);
    db.execute(
        &format!("DELETE FROM {table} WHERE id = 'readyz-probe'"),
        [],
    )
    .expect("repair");
    assert_eq!(server.call("GET", "/readyz", None, &[]).await.status, 200);
}

#[tokio::test]
async fn metrics_count_requests_by_route_pattern_and_status() {
    let ws = Workspace::new();
    ws.config(&format!("[metrics]\n{CONFIG}"));
    let server = ws.serve_binary();
    for id in ["a", "b", "c"] {
        let reply = server
            .call("GET", &format!("/api/v1/items/{id}"), None, &[])
            .await;
        assert_eq!(reply.status, 404);
    }
    let reply = server.call("GET", "/no/such/path/at/all", None, &[]).await;
    assert_eq!(reply.status, 404);
    let metrics = server.call("GET", "/metrics", None, &[]).await;
    assert_eq!(metrics.status, 200);
    let body = metrics.raw;
    assert!(
        body.contains(
            "portico_http_requests_total{method=\"GET\",route=\"/api/v1/items/:id\",status=\"404\"} 3"
        ),
        "{body}"
    );
    assert!(body.contains("route=\"other\""), "{body}");
    // Store operations are timed too (the GETs above looked documents up by id).
    assert!(
        body.contains("portico_store_operation_duration_seconds_count{operation=\"get\"}"),
        "{body}"
    );
    assert!(
        !body.contains("/api/v1/items/a"),
        "raw paths are no labels: {body}"
    );
    assert!(body.contains("portico_live_streams_open 0"), "{body}");
    assert!(
        body.contains("portico_http_request_duration_seconds_bucket{method=\"GET\",route=\"/api/v1/items/:id\",status=\"404\",le=\"0.0005\"}"),
        "{body}"
    );
}

#[tokio::test]
async fn metrics_are_off_without_the_table_and_apart_with_a_listen_address() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    assert_eq!(server.call("GET", "/metrics", None, &[]).await.status, 404);
    drop(server);

    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        probe.local_addr().expect("address").port()
    };
    ws.config(&format!(
        "[metrics]\nlisten = \"127.0.0.1:{port}\"\n{CONFIG}"
    ));
    let server = Process::start(
        ws.dir.path(),
        &[
            "serve",
            "--config",
            "portico.toml",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    assert_eq!(server.call("GET", "/healthz", None, &[]).await.status, 200);
    assert_eq!(server.call("GET", "/metrics", None, &[]).await.status, 404);
    let apart = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .expect("the metrics listener answers");
    assert_eq!(apart.status().as_u16(), 200);
    let body = apart.text().await.expect("body");
    assert!(body.contains("route=\"/healthz\""), "{body}");
}

#[test]
fn the_every_key_config_of_the_api_checks_stays_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ci/every-key.toml");
    let ws = Workspace::new();
    let check = ws.run(&["check", "--config", path]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    let printed = ws.run(&["openapi", "--config", path]);
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&printed.stdout).expect("JSON");
    // Metrics on their own listener are not on the API's listener, so not in its document.
    assert!(doc["paths"]["/metrics"].is_null());
    assert!(doc["paths"]["/api/v1/batch"]["post"].is_object());
    assert!(doc["paths"]["/mine/widgets"]["get"].is_object());
    assert!(doc["paths"]["/auth/password-reset/confirm"]["post"].is_object());
    assert!(doc["paths"]["/auth/email-code"]["post"].is_object());
    assert!(doc["paths"]["/auth/email-code/confirm"]["post"].is_object());
    assert!(doc["paths"]["/auth/guest"]["post"].is_object());
    assert!(doc["paths"]["/auth/guest/upgrade"]["post"].is_object());
    assert!(doc["paths"]["/auth/passkey/login/begin"]["post"].is_object());
    assert!(doc["paths"]["/auth/passkeys/{id}"]["delete"].is_object());
    // The list and read parameters of relations and search.
    let query = |path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "query")
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect()
    };
    let list = query("/api/v1/notes");
    assert!(
        list.iter().any(|n| n == "expand") && list.iter().any(|n| n == "search"),
        "{list:?}"
    );
    assert_eq!(query("/api/v1/notes/{id}"), ["expand"]);
    // An auto API publication takes them too, and its groups.
    let publication = query("/mine/widgets");
    for name in ["expand", "search", "skip", "limit", "group"] {
        assert!(
            publication.iter().any(|n| n == name),
            "{name}: {publication:?}"
        );
    }
}
