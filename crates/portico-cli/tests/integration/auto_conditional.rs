//! `If-Match` on the auto API's collection writes, with tags read from the routes door.

use serde_json::json;

use super::common::Workspace;

const CONFIG: &str = "[[api]]\n[[api.collection]]\nname = \"w\"\nauth_required = false\n[auto]\ncollections = [\"w\"]\n[auto.rules.w]\ninsert = \"anyone\"\nupdate = \"anyone\"\nremove = \"anyone\"\n";

#[tokio::test]
async fn auto_writes_honour_if_match_in_the_auto_error_format() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    let id = server.call("POST", "/w", Some(json!({"n": 1})), &[]).await;
    assert_eq!(id.status, 200, "{}", id.raw);
    let id = id.body.as_str().unwrap_or_default().to_owned();
    let read = server.call("GET", &format!("/api/w/{id}"), None, &[]).await;
    let tag = read.header("etag").unwrap_or_default().to_owned();
    assert!(tag.starts_with('"'), "{tag}");

    // Two clients hold the same tag: the first write wins, the second is refused.
    let first = server
        .call(
            "PATCH",
            &format!("/w/{id}"),
            Some(json!({"n": 2})),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(
        (first.status, first.body.clone()),
        (200, json!(1)),
        "{}",
        first.raw
    );
    let second = server
        .call(
            "PATCH",
            &format!("/w/{id}"),
            Some(json!({"n": 3})),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(second.status, 412, "{}", second.raw);
    assert_eq!(second.body["error"], "precondition-failed");
    assert!(second.body["reason"].is_string());
    let now = server.call("GET", &format!("/api/w/{id}"), None, &[]).await;
    assert_eq!(now.body["data"]["n"], 2);

    let stale = server
        .call("DELETE", &format!("/w/{id}"), None, &[("If-Match", &tag)])
        .await;
    assert_eq!(stale.status, 412, "{}", stale.raw);
    let bad = server
        .call(
            "DELETE",
            &format!("/w/{id}"),
            None,
            &[("If-Match", "no-quotes")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.raw);
    let current = now.header("etag").unwrap_or_default().to_owned();
    let removed = server
        .call(
            "DELETE",
            &format!("/w/{id}"),
            None,
            &[("If-Match", &current)],
        )
        .await;
    assert_eq!(
        (removed.status, removed.body.clone()),
        (200, json!(1)),
        "{}",
        removed.raw
    );
    let gone = server
        .call(
            "PATCH",
            &format!("/w/{id}"),
            Some(json!({"n": 4})),
            &[("If-Match", "*")],
        )
        .await;
    assert_eq!(gone.status, 412, "{}", gone.raw);
}

/// Sends `writers` PATCHes carrying the same tag at once, alternating between `servers`; returns
/// the statuses and the value each one tried to write.
async fn race(
    servers: &[std::sync::Arc<super::common::Server>],
    id: &str,
    tag: &str,
    writers: usize,
) -> Vec<(u16, i64)> {
    let mut tasks = Vec::new();
    for n in 0..writers {
        let server = std::sync::Arc::clone(&servers[n % servers.len()]);
        let (path, tag) = (format!("/w/{id}"), tag.to_owned());
        tasks.push(tokio::spawn(async move {
            let value = i64::try_from(n).unwrap_or_default() + 100;
            let reply = server
                .call(
                    "PATCH",
                    &path,
                    Some(json!({"n": value})),
                    &[("If-Match", &tag)],
                )
                .await;
            (reply.status, value)
        }));
    }
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.expect("writer task"));
    }
    out
}

/// Exactly one of many writers holding the same tag wins, and the stored value is its value:
/// the tag is checked inside the write's transaction, not before it.
async fn exactly_one_racing_writer_wins(ws: &Workspace, instances: usize) {
    ws.config(CONFIG);
    let servers: Vec<_> = (0..instances)
        .map(|_| std::sync::Arc::new(ws.serve()))
        .collect();
    let first = &servers[0];
    let id = first.call("POST", "/w", Some(json!({"n": 1})), &[]).await;
    let id = id.body.as_str().unwrap_or_default().to_owned();
    for round in 0..3 {
        let read = first.call("GET", &format!("/api/w/{id}"), None, &[]).await;
        let tag = read.header("etag").unwrap_or_default().to_owned();
        let results = race(&servers, &id, &tag, 12).await;
        let winners: Vec<_> = results.iter().filter(|(s, _)| *s == 200).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        assert!(
            results.iter().all(|(s, _)| *s == 200 || *s == 412),
            "round {round}: {results:?}"
        );
        let now = first.call("GET", &format!("/api/w/{id}"), None, &[]).await;
        assert_eq!(now.body["data"]["n"], json!(winners[0].1), "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_many_writers_with_the_same_tag_wins() {
    exactly_one_racing_writer_wins(&Workspace::new(), 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_writer_wins_across_two_instances_on_postgres() {
    exactly_one_racing_writer_wins(&Workspace::on_postgres(), 2).await;
}
