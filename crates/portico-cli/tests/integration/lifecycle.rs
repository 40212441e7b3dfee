//! Starting, stopping and restarting the server; `portico routes`; refusing to start.

use serde_json::json;

use super::common::{Process, Workspace, text, x_auth};

const CONFIG: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"items\"\nauth_required = true\n[auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n[auto.rules.things]\ninsert = \"anyone\"\n";

#[tokio::test]
async fn a_restart_keeps_documents_users_and_tokens() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve_binary();
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let created = server
        .call(
            "POST",
            "/api/items",
            Some(json!({"name": "kept"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    let id = created.body["data"]["_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let thing = server
        .call("POST", "/things", Some(json!({"n": 1})), &[])
        .await;
    assert_eq!(thing.status, 200, "{}", thing.raw);
    let (clean, log) = server.stop();
    assert!(clean, "SIGTERM exits with success:\n{log}");

    let server = ws.serve_binary();
    let got = server
        .call("GET", &format!("/api/items/{id}"), None, &x_auth(&token))
        .await;
    assert_eq!(
        got.status, 200,
        "the token and the document survive a restart: {}",
        got.raw
    );
    assert_eq!(got.body["data"]["name"], json!("kept"));
    let (_, _) = server.rest_login("/api/", "ann", "ann-password").await;
}

#[tokio::test]
async fn sigterm_finishes_and_logs_one_line_per_request() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    for _ in 0..3 {
        assert_eq!(
            server
                .call("GET", "/api/nothing-here", None, &[])
                .await
                .status,
            404
        );
    }
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    let request_lines = log
        .lines()
        .filter(|l| l.contains("/api/nothing-here"))
        .count();
    assert_eq!(request_lines, 3, "{log}");
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.trim_end().ends_with("stopped"), "{log}");
}

#[test]
fn sigterm_lets_an_in_flight_request_finish() {
    use std::io::{Read, Write};
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve_binary();
    let addr = server.base.trim_start_matches("http://").to_owned();
    // A request whose body is only half sent when the signal arrives.
    let body = json!({"username": "ann", "password": "ann-password"}).to_string();
    let (first, rest) = body.split_at(10);
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        stream,
        "POST /api/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{first}",
        body.len()
    )
    .expect("send head");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pid = server.child.id().to_string();
    let signal = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(signal.success());
    std::thread::sleep(std::time::Duration::from_millis(100));
    stream.write_all(rest.as_bytes()).expect("send the rest");
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("authToken"), "{reply}");
    let (clean, log) = server.stop_after_signal();
    assert!(clean, "{log}");
}

