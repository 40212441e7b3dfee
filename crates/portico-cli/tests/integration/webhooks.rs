//! `[[webhooks]]` through the binary: a collection's writes and a script's `webhooks.send`
//! delivered to a real receiver (Node.js with the Standard Webhooks reference library,
//! `tests/support/webhooks/receiver.mjs`, installed by `ci/test.sh` with `npm ci`), which
//! refuses the first deliveries: every event arrives, signed, with one `webhook-id` across its
//! tries, in write order, without the fields the collection's read rules hide.

// The receiver and the scripts that send to it serve the tests of builds with scripts only.
#![cfg_attr(not(feature = "scripts"), allow(dead_code, unused_imports))]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::common::{Http, Workspace};

/// The receiver: a Node.js process checking signatures, appending each request to a file.
struct Receiver {
    child: Child,
    port: u16,
    output: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(ws: &Workspace, secret: &str, refuse: u32) -> Receiver {
        Receiver::start_mode(ws, secret, refuse, "check")
    }

    /// A receiver that never answers (`hang`) or answers 500 with 10 MB (`huge`).
    fn start_mode(ws: &Workspace, secret: &str, refuse: u32, mode: &str) -> Receiver {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/webhooks");
        assert!(
            dir.join("node_modules/standardwebhooks").is_dir(),
            "the webhook receiver's library is missing: run ci/test.sh (npm ci in {})",
            dir.display()
        );
        let output = ws.path(&format!("received-{mode}.jsonl"));
        let mut child = Command::new("node")
            .arg(dir.join("receiver.mjs"))
            .arg(secret)
            .arg(refuse.to_string())
            .arg(&output)
            .arg(mode)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start node (Node.js 20+)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the receiver did not start: {line:?}"));
        Receiver {
            child,
            port,
            output,
        }
    }

