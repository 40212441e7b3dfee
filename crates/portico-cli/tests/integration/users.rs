//! `portico users`: add, list, roles, remove — and the accounts work over HTTP.

use serde_json::json;

use super::common::{Workspace, text, x_auth};

#[test]
fn add_list_roles_and_remove() {
    let ws = Workspace::new();
    let db = ws.database();
    let ann = ws.add_user("ann", "ann-password", &["editor"]);
    assert_eq!(ann.len(), 17, "{ann}");
    let out = ws.run(&[
        "users",
        "add",
        "--database",
        &db,
        "--email",
        "bob@example.com",
        "--password",
        "pw-bob",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let list = text(&ws.run(&["users", "list", "--database", &db]).stdout);
    assert!(
        list.contains(&format!("{ann}  username=ann  emails=-  roles=editor")),
        "{list}"
    );
    assert!(list.contains("emails=bob@example.com"), "{list}");
    assert!(!list.contains("argon2"), "hashes are never listed: {list}");

    let out = ws.run(&[
        "users",
        "roles",
        "add",
        "--database",
        &db,
        "ann",
        "admin",
        "author",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ws.run(&[
        "users",
        "roles",
        "remove",
        "--database",
        &db,
        "ann",
        "editor",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&ws.run(&["users", "list", "--database", &db]).stdout);
    assert!(list.contains("roles=admin,author"), "{list}");

    let out = ws.run(&["users", "remove", "--database", &db, "bob@example.com"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&ws.run(&["users", "list", "--database", &db]).stdout);
    assert_eq!(list.lines().count(), 1, "{list}");
}

#[test]
fn mistakes_are_refused_clearly() {
    let ws = Workspace::new();
    let db = ws.database();
    ws.add_user("ann", "pw", &[]);
    let out = ws.run(&[
        "users",
        "add",
        "--database",
        &db,
        "--username",
        "ANN",
        "--password",
        "x",
    ]);
    assert!(
        !out.status.success(),
        "a username differing only in case is taken"
    );
    // The database line, then the error.
    assert!(
        text(&out.stderr)
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("error: ")),
        "{}",
        text(&out.stderr)
    );
    let out = ws.run(&["users", "add", "--database", &db, "--password", "x"]);
    assert!(!out.status.success(), "a username or an email is required");
    let out = ws.run(&["users", "remove", "--database", &db, "nobody"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no user `nobody`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_database_comes_from_the_config_when_not_given() {
    let ws = Workspace::new();
    ws.config("");
    let out = ws.run(&["users", "add", "--username", "cy", "--password", "pw"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ws.run(&["users", "list", "--database", &ws.database()]);
    assert!(text(&out.stdout).contains("username=cy"));
}

#[test]
fn an_unreachable_postgres_is_reported_clearly() {
    let ws = Workspace::new();
    // Nothing listens on port 1.
    let out = ws.run(&[
        "users",
        "list",
        "--database",
        "postgres://ann:secret@127.0.0.1:1/portico",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("postgres://ann:***@127.0.0.1:1/portico"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret"), "{stderr}");
    assert!(
        stderr.contains("unavailable") && stderr.contains("refused"),
        "{stderr}"
    );
}

#[tokio::test]
async fn cli_users_log_in_and_out_over_http() {
    let ws = Workspace::new();
    ws.config("[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n[[api.collection]]\nname = \"secrets\"\nrole_required = \"agent\"\n[auto]\nauth_failure_delay_ms = 0\ncollections = []\n");
    ws.add_user("ann", "ann-password", &["agent"]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();

    let (token, ann_id) = server.rest_login("/api/", "ann", "ann-password").await;
    assert_eq!(token.len(), 43);
    let created = server
        .call(
            "POST",
            "/api/secrets",
            Some(json!({"code": 7})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.raw);

    let (bob_token, _) = server.rest_login("/api/", "bob", "bob-password").await;
    let refused = server
        .call("GET", "/api/secrets", None, &x_auth(&bob_token))
        .await;
    assert_eq!(refused.status, 403, "bob holds no role: {}", refused.raw);

    let wrong = server
        .call(
            "POST",
            "/api/login",
            Some(json!({"username": "ann", "password": "nope"})),
            &[],
        )
        .await;
    assert_eq!(wrong.status, 401);

    // The auto API's login add-on knows the same accounts.
    let (auto_token, auto_id) = server.auto_login("ann", "ann-password").await;
    assert_eq!(auto_id, ann_id);
    let listed = server
        .call("GET", "/api/secrets", None, &x_auth(&auto_token))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.raw);

    let out = server
        .call("POST", "/api/logout", None, &x_auth(&token))
        .await;
    assert_eq!(out.status, 200, "{}", out.raw);
    let after = server
        .call("GET", "/api/secrets", None, &x_auth(&token))
        .await;
    assert_eq!(after.status, 401, "a logged-out token is refused");

    // A new password through the CLI: the old one stops working, the new one works.
    let db = ws.database();
    let out = ws.run(&[
        "users",
        "password",
        "--database",
        &db,
        "bob",
        "--password",
        "bob-new",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let old = server
        .call(
            "POST",
            "/api/login",
            Some(json!({"username": "bob", "password": "bob-password"})),
            &[],
        )
        .await;
    assert_eq!(old.status, 401);
    let (bob_again, _) = server.rest_login("/api/", "bob", "bob-new").await;
    // Ending bob's sessions through the CLI refuses his tokens on the running server.
    let out = ws.run(&["users", "logout", "--database", &db, "bob"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("2 login tokens removed"),
        "{}",
        text(&out.stdout)
    );
    let after = server
        .call("GET", "/api/secrets", None, &x_auth(&bob_again))
        .await;
    assert_eq!(after.status, 401, "{}", after.raw);

    // A role taken away through the CLI applies to the running server at once.
    let out = ws.run(&[
        "users",
        "roles",
        "remove",
        "--database",
        &ws.database(),
        "ann",
        "agent",
    ]);
    assert!(out.status.success());
    let now = server
        .call("GET", "/api/secrets", None, &x_auth(&auto_token))
        .await;
    assert_eq!(now.status, 403, "{}", now.raw);
}

#[test]
fn users_commands_say_which_database_and_refuse_one_that_would_lose_the_change() {
    let ws = Workspace::new();
    // No config and no database here: listing creates nothing, and says what it looked for.
    let out = ws.run(&["users", "list"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("sqlite:./portico.db (from the default)"),
        "{stderr}"
    );
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(!ws.path("portico.db").exists());

    let out = ws.run(&[
        "users",
        "add",
        "--database",
        "memory:",
        "--username",
        "al",
        "--password",
        "pw-pw-pw",
    ]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("memory"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).trim().is_empty(),
        "no id for an account that is gone"
    );

    let out = ws.run(&["users", "add", "--username", "al", "--password", "pw-pw-pw"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("database: sqlite:./portico.db (from the default)"),
        "{}",
        text(&out.stderr)
    );
    ws.config("");
    let out = ws.run(&["users", "list"]);
    assert!(
        text(&out.stderr).contains("(from `database` in portico.toml)"),
        "{}",
        text(&out.stderr)
    );
}
