//! Durable jobs through the binary: `jobs.define`/`jobs.enqueue` in scripts, run by the
//! server's worker on SQLite and by two instances on one PostgreSQL database; a job enqueued in
//! a refused write's hook never runs; a job that throws is retried, then kept as failed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::{Process, Workspace};

const CONFIG: &str = r#"
[scripts]
main = "server/main.ts"
timeout_ms = 60000

[jobs]
poll_ms = 50
concurrency = 8
lease_ms = 5000

[auto]
collections = ["orders"]
"#;

const MAIN: &str = r#"
import { methods, collection, jobs, PorticoError } from "portico";

const effects = collection("effects");

jobs.define("record", async function (args: any) {
  await effects.insert({ n: args.n, job: this.jobId, attempt: this.attempt });
});
jobs.define("flaky", async function () {
  throw new Error("always fails");
}, { retries: 2, retry_delay_ms: 10 });

collection("orders").before.insert(async function (userId, doc: any) {
  await jobs.enqueue("record", { n: doc.n });
  if (doc.refuse) throw new PorticoError("refused", "This order is refused");
});

methods({
  async enqueueMany(from: number, n: number) {
    for (let i = from; i < from + n; i++) await jobs.enqueue("record", { n: i });
    return n;
  },
  async flaky() { return await jobs.enqueue("flaky", { why: "test" }); },
  async undefinedJob() { return await jobs.enqueue("nope", {}); },
  async later() { return await jobs.enqueue("record", { n: -1 }, { delayMs: 3600000, key: "once" }); },
  async insertOrder(n: number, refuse: boolean) {
    return await collection("orders").insert({ n, refuse });
  },
  async state() {
    const done = await effects.find({}, { sort: { n: 1 } }).map((e: any) => e.n);
    return {
      effects: done,
      pending: await collection("portico_jobs").find({}).count(),
      failed: await collection("portico_jobs_failed").find({}).fetch(),
    };
  },
});
"#;

fn workspace(ws: Workspace) -> Workspace {
    ws.config(CONFIG);
    std::fs::create_dir_all(ws.path("server")).unwrap();
    std::fs::write(ws.path("server/main.ts"), MAIN).unwrap();
    ws
}

async fn method(server: &Process, name: &str, args: Value) -> Value {
    let r = server
        .call("POST", &format!("/methods/{name}"), Some(args), &[])
        .await;
    assert_eq!(
        r.status,
        200,
        "{name}: {}\n{}",
        r.raw,
        std::fs::read_to_string(&server.log).unwrap_or_default()
    );
    r.body
}

