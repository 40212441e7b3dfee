//! `portico import`: a users export from an existing app keeps passwords and tokens working.

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::common::{Workspace, text, x_auth};

/// The SHA-256 hex of a password as existing apps compute it: every UTF-16 code unit encoded
/// as UTF-8 on its own, so a character outside the BMP is two 3-byte surrogate sequences.
fn sha256_hex(text: &str) -> String {
    let mut bytes = Vec::new();
    for unit in text.encode_utf16() {
        let u = u32::from(unit);
        match u {
            0..=0x7F => bytes.push(u as u8),
            0x80..=0x7FF => bytes.extend([0xC0 | (u >> 6) as u8, 0x80 | (u & 0x3F) as u8]),
            _ => bytes.extend([
                0xE0 | (u >> 12) as u8,
                0x80 | ((u >> 6) & 0x3F) as u8,
                0x80 | (u & 0x3F) as u8,
            ]),
        }
    }
    hex::encode(Sha256::digest(&bytes))
}

fn hashed_token(token: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(token.as_bytes()))
}

fn millis_ago(days: i64) -> i64 {
    chrono::Utc::now().timestamp_millis() - days * 24 * 3600 * 1000
}

const FRESH: &str = "fresh-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const EXPIRED: &str = "expired-token-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const UNDATED: &str = "undated-token-cccccccccccccccccccccccccccccc";

/// A users export as an existing app writes it: bcrypt over the SHA-256 hex of the password,
/// hashed login tokens with `{"$date": ...}` times (one older than the 90-day lifetime).
fn users_export() -> Value {
    let bcrypt_of = |pw: &str| bcrypt::hash(sha256_hex(pw), 4).expect("bcrypt");
    json!([
        {
            "_id": "LegacyUser0000001",
            "createdAt": {"$date": millis_ago(400)},
            "username": "grace",
            "emails": [{"address": "grace@example.com", "verified": true}],
            "roles": ["admin"],
            "services": {
                "password": {"bcrypt": bcrypt_of("grace-old-password")},
                "resume": {"loginTokens": [
                    {"when": {"$date": millis_ago(3)}, "hashedToken": hashed_token(FRESH)},
                    {"when": {"$date": {"$numberLong": millis_ago(120).to_string()}}, "hashedToken": hashed_token(EXPIRED)},
                    {"hashedToken": hashed_token(UNDATED)}
                ]}
            }
        },
        {
            "_id": "LegacyUser0000002",
            "createdAt": {"$date": "2020-01-02T03:04:05.678Z"},
            "emails": [{"address": "Linus@Example.com", "verified": false}],
            "services": {"password": {"bcrypt": bcrypt_of("linus-pw-\u{1F600}")}}
        }
    ])
}

#[tokio::test]
async fn imported_users_keep_passwords_and_unexpired_tokens() {
    let ws = Workspace::new();
    let file = ws.path("users.json");
    std::fs::write(&file, users_export().to_string()).expect("fixture");
    let db = ws.database();
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "users",
        "users.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "imported 2 documents into users");

    ws.config("[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"reports\"\nauth_required = true\n[auto]\nauth_failure_delay_ms = 0\ncollections = []\n");
    let server = ws.serve();

    // Existing tokens: the fresh one and the undated one (stamped at import) work, on both
    // front doors; the expired one is refused.
    let ok = server
        .call("GET", "/api/reports", None, &x_auth(FRESH))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    let ok = server
        .call("GET", "/api/reports", None, &x_auth(UNDATED))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    let expired = server
        .call("GET", "/api/reports", None, &x_auth(EXPIRED))
        .await;
    assert_eq!(expired.status, 401, "{}", expired.raw);
    let bearer = format!("Bearer {FRESH}");
    let who = server
        .call(
            "GET",
            "/publications/api-routes",
            None,
            &[("Authorization", bearer.as_str())],
        )
        .await;
    assert_eq!(who.status, 200);

    // Existing passwords: by username, and by email in another case (with a non-BMP character).
    let (token, id) = server
        .rest_login("/api/", "grace", "grace-old-password")
        .await;
    assert_eq!(id, "LegacyUser0000001");
    let wrong = server
        .call(
            "POST",
            "/api/login",
            Some(json!({"username": "grace", "password": "grace-new"})),
            &[],
        )
        .await;
    assert_eq!(wrong.status, 401);
    let linus = server
        .call(
            "POST",
            "/api/login",
            Some(json!({"email": "linus@example.com", "password": "linus-pw-\u{1F600}"})),
            &[],
        )
        .await;
    assert_eq!(linus.status, 200, "{}", linus.raw);
    let (_, auto_id) = server.auto_login("grace", "grace-old-password").await;
    assert_eq!(auto_id, "LegacyUser0000001");
    let ok = server
        .call("GET", "/api/reports", None, &x_auth(&token))
        .await;
    assert_eq!(ok.status, 200);

    // Stored as an app would: dates as ISO strings.
    let stopped = server.stop();
    assert!(stopped);
    let list = text(&ws.run(&["users", "list", "--database", &db]).stdout);
    assert!(
        list.contains("LegacyUser0000001  username=grace  emails=grace@example.com  roles=admin"),
        "{list}"
    );
}

