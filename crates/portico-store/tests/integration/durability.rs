//! Durability: a process writing to a store is killed with SIGKILL mid-stream; every write it
//! acknowledged before dying is there when the store is opened again (a SQLite file; a
//! PostgreSQL database, whose server outlives the killed instance).
//!
//! The writer is this same test binary, run again with [`CHILD_ENV`] set and a filter selecting
//! only [`writer_child`], so no extra binary has to be built or located.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use portico_store::{Document, IndexSpec, Query, Selector, Sort, Store, Update, UpdateOptions};
use serde_json::json;

use crate::common::StoredTexts;

/// Set in the child's environment to the store URL; without it `writer_child` does nothing.
const CHILD_ENV: &str = "PORTICO_DURABILITY_CHILD_URL";
/// Set in the child's environment to `create` for the child that makes an index over many
/// documents (killed while it fills it) instead of the writer.
const MODE_ENV: &str = "PORTICO_DURABILITY_MODE";

/// The sorted index the writer's inserts keep, checked against a scan after the kill.
fn log_index() -> IndexSpec {
    IndexSpec::new(["writer", "-seq"]).expect("index spec")
}

/// Acknowledged inserts seen before the parent kills the child: enough that the WAL has been
/// checkpointed into the database file at least once (every 1000 pages), so the kill finds
/// data both in the database file and in the WAL.
const KILL_AFTER: usize = 2000;

/// Concurrent inserting tasks in the child, so the kill lands while several writes are in flight.
const WRITERS: usize = 4;

/// The child stops by itself after this long, should the parent fail to kill it.
const CHILD_LIFETIME: Duration = Duration::from_secs(20);

/// Kills the child when the test ends early, so a failing test leaves no writer behind.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The name libtest knows `writer_child` by: its module path without the crate name.
fn child_test_name() -> String {
    let module = module_path!();
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{module}::writer_child")
}

#[cfg(feature = "sqlite")]
#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("durable.db");
    check_durability(&format!("sqlite:{}", db.display()));
}

#[cfg(feature = "postgres")]
#[test]
fn acknowledged_writes_to_postgres_survive_sigkill() {
    let url = crate::common::cluster()
        .create_database()
        .expect("create database");
    check_durability(&url);
}

/// Starts this test binary again as the child of `mode` (`write` or `create`) on `db`.
fn spawn_child(db: &str, mode: &str) -> KillOnDrop {
    let exe = std::env::current_exe().expect("test binary path");
    let child = Command::new(exe)
        .args([
            child_test_name().as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, db)
        .env(MODE_ENV, mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    KillOnDrop(child)
}

/// The sorted index `spec` of `collection` answers as a scan does: for each value of its first
/// field, the documents in the index's order and their count (every document read once,
/// sorted here by the reference comparison). An index left stale by a kill fails it.
async fn index_agrees_with_scan(store: &dyn Store, collection: &str, spec: &IndexSpec) {
    let all = store
        .find(collection, &Query::default())
        .await
        .expect("scan");
    let first = &spec.fields[0].path;
    let mut values: Vec<serde_json::Value> = all
        .iter()
        .map(|d| d.get(first).cloned().unwrap_or(serde_json::Value::Null))
        .collect();
    values.sort_by(portico_store::compare_values);
    values.dedup();
    let names: Vec<String> = spec.fields[1..].iter().map(|f| f.name()).collect();
    let sort = Sort::parse_list(&names.join(",")).expect("sort");
    for value in values {
        let selector = Selector::parse(&json!({ first.as_str(): value })).expect("selector");
        let mut want: Vec<&Document> = all.iter().filter(|d| selector.matches(d)).collect();
        want.sort_by(|a, b| sort.compare(a, b));
        let query = Query {
            sort: Some(sort.clone()),
            ..Query::new(selector.clone())
        };
        let got = store.find(collection, &query).await.expect("indexed find");
        let got: Vec<&Document> = got.iter().collect();
        assert_eq!(got, want, "the index of {collection} on {first} = {value}");
        let (page, total) = store
            .page_counted(collection, &query)
            .await
            .expect("indexed list");
        assert_eq!(total, want.len() as u64, "count of {first} = {value}");
        assert_eq!(page.len(), want.len());
    }
}

/// Runs the writer child on the store `url`, kills it, and checks every acknowledged write.
fn check_durability(db: &str) {
    let mut child = spawn_child(db, "write");
    let mut out = BufReader::new(child.0.stdout.take().expect("child stdout"));

    let mut inserted: Vec<(String, u64)> = Vec::new();
    let mut increments = 0u64;
    let mut killed = false;
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("read child output");
        if n == 0 {
            break;
        }
        // A line cut short by the kill was never fully printed, so it was not acknowledged.
        let Some(text) = line.strip_suffix('\n') else {
            break;
        };
        let mut words = text.split(' ');
        match (words.next(), words.next(), words.next()) {
            (Some("INSERTED"), Some(id), Some(seq)) => {
                inserted.push((id.to_string(), seq.parse().expect("sequence number")));
            }
            (Some("INCREMENTED"), None, None) => increments += 1,
            _ => {} // libtest's own lines
        }
        if !killed && inserted.len() >= KILL_AFTER {
            // SIGKILL: no destructor, no flush, no checkpoint runs in the child.
            child.0.kill().expect("kill writer");
            killed = true;
        }
    }
    let status = child.0.wait().expect("wait for writer");
    assert!(killed, "the writer stopped before being killed: {status}");
    assert_eq!(status.signal(), Some(9), "the writer died of SIGKILL");
    assert!(inserted.len() >= KILL_AFTER);

    runtime().block_on(async {
        let store = portico_store::open(db).await.expect("reopen after kill");
        for (id, seq) in &inserted {
            let doc = store
                .get("log", id)
                .await
                .expect("get")
                .unwrap_or_else(|| panic!("acknowledged insert {id} is missing"));
            assert_eq!(doc.get("seq"), Some(&json!(seq)), "{id}");
        }
        let total = store.count("log", &Selector::all()).await.expect("count");
        assert!(
            total >= inserted.len() as u64,
            "{total} < {}",
            inserted.len()
        );
        let counter = store
            .get("counters", "c")
            .await
            .expect("get counter")
            .expect("counter exists");
        let value = counter.get("n").and_then(|n| n.as_u64()).expect("n");
        assert!(
            value >= increments,
            "{value} < {increments} acknowledged increments"
        );
        // The index the inserts kept holds exactly the documents the kill left.
        index_agrees_with_scan(store.as_ref(), "log", &log_index()).await;
        integrity_check(db);
    });
}

/// SQLite's own check of the file (its tables and indexes agree): `ok`.
fn integrity_check(db: &str) {
    #[cfg(feature = "sqlite")]
    if let Some(path) = db.strip_prefix("sqlite:") {
        let conn = rusqlite::Connection::open(path).expect("open for integrity_check");
        let result: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("integrity_check");
        assert_eq!(result, "ok");
    }
    let _ = db;
}

#[cfg(feature = "sqlite")]
#[test]
fn a_kill_while_an_index_is_made_leaves_it_whole_or_absent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = format!("sqlite:{}", dir.path().join("index.db").display());
    check_index_creation(&db);
}

