//! `database_replicas` through the binary: reads served by a streaming replica (its replay
//! paused, so it shows an older view than the primary), a writer reading its own writes at
//! once, a live list told of a change once the replica holds it, and the replica's state on
//! `/readyz` and `/metrics`.

use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{Http, Workspace, cluster, x_auth};
use portico_testkit::sse::Sse;

const CONFIG: &str = "replica_max_lag_ms = 60000\n\
[metrics]\n\
[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
[[api.collection]]\nname = \"items\"\nauth_required = true\n";

async fn status_of(server: &Http, path: &str, token: &str) -> u16 {
    server.call("GET", path, None, &x_auth(token)).await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_replica_answers_other_callers_while_a_writer_reads_its_writes() {
    let ws = Workspace::on_postgres();
    let url = ws.database();
    let db = url.rsplit('/').next().expect("database name").to_owned();
    let replica = tokio::task::block_in_place(|| cluster().start_replica()).expect("replica");
    ws.config(&format!(
        "database_replicas = [\"{}\"]\n{CONFIG}",
        replica.url(&db)
    ));
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve_binary();
    let (ann, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;

    let old = server
        .call("POST", "/api/items", Some(json!({"n": 1})), &x_auth(&ann))
        .await;
    assert_eq!(old.status, 201, "{}", old.raw);
    let old_id = old.body["data"]["_id"].as_str().expect("an id").to_owned();
    // Bob reads it once the replica has replayed it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while status_of(&server, &format!("/api/items/{old_id}"), &bob).await != 200 {
        assert!(Instant::now() < deadline, "the replica never had the item");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Bob follows the list live.
    let mut live = Sse::open(
        reqwest::Client::new()
            .get(server.url("/api/items"))
            .header("x-auth-token", &bob),
    )
    .await;
    assert_eq!(live.next().await.0, "added");
    assert_eq!(live.next().await.0, "ready");

    let pause = |sql: &str| {
        tokio::task::block_in_place(|| replica.sql(&db, sql)).expect("replica SQL");
    };
    pause("SELECT pg_wal_replay_pause()");
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::task::block_in_place(|| {
        replica.query(&db, "SELECT pg_get_wal_replay_pause_state()")
    })
    .expect("pause state")
        != "paused"
    {
        assert!(Instant::now() < deadline, "replay did not pause");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let new = server
        .call("POST", "/api/items", Some(json!({"n": 2})), &x_auth(&ann))
        .await;
    assert_eq!(new.status, 201, "{}", new.raw);
    let new_id = new.body["data"]["_id"].as_str().expect("an id").to_owned();
    let new_path = format!("/api/items/{new_id}");
    // Ann's next request reads her write (from the primary)...
    assert_eq!(status_of(&server, &new_path, &ann).await, 200);
    let list = server.call("GET", "/api/items", None, &x_auth(&ann)).await;
    assert_eq!(
        list.body["data"].as_array().map(Vec::len),
        Some(2),
        "{}",
        list.raw
    );
    // ...while Bob reads the paused replica: the old item, not the new one.
    assert_eq!(status_of(&server, &new_path, &bob).await, 404);
    let list = server.call("GET", "/api/items", None, &x_auth(&bob)).await;
    assert_eq!(
        list.body["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        list.raw
    );

    let ready = server.call("GET", "/readyz", None, &[]).await;
    assert_eq!(ready.status, 200, "{}", ready.raw);
    assert_eq!(
        ready.body["replicas"][0]["state"], "in_use",
        "{}",
        ready.raw
    );
    assert!(
        ready.body["replicas"][0]["lag_ms"].is_u64(),
        "{}",
        ready.raw
    );
    assert!(
        !ready.raw.contains(cluster_password()),
        "no password on /readyz"
    );
    let metrics = server.call("GET", "/metrics", None, &[]).await;
    let reads = metrics
        .raw
        .lines()
        .find(|l| l.starts_with("portico_replica_reads_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(reads >= 3.0, "{}", metrics.raw);
    assert!(
        metrics
            .raw
            .lines()
            .any(|l| l.starts_with("portico_replica_up{") && l.ends_with(" 1")),
        "{}",
        metrics.raw
    );

    // The change waits for the replica: Bob's live list (re-read from the replica) hears
    // nothing while it is paused...
    assert!(
        tokio::time::timeout(Duration::from_millis(1000), live.next())
            .await
            .is_err(),
        "no live event while the replica lacks the change"
    );
    // ...and the new item once replay resumes; his gets see it too.
    pause("SELECT pg_wal_replay_resume()");
    let (event, data) = live.next().await;
    assert_eq!(event, "added", "{data}");
    assert_eq!(data["id"].as_str(), Some(new_id.as_str()), "{data}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while status_of(&server, &new_path, &bob).await != 200 {
        assert!(Instant::now() < deadline, "the replica never caught up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn cluster_password() -> &'static str {
    portico_store::postgres::testing::PASSWORD
}