    /// Every request received so far.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.output)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits until `n` requests were verified (at most 30 s); every request.
    async fn wait_verified(&self, n: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let requests = self.requests();
            if requests
                .iter()
                .filter(|r| r["verified"] == json!(true))
                .count()
                >= n
            {
                return requests;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out; received {requests:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn secret() -> String {
    let key = format!("{}{}", portico_store::new_id(), portico_store::new_id());
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

const MAIN: &str = r#"
import { methods, collection, webhooks } from "portico";
const orders = collection("orders");
methods({
  async lifecycle() {
    const id = await orders.insert({ item: "book", cost: 7 });
    await orders.update(id, { $set: { qty: 2 } });
    await orders.remove(id);
    return id;
  },
  async ping(url: string) { return await webhooks.send(url, { type: "custom.ping", data: { hello: 1 } }); },
});
"#;

async fn method(server: &Http, name: &str, args: Value) -> super::common::Reply {
    server
        .call("POST", &format!("/methods/{name}"), Some(args), &[])
        .await
}

#[cfg(feature = "scripts")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_delivered_signed_in_order_through_refusals() {
    let ws = Workspace::new();
    let secret = secret();
    let receiver = Receiver::start(&ws, &secret, 3);
    let url = format!("http://127.0.0.1:{}/orders", receiver.port);
    ws.config(&format!(
        "[metrics]\n[scripts]\nmain = \"main.ts\"\n[jobs]\npoll_ms = 50\nwebhook_retry_ms = 100\n\
         [[api]]\n[[api.collection]]\nname = \"orders\"\nfield_rules = {{ cost = \"role:staff\" }}\n\
         [auto]\ncollections = []\n\
         [[webhooks]]\nurl = \"{url}\"\ncollection = \"orders\"\nsecret_env = \"ORDERS_SECRET\"\n"
    ));
    std::fs::write(ws.path("main.ts"), MAIN).unwrap();
    let server = ws.serve_with_env(&[("ORDERS_SECRET", &secret)]);

    let id = method(&server, "lifecycle", json!([])).await.body;
    let sent = method(&server, "ping", json!([url])).await;
    assert_eq!(sent.status, 200, "{}", sent.raw);
    let elsewhere = method(&server, "ping", json!(["http://127.0.0.1:9/x"])).await;
    assert_eq!(elsewhere.status, 400, "{}", elsewhere.raw);
    assert!(
        elsewhere.raw.contains("no [[webhooks]] entry"),
        "{}",
        elsewhere.raw
    );

    let requests = receiver.wait_verified(4).await;
    // No request failed its signature check; the three refused were tried again.
    assert!(
        requests.iter().all(|r| r["status"] != json!(400)),
        "{requests:?}"
    );
    assert_eq!(
        requests
            .iter()
            .filter(|r| r["status"] == json!(503))
            .count(),
        3
    );
    let verified: Vec<&Value> = requests
        .iter()
        .filter(|r| r["verified"] == json!(true))
        .collect();
    assert_eq!(verified.len(), 4, "each event delivered once: {requests:?}");
    // Each refused request's id is the id of a later verified one: one id across tries.
    for refused in requests.iter().filter(|r| r["status"] == json!(503)) {
        assert!(
            verified.iter().any(|v| v["id"] == refused["id"]),
            "{requests:?}"
        );
    }
    let orders: Vec<&Value> = verified
        .iter()
        .copied()
        .filter(|v| {
            v["event"]["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("orders."))
        })
        .collect();
    let types: Vec<&Value> = orders.iter().map(|v| &v["event"]["type"]).collect();
    assert_eq!(
        types,
        [
            &json!("orders.inserted"),
            &json!("orders.updated"),
            &json!("orders.removed")
        ],
        "in write order"
    );
    for order in &orders {
        let data = &order["event"]["data"];
        assert_eq!(data["_id"], id);
        assert_eq!(data["item"], json!("book"));
        assert!(
            data.get("cost").is_none(),
            "a hidden field was sent: {data}"
        );
        assert!(order["event"]["timestamp"].is_string());
    }
    assert_eq!(orders[1]["event"]["data"]["qty"], json!(2));
    let ping = verified
        .iter()
        .find(|v| v["event"]["type"] == json!("custom.ping"))
        .unwrap();
    assert_eq!(ping["event"]["data"], json!({"hello": 1}));
    let delivery = sent.body.as_str().unwrap_or_default();
    assert_eq!(ping["id"], json!(format!("msg_{delivery}")));

    // Operators see the queue and the deliveries' latency in /metrics.
    let start = Instant::now();
    loop {
        let metrics = server.call("GET", "/metrics", None, &[]).await.raw;
        let done = metrics.contains("portico_job_latency_seconds_count{job=\"portico:webhook\"} 4")
            && metrics.contains("portico_jobs_queued 0");
        if done {
            assert!(
                metrics.contains("portico_job_runs_total{outcome=\"retried\"} 3"),
                "{metrics}"
            );
            assert!(metrics.contains("portico_jobs_failed 0"), "{metrics}");
            assert!(metrics.contains("portico_jobs_running 0"), "{metrics}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A secret that is not set, or not a secret, stops the server at start; `portico check`
/// names a bad URL, an unknown event and webhooks on the accounts collection.
#[test]
fn bad_webhook_settings_are_named() {
    let ws = Workspace::new();
    let err = ws.check_refuses(
        "[[webhooks]]\nurl = \"ftp://example.com/in\"\ncollection = \"orders\"\nevents = [\"insert\", \"upsert\"]\nsecret_env = \"S\"\n",
    );
    assert!(
        err.contains("key `webhooks.url`") && err.contains("must start with http:// or https://"),
        "{err}"
    );
    assert!(err.contains("unknown event `upsert`"), "{err}");
    // Accounts are written by the accounts service, which sends no events.
    let err = ws.check_refuses(
        "[[webhooks]]\nurl = \"http://127.0.0.1:9/in\"\ncollection = \"users\"\nsecret_env = \"S\"\n",
    );
    assert!(
        err.contains("key `webhooks.collection`") && err.contains("`users` cannot have webhooks"),
        "{err}"
    );
    ws.config(
        "[[webhooks]]\nurl = \"http://127.0.0.1:9/in\"\ncollection = \"orders\"\nsecret_env = \"PORTICO_TEST_UNSET_SECRET\"\n",
    );
    let err = ws.serve_refuses();
    assert!(
        err.contains("PORTICO_TEST_UNSET_SECRET (secret_env) is not set"),
        "{err}"
    );
}

const FAULTS_MAIN: &str = r#"
import { methods, collection, webhooks } from "portico";
methods({
  async send(url: string) { return await webhooks.send(url, { type: "test.fault", data: { n: 1 } }); },
  async pending() { return await collection("portico_jobs").find({}, { sort: { _id: 1 } }).fetch(); },
});
"#;

/// A receiver that never answers costs a try of `webhook_timeout_ms`; one that answers 10 MB
/// is read for its first 512 bytes only; both are retried under one webhook-id, and the
/// server keeps answering.
#[cfg(feature = "scripts")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receivers_that_hang_or_answer_10_mb_are_retried_with_bounded_reads() {
    let ws = Workspace::new();
    let secret = secret();
    let hang = Receiver::start_mode(&ws, &secret, 0, "hang");
    let huge = Receiver::start_mode(&ws, &secret, 0, "huge");
    let hang_url = format!("http://127.0.0.1:{}/in", hang.port);
    let huge_url = format!("http://127.0.0.1:{}/in", huge.port);
    ws.config(&format!(
        "[scripts]\nmain = \"main.ts\"\n[jobs]\npoll_ms = 50\nwebhook_retry_ms = 50\nwebhook_timeout_ms = 300\n\
         [auto]\ncollections = []\n\
         [[webhooks]]\nurl = \"{hang_url}\"\nsecret_env = \"HOOK_SECRET\"\n\
         [[webhooks]]\nurl = \"{huge_url}\"\nsecret_env = \"HOOK_SECRET\"\n"
    ));
    std::fs::write(ws.path("main.ts"), FAULTS_MAIN).unwrap();
    let server = ws.serve_with_env(&[("HOOK_SECRET", &secret)]);
    assert_eq!(method(&server, "send", json!([hang_url])).await.status, 200);
    assert_eq!(method(&server, "send", json!([huge_url])).await.status, 200);
    let start = Instant::now();
    loop {
        let tries = |r: &Receiver| r.requests().len();
        if tries(&hang) >= 3 && tries(&huge) >= 3 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "too few tries");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for receiver in [&hang, &huge] {
        let requests = receiver.requests();
        assert!(
            requests.iter().all(|r| r["id"] == requests[0]["id"]),
            "{requests:?}"
        );
    }
    let started = Instant::now();
    let pending = method(&server, "pending", json!([])).await.body;
    assert!(started.elapsed() < Duration::from_secs(2));
    let errors: Vec<&str> = pending
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["lastError"].as_str())
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("no answer within 300 ms")),
        "{errors:?}"
    );
    let refused = errors
        .iter()
        .find(|e| e.starts_with("the receiver answered 500: x"))
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert!(
        refused.len() <= "the receiver answered 500: ".len() + 512,
        "{}",
        refused.len()
    );
}
