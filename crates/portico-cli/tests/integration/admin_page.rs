//! `[admin]`: the admin page on `portico serve` at `/_/`, moved, given another role, turned off;
//! and what `portico check` says about its keys.

use serde_json::json;

use super::common::{Workspace, text};

const CONFIG: &str = "[[api]]\nuse_default_auth = true\n[[api.collection]]\nname = \"articles\"\n[auto]\ncollections = [\"notes\"]\n[auto.rules.notes]\ninsert = \"anyone\"\n";

#[tokio::test]
async fn served_at_the_default_path_for_admins_beside_both_doors() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("root", "root-secret", &["admin"]);
    ws.add_user("ed", "ed-secret", &["editor"]);
    let server = ws.serve_binary();

    let page = server.call("GET", "/_/", None, &[]).await;
    assert_eq!(page.status, 200);
    assert!(
        page.raw.contains("<title>Portico admin</title>"),
        "{}",
        page.raw
    );
    assert_eq!(server.call("GET", "/_/app.js", None, &[]).await.status, 200);
    assert_eq!(
        server
            .call("GET", "/_/api/collections", None, &[])
            .await
            .status,
        401
    );

    let refused = server
        .call(
            "POST",
            "/_/api/login",
            Some(json!({"user": "ed", "password": "ed-secret"})),
            &[],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.raw);
    let token = server.admin_token("root", "root-secret").await;
    let routes = server
        .call("GET", "/_/api/routes", None, &[("X-Auth-Token", &token)])
        .await;
    assert_eq!(routes.status, 200, "{}", routes.raw);
    let listed: Vec<(String, String, String)> = routes.body["routes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("door"), s("method"), s("path"))
        })
        .collect();
    for expected in [
        ("routes", "GET", "/api/articles"),
        ("routes", "POST", "/api/login"),
        ("auto", "POST", "/notes"),
    ] {
        let expected = (
            expected.0.to_owned(),
            expected.1.to_owned(),
            expected.2.to_owned(),
        );
        assert!(listed.contains(&expected), "{expected:?} in {listed:?}");
    }
    // The doors still answer beside it.
    assert_eq!(
        server.call("GET", "/api/articles", None, &[]).await.status,
        200
    );
    let (ok, log) = server.stop();
    assert!(ok, "{log}");
    assert!(log.contains("admin page: http://"), "{log}");
}

#[tokio::test]
async fn moved_given_another_role_or_turned_off() {
    let ws = Workspace::new();
    ws.config(&format!(
        "{CONFIG}[admin]\npath = \"/console\"\nrole = \"ops\"\n"
    ));
    ws.add_user("root", "root-secret", &["admin"]);
    ws.add_user("olga", "olga-secret", &["ops"]);
    let server = ws.serve_binary();
    assert_eq!(server.call("GET", "/console/", None, &[]).await.status, 200);
    assert_ne!(server.call("GET", "/_/", None, &[]).await.status, 200);
    let admin = server
        .call(
            "POST",
            "/console/api/login",
            Some(json!({"user": "root", "password": "root-secret"})),
            &[],
        )
        .await;
    assert_eq!(
        admin.status, 403,
        "the `admin` role is not the page's role here"
    );
    let ops = server
        .call(
            "POST",
            "/console/api/login",
            Some(json!({"user": "olga", "password": "olga-secret"})),
            &[],
        )
        .await;
    assert_eq!(ops.status, 200, "{}", ops.raw);
    drop(server);

    ws.config(&format!("{CONFIG}[admin]\nenabled = false\n"));
    let server = ws.serve_binary();
    let off = server.call("GET", "/_/", None, &[]).await;
    assert_eq!(
        server.call("GET", "/api/articles", None, &[]).await.status,
        200
    );
    assert_eq!(off.status, 404, "{}", off.raw);
    let (ok, log) = server.stop();
    assert!(ok && !log.contains("admin page"), "{log}");
}

#[tokio::test]
async fn a_server_without_an_admin_says_how_to_make_one() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve_binary();
    // A request first: the signal handler is installed once the server runs.
    assert_eq!(server.call("GET", "/_/", None, &[]).await.status, 200);
    let (ok, log) = server.stop();
    assert!(ok, "{log}");
    assert!(log.contains("--role admin"), "{log}");
}

#[test]
fn check_knows_the_admin_keys() {
    let ws = Workspace::new();
    ws.config("[admin]\nenabled = true\npath = \"/_/\"\nrole = \"admin\"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    ws.config("[admin]\npaht = \"/x\"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("admin.paht") && stderr.contains("line 3"),
        "{stderr}"
    );

    ws.config("[admin]\npath = \"/a b\"\nrole = \" \"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("key `admin.path`") && stderr.contains("line 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("key `admin.role`") && stderr.contains("line 4"),
        "{stderr}"
    );
}
