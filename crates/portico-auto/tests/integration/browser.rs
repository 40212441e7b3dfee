//! A live publication in a real browser: headless Chromium (Debian's `chromium` package, or
//! `CHROMIUM`) opens a small page that follows a publication with `EventSource` and inserts,
//! changes and removes a document through the auto API; the page shows each event and posts
//! what it showed to the test server, which checks it. No browser driver: Chromium is started
//! with the page's url and stopped when the page has reported.
//!
//! Needs `/usr/bin/chromium` (`.ci/run` installs it). Without it the test fails saying so.

use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use portico_auto::AutoApi;
use portico_platform::{Platform, Query, Rules};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::common::serve;

const PAGE: &str = include_str!("../browser/live.html");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_sees_a_document_added_changed_and_removed() {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "this test needs Chromium at {chromium}: install Debian's package \
         (`apt-get install -y chromium`, as .ci/run does) or set CHROMIUM to its path"
    );
    let p = Platform::open("memory:").await.unwrap();
    p.collection("todos").allow(
        Rules::new()
            .insert(|_, _| async { true })
            .update(|_, _, _, _| async { true })
            .remove(|_, _| async { true }),
    );
    p.publish("todos", |sub, _| async move {
        Ok(vec![
            sub.platform().collection("todos").cursor(Query::default()),
        ])
    })
    .unwrap();
    let (tx, mut reports) = mpsc::channel::<Value>(4);
    let page = Router::new()
        .route("/live.html", get(|| async { axum::response::Html(PAGE) }))
        .route(
            "/report",
            post(move |axum::Json(body): axum::Json<Value>| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(body).await;
                    "ok"
                }
            }),
        );
    let server = serve(page.merge(AutoApi::new(p.clone()).router().unwrap())).await;

    let profile = tempfile::tempdir().unwrap();
    let mut browser = tokio::process::Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(server.url("/live.html"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start chromium");
    let report = tokio::time::timeout(Duration::from_secs(60), reports.recv()).await;
    let _ = browser.kill().await;
    let report = report
        .expect("the page reported within 60 s")
        .expect("a report");
    assert_eq!(
        report,
        json!({
            "log": ["ready", "added feed the cat", "changed walk the dog", "removed it"],
            "shown": [],
        }),
    );
    // The store agrees: the document came and went.
    assert_eq!(
        p.collection("todos")
            .count(&portico_platform::Selector::all())
            .await
            .unwrap(),
        0
    );
}
