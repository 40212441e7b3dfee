//! The admin page in headless Chromium, driven through the DevTools protocol by playwright-core
//! (`tests/browser/admin.mjs`): Microsoft's maintained driver, used only as a library against
//! Debian's `chromium` package, so nothing downloads a browser. The script drives the page as a
//! person would and prints what it saw; this test checks that and then checks the store (and the
//! files on disk).
//!
//! Needs `/usr/bin/chromium` (or `CHROMIUM`), `node`, and `npm ci` run in `tests/browser`
//! (`ci/test.sh` does both), and for the reset mail the SMTP server of the account tests
//! (`portico-cli/tests/support/smtp_sink.py`, Debian's python3-aiosmtpd). Without them the test
//! fails saying so; it never skips.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::Value;

use super::common::{ADMIN, PLAIN, Server, XSS};

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Where the screenshots go: `target/admin-screenshots/`.
fn screenshot_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("admin-screenshots")
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// An SMTP server that writes each mail it receives as a JSON file in `dir`.
struct SmtpSink {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl SmtpSink {
    fn start() -> SmtpSink {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../portico-cli/tests/support/smtp_sink.py");
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let mut child = Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(dir.path())
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the SMTP sink (Debian: python3-aiosmtpd)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(
            line.trim(),
            "ready",
            "the SMTP sink did not start (python3-aiosmtpd?)"
        );
        SmtpSink { child, dir, port }
    }