/// Reads `state()` until `done` holds (at most `limit`), and returns it.
async fn wait_for(server: &Process, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let state = method(server, "state", json!([])).await;
        if done(&state) {
            return state;
        }
        assert!(start.elapsed() < limit, "timed out; last state {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn effects(state: &Value) -> Vec<i64> {
    state["effects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_jobs_run_once_retry_and_follow_their_writes_on_sqlite() {
    let ws = workspace(Workspace::new());
    ws.add_user("root", "root-secret", &["admin"]);
    let server = ws.serve_binary();

    // Jobs enqueued from a method all run, once each.
    assert_eq!(
        method(&server, "enqueueMany", json!([0, 100])).await,
        json!(100)
    );
    let state = wait_for(&server, Duration::from_secs(30), |s| {
        s["pending"] == json!(0) && effects(s).len() >= 100
    })
    .await;
    assert_eq!(effects(&state), (0..100).collect::<Vec<_>>());

    // A before hook's job commits with its write: the refused order's job never exists.
    assert_eq!(
        server
            .call(
                "POST",
                "/methods/insertOrder",
                Some(json!([1000, false])),
                &[]
            )
            .await
            .status,
        200
    );
    let refused = server
        .call(
            "POST",
            "/methods/insertOrder",
            Some(json!([1001, true])),
            &[],
        )
        .await;
    assert_eq!(refused.body["error"], json!("refused"), "{}", refused.raw);
    let state = wait_for(&server, Duration::from_secs(30), |s| {
        s["pending"] == json!(0) && effects(s).contains(&1000)
    })
    .await;
    assert!(!effects(&state).contains(&1001), "{state}");

    // An undefined job is a clear error; a keyed job is enqueued once.
    let bad = server
        .call("POST", "/methods/undefinedJob", Some(json!([])), &[])
        .await;
    assert_eq!(bad.status, 400, "{}", bad.raw);
    assert!(
        bad.raw
            .contains("no job is defined with the name \\\"nope\\\""),
        "{}",
        bad.raw
    );
    let first = method(&server, "later", json!([])).await;
    let second = method(&server, "later", json!([])).await;
    assert_eq!(first, second);

    // A job that always throws: three tries, then kept as failed with its error; the log
    // names each run by its id.
    method(&server, "flaky", json!([])).await;
    let state = wait_for(&server, Duration::from_secs(30), |s| {
        s["failed"].as_array().is_some_and(|f| !f.is_empty())
    })
    .await;
    let failed = &state["failed"][0];
    assert_eq!(failed["name"], json!("flaky"));
    assert_eq!(failed["attempts"], json!(3));
    assert_eq!(failed["args"], json!({"why": "test"}));
    assert!(
        failed["lastError"]
            .as_str()
            .unwrap_or_default()
            .contains("always fails"),
        "{failed}"
    );
    assert_eq!(
        state["pending"],
        json!(1),
        "only the delayed keyed job is left"
    );

    // The admin page lists them, retries the failed one and cancels the delayed one.
    let token = server.admin_token("root", "root-secret").await;
    let auth = [("X-Auth-Token", token.as_str())];
    let listed = server.call("GET", "/_/api/jobs", None, &auth).await;
    assert_eq!(listed.status, 200, "{}", listed.raw);
    assert_eq!(listed.body["pending"][0]["_id"], first, "{}", listed.raw);
    let failed_id = listed.body["failed"][0]["_id"].as_str().unwrap().to_owned();
    assert!(
        listed.body["failed"][0]["lastError"]
            .as_str()
            .unwrap()
            .contains("always fails")
    );
    let retried = server
        .call(
            "POST",
            &format!("/_/api/jobs/{failed_id}/retry"),
            None,
            &auth,
        )
        .await;
    assert_eq!(retried.status, 200, "{}", retried.raw);
    let missing = server
        .call("POST", "/_/api/jobs/nope/retry", None, &auth)
        .await;
    assert_eq!(missing.status, 404);
    let cancelled = server
        .call(
            "DELETE",
            &format!("/_/api/jobs/{}", first.as_str().unwrap()),
            None,
            &auth,
        )
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.raw);
    // The retried job fails its three tries again; nothing else is pending.
    let state = wait_for(&server, Duration::from_secs(30), |s| {
        s["pending"] == json!(0) && s["failed"].as_array().is_some_and(|f| f.len() == 1)
    })
    .await;
    assert_eq!(state["failed"][0]["attempts"], json!(3));
    let anonymous = server.call("GET", "/_/api/jobs", None, &[]).await;
    assert_eq!(anonymous.status, 401);
    let (ok, log) = server.stop();
    assert!(ok, "{log}");
    let last_try = log
        .lines()
        .find(|l| l.contains("job failed its last try"))
        .unwrap_or_else(|| panic!("no failure line in the log:\n{log}"));
    assert!(last_try.contains("run_id="), "{last_try}");
    assert!(last_try.contains("job_name=flaky"), "{last_try}");
}

/// Two instances on one PostgreSQL database share the queue: 1,000 jobs run exactly once each
/// (every side effect counted), whichever instance runs them, and both instances do some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_postgres_run_each_of_1000_jobs_once() {
    let ws = workspace(Workspace::on_postgres());
    let a = ws.serve_binary();
    let b = ws.serve_binary();
    let (ra, rb) = tokio::join!(
        method(&a, "enqueueMany", json!([0, 500])),
        method(&b, "enqueueMany", json!([500, 500]))
    );
    assert_eq!((ra, rb), (json!(500), json!(500)));
    let state = wait_for(&a, Duration::from_secs(120), |s| {
        s["pending"] == json!(0) && effects(s).len() >= 1000
    })
    .await;
    assert_eq!(
        effects(&state),
        (0..1000).collect::<Vec<_>>(),
        "each job once"
    );
    let (ok_a, log_a) = a.stop();
    let (ok_b, log_b) = b.stop();
    assert!(ok_a && ok_b, "{log_a}\n{log_b}");
    let done = |log: &str| log.lines().filter(|l| l.contains("job done")).count();
    assert_eq!(done(&log_a) + done(&log_b), 1000);
    assert!(
        done(&log_a) > 0 && done(&log_b) > 0,
        "both instances ran jobs"
    );
}

