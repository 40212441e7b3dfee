//! Safe defaults of the `portico` config: writes need a login unless opened on purpose, accounts
//! change only by their owner (or an admin role), and `check` and `serve` warn about anonymous
//! writes.

use serde_json::json;

use super::common::{Scenario, Workspace, run_scenarios, text, x_auth};

#[tokio::test]
async fn a_collection_without_auth_keys_is_read_by_anyone_and_written_by_users() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"posts\"\n",
    );
    ws.add_user("ann", "ann-password", &[]);
    let server = ws.serve();

    let (token, _) = server.rest_login("/api/", "ann", "ann-password").await;
    run_scenarios(
        &server,
        &[
            Scenario::new("an anonymous write is refused", "POST", "/api/posts")
                .body(json!({"title": "spam"}))
                .status(401),
            Scenario::new("a user writes", "POST", "/api/posts")
                .token(&token)
                .body(json!({"title": "hello"}))
                .status(201)
                .keep("id", "/data/_id"),
            Scenario::new("an anonymous patch is refused", "PATCH", "/api/posts/{id}")
                .body(json!({"title": "x"}))
                .status(401),
            Scenario::new(
                "an anonymous delete is refused",
                "DELETE",
                "/api/posts/{id}",
            )
            .status(401),
            Scenario::new("anyone reads it, unchanged", "GET", "/api/posts/{id}")
                .has(json!({"data": {"title": "hello"}})),
            Scenario::new("anyone lists", "GET", "/api/posts")
                .has(json!({"data": [{"title": "hello"}]})),
        ],
    )
    .await;
}

#[tokio::test]
async fn auth_required_false_written_out_opens_writes_with_a_warning() {
    let ws = Workspace::new();
    ws.config("[[api]]\n[[api.collection]]\nname = \"guestbook\"\nauth_required = false\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "portico.toml:4: warning: anonymous callers can write collection `guestbook`"
        ),
        "{stderr}"
    );
    let server = ws.serve_binary();
    let created = server
        .call("POST", "/api/guestbook", Some(json!({"text": "hi"})), &[])
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);
    let (_, log) = server.stop();
    assert!(
        log.contains("warning: anonymous callers can write"),
        "{log}"
    );
}

