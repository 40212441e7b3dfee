//! The served app built in process by the library (`portico_cli::serve::Served`), as the binary
//! builds it: the front doors, the admin page, the layers around every request and the
//! background work, served on a listener the test binds, and stopped by a future it resolves.

use std::time::Duration;

use portico_cli::serve::{ServeOptions, Served};
use portico_testkit::Server;
use serde_json::{Value, json};

const CONFIG: &str = r#"
[[api]]
api_path = "api/"
use_default_auth = true
[[api.collection]]
name = "notes"
auth_required = false

[[limits]]
path = "/api/notes"
requests = 2
window_secs = 60
methods = ["POST"]

[backups]
dir = "./backups"
every_hours = 0.0003
keep = 2
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_builds_and_serves_what_the_binary_serves() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("portico.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let options = ServeOptions::new()
        .config(&config)
        .database(format!("sqlite:{}", dir.path().join("app.db").display()));
    let served = Served::build(&options).await.unwrap();
    let platform = served.platform.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(served.serve(listener, async move {
        let _ = stop_rx.await;
    }));
    let http = reqwest::Client::new();

    // The routes door, through the request layers (a request id on every reply).
    let reply = http
        .post(format!("{base}/api/notes"))
        .json(&json!({"text": "in process"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 201);
    assert!(
        reply.headers().contains_key("x-request-id"),
        "{:?}",
        reply.headers()
    );
    let body: Value = reply.json().await.unwrap();
    let id = body["data"]["_id"].as_str().unwrap().to_owned();
    assert!(
        platform
            .collection("notes")
            .get(&id)
            .await
            .unwrap()
            .is_some()
    );

    // `[[limits]]`, which only the served app's layers apply: the third write is refused.
    let write = || {
        http.post(format!("{base}/api/notes"))
            .json(&json!({"text": "again"}))
            .send()
    };
    assert_eq!(write().await.unwrap().status(), 201);
    let refused = write().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));

    // The admin page and the probes, mounted by the same function.
    let page = http.get(format!("{base}/_/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Portico admin"));
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);

    // The background work: scheduled backups land in the directory.
    let backups = dir.path().join("backups");
    let mut taken = 0;
    for _ in 0..100 {
        taken = std::fs::read_dir(&backups).map_or(0, |d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".db"))
                .count()
        });
        if taken > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(taken > 0, "no scheduled backup in {}", backups.display());

    // Stopped by the future: the server returns, and no longer answers.
    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("the server stops once told")
        .unwrap();
    assert!(
        http.get(format!("{base}/readyz")).send().await.is_err(),
        "a stopped server still answers"
    );
}