/// An instance killed with SIGKILL while it runs jobs loses none: the jobs it had claimed run
/// again on the other instance once their leases end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_of_an_instance_killed_mid_run_run_on_the_other_after_the_lease() {
    let ws = workspace(Workspace::on_postgres());
    let mut a = ws.serve_binary();
    let b = ws.serve_binary();
    method(&a, "enqueueMany", json!([0, 300])).await;
    // Kill A as soon as some jobs have run.
    wait_for(&b, Duration::from_secs(60), |s| effects(s).len() >= 20).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let state = wait_for(&b, Duration::from_secs(60), |s| s["pending"] == json!(0)).await;
    let mut seen = effects(&state);
    let runs = seen.len();
    seen.dedup();
    assert_eq!(seen, (0..300).collect::<Vec<_>>(), "no job lost");
    // At least once: a job cut by the kill may have run twice, never more than A ran at once.
    assert!(runs - seen.len() <= 8, "{runs} runs for 300 jobs");
}

/// `portico check` names the line and key of a bad cron expression, a bad time zone, a
/// repeated name and an out-of-range `[jobs]` limit (the config's first line names the
/// database).
#[test]
fn check_names_bad_cron_expressions_time_zones_and_limits() {
    let ws = Workspace::new();
    let err = ws.check_refuses(
        "[[cron]]\nname = \"nightly\"\nschedule = \"0 25 * * *\"\njob = \"cleanup\"\n\
         [[cron]]\nname = \"oslo\"\nschedule = \"0 9 * * 1-5\"\ntimezone = \"Europe/Olso\"\njob = \"x\"\n\
         [[cron]]\nname = \"oslo\"\nschedule = \"@daily\"\njob = \"x\"\n\
         [jobs]\nconcurrency = 0\n",
    );
    assert!(
        err.contains(
            "line 4, column 12, key `cron.schedule`: invalid cron expression \"0 25 * * *\""
        ),
        "{err}"
    );
    assert!(
        err.contains("line 9, column 12, key `cron.timezone`: unknown time zone \"Europe/Olso\""),
        "{err}"
    );
    assert!(err.contains("a cron named `oslo` is given twice"), "{err}");
    assert!(
        err.contains("jobs.concurrency") && err.contains("out of range"),
        "{err}"
    );
    // A good one, naming a job the scripts define, passes.
    std::fs::write(
        ws.path("main.js"),
        "import { jobs } from \"portico\";\njobs.define(\"x\", async () => {});\n",
    )
    .unwrap();
    ws.config(
        "[scripts]\nmain = \"main.js\"\n[[cron]]\nname = \"n\"\nschedule = \"*/2 * * * * *\"\njob = \"x\"\n",
    );
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", super::common::text(&out.stderr));
}

