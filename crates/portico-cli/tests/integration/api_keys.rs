//! API keys through the binary: `portico keys add|list|revoke`, the key sent as `Authorization:
//! Bearer`, `X-Auth-Token` or `X-Api-Key` acting as its service account on the routes door, the
//! auto API and the live socket; refused by the admin page whatever its roles; revoked at the
//! next request (on both instances of one PostgreSQL database, and on an open socket); expiring.

use std::time::Duration;

use serde_json::json;

use super::channels::Client;
use super::common::{Http, Workspace, text, x_auth};

const CONFIG: &str = "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
[[api.collection]]\nname = \"reports\"\nrole_required = [\"staff\"]\n\
[[api.collection]]\nname = \"users\"\nadmin_role = [\"admin\"]\nself_only = true\n\
[auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n\
[auto.rules.things]\ninsert = \"role:staff\"\n\
[admin]\nenabled = true\n\
[[channels]]\npattern = \"staff:*\"\njoin = \"role:staff\"\n";

fn keys(ws: &Workspace, args: &[&str]) -> (bool, String, String) {
    let db = ws.database();
    let mut all = vec!["keys"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--database", &db]);
    let out = ws.run(&all);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn add_key(ws: &Workspace, args: &[&str]) -> String {
    let mut all = vec!["add"];
    all.extend_from_slice(args);
    let (ok, out, err) = keys(ws, &all);
    assert!(ok, "keys add: {err}");
    let key = out.trim().to_owned();
    assert!(key.starts_with("pk_") && key.len() == 46, "{key}");
    key
}

async fn reports(server: &Http, headers: &[(&str, &str)]) -> u16 {
    server
        .call("GET", "/api/reports", None, headers)
        .await
        .status
}

/// The scenario on `a` and `b` (two instances of one database, or one server twice).
/// `feed`: the servers see the `portico keys` command's writes in their change feed
/// (PostgreSQL; a SQLite server does not see another process's writes there), so an open
/// socket is ended by the revocation.
async fn keys_act_as_service_accounts(ws: &Workspace, a: &Http, b: &Http, feed: bool) {
    let key = add_key(ws, &["--name", "ci", "--role", "staff", "--expires", "90d"]);
    let bearer = format!("Bearer {key}");
    for headers in [
        [("Authorization", bearer.as_str())],
        [("X-Api-Key", key.as_str())],
        [("X-Auth-Token", key.as_str())],
    ] {
        assert_eq!(reports(a, &headers).await, 200, "{headers:?}");
    }
    assert_eq!(reports(b, &[("X-Api-Key", &key)]).await, 200);
    assert_eq!(reports(a, &[]).await, 401);
    let wrong = format!("{}x", &key[..45]);
    assert_eq!(reports(a, &[("X-Api-Key", &wrong)]).await, 401);
    // The roles are the key's: a key without staff is refused.
    let plain = add_key(ws, &["--name", "plain"]);
    assert_eq!(reports(a, &[("X-Api-Key", &plain)]).await, 403);
    // The auto API writes as the service account.
    let thing = b
        .call(
            "POST",
            "/things",
            Some(json!({"n": 1})),
            &[("X-Api-Key", &key)],
        )
        .await;
    assert!(thing.status == 200 || thing.status == 201, "{}", thing.raw);
    let refused = b
        .call(
            "POST",
            "/things",
            Some(json!({"n": 2})),
            &[("X-Api-Key", &plain)],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.raw);
    // The admin page refuses any key, even one with the admin role.
    let admin_key = add_key(ws, &["--name", "ops", "--role", "admin"]);
    let page = a
        .call("GET", "/_/api/users", None, &[("X-Api-Key", &admin_key)])
        .await;
    assert_eq!(page.status, 403, "{}", page.raw);
    // Nor other accounts through the users collection, where the admin role would reach them.
    let ann = ws.add_user("ann", "ann-secret", &[]);
    let gone = a
        .call(
            "DELETE",
            &format!("/api/users/{ann}"),
            None,
            &[("X-Api-Key", &admin_key)],
        )
        .await;
    assert_eq!(gone.status, 403, "{}", gone.raw);
    let seen = a
        .call("GET", "/api/users", None, &[("X-Api-Key", &admin_key)])
        .await;
    assert!(!seen.raw.contains(&ann), "{}", seen.raw);
    let root = ws.add_user("root", "root-secret", &["admin"]);
    let (root_token, _) = a.rest_login("/api/", "root", "root-secret").await;
    let listed = a
        .call("GET", "/api/users", None, &x_auth(&root_token))
        .await;
    assert!(
        listed.raw.contains(&ann) && listed.raw.contains(&root),
        "{}",
        listed.raw
    );
    assert_eq!(
        a.call("GET", "/_/api/users", None, &x_auth(&admin_key))
            .await
            .status,
        403
    );

    // A socket authenticated by the key joins by its roles.
    let mut socket = Client::connect_with_header(b, "x-api-key", &key).await;
    socket.join("staff:ops").await;

    // Listed by name, roles and last use; never the key. A name is unique.
    let (ok, list, err) = keys(ws, &["list"]);
    assert!(ok, "{err}");
    assert!(list.contains("ci  roles=staff  created="), "{list}");
    assert!(list.contains("ops  roles=admin"), "{list}");
    let ci_line = list
        .lines()
        .find(|l| l.starts_with("ci "))
        .unwrap_or_default();
    assert!(
        !ci_line.contains("expires=never") && !ci_line.contains("last_used=never"),
        "{ci_line}"
    );
    assert!(list.contains("plain  roles=-"), "{list}");
    for k in [&key, &plain, &admin_key] {
        assert!(!list.contains(k.as_str()), "a key in the list: {list}");
    }
    let (dup, _, err) = keys(ws, &["add", "--name", "ci"]);
    assert!(!dup && err.contains("ci"), "{err}");

    // Revoked: refused at the next request on both instances; the socket is ended.
    let (ok, out, err) = keys(ws, &["revoke", "ci"]);
    assert!(ok && out.contains("revoked ci"), "{out} {err}");
    assert_eq!(reports(a, &[("X-Api-Key", &key)]).await, 401);
    assert_eq!(reports(b, &[("Authorization", &bearer)]).await, 401);
    if feed {
        let error = socket.next_of("error").await;
        assert_eq!(error["code"], "logged-out", "{error}");
    }
    let (again, _, _) = keys(ws, &["revoke", "ci"]);
    assert!(!again, "revoking an unknown key fails");

    // An expiring key stops by itself.
    let short = add_key(
        ws,
        &["--name", "short", "--role", "staff", "--expires", "2s"],
    );
    assert_eq!(reports(a, &[("X-Api-Key", &short)]).await, 200);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(reports(b, &[("X-Api-Key", &short)]).await, 401);
    let (bad, _, err) = keys(ws, &["add", "--name", "x", "--expires", "soon"]);
    assert!(!bad && err.contains("--expires"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_on_sqlite() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    let server = ws.serve();
    keys_act_as_service_accounts(&ws, &server, &server, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_on_two_instances_of_postgres() {
    let ws = Workspace::on_postgres();
    ws.config(CONFIG);
    let a = ws.serve();
    let b = ws.serve();
    keys_act_as_service_accounts(&ws, &a, &b, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_acts_as_a_user_for_a_while_and_its_writes_are_logged() {
    let ws = Workspace::new();
    ws.config(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n\
         [admin]\nenabled = true\n\
         [accounts]\nimpersonation_token_secs = 3\n",
    );
    let root = ws.add_user("root", "root-secret", &["admin"]);
    let ada = ws.add_user("ada", "ada-secret", &["admin"]);
    let ann = ws.add_user("ann", "ann-secret", &[]);
    let server = ws.serve_binary();
    let admin = server.admin_token("root", "root-secret").await;
    let act = |id: &str| format!("/_/api/users/{id}/impersonate");
    let as_ann = server.call("POST", &act(&ann), None, &x_auth(&admin)).await;
    assert_eq!(as_ann.status, 200, "{}", as_ann.raw);
    assert_eq!(as_ann.body["impersonator"], json!(root), "{}", as_ann.raw);
    let token = as_ann.body["token"].as_str().unwrap_or_default().to_owned();
    // Acting as ann: her notes, her id on what is written.
    let note = server
        .call(
            "POST",
            "/api/notes",
            Some(json!({"title": "by root as ann"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(note.status, 201, "{}", note.raw);
    assert_eq!(note.body["data"]["ownerId"], json!(ann), "{}", note.raw);
    let (ann_token, _) = server.rest_login("/api/", "ann", "ann-secret").await;
    let hers = server
        .call("GET", "/api/notes", None, &x_auth(&ann_token))
        .await;
    assert!(hers.raw.contains("by root as ann"), "{}", hers.raw);
    // Not on the admin page, even acting as an admin; not as oneself; not for no one.
    let as_ada = server.call("POST", &act(&ada), None, &x_auth(&admin)).await;
    let ada_token = as_ada.body["token"].as_str().unwrap_or_default().to_owned();
    let page = server
        .call("GET", "/_/api/users", None, &x_auth(&ada_token))
        .await;
    assert_eq!(page.status, 403, "{}", page.raw);
    assert_eq!(
        server
            .call("POST", &act(&root), None, &x_auth(&admin))
            .await
            .status,
        400
    );
    assert_eq!(
        server
            .call("POST", &act("nobody"), None, &x_auth(&admin))
            .await
            .status,
        404
    );
    assert_eq!(
        server
            .call("POST", &act(&ann), None, &x_auth(&ann_token))
            .await
            .status,
        403
    );
    // Short-lived: refused after impersonation_token_secs, while ann's own login goes on.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let late = server
        .call(
            "POST",
            "/api/notes",
            Some(json!({"title": "late"})),
            &x_auth(&token),
        )
        .await;
    assert_eq!(late.status, 401, "{}", late.raw);
    assert_eq!(
        server
            .call("GET", "/api/notes", None, &x_auth(&ann_token))
            .await
            .status,
        200
    );
    let (ok, log) = server.stop();
    assert!(ok, "{log}");
    let writes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("write made by an admin acting as a user"))
        .collect();
    assert_eq!(writes.len(), 1, "one write with the token: {writes:?}");
    assert!(
        writes[0].contains(&ann) && writes[0].contains(&root) && writes[0].contains("/api/notes"),
        "{}",
        writes[0]
    );
    assert!(!log.contains(&token), "the token in the log");
}
