//! Backups, restores and the stored format, through the binary: `portico backup` under write
//! load restored into fresh servers, a backup killed halfway, restores refused while a server
//! runs or from a bad file (and done in place once the server, served in this process, has
//! stopped), the previous release's database migrated and a newer one refused, scheduled
//! backups and the admin page's backups.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{S3Server, Server, Workspace, cluster, text};

/// A collection anyone may write (the tests write without logging in).
const ITEMS: &str = "[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"items\"\nauth_required = false\n";

/// The SQLite table of the `items` collection (`c_` and the name's hex).
const ITEMS_TABLE: &str = "c_6974656d73";

/// A database written by the release before the stored format was kept (format 1): made with
/// that release's `portico users add` (ada, password `ada-secret`, role admin) and
/// `portico import --collection items` (i1, i2, i3; i3's `n` is 18446744073709551617), then
/// checkpointed so that it is one file.
const FORMAT_1_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/format-1.db");

fn sha(path: &Path) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(std::fs::read(path).expect("read")).to_vec()
}

fn integrity(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check")
}

fn ids_in(path: &Path) -> std::collections::HashSet<String> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let mut stmt = conn
        .prepare(&format!("SELECT id FROM {ITEMS_TABLE}"))
        .expect("prepare");
    stmt.query_map([], |row| row.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// Files in `dir` whose names contain `part`.
fn files_with(dir: &Path, part: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(part))
        })
        .collect()
}