/// A script's bad cron expression, and a `[[cron]]` naming a job no script defines, stop the
/// server at start with a clear error.
#[test]
fn serve_refuses_a_bad_script_cron_and_a_cron_of_an_undefined_job() {
    let ws = Workspace::new();
    ws.config("[scripts]\nmain = \"main.js\"\n");
    std::fs::write(
        ws.path("main.js"),
        "import { cron } from \"portico\";\ncron(\"tick\", \"*/70 * * *\", async () => {});\n",
    )
    .unwrap();
    let err = ws.serve_refuses();
    assert!(
        err.contains("cron \"tick\" at main.js:2:1") && err.contains("invalid cron expression"),
        "{err}"
    );
    // portico check loads the scripts as serve does, so it says the same.
    let out = ws.run(&["check", "--config", "portico.toml"]);
    let checked = super::common::text(&out.stderr);
    assert!(
        !out.status.success() && checked.contains("invalid cron expression"),
        "{checked}"
    );
    ws.config(
        "[scripts]\nmain = \"main.js\"\n[[cron]]\nname = \"n\"\nschedule = \"@daily\"\njob = \"cleanup\"\n",
    );
    std::fs::write(ws.path("main.js"), "export {};\n").unwrap();
    let checked = ws.check_refuses(
        "[scripts]\nmain = \"main.js\"\n[[cron]]\nname = \"n\"\nschedule = \"@daily\"\njob = \"cleanup\"\n",
    );
    assert!(
        checked.contains("key `cron.job`: no script defines the job `cleanup`"),
        "{checked}"
    );
    let err = ws.serve_refuses();
    assert!(
        err.contains("[[cron]] at line 5") && err.contains("\"cleanup\", which is not defined"),
        "{err}"
    );
}

const CRON_MAIN: &str = r#"
import { methods, collection, cron, jobs } from "portico";
const ticks = collection("ticks");
cron("tick", "*/2 * * * * *", async function (args: any) {
  await ticks.insert({ due: args.due, run: this.runId });
});
jobs.define("nightly", async function (args: any) {
  await ticks.insert({ due: args.due, schedule: args.schedule });
});
methods({
  async dues() { return await ticks.find({}, { sort: { due: 1 } }).map((t: any) => t.due); },
});
"#;

/// Two instances on one PostgreSQL database, a script cron due every 2 seconds and a
/// `[[cron]]` due every second: each due time runs once, not once per instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_runs_once_per_due_time_across_two_instances() {
    let ws = Workspace::on_postgres();
    ws.config(
        "[scripts]\nmain = \"main.ts\"\n[jobs]\npoll_ms = 100\n[auto]\ncollections = []\n\
         [[cron]]\nname = \"every-second\"\nschedule = \"* * * * * *\"\njob = \"nightly\"\n",
    );
    std::fs::write(ws.path("main.ts"), CRON_MAIN).unwrap();
    let a = ws.serve_binary();
    let b = ws.serve_binary();
    tokio::time::sleep(Duration::from_millis(7000)).await;
    let dues = method(&a, "dues", json!([])).await;
    let (ok_a, log_a) = a.stop();
    let (ok_b, log_b) = b.stop();
    assert!(ok_a && ok_b, "{log_a}\n{log_b}");
    let dues: Vec<i64> = dues
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    let mut every_two: Vec<i64> = dues.iter().copied().filter(|d| d % 2000 == 0).collect();
    let all = dues.len();
    every_two.dedup();
    let mut distinct = dues.clone();
    distinct.dedup();
    assert_eq!(
        distinct.len() + every_two.len(),
        all,
        "each due time once per schedule: {dues:?}"
    );
    assert!(every_two.len() >= 2, "{dues:?}");
    assert!(distinct.len() >= 5, "{dues:?}");
}

const FAULTS_MAIN: &str = r#"
import { methods, jobs } from "portico";
jobs.define("spin", function () { for (;;) {} }, { retries: 0 });
jobs.define("breed", async function () {
  await jobs.enqueue("breed", {});
  await jobs.enqueue("breed", {});
}, { retries: 0 });
methods({
  async start() { await jobs.enqueue("spin", {}); return await jobs.enqueue("breed", {}); },
});
"#;

/// The value of the gauge `name` in `/metrics`.
async fn gauge(server: &Process, name: &str) -> u64 {
    let metrics = server.call("GET", "/metrics", None, &[]).await.raw;
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {metrics}"))
}