#[test]
fn check_is_quiet_about_a_safe_config_and_warns_about_anyone_rules() {
    let ws = Workspace::new();
    ws.config("[[api]]\n[[api.collection]]\nname = \"posts\"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );

    ws.config("[auto]\ncollections = [\"w\"]\n[auto.rules.w]\ninsert = \"anyone\"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning: anonymous callers can write collection `w`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("portico.toml:4:") || stderr.contains("portico.toml:5:"),
        "{stderr}"
    );
}

const USERS: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"users\"\n";

#[tokio::test]
async fn no_caller_changes_or_removes_another_account() {
    for extra in ["", "auth_required = true\n", "auth_required = false\n"] {
        let ws = Workspace::new();
        ws.config(&format!("{USERS}{extra}"));
        let bob = ws.add_user("bob", "bob-password", &[]);
        ws.add_user("eve", "eve-password", &[]);
        let server = ws.serve();
        let item = format!("/api/users/{bob}");
        for (method, body) in [
            ("PUT", Some(json!({"name": "pwned"}))),
            ("PATCH", Some(json!({"name": "pwned"}))),
            ("DELETE", None),
        ] {
            let anonymous = server.call(method, &item, body.clone(), &[]).await;
            assert_eq!(anonymous.status, 401, "{extra}{method}: {}", anonymous.raw);
        }
        let (eve, _) = server.rest_login("/api/", "eve", "eve-password").await;
        for (method, body) in [
            ("PUT", Some(json!({"name": "pwned"}))),
            ("PATCH", Some(json!({"name": "pwned"}))),
            ("DELETE", None),
        ] {
            let other = server.call(method, &item, body, &x_auth(&eve)).await;
            assert_eq!(other.status, 403, "{extra}{method}: {}", other.raw);
        }
        // Bob still logs in, his profile untouched; he may change his own.
        let (bob_token, _) = server.rest_login("/api/", "bob", "bob-password").await;
        let own = server
            .call(
                "PATCH",
                &item,
                Some(json!({"name": "Bob"})),
                &x_auth(&bob_token),
            )
            .await;
        assert_eq!(own.status, 200, "{}", own.raw);
        assert_eq!(own.body["data"]["profile"], json!({"name": "Bob"}));
    }
}

#[tokio::test]
async fn the_admin_role_manages_every_account() {
    let ws = Workspace::new();
    ws.config(&format!("{USERS}admin_role = \"admin\"\n"));
    let bob = ws.add_user("bob", "bob-password", &[]);
    ws.add_user("root", "root-password", &["admin"]);
    let server = ws.serve();
    let (root, _) = server.rest_login("/api/", "root", "root-password").await;
    let item = format!("/api/users/{bob}");
    let changed = server
        .call(
            "PATCH",
            &item,
            Some(json!({"note": "checked"})),
            &x_auth(&root),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.raw);
    let removed = server.call("DELETE", &item, None, &x_auth(&root)).await;
    assert_eq!(removed.status, 200, "{}", removed.raw);
}

#[tokio::test]
async fn self_only_limits_the_users_collection_to_the_own_account() {
    for key in ["self_only = true\n", "owner_field = \"_id\"\n"] {
        let ws = Workspace::new();
        ws.config(&format!("{USERS}{key}admin_role = \"admin\"\n"));
        let bob = ws.add_user("bob", "bob-password", &[]);
        let eve = ws.add_user("eve", "eve-password", &[]);
        ws.add_user("root", "root-password", &["admin"]);
        let server = ws.serve();
        assert_eq!(
            server.call("GET", "/api/users", None, &[]).await.status,
            401
        );
        let (token, _) = server.rest_login("/api/", "eve", "eve-password").await;
        let list = server
            .call("GET", "/api/users", None, &x_auth(&token))
            .await;
        assert_eq!(list.status, 200, "{}", list.raw);
        assert_eq!(list.body["data"][0]["_id"], json!(eve), "{key}");
        assert_eq!(list.body["data"].as_array().map(Vec::len), Some(1), "{key}");
        let other = server
            .call("GET", &format!("/api/users/{bob}"), None, &x_auth(&token))
            .await;
        assert_eq!(other.status, 404, "{key}: {}", other.raw);
        let (root, _) = server.rest_login("/api/", "root", "root-password").await;
        let all = server.call("GET", "/api/users", None, &x_auth(&root)).await;
        assert_eq!(
            all.body["data"].as_array().map(Vec::len),
            Some(3),
            "{}",
            all.raw
        );
    }
}

#[test]
fn account_keys_apply_to_the_users_collection_only() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\n[[api.collection]]\nname = \"posts\"\nself_only = true\nadmin_role = \"admin\"\n",
    );
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("key `api.collection.self_only`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("key `api.collection.admin_role`"),
        "{stderr}"
    );
}

fn bearer(token: &str) -> [(&'static str, String); 1] {
    [("Authorization", format!("Bearer {token}"))]
}

#[tokio::test]
async fn no_client_write_reaches_roles_or_services_on_either_door() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{USERS}[auto]\ncollections = [\"users\"]\n[auto.rules.users]\nupdate = \"owner:_id\"\n"
    ));
    let al = ws.add_user("al", "al-password", &[]);
    let server = ws.serve_binary();
    let (token, _) = server.auto_login("al", "al-password").await;
    let [(name, value)] = bearer(&token);
    for body in [
        json!({"roles": ["admin"]}),
        json!({"services.resume.loginTokens": []}),
    ] {
        let patch = server
            .call(
                "PATCH",
                &format!("/users/{al}"),
                Some(body.clone()),
                &[(name, &value)],
            )
            .await;
        assert_eq!(patch.status, 403, "{body}: {}", patch.raw);
    }
    // The routes door keeps such keys inside the profile.
    let (rest_token, _) = server.rest_login("/api/", "al", "al-password").await;
    let own = server
        .call(
            "PATCH",
            &format!("/api/users/{al}"),
            Some(json!({"roles": ["admin"]})),
            &x_auth(&rest_token),
        )
        .await;
    assert_eq!(own.status, 200, "{}", own.raw);
    let list = ws.run(&["users", "list", "--database", &ws.database()]);
    let listed = text(&list.stdout);
    assert!(
        listed.contains("al") && !listed.contains("admin"),
        "{listed}"
    );
    let (_, log) = server.stop();
    assert!(log.contains("rules over `users`"), "{log}");
}

#[test]
fn check_refuses_client_inserts_into_users() {
    let ws = Workspace::new();
    ws.config("[auto]\ncollections = [\"users\"]\n[auto.rules.users]\ninsert = \"anyone\"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 5") && stderr.contains("key `auto.rules.users.insert`"),
        "{stderr}"
    );
    assert!(stderr.contains("/users/register"), "{stderr}");
}