/// `config` served in process on a free port (the test kit's [`Server`]); the base URL, the
/// platform and the server (stopped by [`Server::stop`], or when dropped).
async fn serve_in_process(
    dir: &std::path::Path,
    config: &str,
) -> (String, portico_platform::Platform, Server) {
    let path = dir.join("portico.toml");
    std::fs::write(&path, config).unwrap();
    let options = ServeOptions::new()
        .config(&path)
        .database(format!("sqlite:{}", dir.join("app.db").display()));
    let server = Server::try_start(options).unwrap();
    (server.base.clone(), server.platform().clone(), server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_answer_other_origins_with_cors_and_log_out_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[accounts]\n[[api]]\napi_path = \"api/\"\nuse_default_auth = true\nenable_cors = true\n\
                  [[api.collection]]\nname = \"notes\"\n";
    let (base, platform, stop) = serve_in_process(dir.path(), config).await;
    platform
        .accounts()
        .create_user(portico_platform::NewUser {
            username: Some("ann".into()),
            password: Some(portico_platform::Password::Plain("ann-password-1".into())),
            ..portico_platform::NewUser::default()
        })
        .await
        .unwrap();
    let http = reqwest::Client::new();

    // A page of another origin may call the account endpoints: the preflight is answered.
    let preflight = http
        .request(
            reqwest::Method::OPTIONS,
            format!("{base}/auth/password-reset"),
        )
        .header("Origin", "http://elsewhere.example")
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "content-type, x-auth-token",
        )
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let allowed = |name: &str| {
        preflight
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    assert_eq!(allowed("access-control-allow-origin"), "*");
    assert!(allowed("access-control-allow-methods").contains("post"));
    assert!(allowed("access-control-allow-headers").contains("x-auth-token"));

    // Two sessions; logging out everywhere from one ends both.
    let login = || async {
        let reply: Value = http
            .post(format!("{base}/api/login"))
            .json(&json!({"username": "ann", "password": "ann-password-1"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        reply["data"]["authToken"].as_str().unwrap().to_owned()
    };
    let (phone, laptop) = (login().await, login().await);

    // An endpoint that takes no body still reads one sent, even when it arrives after the
    // head: the kept-alive connection serves the next request (before, it was cut off).
    kept_alive_after_a_late_body(&base, &phone).await;
    let everywhere = |token: String| {
        http.post(format!("{base}/auth/logout-everywhere"))
            .header("X-Auth-Token", token)
            .header("Origin", "http://elsewhere.example")
            .send()
    };
    let reply = everywhere(phone.clone()).await.unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(
        reply
            .headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("*")
    );
    let body: Value = reply.json().await.unwrap();
    assert_eq!(body["loggedOut"], 2, "{body}");
    for token in [phone, laptop] {
        assert_eq!(everywhere(token).await.unwrap().status(), 401);
    }
    assert!(stop.stop(), "the server stops gracefully");

    // With `enable_cors = false` (it is on by default), other origins get no CORS answer.
    let dir = tempfile::tempdir().unwrap();
    let (base, _platform, stop) = serve_in_process(
        dir.path(),
        &config.replace("enable_cors = true", "enable_cors = false"),
    )
    .await;
    let preflight = http
        .request(
            reqwest::Method::OPTIONS,
            format!("{base}/auth/password-reset"),
        )
        .header("Origin", "http://elsewhere.example")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(
        !preflight
            .headers()
            .contains_key("access-control-allow-origin"),
        "{} {:?}",
        preflight.status(),
        preflight.headers()
    );
    assert!(stop.stop(), "the server stops gracefully");
}

/// Two `POST /auth/totp/setup` on one connection, each body sent 100 ms after its head; both
/// must be answered 200.
async fn kept_alive_after_a_late_body(base: &str, token: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    for n in 0..2 {
        let head = format!(
            "POST /auth/totp/setup HTTP/1.1\r\nHost: {addr}\r\nX-Auth-Token: {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\n\r\n"
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The server may have answered and closed already: a failed write shows below.
        let _ = socket.write_all(b"{}").await;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        let complete = |reply: &[u8]| {
            let text = String::from_utf8_lossy(reply);
            let Some((head, body)) = text.split_once("\r\n\r\n") else {
                return false;
            };
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .and_then(|l| l.trim().parse::<usize>().ok())
                .unwrap_or(0);
            body.len() >= length
        };
        while !complete(&reply) {
            let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut chunk))
                .await
                .unwrap_or_else(|_| panic!("request {n}: no reply"))
                .unwrap_or(0);
            assert!(
                read > 0,
                "request {n}: the connection was closed after {reply:?}"
            );
            reply.extend_from_slice(&chunk[..read]);
        }
        let text = String::from_utf8_lossy(&reply);
        assert!(text.starts_with("HTTP/1.1 200"), "request {n}: {text}");
        assert!(
            !text.to_ascii_lowercase().contains("connection: close"),
            "request {n}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passkey_login_naming_an_account_tells_nothing_about_it() {
    let dir = tempfile::tempdir().unwrap();
    // Each pair comes from its own address (through a trusted proxy), as the begins of one
    // address are limited (120 in 10 minutes).
    let config = "trusted_proxies = [\"127.0.0.1\"]\n\
                  [accounts]\nrp_id = \"localhost\"\norigins = [\"http://localhost:8080\"]\n\
                  [[api]]\napi_path = \"api/\"\nuse_default_auth = true\n\
                  [[api.collection]]\nname = \"notes\"\n";
    let (base, platform, stop) = serve_in_process(dir.path(), config).await;
    platform
        .accounts()
        .create_user(portico_platform::NewUser {
            username: Some("ann".into()),
            email: Some("ann@example.com".into()),
            password: Some(portico_platform::Password::Plain("ann-password-1".into())),
            ..portico_platform::NewUser::default()
        })
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let begin = |body: Value, from: String| {
        let http = http.clone();
        let url = format!("{base}/auth/passkey/login/begin");
        async move {
            let started = std::time::Instant::now();
            let reply = http
                .post(url)
                .header("x-forwarded-for", from)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = reply.status();
            let body: Value = reply.json().await.unwrap();
            (status, body, started.elapsed())
        }
    };
    // The shape of a reply, its random values aside.
    let shape = |body: &Value| {
        let mut options = body["publicKey"].clone();
        options["challenge"] = Value::Null;
        (
            body.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            options,
        )
    };
    // The median of the adjacent pairs' differences against the median time, as the email-code
    // test judges its endpoints (pairing cancels the drift of a shared machine's load). Which
    // name goes first alternates, so neither gets the warmer turn. A begin takes a fraction of a
    // millisecond, where a busy machine's noise is as large: a round that misses is taken again,
    // up to three, as a lookup would be slower in every round.
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut rounds = Vec::new();
    for round in 0..3 {
        let mut known_times = Vec::new();
        let mut unknown_times = Vec::new();
        for n in 0..100 {
            let (known_body, unknown_body) = if n % 2 == 0 {
                (json!({"username": "ann"}), json!({"username": "nobody"}))
            } else {
                (
                    json!({"email": "ann@example.com"}),
                    json!({"email": "nobody@example.com"}),
                )
            };
            let from = format!("10.0.{round}.{n}");
            let (known, unknown) = if n % 4 < 2 {
                let known = begin(known_body, from.clone()).await;
                (known, begin(unknown_body, from).await)
            } else {
                let unknown = begin(unknown_body, from.clone()).await;
                (begin(known_body, from).await, unknown)
            };
            assert_eq!(known.0, 200, "{}", known.1);
            assert_eq!(unknown.0, known.0);
            assert_eq!(shape(&known.1), shape(&unknown.1));
            assert_eq!(known.1["publicKey"]["allowCredentials"], json!([]));
            known_times.push(known.2.as_secs_f64());
            unknown_times.push(unknown.2.as_secs_f64());
        }
        let diffs: Vec<f64> = known_times
            .iter()
            .zip(&unknown_times)
            .map(|(k, u)| k - u)
            .collect();
        let (known, unknown, diff) = (median(known_times), median(unknown_times), median(diffs));
        let line = format!(
            "median begin: known {known:.6} s, unknown {unknown:.6} s, paired difference {diff:.6} s"
        );
        eprintln!("{line}");
        if diff.abs() < 0.05 * known.max(unknown) {
            rounds.clear();
            break;
        }
        rounds.push(line);
    }
    assert!(
        rounds.is_empty(),
        "every round differed by 5% or more: {rounds:#?}"
    );
    assert!(stop.stop(), "the server stops gracefully");
}