/// A job that loops is stopped and counted as failed; a job that enqueues itself forever fills
/// the queue only up to `max_jobs` (and the failed list too); the server keeps answering.
/// (Read through `/metrics`: script calls share the runtimes the jobs keep busy.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_or_self_enqueueing_job_is_bounded_and_the_server_keeps_serving() {
    let ws = Workspace::new();
    ws.config(
        "[metrics]\n[scripts]\nmain = \"main.ts\"\ntimeout_ms = 300\n[jobs]\nmax_jobs = 40\npoll_ms = 20\n\
         [auto]\ncollections = []\n",
    );
    std::fs::write(ws.path("main.ts"), FAULTS_MAIN).unwrap();
    let server = ws.serve_binary();
    method(&server, "start", json!([])).await;
    let start = Instant::now();
    while gauge(&server, "portico_jobs_failed").await < 40 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the failed list did not fill"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Busy for a while more: bounded, and the server answers at once.
    for _ in 0..10 {
        let started = Instant::now();
        assert_eq!(server.call("GET", "/healthz", None, &[]).await.status, 200);
        assert!(started.elapsed() < Duration::from_secs(1));
        // The bound is checked before each insert: the four runs at once may pass it by as many.
        let queued = gauge(&server, "portico_jobs_queued").await;
        let failed = gauge(&server, "portico_jobs_failed").await;
        assert!(
            queued <= 44 && failed <= 44,
            "{queued} queued, {failed} failed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (ok, log) = server.stop();
    assert!(ok, "{log}");
    assert!(log.contains("a failed job was dropped"), "{log}");
    let spin = log
        .lines()
        .find(|l| l.contains("job failed its last try") && l.contains("job_name=spin"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(spin.contains("timeout_ms (300 ms)"), "{spin}");
    assert!(
        log.contains("The job queue is full (40 jobs stored"),
        "{log}"
    );
}

const DURABLE_MAIN: &str = r#"
import { methods, collection, jobs, PorticoError } from "portico";
jobs.define("follow", async function () {}, {});
collection("orders").before.insert(async function (userId, doc: any) {
  await jobs.enqueue("follow", { order: doc._id, n: doc.n }, { delayMs: 3600000 });
  if (doc.n % 3 === 0) throw new PorticoError("refused", "every third order is refused");
});
methods({
  async audit() {
    const orders = await collection("orders").find({}).map((o: any) => o._id);
    const jobs = await collection("portico_jobs").find({ name: "follow" }).map((j: any) => j.args.order);
    return { orders, jobs };
  },
});
"#;

/// Killed with SIGKILL while clients write: after a restart every acknowledged order has its
/// job, and no job exists without its order (a refused or unfinished write enqueued nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_writes_leaves_no_write_without_its_job_nor_a_job_without_its_write() {
    let ws = Workspace::new();
    ws.config(
        "[scripts]\nmain = \"main.ts\"\n[auto]\ncollections = [\"orders\"]\n\
         [auto.rules.orders]\ninsert = \"anyone\"\n",
    );
    std::fs::write(ws.path("main.ts"), DURABLE_MAIN).unwrap();
    let mut server = ws.serve_binary();
    let url = server.url("/orders");
    let http = server.http.clone();
    // Four writers, each counting the orders acknowledged to it.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, url) = (http.clone(), url.clone());
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for i in 0.. {
                    let n = w * 1_000_000 + i;
                    let sent = http.post(&url).json(&json!({"n": n})).send().await;
                    let Ok(reply) = sent else { break };
                    if reply.status().is_success() {
                        // The reply is the new order's `_id`; a reply cut by the kill is
                        // no acknowledgement.
                        if let Ok(Value::String(id)) = reply.json::<Value>().await {
                            acknowledged.push(id);
                        }
                    }
                }
                acknowledged
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut acked = 0;
    let mut acked_ids = Vec::new();
    for writer in writers {
        for body in writer.await.unwrap() {
            acked += 1;
            acked_ids.push(body);
        }
    }
    assert!(acked > 20, "only {acked} writes before the kill");
    let server = ws.serve_binary();
    let audit = method(&server, "audit", json!([])).await;
    let orders: std::collections::BTreeSet<String> = audit["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let jobs: std::collections::BTreeSet<String> = audit["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        orders, jobs,
        "each order has its job and each job its order"
    );
    for id in &acked_ids {
        assert!(
            orders.contains(id),
            "an acknowledged write is missing: {id}"
        );
    }
}
