//! A served app stopped in process releases its database: the SQLite file is no longer held
//! (its lock, its connections) once `Served::serve` returns, whatever kept a handle on the
//! platform (scripts' methods, hooks and jobs, the auto door's rules, a program's own method
//! capturing the platform, a live stream still open), so a new server in the same process
//! opens it and sees the data, and a restore in place works in this process; on PostgreSQL
//! the pool's sessions end.

use std::time::{Duration, Instant};

use portico_cli::serve::{ServeOptions, Served};
use portico_testkit::Http;
use portico_testkit::sse::Sse;
use serde_json::{Value, json};

use super::common::Workspace;

const CONFIG: &str = r#"
shutdown_grace_seconds = 1

[scripts]
main = "main.ts"

[[api]]
use_default_auth = true
auth_failure_delay_ms = 0

[[api.collection]]
name = "items"
auth_required = false

[auto]
auth_failure_delay_ms = 0
collections = ["things"]

[auto.rules.things]
insert = "anyone"

[[auto.publication]]
name = "things"
collection = "things"
"#;

/// Methods, a write hook and a job, all defined by the script (each holds the script engine,
/// which holds the platform).
const MAIN: &str = r#"
import { methods, collection, jobs } from "portico";

jobs.define("record", async function (args: any) {
  await collection("effects").insert({ n: args.n });
});

collection("things").before.insert(async function (userId, doc: any) {
  doc.hooked = true;
  await jobs.enqueue("record", { n: doc.n });
});

methods({
  async effects() { return await collection("effects").find({}).count(); },
});
"#;

/// The program's own method, capturing a clone of the platform it is defined on.
fn define_app_method(platform: &portico_platform::Platform) {
    let captured = platform.clone();
    platform
        .method("appCount", move |_invocation, _args| {
            let platform = captured.clone();
            async move {
                let things = platform
                    .store()
                    .count("things", &portico_store::Selector::all())
                    .await
                    .map_err(|e| portico_platform::MethodError::internal(e.to_string()))?;
                Ok(json!(things))
            }
        })
        .unwrap();
}

