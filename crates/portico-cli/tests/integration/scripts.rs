//! `[scripts]`: application logic in TypeScript/JavaScript, observed through the binary over
//! HTTP (methods, publications, routes, rules, write hooks, schema files, faults, fetch,
//! concurrency) where a test needs the process: its log lines, `portico check` and `types`,
//! `serve --watch`, a certificate authority read from the environment at start. The tests that
//! need only the served app are beside the script crate (`crates/portico-script/tests`).

use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{Process, Workspace, text};

// The app these tests and portico-script's serve (`FETCH_PORT` replaced in the config).
const CONFIG: &str = include_str!("../support/scripts_app/portico.toml");
const SCHEMA: &str = include_str!("../support/scripts_app/todos.json");
const MAIN: &str = include_str!("../support/scripts_app/main.ts");
const LIB: &str = include_str!("../support/scripts_app/text.ts");

/// A local HTTP server answering every request after `delay` with "pong"; its port.
async fn slow_server(delay: Duration) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(move || async move {
        tokio::time::sleep(delay).await;
        "pong"
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    port
}

/// Writes the config (with `fetch_port` allowed), the scripts and the schema into `ws`.
fn write_app(ws: &Workspace, fetch_port: u16, main: &str) {
    ws.config(&CONFIG.replace("FETCH_PORT", &fetch_port.to_string()));
    for (name, body) in [
        ("server/main.ts", main),
        ("server/lib/text.ts", LIB),
        ("schemas/todos.json", SCHEMA),
    ] {
        let path = ws.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
}

fn workspace(fetch_port: u16, main: &str) -> Workspace {
    let ws = Workspace::new();
    write_app(&ws, fetch_port, main);
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_methods_routes_publications_and_rules_over_http() {
    let port = slow_server(Duration::from_millis(1000)).await;
    let ws = workspace(port, MAIN);
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve_binary();

    // Methods, as the auto API serves Rust methods.
    let r = server
        .call(
            "POST",
            "/methods/echo",
            Some(json!([{"n": 12345678901_i64, "f": 1.5}])),
            &[],
        )
        .await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({"n": 12345678901_i64, "f": 1.5})),
        "{}",
        r.raw
    );
    let r = server
        .call("POST", "/methods/shout", Some(json!(["hi"])), &[])
        .await;
    assert_eq!(r.body, json!("HI!"), "{}", r.raw);
    let r = server.call("POST", "/methods/whoami", None, &[]).await;
    assert_eq!(
        r.body,
        json!({"userId": null, "username": null}),
        "{}",
        r.raw
    );
    let (token, ann_id) = server.auto_login("ann", "ann-password").await;
    let auth = format!("Bearer {token}");
    let r = server
        .call("POST", "/methods/whoami", None, &[("Authorization", &auth)])
        .await;
    assert_eq!(
        r.body,
        json!({"userId": ann_id, "username": "ann"}),
        "{}",
        r.raw
    );
    let r = server.call("POST", "/methods/refuse", None, &[]).await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(
        r.body,
        json!({"error": "not-yours", "reason": "That is not yours", "details": {"id": 7}})
    );
    let r = server.call("POST", "/methods/teapot", None, &[]).await;
    assert_eq!(
        (r.status, r.body["error"].clone()),
        (418, json!("teapot")),
        "{}",
        r.raw
    );
    let r = server.call("POST", "/methods/broken", None, &[]).await;
    assert_eq!(r.status, 500, "{}", r.raw);
    assert!(!r.raw.contains("secret"), "{}", r.raw);
    let r = server.call("POST", "/methods/logs", None, &[]).await;
    assert_eq!(r.body, json!(1));

    // The data API goes through the platform: the schema file refuses a bad todo.
    let r = server
        .call(
            "POST",
            "/methods/addTodo",
            Some(json!(["milk"])),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.raw);
    let todo_id = r.body.as_str().unwrap().to_owned();
    let r = server
        .call("POST", "/methods/addTodo", Some(json!([""])), &[])
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    let r = server
        .call(
            "POST",
            "/api/todos",
            Some(json!({"title": 5})),
            &[("X-User-Id", "x")],
        )
        .await;
    assert!(r.status == 400 || r.status == 401, "{}", r.raw);
    let r = server.call("POST", "/methods/countTodos", None, &[]).await;
    assert_eq!(r.body, json!(1));
    let r = server
        .call(
            "POST",
            &format!("/todos/{todo_id}/rename"),
            Some(json!(["bread"])),
            &[],
        )
        .await;
    assert_eq!((r.status, r.body.clone()), (200, json!(1)), "{}", r.raw);

    // Publications: a cursor (with sort and fields), and by hand.
    let r = server
        .call("GET", "/publications/openTodos", None, &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let list = r.body["todos"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 1, "{}", r.raw);
    assert_eq!(list[0]["title"], "bread");
    assert!(list[0].get("owner").is_none(), "{}", r.raw);
    let r = server.call("GET", "/publications/byHand", None, &[]).await;
    assert_eq!(
        r.body["numbers"].as_array().map(Vec::len),
        Some(3),
        "{}",
        r.raw
    );

    // Allow/deny functions decide client writes; a rule that throws refuses the write.
    let r = server
        .call(
            "POST",
            "/notes",
            Some(json!({"text": "fine"})),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = server
        .call(
            "POST",
            "/notes",
            Some(json!({"text": "forbidden"})),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
    let r = server
        .call(
            "POST",
            "/notes",
            Some(json!({"text": "crash"})),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);

    // Routes, with the endpoint context and the reply forms.
    let r = server.call("GET", "/api/hello/bob?q=1", None, &[]).await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({"hi": "bob", "q": "1"})),
        "{}",
        r.raw
    );
    let r = server
        .call("POST", "/api/hello/bob", Some(json!({})), &[])
        .await;
    assert_eq!(r.status, 401, "{}", r.raw);
    let (rest_token, rest_id) = server.rest_login("/api/", "ann", "ann-password").await;
    let r = server
        .call(
            "POST",
            "/api/hello/bob",
            Some(json!({})),
            &[("X-Auth-Token", &rest_token), ("X-User-Id", &rest_id)],
        )
        .await;
    assert_eq!(
        (r.status, r.header("x-from")),
        (202, Some("script")),
        "{}",
        r.raw
    );
    assert_eq!(r.body, json!({"by": rest_id}));
    let r = server
        .call("GET", &format!("/api/todo/{todo_id}"), None, &[])
        .await;
    assert_eq!(r.body["title"], "bread", "{}", r.raw);
    let r = server.call("GET", "/api/todo/nope", None, &[]).await;
    assert_eq!(r.status, 404, "{}", r.raw);
    let r = server.call("GET", "/api/raw", None, &[]).await;
    assert_eq!((r.status, r.raw.as_str()), (200, "plain text"));

    // Accounts and roles from a script.
    let r = server
        .call("POST", "/methods/makeUser", Some(json!(["cy"])), &[])
        .await;
    assert_eq!(r.body["editor"], true, "{}", r.raw);

    // The fetch allow-list: a listed host answers; another port is refused.
    let r = server
        .call(
            "POST",
            "/methods/slowFetch",
            Some(json!([format!("http://127.0.0.1:{port}/ping")])),
            &[],
        )
        .await;
    assert_eq!(r.body, json!({"status": 200, "body": "pong"}), "{}", r.raw);
    let r = server
        .call(
            "POST",
            "/methods/slowFetch",
            Some(json!(["http://127.0.0.1:1/x"])),
            &[],
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].clone()),
        (400, json!("fetch-refused")),
        "{}",
        r.raw
    );

    // 100 calls that each await a 1 s fetch run at once, and other requests are served meanwhile.
    let started = Instant::now();
    let url = format!("http://127.0.0.1:{port}/slow");
    let calls = (0..100).map(|_| {
        server.call(
            "POST",
            "/methods/slowFetch",
            Some(json!([url.clone()])),
            &[],
        )
    });
    let during = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t = Instant::now();
        let r = server
            .call("GET", &format!("/api/todos/{todo_id}"), None, &[])
            .await;
        (r.status, t.elapsed())
    };
    let (replies, (status, took)) = tokio::join!(futures::future::join_all(calls), during);
    let elapsed = started.elapsed();
    assert!(
        replies.iter().all(|r| r.status == 200),
        "{:?}",
        replies.iter().find(|r| r.status != 200).map(|r| &r.raw)
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "100 concurrent 1 s fetches took {elapsed:?}"
    );
    assert_eq!(status, 200);
    assert!(
        took < Duration::from_millis(900),
        "a get-by-id waited {took:?} behind the scripts"
    );

    // A call past timeout_ms is stopped with a 500; the server goes on serving scripts.
    let t = Instant::now();
    // (8 s, not less: a call's limit counts its awaits too, and a method making a user hashes a
    // password, which took over 3 s on a loaded test machine.)
    let r = server.call("POST", "/methods/spin", None, &[]).await;
    assert_eq!(r.status, 500, "{}", r.raw);
    assert!(t.elapsed() < Duration::from_secs(12));
    for _ in 0..4 {
        let r = server
            .call("POST", "/methods/shout", Some(json!(["again"])), &[])
            .await;
        assert_eq!(r.body, json!("AGAIN!"));
    }

    // The routes listing and the OpenAPI document name the script's methods and routes.
    let doc = server.call("GET", "/openapi.json", None, &[]).await;
    let paths = doc.body["paths"].as_object().cloned().unwrap_or_default();
    for path in [
        "/methods/echo",
        "/api/hello/{name}",
        "/publications/openTodos",
        "/todos/{0}/rename",
    ] {
        assert!(
            paths.contains_key(path),
            "{path} missing from {:?}",
            paths.keys().collect::<Vec<_>>()
        );
    }

    let (_, log) = server.stop();
    assert!(
        log.contains("secret internal detail") && log.contains("server/main.ts:"),
        "{log}"
    );
    assert!(
        log.contains("hello from a script") && log.contains("server/main.ts:"),
        "{log}"
    );
    assert!(log.contains("timeout_ms"), "{log}");
}

