//! Live streams in the `portico` binary: a generated list and a publication followed over
//! server-sent events, the `[live]` stream cap, logout ending a stream; and across two
//! instances on one PostgreSQL database.

use std::time::Duration;

use serde_json::json;

use super::common::{Http, Workspace, x_auth};
use portico_testkit::sse::Sse;

const CONFIG: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
[[api.collection]]\nname = \"items\"\nauth_required = true\n\
[auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n\
[auto.rules.things]\ninsert = \"anyone\"\nupdate = \"anyone\"\n\
[[auto.publication]]\nname = \"things\"\ncollection = \"things\"\nfields = { secret = 0 }\n";

fn stream(server: &Http, path: &str, token: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .get(server.url(path))
        .header("x-auth-token", token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_streams_lists_and_publications_within_its_cap() {
    let ws = Workspace::new();
    ws.config(&format!("{CONFIG}[live]\nmax_streams = 2\nbuffer = 64\n"));
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve();
    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;

    let mut list = Sse::open(stream(&server, "/api/items", &token)).await;
    assert_eq!(list.next().await.0, "ready");
    let mut things =
        Sse::open(reqwest::Client::new().get(server.url("/publications/things"))).await;
    assert_eq!(things.next().await.0, "ready");

    // The cap of 2 is reached.
    let refused = server
        .call(
            "GET",
            "/api/items",
            None,
            &[
                ("X-Auth-Token", token.as_str()),
                ("Accept", "text/event-stream"),
            ],
        )
        .await;
    assert_eq!(refused.status, 503, "{}", refused.raw);

    let created = server
        .call(
            "POST",
            "/api/items",
            Some(json!({"name": "x"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    let (name, data) = list.next().await;
    assert_eq!(
        (name.as_str(), &data["fields"]["name"]),
        ("added", &json!("x"))
    );

    let r = server
        .call("POST", "/things", Some(json!({"a": 1, "secret": "s"})), &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let (name, data) = things.next().await;
    assert_eq!((name.as_str(), &data["fields"]["a"]), ("added", &json!(1)));
    assert!(
        data["fields"].get("secret").is_none(),
        "the projection applies: {data}"
    );

    let out = server
        .call("POST", "/api/logout", None, &x_auth(&token))
        .await;
    assert_eq!(out.status, 200, "{}", out.raw);
    let end = tokio::time::timeout(Duration::from_secs(1), list.next()).await;
    assert_eq!(end.expect("ended within 1 s").0, "end");
    assert!(list.ends().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_instance_reaches_a_stream_on_the_other() {
    let ws = Workspace::on_postgres();
    ws.config(CONFIG);
    ws.add_user("ann", "ann-password", &[]);
    let a = ws.serve();
    let b = ws.serve();
    let (token, _) = a.rest_login("/api/", "ann", "ann-password").await;

    let mut on_b = Sse::open(stream(&b, "/api/items", &token)).await;
    assert_eq!(on_b.next().await.0, "ready");
    let mut things_on_b =
        Sse::open(reqwest::Client::new().get(b.url("/publications/things"))).await;
    assert_eq!(things_on_b.next().await.0, "ready");

    let created = a
        .call(
            "POST",
            "/api/items",
            Some(json!({"name": "from A"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    let id = created.body["data"]["_id"].as_str().unwrap().to_owned();
    let (name, data) = on_b.next().await;
    assert_eq!(
        (name.as_str(), &data["id"], &data["fields"]["name"]),
        ("added", &json!(id), &json!("from A"))
    );
    let patched = a
        .call(
            "PATCH",
            &format!("/api/items/{id}"),
            Some(json!({"name": "changed on A"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.raw);
    let (name, data) = on_b.next().await;
    assert_eq!(
        (name.as_str(), &data["fields"]["name"]),
        ("changed", &json!("changed on A"))
    );

    let r = a
        .call("POST", "/things", Some(json!({"a": 1, "secret": 2})), &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let (name, data) = things_on_b.next().await;
    assert_eq!((name.as_str(), &data["fields"]["a"]), ("added", &json!(1)));
    assert!(data["fields"].get("secret").is_none(), "{data}");

    // Logout on A ends the stream on B within 1 s.
    let out = a.call("POST", "/api/logout", None, &x_auth(&token)).await;
    assert_eq!(out.status, 200, "{}", out.raw);
    let end = tokio::time::timeout(Duration::from_secs(1), on_b.next()).await;
    assert_eq!(end.expect("B's stream ended within 1 s").0, "end");
    assert!(on_b.ends().await);
}
