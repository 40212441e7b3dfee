//! A generated collection's list followed live: `Accept: text/event-stream` on the getAll url,
//! over real HTTP, with `where`, `fields`, the owner scope and authentication as for the
//! snapshot; logout over HTTP ends the stream; the stream cap answers 503.

use std::net::SocketAddr;
use std::time::Duration;

use portico_platform::{LiveConfig, Platform, PlatformConfig};
use portico_routes::{AccessScope, Api, CollectionOptions};
use serde_json::{Value, json};

use super::common::{opts, token_for, user};
use portico_testkit::sse::Sse;

struct App {
    base: String,
    client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for App {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl App {
    async fn new(platform: &Platform) -> App {
        let mut api = Api::new(
            {
                let mut o = opts();
                o.use_default_auth = true;
                o
            },
            platform.clone(),
        )
        .unwrap();
        api.add_collection(
            platform.collection("notes"),
            CollectionOptions::new().scope(AccessScope::owner_field("ownerId")),
        )
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = api.router();
        let task = tokio::spawn(async move {
            let _ = axum::serve(
                listener,
                router.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await;
        });
        App {
            base: format!("http://{addr}/api"),
            client: reqwest::Client::new(),
            task,
        }
    }

    fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.client
            .get(format!("{}{path}", self.base))
            .header("x-auth-token", token)
    }

    async fn write(&self, method: &str, path: &str, token: &str, body: Value) -> Value {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let r = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("x-auth-token", token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        r.json().await.unwrap()
    }
}

#[tokio::test]
async fn a_list_streams_with_where_fields_and_scope() {
    let platform = Platform::open("memory:").await.unwrap();
    let ann = user(&platform, "ann", "pw-123456", &[]).await;
    let bob = user(&platform, "bob", "pw-123456", &[]).await;
    let (ta, tb) = (
        token_for(&platform, &ann).await,
        token_for(&platform, &bob).await,
    );
    let app = App::new(&platform).await;
    app.write(
        "POST",
        "/notes",
        &ta,
        json!({"text": "one", "tag": "x", "n": 1}),
    )
    .await;

    let unauthenticated = app
        .client
        .get(format!("{}/notes", app.base))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status().as_u16(), 401);

    let mut s = Sse::open(
        app.get(r#"/notes?where={"tag":"x"}&fields=text,tag"#, &ta)
            .header("origin", "https://app.example"),
    )
    .await;
    // The API's CORS headers come with the stream, as with a snapshot (a page on another
    // origin reads it); its own content type is kept.
    assert!(
        s.header("access-control-allow-origin").is_some(),
        "no CORS header on the stream"
    );
    let (name, first) = s.next().await;
    assert_eq!(name, "added");
    assert_eq!(first["fields"], json!({"text": "one", "tag": "x"}));
    assert_eq!(s.next().await.0, "ready");

    // Bob's note (scope) and Ann's note without the tag (where) do not show.
    app.write("POST", "/notes", &tb, json!({"text": "bob's", "tag": "x"}))
        .await;
    app.write("POST", "/notes", &ta, json!({"text": "untagged"}))
        .await;
    let created = app
        .write("POST", "/notes", &ta, json!({"text": "two", "tag": "x"}))
        .await;
    let id = created["data"]["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        s.next().await,
        (
            "added".into(),
            json!({"collection": "notes", "id": id, "fields": {"text": "two", "tag": "x"}})
        )
    );
    // A change of a field outside `fields` is not seen; one inside is.
    app.write("PATCH", &format!("/notes/{id}"), &ta, json!({"n": 5}))
        .await;
    app.write("PATCH", &format!("/notes/{id}"), &ta, json!({"text": "2"}))
        .await;
    assert_eq!(
        s.next().await,
        (
            "changed".into(),
            json!({"collection": "notes", "id": id, "fields": {"text": "2"}, "cleared": []})
        )
    );
    app.write("DELETE", &format!("/notes/{id}"), &ta, json!({}))
        .await;
    assert_eq!(
        s.next().await,
        ("removed".into(), json!({"collection": "notes", "id": id}))
    );

    // Logout over HTTP ends the stream within 1 s.
    let r = app
        .client
        .post(format!("{}/logout", app.base))
        .header("x-auth-token", &ta)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let end = tokio::time::timeout(Duration::from_secs(1), s.next()).await;
    assert_eq!(
        end.expect("ended within 1 s"),
        ("end".into(), json!({"reason": "logged-out"}))
    );
    assert!(s.ends().await);
}

#[tokio::test]
async fn the_stream_cap_answers_503() {
    let mut config = PlatformConfig::default();
    config.live = {
        let mut o = LiveConfig::default();
        o.max_streams = 1;
        o
    };
    let platform = Platform::open_with("memory:", config).await.unwrap();
    let ann = user(&platform, "ann", "pw-123456", &[]).await;
    let ta = token_for(&platform, &ann).await;
    let app = App::new(&platform).await;
    let mut first = Sse::open(app.get("/notes", &ta)).await;
    assert_eq!(first.next().await.0, "ready");
    let r = app
        .get("/notes", &ta)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "error");
    // A snapshot is still answered.
    let r = app.get("/notes", &ta).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
}