#[test]
fn load_errors_stop_serve_and_fail_check_with_their_position() {
    let cases = [
        ("const a: number = 1;\nconst b = ;\n", "server/main.ts:2:"),
        ("import './nope.ts';\n", "server/main.ts:1:8"),
        ("\n\nenum Color { Red }\n", "server/main.ts:3:1"),
        (
            "import { publish, collection } from 'portico';\npublish('dup', function () { return collection('x').find(); });\n",
            "line",
        ),
    ];
    for (main, expected) in cases {
        let ws = workspace(1, main);
        if expected == "line" {
            ws.config(&format!(
                "{}\n[[auto.publication]]\nname = \"dup\"\ncollection = \"todos\"\n",
                CONFIG.replace("FETCH_PORT", "1")
            ));
        }
        let out = ws.run(&["check", "--config", "portico.toml"]);
        let err = text(&out.stderr);
        assert!(
            !out.status.success(),
            "{main}: check passed: {}",
            text(&out.stdout)
        );
        assert!(err.contains(expected), "{main}: {err}");
        if expected == "line" {
            assert!(
                err.contains("server/main.ts:2:") && err.contains("[[auto.publication]] (line"),
                "{err}"
            );
        }
        let out = ws.run(&[
            "serve",
            "--config",
            "portico.toml",
            "--listen",
            "127.0.0.1:0",
        ]);
        assert!(!out.status.success(), "{main}: serve started");
        assert!(
            text(&out.stderr).contains(expected),
            "{main}: {}",
            text(&out.stderr)
        );
    }
    let ws = workspace(1, MAIN);
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("scripts: 14 methods, 2 publications, 3 routes"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn types_are_printed_for_editors() {
    let ws = Workspace::new();
    let out = ws.run(&["types"]);
    assert!(out.status.success());
    let types = text(&out.stdout);
    assert!(types.contains("declare module \"portico\""), "{types}");
    for name in [
        "methods",
        "publish",
        "api",
        "collection",
        "files",
        "FileMeta",
        "accounts",
        "roles",
        "PorticoError",
    ] {
        assert!(types.contains(name), "{name}");
    }
}

/// `serve --watch`: an edit is served without a restart; an edit that does not load is logged
/// and the old code goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_reloads_edits_and_keeps_serving_through_a_broken_one() {
    let ws = workspace(1, MAIN);
    ws.add_user("root", "root-secret", &["admin"]);
    let server = super::common::Process::start(
        ws.dir.path(),
        &[
            "serve",
            "--config",
            "portico.toml",
            "--listen",
            "127.0.0.1:0",
            "--watch",
        ],
    );
    let r = server
        .call("POST", "/methods/shout", Some(json!(["a"])), &[])
        .await;
    assert_eq!(r.body, json!("A!"));
    // The admin page's API view lists the script's methods, publications and routes.
    let token = server.admin_token("root", "root-secret").await;
    let routes = server
        .call("GET", "/_/api/routes", None, &[("X-Auth-Token", &token)])
        .await;
    assert_eq!(routes.status, 200, "{}", routes.raw);
    for path in [
        "/methods/shout",
        "/publications/openTodos",
        "/api/hello/:name",
        "/todos/:0/rename",
    ] {
        assert!(routes.raw.contains(path), "{path} not in {}", routes.raw);
    }
    let lib = ws.path("server/lib/text.ts");
    std::fs::write(
        &lib,
        "export function shout(s: string): string {\n  return s + \"?\";\n}\n",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = server
            .call("POST", "/methods/shout", Some(json!(["a"])), &[])
            .await;
        if r.body == json!("a?") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the edit was not served: {}",
            r.raw
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    std::fs::write(
        &lib,
        "export function shout(s: string): string {\n  return s +;\n}\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = server
        .call("POST", "/methods/shout", Some(json!(["b"])), &[])
        .await;
    assert_eq!(r.body, json!("b?"), "{}", r.raw);
    let (_, log) = server.stop();
    assert!(log.contains("scripts reloaded"), "{log}");
    assert!(
        log.contains("scripts not reloaded") && log.contains("server/lib/text.ts:2:"),
        "{log}"
    );
}

/// A local HTTPS server (Python's, with a certificate for `localhost` signed by a fresh test
/// authority, both made by `openssl`) answering every GET with "secure pong"; its port, the
/// authority's certificate and the child to kill.
fn https_server(dir: &std::path::Path) -> (u16, std::path::PathBuf, std::process::Child) {
    use std::io::BufRead;
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (Debian's openssl package) makes the test certificates");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            text(&out.stderr)
        );
    };
    let quick = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509", "-days", "1", "-subj", "/CN=Portico test CA"][..],
            &quick,
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req", "-subj", "/CN=localhost"][..],
            &quick,
            &["-keyout", "key.pem", "-out", "leaf.csr"],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "leaf.ext",
        "-out",
        "cert.pem",
    ]);
    let (cert, key, ca) = (
        dir.join("cert.pem"),
        dir.join("key.pem"),
        dir.join("ca.pem"),
    );
    let server = r#"
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"secure pong"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
httpd = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", server])
        .arg(&cert)
        .arg(&key)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port line");
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{line:?}: {e}"));
    (port, ca, child)
}