#[test]
fn other_collections_convert_dates_and_object_ids() {
    let ws = Workspace::new();
    let file = ws.path("items.json");
    std::fs::write(
        &file,
        r#"[{"_id": {"$oid": "5f1d7a3e9b1e8a3f4c2d1e0f"}, "at": {"$date": 0}, "n": {"$numberLong": "12"}},
            {"_id": "plain", "tags": ["a"]}]"#,
    )
    .expect("fixture");
    let db = ws.database();
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "items",
        "items.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "imported 2 documents into items");

    // Importing again writes nothing and names the ids that exist.
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "items",
        "items.json",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("2 documents already exist") && stderr.contains("nothing was imported"),
        "{stderr}"
    );
}

#[test]
fn one_existing_id_fails_the_whole_batch_and_is_named() {
    let ws = Workspace::new();
    let db = ws.database();
    let import = |file: &str| ws.run(&["import", "--database", &db, "--collection", "items", file]);
    std::fs::write(
        ws.path("first.json"),
        r#"[{"_id": "old", "n": 1}, {"n": 2}]"#,
    )
    .expect("fixture");
    let out = import("first.json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "imported 2 documents into items");

    // `new` comes before the existing `old`: the batch fails whole, naming only `old`.
    std::fs::write(
        ws.path("second.json"),
        r#"[{"_id": "new", "n": 3}, {"_id": "old", "n": 4}, {"n": 5}]"#,
    )
    .expect("fixture");
    let out = import("second.json");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("1 document already exists in `items` (old); nothing was imported"),
        "{stderr}"
    );

    // `new` was not written: importing it alone now succeeds.
    std::fs::write(ws.path("third.json"), r#"[{"_id": "new", "n": 3}]"#).expect("fixture");
    let out = import("third.json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "imported 1 document into items");
}

#[tokio::test]
async fn imported_documents_are_served_as_converted() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path("items.json"),
        r#"[{"_id": {"$oid": "5f1d7a3e9b1e8a3f4c2d1e0f"}, "at": {"$date": 0}}]"#,
    )
    .expect("fixture");
    let out = ws.run(&[
        "import",
        "--database",
        &ws.database(),
        "--collection",
        "items",
        "items.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    ws.config("[[api]]\n[[api.collection]]\nname = \"items\"\n");
    let server = ws.serve();
    let got = server
        .call("GET", "/api/items/5f1d7a3e9b1e8a3f4c2d1e0f", None, &[])
        .await;
    assert_eq!(got.status, 200, "{}", got.raw);
    assert_eq!(got.body["data"]["at"], json!("1970-01-01T00:00:00.000Z"));
}

#[test]
fn bad_files_are_refused_with_the_element() {
    let ws = Workspace::new();
    let db = ws.database();
    std::fs::write(
        ws.path("bad.json"),
        r#"[{"a": 1}, {"at": {"$date": "yesterday"}}]"#,
    )
    .expect("fixture");
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "items",
        "bad.json",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("element 1"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(ws.path("obj.json"), r#"{"a": 1}"#).expect("fixture");
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "items",
        "obj.json",
    ]);
    assert!(
        text(&out.stderr).contains("JSON array"),
        "{}",
        text(&out.stderr)
    );
    // Nothing of the first file was written.
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "items",
        "missing.json",
    ]);
    assert!(
        text(&out.stderr).contains("cannot read it"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn users_whose_name_or_email_is_taken_in_any_case_are_refused_whole() {
    let ws = Workspace::new();
    let db = ws.database();
    ws.add_user("al", "al-password", &[]);
    let import = |file: &str| ws.run(&["import", "--database", &db, "--collection", "users", file]);
    let count = || {
        text(&ws.run(&["users", "list", "--database", &db]).stdout)
            .lines()
            .count()
    };
    for (file, body, expected) in [
        (
            "taken.json",
            r#"[{"username": "bea"}, {"username": "AL"}]"#,
            r#"taken by an existing account: username "AL" (element 1)"#,
        ),
        (
            "twice.json",
            r#"[{"username": "cy", "emails": [{"address": "Cy@example.com"}]}, {"username": "dee", "emails": [{"address": "cy@EXAMPLE.com"}]}]"#,
            r#"repeated in the file: email "cy@EXAMPLE.com" (elements 0 and 1)"#,
        ),
    ] {
        std::fs::write(ws.path(file), body).expect("fixture");
        let out = import(file);
        assert!(!out.status.success(), "{file}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(expected), "{file}: {stderr}");
        assert!(stderr.contains("nothing was imported"), "{stderr}");
        assert_eq!(count(), 1, "{file}: nothing written");
    }
    std::fs::write(ws.path("fine.json"), r#"[{"username": "bea"}]"#).expect("fixture");
    assert!(import("fine.json").status.success());
    assert_eq!(count(), 2);
}

/// A file of `n` documents `s0000`.. whose last element is `last` (its batches before it have
/// been handed to the store by the time it is read).
fn export_ending_with(n: usize, last: &str) -> String {
    let mut items: Vec<String> = (0..n - 1)
        .map(|i| format!(r#"{{"_id": "s{i:04}", "n": {i}, "tags": ["a", "b"]}}"#))
        .collect();
    items.push(last.to_owned());
    format!("[{}]", items.join(","))
}

/// An import that fails at its last element (after several batches) writes nothing, whatever
/// the reason; the same documents then import whole.
fn a_failure_at_the_last_element_leaves_the_collection_unchanged(ws: &Workspace) {
    let db = ws.database();
    let import = |file: &str| ws.run(&["import", "--database", &db, "--collection", "items", file]);
    std::fs::write(ws.path("seed.json"), r#"[{"_id": "old", "n": -1}]"#).expect("fixture");
    let out = import("seed.json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let n = 3500;
    for (file, last, expected) in [
        (
            "bad.json",
            r#"{"at": {"$date": "yesterday"}}"#.to_owned(),
            format!("element {}", n - 1),
        ),
        (
            "existing.json",
            r#"{"_id": "old"}"#.to_owned(),
            "1 document already exists in `items` (old); nothing was imported".to_owned(),
        ),
        (
            "twice.json",
            r#"{"_id": "s0007"}"#.to_owned(),
            r#"`_id` "s0007" appears twice in the file; nothing was imported"#.to_owned(),
        ),
        (
            "truncated.json",
            r#"{"_id": "end""#.to_owned(),
            "not valid JSON".to_owned(),
        ),
    ] {
        std::fs::write(ws.path(file), export_ending_with(n, &last)).expect("fixture");
        let out = import(file);
        assert!(!out.status.success(), "{file}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&expected), "{file}: {stderr}");
    }
    // None of the failed files' documents were written: all of them import now, once.
    std::fs::write(
        ws.path("good.json"),
        export_ending_with(n, r#"{"_id": "last"}"#),
    )
    .expect("fixture");
    let out = import("good.json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        format!("imported {n} documents into items")
    );
    let again = import("good.json");
    assert!(
        text(&again.stderr).contains(&format!("{n} documents already exist")),
        "{}",
        text(&again.stderr)
    );
}

#[test]
fn a_failing_import_writes_nothing_on_sqlite() {
    a_failure_at_the_last_element_leaves_the_collection_unchanged(&Workspace::new());
}

#[test]
fn a_failing_import_writes_nothing_on_postgres() {
    a_failure_at_the_last_element_leaves_the_collection_unchanged(&Workspace::on_postgres());
}