/// Calls the script's `effects` method until it answers `want` (the job ran), for 10 s.
async fn wait_for_effects(server: &Http, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = server.call("POST", "/methods/effects", None, &[]).await;
        assert_eq!(reply.status, 200, "{}", reply.raw);
        if reply.body == json!(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the job did not run: {}",
            reply.raw
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_in_process_server_releases_its_sqlite_file_for_the_next_one() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    std::fs::write(ws.path("main.ts"), MAIN).unwrap();
    let db = ws.path("portico.db");
    let server = ws.serve();
    define_app_method(server.platform());

    // A live list and a publication followed over server-sent events, left open.
    let http = reqwest::Client::new();
    let mut list = Sse::open(
        http.get(server.url("/api/items"))
            .header("Accept", "text/event-stream"),
    )
    .await;
    assert_eq!(list.next().await.0, "ready");
    let mut things = Sse::open(http.get(server.url("/publications/things"))).await;
    assert_eq!(things.next().await.0, "ready");

    let item = server
        .call("POST", "/api/items", Some(json!({"_id": "i1"})), &[])
        .await;
    assert_eq!(item.status, 201, "{}", item.raw);
    assert_eq!(list.next().await.0, "added");
    // Through the auto door's rule and the script's hook, which enqueues the script's job.
    let thing = server
        .call("POST", "/things", Some(json!({"_id": "t1", "n": 7})), &[])
        .await;
    assert_eq!(thing.status, 200, "{}", thing.raw);
    let (name, data) = things.next().await;
    assert_eq!(
        (name.as_str(), &data["fields"]["hooked"]),
        ("added", &json!(true))
    );
    wait_for_effects(&server, 1).await;
    let mine = server.call("POST", "/methods/appCount", None, &[]).await;
    assert_eq!((mine.status, &mine.body), (200, &json!(1)), "{}", mine.raw);
    assert!(portico_store::sqlite::is_held(&db).unwrap());
    // A backup holding i1 and t1, taken while it serves; then a write it does not hold.
    let backup = ws.path("before-i2.db");
    portico_store::sqlite::backup(&db, &backup).unwrap();
    let item = server
        .call("POST", "/api/items", Some(json!({"_id": "i2"})), &[])
        .await;
    assert_eq!(item.status, 201, "{}", item.raw);
    let refused = portico_store::sqlite::restore(&backup, &db).unwrap_err();
    assert!(refused.to_string().contains("in use"), "{refused}");

    // Stopped with the streams still open and a handle on the platform kept.
    let lingering = server.platform().clone();
    assert!(server.stop(), "the server stops gracefully");
    assert!(
        !portico_store::sqlite::is_held(&db).unwrap(),
        "the database is still held after the server stopped"
    );
    // The streams were cut with the server (a cut stream may read as an error, not an end).
    drop((list, things));

    // The handle kept answers with clear errors, and holds nothing.
    let refused = lingering.call("appCount", None, vec![]).await.unwrap_err();
    assert_eq!(
        (refused.error.as_str(), refused.status),
        ("platform-closed", Some(503))
    );
    let closed = lingering.store().get("items", "i1").await.unwrap_err();
    assert!(
        matches!(closed, portico_store::Error::Closed(_)) && closed.is_unavailable(),
        "{closed:?}"
    );
    assert!(lingering.is_closed());

    // The same file, opened again by a new server in this process: the data is there.
    let again = ws.serve();
    let item = again.call("GET", "/api/items/i2", None, &[]).await;
    assert_eq!(item.status, 200, "{}", item.raw);
    wait_for_effects(&again, 1).await;
    let stored = again.platform().store().get("things", "t1").await.unwrap();
    assert_eq!(stored.map(|doc| doc["hooked"].clone()), Some(json!(true)));
    assert!(again.stop(), "the second server stops gracefully");
    assert!(!portico_store::sqlite::is_held(&db).unwrap());
    drop(lingering);

    // Restored in place in this process, then served: the backup's data, not the later write.
    portico_store::sqlite::restore(&backup, &db).unwrap();
    let restored = ws.serve();
    let item = restored.call("GET", "/api/items/i1", None, &[]).await;
    assert_eq!(item.status, 200, "{}", item.raw);
    let item = restored.call("GET", "/api/items/i2", None, &[]).await;
    assert_eq!(item.status, 404, "{}", item.raw);
    assert!(restored.stop(), "the restored server stops gracefully");

    // A server dropped without a graceful stop (as a killed process) releases it too.
    let killed = ws.serve();
    assert!(portico_store::sqlite::is_held(&db).unwrap());
    drop(killed);
    assert!(!portico_store::sqlite::is_held(&db).unwrap());
}

/// The sessions other than the asking one on the database `url` names.
fn sessions_on(url: &str) -> (String, u64) {
    let name = url
        .rsplit('/')
        .next()
        .and_then(|tail| tail.split('?').next())
        .unwrap()
        .to_owned();
    let count = portico_testkit::cluster()
        .query(
            &name,
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .unwrap();
    let count = count.parse().unwrap_or_else(|_| panic!("count: {count}"));
    (name, count)
}

/// Waits up to 5 s for the sessions on the database `url` names to end.
async fn no_sessions_left(url: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (name, open) = sessions_on(url);
        if open == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{open} sessions still open on {name} after the server stopped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Served on this test's own runtime (as a program embedding the served app does, whose
/// runtime lives on after the server), so nothing but the shutdown can end the sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_in_process_server_closes_its_postgresql_sessions() {
    let ws = Workspace::on_postgres();
    let config = ws.config(CONFIG);
    std::fs::write(ws.path("main.ts"), MAIN).unwrap();
    let url = ws.database();
    let served = Served::build(&ServeOptions::new().config(&config))
        .await
        .unwrap();
    let lingering = served.platform.clone();
    define_app_method(&lingering);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Http::new(format!("http://{}", listener.local_addr().unwrap()));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(served.serve(listener, async move {
        let _ = stop_rx.await;
    }));
    let mut things =
        Sse::open(reqwest::Client::new().get(server.url("/publications/things"))).await;
    assert_eq!(things.next().await.0, "ready");
    let thing = server
        .call("POST", "/things", Some(json!({"_id": "t1", "n": 1})), &[])
        .await;
    assert_eq!(thing.status, 200, "{}", thing.raw);
    assert_eq!(things.next().await.0, "added");
    wait_for_effects(&server, 1).await;
    let mine = server.call("POST", "/methods/appCount", None, &[]).await;
    assert_eq!((mine.status, &mine.body), (200, &json!(1)), "{}", mine.raw);
    let (name, open) = sessions_on(&url);
    assert!(open > 0, "no session on {name} while serving");

    // Stopped with the publication's stream still open (cut after the grace period).
    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), serving)
        .await
        .expect("the server stops once told")
        .unwrap();
    drop(things);
    // The change feed's listener notices within a second; the pool's sessions end at once.
    no_sessions_left(&url).await;
    let closed = lingering.store().get("things", "t1").await.unwrap_err();
    assert!(
        matches!(closed, portico_store::Error::Closed(_)),
        "{closed:?}"
    );
    let refused = lingering.call("appCount", None, vec![]).await.unwrap_err();
    assert_eq!(refused.status, Some(503));
    let (_, open) = sessions_on(&url);
    assert_eq!(open, 0, "a call on the closed platform connected again");

    let again = ws.serve();
    let stored: Value = again.call("POST", "/methods/effects", None, &[]).await.body;
    assert_eq!(stored, json!(1));
    assert!(again.stop());
}