/// `fetch` over https: a server whose authority the system trusts (`SSL_CERT_FILE`) answers;
/// without it the server is refused (the certificate is checked), both through the binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_reaches_https_hosts_and_checks_their_certificate() {
    let ws = Workspace::new();
    let (port, ca, mut https) = https_server(&ws.path(""));
    ws.config(&format!(
        "[scripts]\nmain = \"main.ts\"\nfetch_hosts = [\"localhost:{port}\"]\n\n[auto]\n"
    ));
    std::fs::write(
        ws.path("main.ts"),
        r#"import { methods } from "portico";
methods({ async get(url: string) { const r = await fetch(url); return { status: r.status, body: await r.text() }; } });
"#,
    )
    .unwrap();
    let url = format!("https://localhost:{port}/hello");
    let args = [
        "serve",
        "--config",
        "portico.toml",
        "--listen",
        "127.0.0.1:0",
    ];
    let ca = ca.to_string_lossy().into_owned();
    let trusted = Process::start_with_env(&ws.path(""), &args, &[("SSL_CERT_FILE", &ca)]);
    let r = trusted
        .call("POST", "/methods/get", Some(json!([url])), &[])
        .await;
    assert_eq!(
        r.body,
        json!({"status": 200, "body": "secure pong"}),
        "{}",
        r.raw
    );
    drop(trusted);
    // The system's own roots do not include the test certificate: the fetch fails, unanswered.
    let untrusted = ws.serve();
    let r = untrusted
        .call("POST", "/methods/get", Some(json!([url])), &[])
        .await;
    assert_eq!(
        (r.status, r.body["error"].clone()),
        (502, json!("fetch-failed")),
        "{}",
        r.raw
    );
    assert!(r.raw.contains("certificate"), "{}", r.raw);
    let _ = https.kill();
    let _ = https.wait();
}