/// Merges the WAL into the database file and closes it, so the file alone is the database.
fn settle(path: &Path) {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Imports `count` documents of about 10 kB each (`d000000`...) into `items`.
fn import_padded(ws: &Workspace, count: usize) {
    let docs: Vec<serde_json::Value> = (0..count)
        .map(|n| json!({"_id": format!("d{n:06}"), "n": n, "pad": "x".repeat(10_000)}))
        .collect();
    std::fs::write(ws.path("big.json"), serde_json::to_vec(&docs).unwrap()).unwrap();
    let imported = ws.run(&[
        "import",
        "--database",
        &ws.database(),
        "--collection",
        "items",
        "big.json",
    ]);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
}

/// Kills `child` (SIGKILL) as soon as `started` says it is halfway, and waits for it.
fn kill_once(mut child: std::process::Child, started: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started() {
        assert!(
            Instant::now() < deadline,
            "the backup never started writing"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the backup finished before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("kill -9");
    assert!(!child.wait().unwrap().success());
}

/// Checks that a schedule keeps `keep` backups: the count, sampled for 3 s while backups go on,
/// is never above `keep + 1` (a new backup is complete a moment before the oldest is removed)
/// and comes down to `keep`.
async fn kept_at_most(keep: usize, count: impl Fn() -> usize) {
    let mut counts = Vec::new();
    for _ in 0..30 {
        counts.push(count());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        counts.iter().all(|n| *n <= keep + 1) && counts.iter().any(|n| *n <= keep),
        "keep = {keep}, counted {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_under_write_load_restore_into_fresh_servers_with_every_acknowledged_write() {
    let ws = Workspace::new();
    ws.config(ITEMS);
    let server = Arc::new(ws.serve());
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (server, acknowledged, stop) = (server.clone(), acknowledged.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let id = format!("w{w}-{n}");
                let reply = server
                    .call("POST", "/api/items", Some(json!({"_id": id, "n": n})), &[])
                    .await;
                assert_eq!(reply.status, 201, "{}", reply.raw);
                acknowledged.lock().unwrap().push(id);
                n += 1;
            }
        }));
    }
    let rounds = 20;
    let mut figures = Vec::new();
    for round in 0..rounds {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before: Vec<String> = acknowledged.lock().unwrap().clone();
        let out = ws.path(&format!("round-{round}.db"));
        let db = ws.database();
        let args = [
            "backup",
            "--database",
            &db,
            "--out",
            &out.display().to_string(),
        ]
        .map(str::to_owned);
        let started = Instant::now();
        let dir = ws.dir.path().to_owned();
        let backed = tokio::task::spawn_blocking(move || {
            super::common::portico()
                .args(&args)
                .current_dir(dir)
                .output()
                .expect("run backup")
        })
        .await
        .unwrap();
        figures.push(started.elapsed());
        assert!(backed.status.success(), "{}", text(&backed.stderr));
        let said = text(&backed.stdout);
        assert!(
            said.starts_with("backup: ") && said.contains("round-") && said.contains("B,"),
            "{said}"
        );
        // Restored into a fresh server's place.
        let fresh = Workspace::new();
        fresh.config(ITEMS);
        let restored = fresh.run(&[
            "restore",
            &out.display().to_string(),
            "--database",
            &fresh.database(),
        ]);
        assert!(restored.status.success(), "{}", text(&restored.stderr));
        assert!(text(&restored.stdout).contains("there was no database there before"));
        let file = fresh.path("portico.db");
        assert_eq!(integrity(&file), "ok", "round {round}");
        let ids = ids_in(&file);
        let missing: Vec<&String> = before.iter().filter(|id| !ids.contains(*id)).collect();
        assert!(
            missing.is_empty(),
            "round {round}: {} acknowledged writes missing, as {:?}",
            missing.len(),
            missing.first()
        );
        let fresh_server = fresh.serve();
        let page = fresh_server
            .call("GET", "/api/items?limit=1", None, &[])
            .await;
        assert_eq!(page.status, 200, "{}", page.raw);
        assert_eq!(
            page.header("x-total-count"),
            Some(ids.len().to_string().as_str())
        );
        let one = fresh_server
            .call(
                "GET",
                &format!("/api/items/{}", before[before.len() / 2]),
                None,
                &[],
            )
            .await;
        assert_eq!(one.status, 200, "{}", one.raw);
        let stopped = fresh_server.stop();
        assert!(stopped);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    let total = acknowledged.lock().unwrap().len();
    figures.sort();
    eprintln!(
        "{rounds} rounds, {total} writes acknowledged; backup command p50 {:?}, max {:?}",
        figures[figures.len() / 2],
        figures[figures.len() - 1]
    );
    let _ = Arc::try_unwrap(server).ok().map(Server::stop);
}

#[test]
fn a_backup_killed_halfway_leaves_no_file_under_its_name_and_the_database_as_it_was() {
    let ws = Workspace::new();
    // About 25 MB: the copy and its check take long enough to be caught halfway.
    import_padded(&ws, 2_500);
    let db = ws.path("portico.db");
    settle(&db);
    let before = sha(&db);
    let out = ws.path("killed.db");
    let partial = ws.path("killed.db.partial");
    let child = super::common::portico()
        .args(["backup", "--database", &ws.database(), "--out", "killed.db"])
        .current_dir(ws.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn backup");
    kill_once(child, || partial.metadata().is_ok_and(|m| m.len() > 0));
    assert!(!out.exists(), "a file under the final name after kill -9");
    assert_eq!(sha(&db), before, "the database changed");
    assert_eq!(integrity(&db), "ok");
    // The next backup to the same name finishes and is whole.
    let again = ws.run(&["backup", "--database", &ws.database(), "--out", "killed.db"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(!partial.exists());
    assert_eq!(integrity(&out), "ok");
    assert_eq!(ids_in(&out).len(), 2_500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_is_refused_while_a_server_runs_and_a_bad_backup_replaces_nothing() {
    let ws = Workspace::new();
    ws.config(ITEMS);
    // Served in this process: once it stops, the database must be free for `portico restore`
    // (another process) while this process lives on.
    let server = ws.serve();
    for n in 0..5 {
        let reply = server
            .call(
                "POST",
                "/api/items",
                Some(json!({"_id": format!("a{n}")})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 201);
    }
    let backed = ws.run(&["backup", "--config", "portico.toml", "--out", "five.db"]);
    assert!(backed.status.success(), "{}", text(&backed.stderr));
    let reply = server
        .call("POST", "/api/items", Some(json!({"_id": "after"})), &[])
        .await;
    assert_eq!(reply.status, 201);
    let refused = ws.run(&["restore", "five.db", "--config", "portico.toml"]);
    assert!(!refused.status.success());
    let message = text(&refused.stderr);
    assert!(
        message.contains("in use") && message.contains("portico.db-lock"),
        "{message}"
    );
    assert!(files_with(ws.dir.path(), "before-restore").is_empty());
    let still = server.call("GET", "/api/items/after", None, &[]).await;
    assert_eq!(still.status, 200);
    assert!(server.stop(), "the server stops gracefully");

    // Bad files: refused before anything is replaced.
    let db = ws.path("portico.db");
    settle(&db);
    let before = sha(&db);
    let good = std::fs::read(ws.path("five.db")).unwrap();
    std::fs::write(ws.path("truncated.db"), &good[..good.len() / 2]).unwrap();
    let mut flipped = good.clone();
    let middle = good.len() / 2;
    for b in &mut flipped[middle..middle + 4096] {
        *b = !*b;
    }
    std::fs::write(ws.path("corrupt.db"), &flipped).unwrap();
    std::fs::write(ws.path("notes.db"), "not a database at all").unwrap();
    for (bad, why) in [
        ("truncated.db", "cut short"),
        ("corrupt.db", "integrity check failed"),
        ("notes.db", "not a SQLite database"),
    ] {
        let refused = ws.run(&["restore", bad, "--config", "portico.toml"]);
        assert!(!refused.status.success(), "{bad}");
        let message = text(&refused.stderr);
        assert!(
            message.contains(why) && message.contains(bad),
            "{bad}: {message}"
        );
        assert_eq!(sha(&db), before, "{bad}");
        assert!(files_with(ws.dir.path(), "before-restore").is_empty());
        assert!(files_with(ws.dir.path(), ".restoring").is_empty());
    }

    // With the server stopped, the good one goes in and the replaced database is kept.
    let restored = ws.run(&["restore", "five.db", "--config", "portico.toml"]);
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(
        said.contains("integrity_check ok") && said.contains("kept as"),
        "{said}"
    );
    let kept = files_with(ws.dir.path(), "portico.db.before-restore-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(ids_in(&db).len(), 5);
    assert!(ids_in(&kept[0]).contains("after"));
    let server = ws.serve();
    assert_eq!(
        server
            .call("GET", "/api/items/after", None, &[])
            .await
            .status,
        404
    );
    assert_eq!(
        server.call("GET", "/api/items/a4", None, &[]).await.status,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_release_database_is_backed_up_and_migrated_and_a_newer_one_refused() {
    let ws = Workspace::new();
    let db = ws.path("portico.db");
    std::fs::copy(FORMAT_1_FIXTURE, &db).unwrap();
    ws.config(ITEMS);
    let before = sha(&db);
    let checked = ws.run(&["check", "--config", "portico.toml"]);
    assert!(checked.status.success(), "{}", text(&checked.stderr));
    assert!(
        text(&checked.stdout).contains("stored format 1, older than this build's 3"),
        "{}",
        text(&checked.stdout)
    );
    assert_eq!(sha(&db), before, "check changed the database");

    let server = ws.serve_binary();
    let item = server.call("GET", "/api/items/i3", None, &[]).await;
    assert_eq!(item.status, 200, "{}", item.raw);
    assert!(item.raw.contains("18446744073709551617"), "{}", item.raw);
    let (token, _) = server.rest_login("/api/", "ada", "ada-secret").await;
    assert!(!token.is_empty());
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");
    assert!(log.contains("migrated from stored format 1 to 3"), "{log}");
    let kept = files_with(ws.dir.path(), "portico.db.before-format-3-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    // The kept copy is the database as it was: format 1 (no version row), the same items.
    assert_eq!(integrity(&kept[0]), "ok");
    let conn = rusqlite::Connection::open(&kept[0]).unwrap();
    let versioned: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'portico_format'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(versioned, 0);
    drop(conn);
    let items: std::collections::HashSet<String> = ["i1", "i2", "i3"].map(str::to_owned).into();
    assert_eq!(ids_in(&kept[0]), items);
    let checked = ws.run(&["check", "--config", "portico.toml"]);
    assert!(
        text(&checked.stdout).contains("stored format 3 (this build's)"),
        "{}",
        text(&checked.stdout)
    );

    // A made-up newer format: every command refuses it, and the file stays as it was.
    let newer = Workspace::new();
    let db = newer.path("portico.db");
    std::fs::copy(FORMAT_1_FIXTURE, &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE portico_format (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
         INSERT INTO portico_format VALUES (1, 4);
         PRAGMA journal_mode=DELETE;",
    )
    .unwrap();
    drop(conn);
    newer.config(ITEMS);
    let before = sha(&db);
    let serve = newer.run(&[
        "serve",
        "--config",
        "portico.toml",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(!serve.status.success());
    let message = text(&serve.stderr);
    assert!(
        message.contains("stored format 4, newer than this Portico's format 3")
            && message.contains("Nothing was changed"),
        "{message}"
    );
    let listed = newer.run(&["users", "list", "--config", "portico.toml"]);
    assert!(!listed.status.success());
    let checked = newer.run(&["check", "--config", "portico.toml"]);
    assert!(!checked.status.success());
    assert!(
        text(&checked.stderr).contains("stored format 4, newer than this build's 3"),
        "{}",
        text(&checked.stderr)
    );
    assert_eq!(sha(&db), before, "a refused database changed");
    for side in ["portico.db-wal", "portico.db-shm", "portico.db-journal"] {
        assert!(!newer.path(side).exists(), "{side}");
    }
    assert!(files_with(newer.dir.path(), "before-format").is_empty());
}

#[test]
fn the_stored_format_on_postgresql_is_kept_migrated_and_refused_in_the_same_row() {
    let ws = Workspace::on_postgres();
    let url = ws.database();
    let db_name = url.rsplit('/').next().unwrap().to_owned();
    ws.config(ITEMS);
    ws.add_user("pat", "pat-secret", &[]);
    let check = |ws: &Workspace| {
        let out = ws.run(&["check", "--config", "portico.toml"]);
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let (ok, stdout, _) = check(&ws);
    assert!(
        ok && stdout.contains("stored format 3 (this build's)"),
        "{stdout}"
    );
    // Back to format 1 (the catalog without the row): opened, it is migrated in one transaction.
    cluster()
        .sql(&db_name, "DROP TABLE portico_format")
        .unwrap();
    let (ok, stdout, _) = check(&ws);
    assert!(ok && stdout.contains("stored format 1, older"), "{stdout}");
    let listed = ws.run(&["users", "list", "--config", "portico.toml"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stderr).contains("migrated from stored format 1 to 3"),
        "{}",
        text(&listed.stderr)
    );
    assert!(text(&listed.stdout).contains("username=pat"));
    let (ok, stdout, _) = check(&ws);
    assert!(
        ok && stdout.contains("stored format 3 (this build's)"),
        "{stdout}"
    );
    // Newer: refused, and the row is left as it is.
    cluster()
        .sql(&db_name, "UPDATE portico_format SET version = 7")
        .unwrap();
    let listed = ws.run(&["users", "list", "--config", "portico.toml"]);
    assert!(!listed.status.success());
    assert!(
        text(&listed.stderr).contains("stored format 7"),
        "{}",
        text(&listed.stderr)
    );
    let (ok, _, stderr) = check(&ws);
    assert!(!ok && stderr.contains("stored format 7, newer"), "{stderr}");
    // `portico backup` says what to use instead.
    let backup = ws.run(&["backup", "--config", "portico.toml"]);
    assert!(!backup.status.success());
    assert!(
        text(&backup.stderr).contains("pg_dump"),
        "{}",
        text(&backup.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_scheduled_backups_keeps_the_newest_and_the_admin_page_lists_starts_and_downloads_them()
 {
    let ws = Workspace::new();
    ws.add_user("root", "root-secret-1", &["admin"]);
    ws.add_user("ed", "ed-secret-1", &[]);
    // 0.0004 h: every 1.44 s.
    ws.config(&format!(
        "[backups]\nevery_hours = 0.0004\nkeep = 2\ndir = \"./saved\"\n{ITEMS}"
    ));
    let server = ws.serve_binary();
    let saved = ws.path("saved");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "scheduled backups seen: {seen:?}"
        );
        for file in files_with(&saved, "portico-backup-") {
            if !file.to_string_lossy().ends_with(".partial") {
                seen.insert(file);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kept_at_most(2, || {
        files_with(&saved, "portico-backup-")
            .into_iter()
            .filter(|f| !f.to_string_lossy().ends_with(".partial"))
            .count()
    })
    .await;

    // The admin API: only admins, list, start, download.
    let token = server.admin_token("root", "root-secret-1").await;
    let auth = [("X-Auth-Token", token.as_str())];
    assert_eq!(
        server.call("GET", "/_/api/backups", None, &[]).await.status,
        401
    );
    let ed = server
        .call(
            "POST",
            "/_/api/login",
            Some(json!({"user": "ed", "password": "ed-secret-1"})),
            &[],
        )
        .await;
    assert_eq!(ed.status, 403, "{}", ed.raw);
    let reply = server
        .call("POST", "/api/items", Some(json!({"_id": "latest"})), &[])
        .await;
    assert_eq!(reply.status, 201);
    // The schedule may be taking one at this moment: then 409, and the next try gets in.
    let mut started = server.call("POST", "/_/api/backups", None, &auth).await;
    for _ in 0..50 {
        if started.status != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        started = server.call("POST", "/_/api/backups", None, &auth).await;
    }
    assert_eq!(started.status, 201, "{}", started.raw);
    let name = started.body["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("portico-backup-") && started.body["bytes"].as_u64().unwrap() > 0);
    let listed = server.call("GET", "/_/api/backups", None, &auth).await;
    assert_eq!(listed.status, 200, "{}", listed.raw);
    assert_eq!(listed.body["configured"], true);
    assert_eq!(listed.body["keep"], 2);
    let names: Vec<&str> = listed.body["backups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert!(names.contains(&name.as_str()), "{names:?}");
    let response = server
        .http
        .get(server.url(&format!("/_/api/backups/{name}")))
        .header("X-Auth-Token", &token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains(&name)
    );
    let bytes = response.bytes().await.unwrap();
    let downloaded = ws.path("downloaded.db");
    std::fs::write(&downloaded, &bytes).unwrap();
    assert_eq!(integrity(&downloaded), "ok");
    assert!(ids_in(&downloaded).contains("latest"));
    for bad in [
        "../portico.db",
        "portico.db",
        "portico-backup-..%2F..%2Fportico.db",
    ] {
        let reply = server
            .call("GET", &format!("/_/api/backups/{bad}"), None, &auth)
            .await;
        assert_eq!(reply.status, 404, "{bad}: {}", reply.raw);
    }
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");
    assert!(log.contains("scheduled backup taken"), "{log}");
}

/// Backups to an S3-compatible bucket (`[backups] url`), on a real `s3s-fs` server: scheduled
/// and kept, listed, taken and downloaded by the admin page, taken by `portico backup`,
/// restored with `portico restore s3://...`; a `portico backup` killed before its upload
/// leaves no object, and its staging file (in `dir`) goes with the next backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_to_an_s3_bucket_are_scheduled_kept_downloaded_and_restored() {
    let s3 = S3Server::start("bucket");
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = |ws: &Workspace, args: &[&str]| {
        super::common::portico()
            .args(args)
            .current_dir(ws.dir.path())
            .envs(env.iter().copied())
            .output()
            .expect("run portico")
    };
    let in_bucket = || -> Vec<String> {
        files_with(
            &s3.root.path().join("bucket").join("nightly"),
            "portico-backup-",
        )
        .into_iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".db"))
        .collect()
    };
    let ws = Workspace::new();
    ws.add_user("root", "root-secret-1", &["admin"]);
    // 0.0004 h: every 1.44 s.
    ws.config(&format!(
        "[backups]\nevery_hours = 0.0004\nkeep = 2\nurl = \"s3://bucket/nightly\"\ndir = \"./staging\"\n{ITEMS}"
    ));
    let checked = run(&ws, &["check", "--config", "portico.toml"]);
    assert!(checked.status.success(), "{}", text(&checked.stderr));

    let server = s3.serve(&ws);
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "scheduled backups seen: {seen:?}"
        );
        seen.extend(in_bucket());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kept_at_most(2, || in_bucket().len()).await;

    let reply = server
        .call("POST", "/api/items", Some(json!({"_id": "latest"})), &[])
        .await;
    assert_eq!(reply.status, 201);
    let token = server.admin_token("root", "root-secret-1").await;
    let auth = [("X-Auth-Token", token.as_str())];
    let mut started = server.call("POST", "/_/api/backups", None, &auth).await;
    for _ in 0..100 {
        if started.status != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        started = server.call("POST", "/_/api/backups", None, &auth).await;
    }
    assert_eq!(started.status, 201, "{}", started.raw);
    let name = started.body["name"].as_str().unwrap().to_owned();
    let listed = server.call("GET", "/_/api/backups", None, &auth).await;
    assert_eq!(listed.status, 200, "{}", listed.raw);
    assert_eq!(listed.body["dir"], "s3://bucket/nightly");
    assert_eq!(listed.body["keep"], 2);
    let names: Vec<&str> = listed.body["backups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert!(names.contains(&name.as_str()), "{names:?}");
    assert!(names.len() <= 2, "{names:?}");
    let response = server
        .http
        .get(server.url(&format!("/_/api/backups/{name}")))
        .header("X-Auth-Token", &token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let length: u64 = response.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let bytes = response.bytes().await.unwrap();
    assert_eq!(bytes.len() as u64, length);
    let downloaded = ws.path("downloaded.db");
    std::fs::write(&downloaded, &bytes).unwrap();
    assert_eq!(integrity(&downloaded), "ok");
    assert!(ids_in(&downloaded).contains("latest"));
    let missing = server
        .call(
            "GET",
            "/_/api/backups/portico-backup-19990101T000000Z.db",
            None,
            &auth,
        )
        .await;
    assert_eq!(missing.status, 404, "{}", missing.raw);
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");
    assert!(
        log.contains("scheduled backup taken") && log.contains("s3://bucket/nightly/"),
        "{log}"
    );
    assert!(files_with(&ws.path("staging"), ".upload-").is_empty());

    // `portico restore s3://...` into a fresh database.
    let fresh = Workspace::new();
    let restored = run(
        &fresh,
        &[
            "restore",
            &format!("s3://bucket/nightly/{name}"),
            "--database",
            &fresh.database(),
        ],
    );
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let said = text(&restored.stdout);
    assert!(said.contains("restored it into"), "{said}");
    assert!(ids_in(&fresh.path("portico.db")).contains("latest"));
    assert!(files_with(fresh.dir.path(), ".download").is_empty());
    let absent = run(
        &fresh,
        &[
            "restore",
            "s3://bucket/nightly/portico-backup-19990101T000000Z.db",
            "--database",
            &fresh.database(),
        ],
    );
    assert!(!absent.status.success());
    assert!(text(&absent.stderr).contains("no such object"));

    // A `portico backup` killed while it copies (before its upload) leaves no object.
    import_padded(&ws, 1_000);
    let before = in_bucket();
    let child = super::common::portico()
        .args(["backup", "--config", "portico.toml"])
        .current_dir(ws.dir.path())
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn backup");
    kill_once(child, || {
        !files_with(&ws.path("staging"), ".upload-").is_empty()
    });
    assert_eq!(in_bucket(), before, "an object appeared after kill -9");
    // The next one uploads, prunes to keep = 2 and removes the killed one's staging file.
    let taken = run(&ws, &["backup", "--config", "portico.toml"]);
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    let said = text(&taken.stdout);
    assert!(
        said.starts_with("backup: s3://bucket/nightly/portico-backup-")
            && said.contains("integrity_check ok"),
        "{said}"
    );
    let now = in_bucket();
    assert!(now.len() <= 2, "{now:?}");
    assert!(files_with(&ws.path("staging"), ".upload-").is_empty());
    let newest = now.iter().max().unwrap();
    let copy = s3.root.path().join("bucket").join("nightly").join(newest);
    assert_eq!(integrity(&copy), "ok");
    assert_eq!(ids_in(&copy).len(), 1_001);
}