#[cfg(feature = "postgres")]
#[test]
fn a_kill_while_a_postgres_index_is_made_leaves_it_whole_or_absent() {
    let url = crate::common::cluster()
        .create_database()
        .expect("create database");
    check_index_creation(&url);
}

/// Kills the `create` child once it starts making an index over many documents; the index is
/// then absent or whole, and making it again gives a whole one.
fn check_index_creation(db: &str) {
    let mut child = spawn_child(db, "create");
    let mut out = BufReader::new(child.0.stdout.take().expect("child stdout"));
    let mut line = String::new();
    let mut killed = false;
    loop {
        line.clear();
        if out.read_line(&mut line).expect("read child output") == 0 {
            break;
        }
        if !killed && line.contains("CREATING") {
            // Let the fill get under way, then SIGKILL.
            std::thread::sleep(Duration::from_millis(150));
            child.0.kill().expect("kill child");
            killed = true;
        }
    }
    let status = child.0.wait().expect("wait for child");
    assert!(killed, "the child never started the index: {status}");
    runtime().block_on(async {
        let store = portico_store::open(db).await.expect("reopen after kill");
        let spec = IndexSpec::new(["k", "-n"]).expect("spec");
        let listed = store.sorted_indexes("many").await.expect("list");
        if listed.contains(&spec) {
            index_agrees_with_scan(store.as_ref(), "many", &spec).await;
        }
        store
            .ensure_sorted_index("many", &spec)
            .await
            .expect("index again");
        index_agrees_with_scan(store.as_ref(), "many", &spec).await;
        integrity_check(db);
    });
}

/// The writer process: inserts from several tasks and increments a counter until killed,
/// printing a line after each acknowledged write.
#[test]
#[ignore = "the writer process of acknowledged_writes_survive_sigkill"]
fn writer_child() {
    let Some(db) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let Some(url) = db.to_str() else {
        return;
    };
    if std::env::var(MODE_ENV).as_deref() == Ok("create") {
        runtime().block_on(create_until_killed(url));
    } else {
        runtime().block_on(write_until_killed(url));
    }
}

/// The `create` child: many documents, then an index over them (killed while it is made).
async fn create_until_killed(url: &str) {
    let store = portico_store::open(url).await.expect("open store in child");
    let docs: Vec<Document> = (0..30_000u64)
        .map(|i| doc(json!({"_id": format!("m{i:06}"), "k": i % 7, "n": (i * 31) % 1000, "tags": [i % 3, i % 5]})))
        .collect();
    store.insert_many("many", docs).await.expect("insert");
    ack("CREATING");
    let spec = IndexSpec::new(["k", "-n"]).expect("spec");
    store
        .ensure_sorted_index("many", &spec)
        .await
        .expect("index");
    ack("CREATED");
    std::thread::sleep(CHILD_LIFETIME);
}

async fn write_until_killed(url: &str) {
    let store = portico_store::open(url).await.expect("open store in child");
    store
        .ensure_sorted_index("log", &log_index())
        .await
        .expect("index");
    let deadline = Instant::now() + CHILD_LIFETIME;
    store
        .insert("counters", doc(json!({"_id": "c", "n": 0})))
        .await
        .expect("create counter");
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let increment = Update::parse(&json!({"$inc": {"n": 1}})).expect("modifier");
            let mut seq = 0u64;
            while Instant::now() < deadline {
                let body = doc(json!({"writer": writer, "seq": seq, "pad": "x".repeat(200)}));
                let id = store.insert("log", body).await.expect("insert");
                ack(&format!("INSERTED {id} {seq}"));
                if writer == 0 {
                    let result = store
                        .update(
                            "counters",
                            &Selector::by_id("c"),
                            &increment,
                            UpdateOptions::default(),
                        )
                        .await
                        .expect("increment");
                    assert_eq!(result.modified, 1);
                    ack("INCREMENTED");
                }
                seq += 1;
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
}

/// Prints one acknowledgement line and pushes it to the pipe at once.
fn ack(line: &str) {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").expect("print ack");
    stdout.flush().expect("flush ack");
}

fn doc(value: serde_json::Value) -> Document {
    value.as_object().cloned().expect("an object")
}