/// A script's failure is logged with the request it served (`request_id`, as its reply's
/// `X-Request-Id`) and with where it is (`file:line`), a call stopped at `timeout_ms` too
/// (issue 39, item 12: a timeout was logged without its place, and no failure carried the
/// request's id).
#[tokio::test]
async fn script_failures_are_logged_with_their_place_and_request_id() {
    const MAIN: &str = r#"import { methods, api } from "portico";

function busy(): number {
  let n = 0;
  for (;;) { n++; }
}

methods({
  spin() { return busy(); },
  broken() { throw new Error("broken on purpose"); },
  async stuck() { await new Promise<void>(() => {}); return 1; },
});
api("api").addRoute("spin", { get() { return busy(); } });
"#;
    let ws = Workspace::new();
    ws.config(
        "[scripts]\nmain = \"server/main.ts\"\ntimeout_ms = 300\n[[api]]\napi_path = \"api\"\n[auto]\ncollections = []\n",
    );
    std::fs::create_dir_all(ws.path("server")).unwrap();
    std::fs::write(ws.path("server/main.ts"), MAIN).unwrap();
    let server = ws.serve_binary();
    let mut ids = Vec::new();
    for (method, path) in [
        ("POST", "/methods/spin"),
        ("POST", "/methods/broken"),
        ("POST", "/methods/stuck"),
        ("GET", "/api/spin"),
    ] {
        let reply = server.call(method, path, None, &[]).await;
        assert_eq!(reply.status, 500, "{path}: {}", reply.raw);
        let id = reply.header("x-request-id").unwrap_or_default().to_owned();
        assert_eq!(id.len(), 17, "{path}");
        ids.push((path, id));
    }
    let (_, log) = server.stop();
    let error_line = |id: &str| {
        log.lines()
            .find(|l| l.contains("ERROR") && l.contains(&format!("request_id={id}")))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no error line with request_id={id} in\n{log}"))
    };
    for (path, id) in &ids {
        let line = error_line(id);
        // Where the failing code is defined, on the line itself.
        assert!(line.contains("server/main.ts:"), "{path}: {line}");
    }
    // Where it is defined, always; where the engine stopped it, when the engine's interrupt came
    // before the call's own limit (both are timeout_ms; on a loaded machine either may be first).
    let stopped_in_busy =
        |line: &str| !line.contains("stopped at") || line.contains("stopped at server/main.ts:3:");
    let spin = error_line(&ids[0].1);
    assert!(
        spin.contains("method \"spin\" at server/main.ts:8:")
            && spin.contains("timeout_ms (300 ms)")
            && stopped_in_busy(&spin),
        "{spin}"
    );
    let stuck = error_line(&ids[2].1);
    assert!(
        stuck.contains("method \"stuck\" at server/main.ts:8:") && stuck.contains("timeout_ms"),
        "{stuck}"
    );
    let route = error_line(&ids[3].1);
    assert!(
        route.contains("route endpoint at server/main.ts:13:")
            && route.contains("timeout_ms")
            && stopped_in_busy(&route),
        "{route}"
    );
}