#[test]
fn an_unreachable_database_refuses_to_start() {
    let ws = Workspace::new();
    ws.config("");
    let out = ws.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database",
        "sqlite:/no/such/dir/portico.db",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot open database sqlite:/no/such/dir/portico.db"),
        "{stderr}"
    );
    let out = ws.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database",
        "postgres://db.invalid/portico",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("postgres://db.invalid/portico"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_taken_port_refuses_to_start() {
    let ws = Workspace::new();
    ws.config("");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let out = ws.run(&["serve", "--listen", &addr]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(&format!("cannot listen on {addr}")),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn defaults_read_portico_toml_in_the_working_directory() {
    let ws = Workspace::new();
    ws.config("[[api]]\nversion = \"v9\"\n[[api.collection]]\nname = \"items\"\n");
    let server = Process::start(ws.dir.path(), &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(
        server.call("GET", "/api/v9/items", None, &[]).await.status,
        200
    );
    let routes = text(&ws.run(&["routes"]).stdout);
    assert!(routes.contains("GET     /api/v9/items/:id"), "{routes}");
    assert!(
        ws.path("portico.db").exists(),
        "the config's database is used"
    );
}

#[test]
fn routes_prints_method_path_access_and_roles() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/portico.toml");
    let out = Workspace::new().run(&["routes", "--config", example]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let line = |method: &str, path: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([method, path]))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    assert!(
        line("GET", "/api/v1/articles").contains("public"),
        "{stdout}"
    );
    assert!(
        line("POST", "/api/v1/articles").contains("roles: editor"),
        "{stdout}"
    );
    assert!(
        line("DELETE", "/api/v1/articles/:id").contains("editor|admin"),
        "{stdout}"
    );
    assert!(
        line("PUT", "/api/v1/articles/:id").is_empty(),
        "put = false: {stdout}"
    );
    assert!(line("GET", "/api/v1/notes").contains("auth"), "{stdout}");
    assert!(
        line("POST", "/widgets").contains("rules: owner:ownerId"),
        "{stdout}"
    );
    assert!(
        line("GET", "/publications/widgets").contains("public"),
        "{stdout}"
    );
}

/// Every route `portico routes` prints for the shipped example is served, and a route it does
/// not print (PUT on articles) is not.
#[tokio::test]
async fn the_routes_listing_matches_what_is_served() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/portico.toml");
    let ws = Workspace::new();
    let db = ws.database();
    let server = Process::start(
        ws.dir.path(),
        &[
            "serve",
            "--config",
            example,
            "--listen",
            "127.0.0.1:0",
            "--database",
            &db,
        ],
    );
    let listing = text(&ws.run(&["routes", "--config", example]).stdout);
    let mut calls = Vec::new();
    for line in listing.lines().skip(1) {
        let mut words = line.split_whitespace();
        let (Some(method), Some(path)) = (words.next(), words.next()) else {
            continue;
        };
        let path: String = path
            .split('/')
            .map(|seg| if seg.starts_with(':') { "some-id" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let request = server
            .http
            .request(method.clone(), server.url(&path))
            .send();
        calls.push((method, path, tokio::spawn(request)));
    }
    assert!(calls.len() >= 20, "{listing}");
    for (method, path, call) in calls {
        let reply = call.await.expect("join").expect("reply");
        let status = reply.status().as_u16();
        let body = reply.text().await.unwrap_or_default();
        assert_ne!(status, 405, "{method} {path}: {body}");
        for unknown in [
            "API endpoint does not exist",
            "No route for",
            "method-not-allowed",
        ] {
            assert!(
                !body.contains(unknown),
                "{method} {path} is listed but not served: {body}"
            );
        }
    }
    let put = server
        .call("PUT", "/api/v1/articles/some-id", Some(json!({})), &[])
        .await;
    assert_eq!(put.status, 405, "put = false in the example: {}", put.raw);
}

/// Starts a server with `grace` in its config and a login request whose body is half sent;
/// returns the workspace, the server and the open connection that holds it.
fn server_with_a_stuck_request(
    grace: &str,
) -> (Workspace, super::common::Process, std::net::TcpStream) {
    use std::io::Write;
    let ws = Workspace::new();
    ws.config(&format!("shutdown_grace_seconds = {grace}\n{CONFIG}"));
    let server = ws.serve_binary();
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        stream,
        "POST /api/login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"user"
    )
    .expect("send head");
    std::thread::sleep(std::time::Duration::from_millis(200));
    (ws, server, stream)
}

fn signal(server: &super::common::Process, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

#[test]
fn a_second_signal_stops_at_once() {
    let (_ws, server, _stream) = server_with_a_stuck_request("600");
    signal(&server, "TERM");
    std::thread::sleep(std::time::Duration::from_millis(300));
    signal(&server, "INT");
    // With a grace period of ten minutes, only the second signal can end the process now.
    let (clean, log) = server.stop_after_signal();
    assert!(clean, "{log}");
    assert!(log.contains("second signal"), "{log}");
}

#[test]
fn the_grace_period_is_a_config_key() {
    let (_ws, server, _stream) = server_with_a_stuck_request("1");
    signal(&server, "TERM");
    let (clean, log) = server.stop_after_signal();
    assert!(clean, "{log}");
    assert!(log.contains("still running 1 s after the signal"), "{log}");
}

/// Relative paths a config file writes (the SQLite file, the files store, the backups
/// directory) are taken from the config file's folder, as its scripts and schemas are, whatever
/// the working directory (issue 39, item 10: they were taken from the working directory).
#[tokio::test]
async fn relative_paths_in_a_config_are_taken_from_its_folder() {
    let ws = Workspace::new();
    let site = ws.path("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(
        site.join("portico.toml"),
        "database = \"sqlite:./app.db\"\n\
         [files]\nstore = \"./uploads\"\n\
         [backups]\ndir = \"./saved\"\n\
         [[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"posts\"\nfiles = { photo = { types = [\"image/*\"] } }\n",
    )
    .unwrap();
    let config = "site/portico.toml";
    // Run from the workspace, one folder above the config.
    let added = ws.run(&[
        "users",
        "add",
        "--config",
        config,
        "--username",
        "ann",
        "--password",
        "ann-password",
    ]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    assert!(
        text(&added.stderr).contains("sqlite:site/app.db"),
        "{}",
        text(&added.stderr)
    );
    assert!(site.join("app.db").is_file());
    let server = Process::start(
        ws.dir.path(),
        &["serve", "--config", config, "--listen", "127.0.0.1:0"],
    );
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    assert!(!token.is_empty());
    assert!(
        site.join("uploads").is_dir(),
        "the files store is beside the config"
    );
    server.stop();
    let backup = ws.run(&["backup", "--config", config]);
    assert!(backup.status.success(), "{}", text(&backup.stderr));
    let saved: Vec<_> = std::fs::read_dir(site.join("saved")).unwrap().collect();
    assert_eq!(saved.len(), 1, "one backup in site/saved");
    for name in ["app.db", "uploads", "saved"] {
        assert!(
            !ws.path(name).exists(),
            "{name} was made in the working directory"
        );
    }
    // A path given on the command line is the working directory's, as before.
    let listed = ws.run(&[
        "users",
        "list",
        "--config",
        config,
        "--database",
        "sqlite:./site/app.db",
    ]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stdout).contains("username=ann"),
        "{}",
        text(&listed.stdout)
    );
}

/// `portico routes` lists the account routes under `/auth/` and the server's own (probes,
/// `/openapi.json`), as the OpenAPI document does (issue 39, item 10).
#[test]
fn routes_lists_the_account_routes_as_the_openapi_document_does() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"items\"\n[accounts]\napp_url = \"https://app.example.com\"\n",
    );
    let out = ws.run(&["routes", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let listed: std::collections::BTreeSet<(String, String)> = listing
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_owned(), words.next()?.to_owned()))
        })
        .collect();
    let out = ws.run(&["openapi", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let document: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut documented = 0;
    for (path, operations) in document["paths"].as_object().unwrap() {
        for method in operations.as_object().unwrap().keys() {
            let route = (
                method.to_uppercase(),
                // OpenAPI's {id} is the listing's :id.
                path.split('/')
                    .map(
                        |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                            Some(name) => format!(":{name}"),
                            None => s.to_owned(),
                        },
                    )
                    .collect::<Vec<_>>()
                    .join("/"),
            );
            if route.0 == "OPTIONS" || route.0 == "PARAMETERS" {
                continue;
            }
            documented += 1;
            assert!(
                listed.contains(&route),
                "{route:?} is documented but not listed:\n{listing}"
            );
        }
    }
    assert!(documented > 10, "{document}");
    for route in [
        "/auth/password-reset",
        "/auth/verify-email",
        "/auth/totp/setup",
        "/healthz",
    ] {
        assert!(
            listed.iter().any(|(_, path)| path == route),
            "{route} in\n{listing}"
        );
    }
}
