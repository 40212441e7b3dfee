//! No credential reaches the log, at any level, however a client sends it.

use serde_json::json;

use super::common::Workspace;

const CONFIG: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"items\"\nauth_required = true\n[auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n[auto.rules.things]\ninsert = \"anyone\"\n";

#[tokio::test]
async fn a_token_sent_every_way_never_reaches_the_trace_log() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("ann", "Pw-0123456789-secret", &[]);
    let server = ws.serve_logging("trace");
    let (token, user_id) = server
        .rest_login("/api/", "ann", "Pw-0123456789-secret")
        .await;
    let (auto_token, _) = server.auto_login("ann", "Pw-0123456789-secret").await;
    assert_eq!(token.len(), 43);

    // In the query string, in every spelling a client might use.
    for name in [
        "X-Auth-Token",
        "x-auth-token",
        "X%2DAuth%2DToken",
        "token",
        "Token",
        "access_token",
        "ACCESS_TOKEN",
        "authToken",
        "auth_token",
        "password",
        "api_key",
    ] {
        for path in [
            "/api/items",
            "/things",
            "/publications/api-routes",
            "/nowhere",
        ] {
            let reply = server
                .call("GET", &format!("{path}?a=1&{name}={token}&b=2"), None, &[])
                .await;
            assert!(reply.status < 500, "{path} {name}: {}", reply.raw);
        }
    }
    // In headers, on both doors.
    let bearer = format!("Bearer {auto_token}");
    let headers: [&[(&str, &str)]; 3] = [
        &[("X-Auth-Token", &token), ("X-User-Id", &user_id)],
        &[("Authorization", &bearer)],
        &[("Cookie", &format!("token={token}"))],
    ];
    for h in headers {
        for path in ["/api/items", "/things"] {
            server.call("GET", path, None, h).await;
        }
    }
    // In bodies: JSON and form, and a failed login carrying it as the password.
    server
        .call(
            "POST",
            "/things",
            Some(json!({"token": token, "n": 1})),
            &[],
        )
        .await;
    server
        .http
        .post(server.url("/api/items"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}&password={token}"))
        .send()
        .await
        .expect("form post");
    server
        .call(
            "POST",
            "/api/login",
            Some(json!({"username": "ann", "password": token})),
            &[],
        )
        .await;
    server
        .call(
            "POST",
            "/api/logout",
            None,
            &[("X-Auth-Token", &token), ("X-User-Id", &user_id)],
        )
        .await;

    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    // The log is at trace level (the server's own debug lines show) and saw every request...
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "not a trace log:\n{log}"
    );
    assert!(
        log.contains("/api/items?a=1&X-Auth-Token=[redacted]&b=2"),
        "{log}"
    );
    // ...but never a credential.
    for secret in [token.as_str(), auto_token.as_str(), "Pw-0123456789-secret"] {
        let leaks: Vec<&str> = log.lines().filter(|l| l.contains(secret)).collect();
        assert!(leaks.is_empty(), "{secret} leaked:\n{}", leaks.join("\n"));
    }
}

/// At the default level each request is one line with its method, URI (redacted), status and
/// latency; `portico::request=off` drops those lines and keeps the server's others.
#[tokio::test]
async fn the_request_log_is_one_line_per_request_and_can_be_turned_off() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    for path in ["/healthz?verbose=1", "/api/items?token=abc", "/nowhere"] {
        server.call("GET", path, None, &[]).await;
    }
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("request")).collect();
    let line_of = |uri: &str| {
        let found: Vec<&&str> = lines.iter().filter(|l| l.contains(uri)).collect();
        assert_eq!(found.len(), 1, "one line for {uri}:\n{log}");
        found[0].to_string()
    };
    let health = line_of("uri=/healthz?verbose=1");
    assert!(
        health.contains("INFO") && health.contains("method=GET"),
        "{health}"
    );
    assert!(
        health.contains("status=200") && health.contains("latency="),
        "{health}"
    );
    let items = line_of("uri=/api/items?token=[redacted]");
    assert!(items.contains("status=401"), "{items}");
    assert!(!log.contains("abc"), "{log}");
    assert!(line_of("uri=/nowhere").contains("status=404"));

    let server = ws.serve_logging("info,portico::request=off");
    server.call("GET", "/healthz?verbose=1", None, &[]).await;
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    assert!(!log.contains("uri=/healthz"), "{log}");
    assert!(log.contains("INFO serving"), "{log}");
}
