//! Running without a config file, and the environment variables that replace one.

use serde_json::json;

use super::common::{Process, Workspace, text, x_auth};

#[tokio::test]
async fn without_a_config_serve_says_so_and_serves_every_collection_read_only() {
    let ws = Workspace::new();
    // The default database, ./portico.db, with one collection and one account.
    std::fs::write(ws.path("items.json"), r#"[{"_id": "a", "n": 1}]"#).expect("fixture");
    let out = ws.run(&["import", "--collection", "items", "items.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ws.run(&[
        "users",
        "add",
        "--username",
        "ann",
        "--password",
        "ann-password",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let routes = ws.run(&["routes"]);
    assert!(
        text(&routes.stdout).contains("nothing is configured"),
        "{}",
        text(&routes.stdout)
    );

    let server = Process::start(ws.dir.path(), &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(
        server.call("GET", "/api/items", None, &[]).await.status,
        401
    );
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let list = server
        .call("GET", "/api/items", None, &x_auth(&token))
        .await;
    assert_eq!(list.status, 200, "{}", list.raw);
    assert_eq!(list.body["data"], json!([{"_id": "a", "n": 1}]));
    let write = server
        .call("POST", "/api/items", Some(json!({"n": 2})), &x_auth(&token))
        .await;
    assert!(write.status >= 400, "read-only: {}", write.raw);
    let users = server
        .call("GET", "/api/users", None, &x_auth(&token))
        .await;
    assert_eq!(users.status, 404, "accounts are not listed: {}", users.raw);
    let (_, log) = server.stop();
    let first_lines: String = log.lines().take(3).collect::<Vec<_>>().join("\n");
    assert!(first_lines.contains("zero-config default"), "{log}");
    assert!(first_lines.contains("collections served: items"), "{log}");
}

#[tokio::test]
async fn environment_variables_override_the_config_and_flags_override_both() {
    let ws = Workspace::new();
    ws.config("listen = \"127.0.0.1:9\"\n[[api]]\n[[api.collection]]\nname = \"items\"\n");
    let other = format!("sqlite:{}", ws.path("other.db").display());

    let server = Process::start_with_env(
        ws.dir.path(),
        &["serve"],
        &[
            ("PORTICO_LISTEN", "127.0.0.1:0"),
            ("PORTICO_DATABASE", &other),
        ],
    );
    assert!(!server.base.ends_with(":9"), "{}", server.base);
    assert_eq!(
        server.call("GET", "/api/items", None, &[]).await.status,
        200
    );
    let (_, log) = server.stop();
    assert!(log.contains("address from PORTICO_LISTEN"), "{log}");
    assert!(log.contains("(from PORTICO_DATABASE)"), "{log}");
    assert!(ws.path("other.db").exists() && !ws.path("portico.db").exists());

    let server = Process::start_with_env(ws.dir.path(), &["serve"], &[("PORT", "0")]);
    assert!(
        server.base.starts_with("http://0.0.0.0:"),
        "{}",
        server.base
    );
    let (_, log) = server.stop();
    assert!(log.contains("address from PORT"), "{log}");

    // Flags win: the environment's values are not even read.
    let server = Process::start_with_env(
        ws.dir.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database",
            &ws.database(),
        ],
        &[
            ("PORTICO_LISTEN", "not an address"),
            ("PORTICO_DATABASE", "nope:"),
        ],
    );
    assert_eq!(
        server.call("GET", "/api/items", None, &[]).await.status,
        200
    );
    let (_, log) = server.stop();
    assert!(
        log.contains("address from --listen") && log.contains("(from --database)"),
        "{log}"
    );
}