    /// The mails received so far.
    fn mails(&self) -> Vec<Value> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn require_tools() -> String {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "the admin page's browser tests need Chromium at {chromium}: install Debian's package \
         (`apt-get install -y chromium`, as .ci/run does) or set CHROMIUM to its path"
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "the admin page's browser tests need Node.js (`node`) on the PATH"
    );
    assert!(
        browser_dir().join("node_modules/playwright-core").is_dir(),
        "the admin page's browser tests need their driver: run `npm ci` in {} (as .ci/run does)",
        browser_dir().display()
    );
    chromium
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_page_works_in_a_real_browser() {
    let chromium = require_tools();
    let server = Server::start().await;
    // Mail goes out through a real SMTP server; root's address is verified and root has
    // two-factor codes on (the page's login form takes the code).
    let sink = SmtpSink::start();
    let transport = portico_platform::SmtpTransport::new(
        &format!("smtp://127.0.0.1:{}", sink.port),
        "admin@example.com",
    )
    .unwrap();
    let _sender = server.platform.lifecycle().start_sender(
        Arc::new(transport),
        portico_platform::SenderOptions::with_retry_max(std::time::Duration::from_secs(1)),
    );
    let accounts = server.platform.accounts();
    let root = accounts
        .find_user_by_username(ADMIN.0)
        .await
        .unwrap()
        .unwrap();
    let root_id = root["_id"].as_str().unwrap().to_owned();
    server
        .platform
        .store()
        .update(
            portico_platform::USERS,
            &portico_platform::Selector::by_id(&root_id),
            &portico_platform::Update::parse(
                &serde_json::json!({"$set": {"emails.0.verified": true}}),
            )
            .unwrap(),
            portico_platform::UpdateOptions::default(),
        )
        .await
        .unwrap();
    let setup = accounts.totp_setup(&root_id, "Portico").await.unwrap();
    let now = chrono_now();
    let code = |t: i64| portico_platform::totp_code(&setup.secret, t).unwrap();
    accounts
        .totp_enable(&root_id, &code(now - 30))
        .await
        .unwrap();
    // The Jobs view: one pending job (no worker runs here) and one failed delivery.
    let jobs = server.platform.jobs();
    jobs.define(
        "digest",
        portico_platform::jobs::JobOptions::default(),
        |_run, _args| async { Ok(()) },
    )
    .unwrap();
    jobs.enqueue(
        "digest",
        serde_json::json!({}),
        portico_platform::jobs::EnqueueOptions::new().after(std::time::Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    server
        .platform
        .store()
        .insert(
            portico_platform::jobs::FAILED_JOBS,
            serde_json::from_value(serde_json::json!({
                "_id": "failed-1", "jobId": "job-1", "name": "digest", "attempts": 3,
                "failedAt": now * 1000, "lastError": "the receiver answered 503: busy, try later",
                "args": {}, "runAt": 0, "created": 0,
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let shots = screenshot_dir();
    let _ = std::fs::remove_dir_all(&shots);
    let script = browser_dir().join("admin.mjs");
    let mut command = tokio::process::Command::new("node");
    command
        .arg(&script)
        .current_dir(browser_dir())
        .env("ADMIN_URL", server.url("/_/"))
        .env("SCREENSHOT_DIR", &shots)
        .env("ADMIN_USER", ADMIN.0)
        .env("ADMIN_PASSWORD", ADMIN.1)
        .env("ADMIN_TOTP", code(now))
        .env("PLAIN_USER", PLAIN.0)
        .env("PLAIN_PASSWORD", PLAIN.1)
        .env("CHROMIUM", &chromium);
    // Bob has a session the page will end with "Log out everywhere".
    let bob_token = server.token(PLAIN.0, PLAIN.1).await;
    let output = command.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser script failed (screenshots in {}):\n{stderr}\n{stdout}",
        shots.display()
    );
    let seen: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no results from the browser script:\n{stdout}\n{stderr}"));
    let text = |key: &str| seen[key].as_str().unwrap_or_default().to_owned();

    // Jobs: the pending one, the failed one with the receiver's answer, retried from the page.
    let pending = seen["jobsPending"].to_string();
    assert!(pending.contains("digest"), "{seen}");
    let failed = seen["jobsFailed"].to_string();
    assert!(
        failed.contains("job-1") && failed.contains("answered 503: busy"),
        "{seen}"
    );
    assert!(text("jobsNotice").contains("queued again"), "{seen}");
    assert!(
        server
            .platform
            .store()
            .get(portico_platform::jobs::JOBS, "job-1")
            .await
            .unwrap()
            .is_some()
    );

    // API keys: none, one added from the page (shown once, and it authenticated while it was
    // listed), then revoked from the page.
    assert_eq!(
        seen["keyRowsBefore"],
        serde_json::json!(["No keys yet."]),
        "{seen}"
    );
    assert!(text("keyNotice").contains("Key added"), "{seen}");
    let key = text("newKey");
    assert!(key.starts_with("pk_"), "{seen}");
    let rows = seen["keyRowsAfter"].to_string();
    assert!(
        rows.contains("deploy-bot") && rows.contains("editor, reports"),
        "{seen}"
    );
    assert!(!rows.contains(&key), "{seen}");
    assert!(text("keyRevoked").contains("Key revoked"), "{seen}");
    assert_eq!(
        seen["keyRowsRevoked"],
        serde_json::json!(["No keys yet."]),
        "{seen}"
    );
    assert!(
        server
            .platform
            .accounts()
            .user_by_token(&key)
            .await
            .unwrap()
            .is_none(),
        "a revoked key still authenticates"
    );
    assert!(
        server
            .platform
            .accounts()
            .list_api_keys()
            .await
            .unwrap()
            .is_empty()
    );

    // Backups: none, one taken from the page, downloaded whole.
    assert_eq!(
        seen["backupRowsBefore"],
        serde_json::json!(["No backups yet."])
    );
    assert!(text("backupNotice").contains("taken"), "{seen}");
    let rows = seen["backupRowsAfter"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 1, "{seen}");
    let name = text("downloadName");
    assert!(
        name.starts_with("portico-backup-") && name.ends_with(".db"),
        "{name}"
    );
    assert!(
        rows[0].as_str().unwrap_or_default().contains(&name),
        "{seen}"
    );
    let on_server = std::fs::read(server.backups.join(&name)).unwrap();
    let downloaded = std::fs::read(text("downloadPath")).unwrap();
    assert_eq!(downloaded, on_server, "the download is the backup file");
    assert!(downloaded.starts_with(b"SQLite format 3\0"));

    // Refused, then in.
    assert!(text("nonAdminMessage").contains("admin"), "{seen}");
    assert!(text("totpMessage").contains("two-factor code"), "{seen}");
    assert_eq!(text("whoami"), ADMIN.0);
    assert_eq!(seen["cookies"], 0, "no cookie is ever set");
    assert_eq!(seen["tokenStored"], 43);
    assert_eq!(seen["tokenInUrl"], 0, "the token never travels in a URL");
    assert_eq!(seen["apiCallsWithoutToken"], 0);

    // Collections, paging, sorting, filtering.
    let collections: Vec<String> = serde_json::from_value(seen["collections"].clone()).unwrap();
    assert!(
        collections.contains(&"articles 26".to_owned()),
        "{collections:?}"
    );
    assert!(
        collections.contains(&"notes 1".to_owned()),
        "{collections:?}"
    );
    assert_eq!(text("firstPage"), "1–20 of 26");
    assert_eq!(text("indexes"), "indexes: -n · tag,title");
    assert_eq!(seen["firstPageRows"], 20);
    assert_eq!(text("secondPage"), "21–26 of 26");
    assert_eq!(text("sortedFirstId"), "a25");
    assert_eq!(text("filtered"), "1–13 of 13");
    assert!(text("badFilter").starts_with("Invalid where"), "{seen}");
    assert_eq!(text("badFilterInvalid"), "true");
    assert!(text("notJsonFilter").contains("not JSON"), "{seen}");

    // Markup in data is text.
    assert_eq!(text("xssCell"), XSS);
    assert!(text("xssJson").contains(XSS), "{seen}");
    assert_eq!(seen["imagesOnPage"], 0);
    assert_eq!(
        seen["alerts"],
        serde_json::json!([]),
        "nothing from the data ran"
    );

    // Edits, a duplicate, a creation, a deletion, a schema error: in the page and in the store.
    assert_eq!(seen["openedJson"]["_id"], "a02");
    assert_eq!(seen["savedJson"]["title"], "Edited in the browser");
    let articles = server.platform.collection("articles");
    let a02 = articles.get("a02").await.unwrap().unwrap();
    assert_eq!(a02["title"], "Edited in the browser");
    assert_eq!(a02["extra"], serde_json::json!([1, 2]));
    assert!(!text("duplicate").is_empty(), "{seen}");
    assert_eq!(
        articles.get("a03").await.unwrap().unwrap()["title"],
        "Article 03"
    );
    assert_eq!(
        articles.get("fresh").await.unwrap().unwrap()["tag"],
        "green"
    );
    assert_eq!(text("afterDelete"), "0–0 of 0");
    assert!(articles.get("a04").await.unwrap().is_none());
    assert!(text("schemaError").contains("Validation failed"), "{seen}");
    let notes = server.platform.collection("notes");
    let note = notes
        .find_one(&portico_platform::Selector::all())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note["text"], "first note");

    // Files: an image with its preview, a text file with a download link, a refused type, a
    // delete; in the page, in the document and in the store.
    assert_eq!(seen["filesBefore"], 0);
    assert_eq!(seen["thumbSize"], serde_json::json!([160, 120]), "{seen}");
    assert_eq!(
        text("thumbScheme"),
        "blob",
        "shown from a blob: no token in a URL"
    );
    assert_eq!(
        seen["docsImages"], 0,
        "a text file has a link, not a preview"
    );
    assert_eq!(text("docsLink"), "packing.txt");
    assert_eq!(seen["uploadedJson"]["photo"]["type"], "image/png", "{seen}");
    assert_eq!(seen["uploadedJson"]["docs"][0]["name"], "packing.txt");
    assert_eq!(text("fileDownloadName"), "packing.txt");
    assert_eq!(
        text("fileDownloadText"),
        "Packing list: tent, stove, map.\n"
    );
    assert!(text("wrongType").contains("not accepted"), "{seen}");
    assert_eq!(seen["afterFileDelete"]["photo"], Value::Null, "{seen}");
    assert_eq!(seen["imagesAfterDelete"], 0);
    let trip = server.document("albums", "trip").await;
    assert_eq!(trip["photo"], Value::Null);
    assert_eq!(trip["docs"][0]["size"], 32);
    let stored = files_under(&server.files);
    assert_eq!(
        stored.len(),
        1,
        "only the text file is left (the photo and its thumbnail went): {stored:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&stored[0]).unwrap(),
        "Packing list: tent, stove, map.\n"
    );

    // Users: secrets never on the page; carol added with roles; bob logged out; dave removed.
    let users_page = text("usersPageText");
    assert!(
        !users_page.contains("argon2") && !users_page.contains("hashedToken"),
        "{users_page}"
    );
    assert_eq!(seen["usersBefore"], 3);
    assert!(text("carolRow").contains("editor, reviewer"), "{seen}");
    assert_eq!(seen["searchRows"], 1);
    let accounts = server.platform.accounts();
    let carol = accounts
        .find_user_by_username("carol")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(carol["roles"], serde_json::json!(["editor", "reviewer"]));
    assert!(
        accounts.user_by_token(&bob_token).await.unwrap().is_none(),
        "bob was logged out everywhere"
    );
    assert!(
        accounts
            .find_user_by_username("dave")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(seen["usersAfter"], 3);
    // Whether each address is verified, and a reset mail sent from the page.
    assert!(
        text("rootRow").contains("verified") && !text("rootRow").contains("not verified"),
        "{seen}"
    );
    assert!(text("bobRow").contains("not verified"), "{seen}");
    assert!(text("resetNotice").contains("bob@example.com"), "{seen}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mail = loop {
        if let Some(mail) = sink.mails().into_iter().next() {
            break mail;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no reset mail arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(mail["to"], serde_json::json!(["bob@example.com"]), "{mail}");
    assert!(
        mail["text"]
            .as_str()
            .unwrap_or_default()
            .contains("/reset-password?token="),
        "{mail}"
    );

    // API view.
    let rows: Vec<String> = serde_json::from_value(seen["routeRows"].clone()).unwrap();
    assert!(
        rows.iter()
            .any(|r| r.contains("GET") && r.contains("/api/articles")),
        "{rows:?}"
    );
    assert!(rows.iter().any(|r| r.starts_with("auto")), "{rows:?}");
    assert_eq!(text("openapiHref"), "/openapi.json");

    // Narrow and dark.
    assert!(seen["narrowOverflow"].as_i64().unwrap() <= 0, "{seen}");
    assert!(seen["narrowUsersOverflow"].as_i64().unwrap() <= 0, "{seen}");
    assert_eq!(text("darkBackground"), "rgb(21, 23, 27)");
    assert_eq!(text("lightBackground"), "rgb(247, 247, 248)");

    // Logged out: the page forgot the token and the server no longer takes it.
    assert_eq!(seen["afterLogout"], 0);
    assert_eq!(seen["oldTokenStatus"], 401);
    assert_eq!(
        seen["problems"],
        serde_json::json!([]),
        "errors in the page"
    );

    for name in [
        "01-login",
        "03-collections",
        "04-filtered",
        "05-bad-filter",
        "06-xss-as-text",
        "08b-files",
        "09-users",
        "10-api",
        "11-narrow-collections",
        "13-dark-collections",
    ] {
        let file = shots.join(format!("{name}.png"));
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 1000,
            "screenshot {} missing or empty",
            file.display()
        );
    }
}

fn chrono_now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}
