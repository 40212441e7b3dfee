//! Scale-out: two `portico serve` processes on one PostgreSQL database, as behind a load
//! balancer. Every guarantee of one instance must hold across both: tokens, logout, atomic
//! updates, unique usernames, login rate limits, and acknowledged writes when one is killed.
//! Also: `users`, `import` and `check` on PostgreSQL, and 503 while the database is down.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::common::{Http, Process, Workspace, cluster, text, x_auth};

const CONFIG: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
[[api.collection]]\nname = \"items\"\nauth_required = true\n\
[auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\nallow_register = true\n\
[auto.rules.things]\ninsert = \"anyone\"\nupdate = \"anyone\"\n";

/// A workspace on a fresh PostgreSQL database with the config written, and two servers on it.
fn two_instances() -> (Workspace, Process, Process) {
    let ws = Workspace::on_postgres();
    ws.config(CONFIG);
    let a = ws.serve_binary();
    let b = ws.serve_binary();
    (ws, a, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_one_instance_works_on_the_other_until_logout() {
    let (ws, a, b) = two_instances();
    ws.add_user("ann", "ann-password", &[]);
    let (token, _) = a.rest_login("/api/", "ann", "ann-password").await;
    let on_b = b.call("GET", "/api/items", None, &x_auth(&token)).await;
    assert_eq!(on_b.status, 200, "B accepts A's token: {}", on_b.raw);
    let out = a.call("POST", "/api/logout", None, &x_auth(&token)).await;
    assert_eq!(out.status, 200, "{}", out.raw);
    // The very next request on B is refused.
    let after = b.call("GET", "/api/items", None, &x_auth(&token)).await;
    assert_eq!(
        after.status, 401,
        "B refuses a token logged out on A: {}",
        after.raw
    );
}

/// Posts `body` to `/api/items` on `server` as the holder of `token`; its new `_id`.
async fn post_item(server: &Http, token: &str, body: Value) -> String {
    let created = server
        .call("POST", "/api/items", Some(body), &x_auth(token))
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    created.body["data"]["_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The read cache (on by default) never hides a write made through the other instance: B's
/// gets and list, answered twice before (the second time from its cache), show A's update,
/// insert and removal on the very next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_instance_is_read_on_the_other_at_once_through_its_cache() {
    let (ws, a, b) = two_instances();
    ws.add_user("ann", "ann-password", &[]);
    let (token, _) = a.rest_login("/api/", "ann", "ann-password").await;
    let auth = x_auth(&token);
    let id = post_item(&a, &token, json!({"name": "x"})).await;
    let item = format!("/api/items/{id}");
    // B: name and list (items, X-Total-Count) as read twice, then after each write on A.
    let read_b = || async {
        let got = b.call("GET", &item, None, &auth).await;
        let list = b.call("GET", "/api/items?limit=20", None, &auth).await;
        let names: Vec<Value> = list.body["data"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d["name"].clone())
            .collect();
        let total = list.header("x-total-count").unwrap_or_default().to_owned();
        (got.status, got.body["data"]["name"].clone(), names, total)
    };
    for _ in 0..2 {
        assert_eq!(
            read_b().await,
            (200, json!("x"), vec![json!("x")], "1".to_owned())
        );
    }
    let patched = a
        .call("PATCH", &item, Some(json!({"name": "y"})), &auth)
        .await;
    assert_eq!(patched.status, 200, "{}", patched.raw);
    assert_eq!(
        read_b().await,
        (200, json!("y"), vec![json!("y")], "1".to_owned())
    );
    post_item(&a, &token, json!({"_id": "zz", "name": "z"})).await;
    let (_, _, names, total) = read_b().await;
    assert!(names.contains(&json!("z")), "{names:?}");
    assert_eq!(total, "2");
    let removed = a.call("DELETE", &item, None, &auth).await;
    assert!(removed.status < 300, "{}", removed.raw);
    assert_eq!(
        read_b().await,
        (404, Value::Null, vec![json!("z")], "1".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_through_both_instances_lose_nothing() {
    const FIELDS: usize = 24;
    let (ws, a, b) = two_instances();
    ws.add_user("ann", "ann-password", &[]);
    let (token, _) = a.rest_login("/api/", "ann", "ann-password").await;
    let id = post_item(&a, &token, json!({"name": "x"})).await;
    let (a, b, token) = (Arc::new(a), Arc::new(b), Arc::new(token));
    let mut tasks = Vec::new();
    for i in 0..FIELDS {
        let server = Arc::clone(if i % 2 == 0 { &a } else { &b });
        let (id, token) = (id.clone(), Arc::clone(&token));
        tasks.push(tokio::spawn(async move {
            let body = json!({ format!("f{i}"): i });
            server
                .call(
                    "PATCH",
                    &format!("/api/items/{id}"),
                    Some(body),
                    &x_auth(&token),
                )
                .await
                .status
        }));
    }
    for task in tasks {
        assert_eq!(task.await.expect("task"), 200);
    }
    let got = b
        .call("GET", &format!("/api/items/{id}"), None, &x_auth(&token))
        .await;
    for i in 0..FIELDS {
        assert_eq!(got.body["data"][format!("f{i}")], json!(i), "{}", got.raw);
    }
    assert_eq!(got.body["data"]["name"], json!("x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_signups_of_one_name_make_one_account() {
    let (ws, a, b) = two_instances();
    let (a, b) = (Arc::new(a), Arc::new(b));
    let mut tasks = Vec::new();
    for (i, name) in ["Ann", "ann", "ANN", "aNn", "anN", "AnN"]
        .into_iter()
        .enumerate()
    {
        let server = Arc::clone(if i % 2 == 0 { &a } else { &b });
        tasks.push(tokio::spawn(async move {
            let body = json!({"username": name, "password": "pw-12345"});
            server
                .call("POST", "/users/register", Some(body), &[])
                .await
        }));
    }
    let mut made = 0;
    for task in tasks {
        let reply = task.await.expect("task");
        match reply.status {
            200 => made += 1,
            400..=499 => {}
            other => panic!("unexpected status {other}: {}", reply.raw),
        }
    }
    assert_eq!(made, 1, "exactly one account");
    let list = ws.run(&["users", "list", "--database", &ws.database()]);
    assert!(list.status.success(), "{}", text(&list.stderr));
    let listed = text(&list.stdout).to_lowercase();
    assert_eq!(listed.matches("ann").count(), 1, "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_split_across_instances_trip_the_limit() {
    let (ws, a, b) = two_instances();
    ws.add_user("ann", "ann-password", &[]);
    // The default limit: 5 failures per identity per 10 s.
    for i in 0..5 {
        let server = if i % 2 == 0 { &a } else { &b };
        let reply = server
            .call(
                "POST",
                "/api/login",
                Some(json!({"username": "ann", "password": "wrong"})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 401, "attempt {i}: {}", reply.raw);
    }
    for server in [&a, &b] {
        let reply = server
            .call(
                "POST",
                "/api/login",
                Some(json!({"username": "ann", "password": "ann-password"})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 429, "{}", reply.raw);
        assert!(reply.header("retry-after").is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_one_instance_loses_no_acknowledged_write() {
    let (_ws, mut a, b) = two_instances();
    let b = Arc::new(b);
    let a_http = a.http.clone();
    let a_base = a.base.clone();
    let acked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (acked, stop, b) = (Arc::clone(&acked), Arc::clone(&stop), Arc::clone(&b));
        let (a_http, a_base) = (a_http.clone(), a_base.clone());
        writers.push(tokio::spawn(async move {
            let mut seq = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = json!({"writer": w, "seq": seq});
                // Writers 0 and 1 write through A (until it dies), 2 and 3 through B.
                let id = if w < 2 {
                    let sent = a_http
                        .post(format!("{a_base}/things"))
                        .json(&body)
                        .send()
                        .await;
                    match sent {
                        Ok(r) if r.status() == 200 => r.json::<Value>().await.ok(),
                        _ => None,
                    }
                } else {
                    let r = b.call("POST", "/things", Some(body), &[]).await;
                    (r.status == 200).then_some(r.body)
                };
                if let Some(Value::String(id)) = id {
                    acked.lock().expect("acks").push(id);
                }
                seq += 1;
            }
        }));
    }
    // Let the load run, then kill A with SIGKILL in the middle of it.
    while acked.lock().expect("acks").len() < 200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.child.kill().expect("kill -9 A");
    a.child.wait().expect("reap A");
    let at_kill = acked.lock().expect("acks").len();
    while acked.lock().expect("acks").len() < at_kill + 100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.await.expect("writer");
    }
    let acked = acked.lock().expect("acks").clone();
    // B keeps serving, and holds every write either instance acknowledged.
    let ids: Value = json!(acked);
    let found = count_things(&b, &ids).await;
    assert_eq!(
        found,
        acked.len(),
        "every acknowledged write is in the database"
    );
}

/// How many of `ids` the auto API's `things` collection holds, asked through B: an update by
/// `_id` answers how many documents it matched.
async fn count_things(b: &Http, ids: &Value) -> usize {
    let mut found = 0;
    for id in ids.as_array().into_iter().flatten() {
        let Some(id) = id.as_str() else { continue };
        let reply = b
            .call(
                "PATCH",
                &format!("/things/{id}"),
                Some(json!({"checked": true})),
                &[],
            )
            .await;
        if reply.status == 200 && reply.body == json!(1) {
            found += 1;
        }
    }
    found
}

#[test]
fn users_import_and_check_work_on_postgres() {
    let ws = Workspace::on_postgres();
    let config = ws.config(CONFIG);
    let db = ws.database();
    let id = ws.add_user("bob", "bob-password", &["admin"]);
    let list = ws.run(&["users", "list", "--database", &db]);
    assert!(list.status.success(), "{}", text(&list.stderr));
    assert!(text(&list.stdout).contains(&id));
    let file = ws.path("items.json");
    std::fs::write(
        &file,
        r#"[{"_id": "i1", "n": 1.50}, {"_id": "i2", "n": 12345678901234567890}]"#,
    )
    .expect("write export");
    let file = file.display().to_string();
    let out = ws.run(&["import", "--database", &db, "--collection", "items", &file]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let check = ws.run(&["check", "--config", &config.display().to_string()]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(
        text(&check.stdout).starts_with("ok:"),
        "{}",
        text(&check.stdout)
    );
}

#[test]
fn check_says_when_postgres_is_unreachable_or_refuses_the_credentials() {
    let port = cluster().port();
    let wrong = format!("postgres://postgres:not-the-password@127.0.0.1:{port}/postgres");
    let ws = Workspace::with_database(wrong);
    let config = ws.config(CONFIG).display().to_string();
    let out = ws.run(&["check", "--config", &config]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(
        !err.contains("not-the-password"),
        "the password is not shown: {err}"
    );

    // Nothing listens on port 1.
    let ws = Workspace::with_database("postgres://postgres:pw@127.0.0.1:1/app".into());
    let config = ws.config(CONFIG).display().to_string();
    let out = ws.run(&["check", "--config", &config]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot be used") && err.contains("refused"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_while_the_database_is_down_get_503_then_work_again() {
    // A cluster of its own: this test stops it.
    let own = tokio::task::spawn_blocking(portico_store::postgres::testing::TestCluster::start)
        .await
        .expect("task")
        .expect("start a cluster");
    let ws = Workspace::with_database(own.create_database().expect("database"));
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve_binary();
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let own = Arc::new(own);
    let stopper = Arc::clone(&own);
    tokio::task::spawn_blocking(move || stopper.stop())
        .await
        .expect("task")
        .expect("stop PostgreSQL");

    let route = server
        .call("GET", "/api/items", None, &x_auth(&token))
        .await;
    assert_eq!(route.status, 503, "{}", route.raw);
    assert_eq!(route.header("retry-after"), Some("1"));
    assert_eq!(route.body["status"], json!("error"), "JSend: {}", route.raw);
    let auto = server
        .call("POST", "/things", Some(json!({"n": 1})), &[])
        .await;
    assert_eq!(auto.status, 503, "{}", auto.raw);
    assert_eq!(auto.header("retry-after"), Some("1"));
    assert_eq!(
        auto.body["error"],
        json!("service-unavailable"),
        "{}",
        auto.raw
    );
    assert!(auto.body["reason"].is_string(), "{}", auto.raw);

    let starter = Arc::clone(&own);
    tokio::task::spawn_blocking(move || starter.restart())
        .await
        .expect("task")
        .expect("restart PostgreSQL");
    let mut status = 0;
    for _ in 0..100 {
        status = server
            .call("GET", "/api/items", None, &x_auth(&token))
            .await
            .status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "the server recovers by itself");
}

/// The value of the unlabelled metric `name` in a `/metrics` text (0 when absent).
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// `/metrics` on PostgreSQL counts the change-stamp rounds and the calls they answered, and
/// the read cache's hits and misses: a get read twice is one miss then one hit, each after a
/// stamp read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_stamp_rounds_and_read_cache_hits() {
    let ws = Workspace::on_postgres();
    ws.config(&format!("{CONFIG}[metrics]\n"));
    let server = ws.serve_binary();
    ws.add_user("ann", "ann-password", &[]);
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let id = post_item(&server, &token, json!({"name": "x"})).await;
    let scrape = || async { server.call("GET", "/metrics", None, &[]).await.raw };
    let before = scrape().await;
    for _ in 0..2 {
        let got = server
            .call("GET", &format!("/api/items/{id}"), None, &x_auth(&token))
            .await;
        assert_eq!(got.status, 200, "{}", got.raw);
    }
    let after = scrape().await;
    let grew = |name| metric(&after, name) - metric(&before, name);
    assert!(grew("portico_postgres_cache_hits_total") >= 1.0, "{after}");
    assert!(
        grew("portico_postgres_cache_misses_total") >= 1.0,
        "{after}"
    );
    let rounds = grew("portico_postgres_stamp_rounds_total");
    let callers = grew("portico_postgres_stamp_callers_total");
    assert!(
        rounds >= 1.0 && callers >= rounds,
        "{rounds} rounds, {callers} calls: {after}"
    );
    assert!(
        metric(&after, "portico_postgres_cache_bytes") > 0.0,
        "{after}"
    );
}