const NOTES: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n[auto]\ncollections = []\n";

#[tokio::test]
async fn publications_can_be_scoped_to_the_caller() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{NOTES}[[auto.publication]]\nname = \"mine\"\ncollection = \"notes\"\nowner_field = \"ownerId\"\n[[auto.publication]]\nname = \"mine-open\"\ncollection = \"notes\"\nselector = {{ ownerId = \"$userId\", done = false }}\n"
    ));
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
    ws.add_user("ann", "ann-password", &[]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    for (user, done) in [("ann", false), ("ann", true), ("bob", false)] {
        let (token, _) = server
            .rest_login("/api/", user, &format!("{user}-password"))
            .await;
        let reply = server
            .call(
                "POST",
                "/api/notes",
                Some(json!({"done": done})),
                &x_auth(&token),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.raw);
    }
    let (ann, ann_id) = server.auto_login("ann", "ann-password").await;
    let [(name, value)] = bearer(&ann);
    let mine = server
        .call("GET", "/publications/mine", None, &[(name, &value)])
        .await;
    let notes = mine.body["notes"].as_array().cloned().unwrap_or_default();
    assert_eq!(notes.len(), 2, "{}", mine.raw);
    assert!(
        notes.iter().all(|n| n["ownerId"] == json!(ann_id)),
        "{}",
        mine.raw
    );
    let open = server
        .call("GET", "/publications/mine-open", None, &[(name, &value)])
        .await;
    assert_eq!(
        open.body["notes"].as_array().map(Vec::len),
        Some(1),
        "{}",
        open.raw
    );
    let anonymous = server.call("GET", "/publications/mine", None, &[]).await;
    assert_eq!(anonymous.body, json!({"notes": []}), "{}", anonymous.raw);
}

#[test]
fn check_warns_about_a_publication_that_ignores_an_owner_scope() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{NOTES}[[auto.publication]]\nname = \"all-notes\"\ncollection = \"notes\"\nauth_required = true\n"
    ));
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("portico.toml:11: warning: publication `all-notes`"),
        "{stderr}"
    );
}

/// Issue 39, item 6: a `users` collection declared with nothing else never lists accounts to
/// anonymous callers (reads need a login), and `check` says who sees whom: every logged-in
/// caller sees every account unless `self_only` (or a role) says otherwise. Reads opened to
/// anyone on purpose (`auth_required = false`) are warned about; `self_only = true` or
/// `auth_required = true` written out are quiet.
#[tokio::test]
async fn a_declared_users_collection_is_not_public() {
    let ws = Workspace::new();
    ws.config(USERS);
    let bob = ws.add_user("bob", "bob-password", &[]);
    let admin = ws.add_user("root", "root-password", &["admin"]);
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("portico.toml:6: warning: every logged-in caller can list every account"),
        "{stderr}"
    );
    let server = ws.serve();
    for path in ["/api/users".to_owned(), format!("/api/users/{admin}")] {
        let anonymous = server.call("GET", &path, None, &[]).await;
        assert_eq!(anonymous.status, 401, "{path}: {}", anonymous.raw);
        assert!(!anonymous.raw.contains(&admin), "{}", anonymous.raw);
    }
    let (token, _) = server.rest_login("/api/", "bob", "bob-password").await;
    let listed = server
        .call("GET", "/api/users", None, &x_auth(&token))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.raw);
    assert!(listed.raw.contains(&bob), "{}", listed.raw);
    drop(server);

    // Said on purpose: quiet, or warned about when anonymous callers may read.
    for (extra, warning) in [
        ("self_only = true\n", None),
        ("auth_required = true\n", None),
        ("role_required = \"admin\"\n", None),
        (
            "auth_required = false\n",
            Some("warning: anonymous callers can list every account"),
        ),
        (
            "endpoints = { getAll = { auth_required = false } }\n",
            Some("warning: anonymous callers can list every account"),
        ),
    ] {
        ws.config(&format!("{USERS}{extra}"));
        let out = ws.run(&["check", "--config", "portico.toml"]);
        assert!(out.status.success(), "{extra}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        match warning {
            Some(w) => assert!(stderr.contains(w), "{extra}: {stderr}"),
            None => assert!(
                !stderr.contains("can list every account"),
                "{extra}: {stderr}"
            ),
        }
    }
    let server = ws.serve();
    let anonymous = server.call("GET", "/api/users", None, &[]).await;
    assert_eq!(
        anonymous.status, 200,
        "opened on purpose: {}",
        anonymous.raw
    );
}
