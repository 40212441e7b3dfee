//! `[scripts]` on the served app, over HTTP: the scripts' data API, route, publication, write
//! hooks and rules on PostgreSQL, and the write hooks handed the caller of every routes door
//! write (on SQLite and PostgreSQL). The app's files are shared with portico-cli's tests of the
//! binary (`crates/portico-cli/tests/support/scripts_app`); those tests (log lines, `check`,
//! `types`, `--watch`, a certificate authority from the environment) stay there.

use serde_json::json;

use super::common::{Http, Workspace};

const CONFIG: &str = include_str!("../../../portico-cli/tests/support/scripts_app/portico.toml");
const SCHEMA: &str = include_str!("../../../portico-cli/tests/support/scripts_app/todos.json");
const MAIN: &str = include_str!("../../../portico-cli/tests/support/scripts_app/main.ts");
const LIB: &str = include_str!("../../../portico-cli/tests/support/scripts_app/text.ts");

/// Writes the config (with `fetch_port` allowed), the scripts and the schema into `ws`.
fn write_app(ws: &Workspace, fetch_port: u16, main: &str) {
    ws.config(&CONFIG.replace("FETCH_PORT", &fetch_port.to_string()));
    for (name, body) in [
        ("server/main.ts", main),
        ("server/lib/text.ts", LIB),
        ("schemas/todos.json", SCHEMA),
    ] {
        let path = ws.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
}

/// The same data API, route and publication on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_run_on_postgres() {
    let ws = Workspace::on_postgres();
    write_app(&ws, 1, MAIN);
    ws.create_user("ann", "ann-password", &[]);
    let server = ws.serve();
    let (token, _) = server.auto_login("ann", "ann-password").await;
    let auth = format!("Bearer {token}");
    let r = server
        .call(
            "POST",
            "/methods/addTodo",
            Some(json!(["milk"])),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.raw);
    let id = r.body.as_str().unwrap().to_owned();
    let r = server
        .call("POST", "/methods/addTodo", Some(json!([""])), &[])
        .await;
    assert_eq!(r.status, 400, "schema: {}", r.raw);
    let r = server
        .call("GET", &format!("/api/todo/{id}"), None, &[])
        .await;
    assert_eq!(r.body["title"], "milk", "{}", r.raw);
    assert_eq!(r.body["titleLength"], 4, "before.insert hook: {}", r.raw);
    // The generated route's insert runs the hooks too; a throwing hook refuses it.
    let r = server
        .call(
            "POST",
            "/api/todos",
            Some(json!({"title": "bread"})),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.raw);
    assert_eq!(r.body["data"]["titleLength"], 5, "{}", r.raw);
    let r = server
        .call(
            "POST",
            "/api/todos",
            Some(json!({"title": "veto"})),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert!(r.raw.contains("vetoed"), "{}", r.raw);
    let r = server
        .call("POST", "/methods/addTodo", Some(json!(["veto"])), &[])
        .await;
    assert_eq!(
        (r.status, r.body["error"].clone()),
        (400, json!("vetoed")),
        "{}",
        r.raw
    );
    // The after hook's audit documents, one per insert that was done.
    let r = server.call("POST", "/methods/countAudit", None, &[]).await;
    assert_eq!(r.body, 2, "{}", r.raw);
    let r = server
        .call("GET", "/publications/openTodos", None, &[])
        .await;
    assert_eq!(
        r.body["todos"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.raw
    );
    let r = server
        .call(
            "POST",
            "/notes",
            Some(json!({"text": "forbidden"})),
            &[("Authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
    let r = server
        .call("POST", "/methods/makeUser", Some(json!(["cy"])), &[])
        .await;
    assert_eq!(r.body["editor"], true, "{}", r.raw);
}

/// Issue 39, item 1: a config whose `tasks` are written through the routes door (and the auto
/// API), with files, and a script whose write hooks record the `userId` they are handed.
const HOOK_USER_CONFIG: &str = r#"
[scripts]
main = "server/main.ts"

[files]
store = "store"
SHARED
[[api]]
version = "v1"
use_default_auth = true
auth_failure_delay_ms = 0

[[api.collection]]
name = "tasks"
files = { attachments = { max = 3 } }

[[api.collection]]
name = "plain"

[auto]
collections = ["tasks"]

[auto.rules.tasks]
insert = "authenticated"
update = "authenticated"
remove = "authenticated"
"#;

const HOOK_USER_MAIN: &str = r#"
import { methods, collection } from "portico";

const tasks = collection("tasks");
function record(op: string) {
  return async function (this: any, userId: string | null) {
    await collection("hooklog").insert({ op, arg: userId, self: this.userId ?? null });
  };
}
tasks.before.insert(function (this: any, userId: string | null, doc: any) {
  doc.createdBy = userId;
  return record("before.insert").call(this, userId);
});
tasks.after.insert(record("after.insert"));
tasks.before.update(record("before.update"));
tasks.after.update(record("after.update"));
tasks.before.remove(record("before.remove"));
tasks.after.remove(record("after.remove"));

methods({
  async takeHookLog() {
    const seen = await collection("hooklog").find({}, { sort: { createdAt: 1 } }).fetch();
    await collection("hooklog").remove({});
    return seen.map((d: any) => ({ op: d.op, arg: d.arg, self: d.self }));
  },
  async serverInsert() { return await tasks.insert({ title: "by the server" }); },
});
"#;

/// The hook log since the last call, as `(op, userId argument, this.userId)`.
async fn take_hook_log(server: &Http) -> Vec<(String, Option<String>, Option<String>)> {
    let r = server.call("POST", "/methods/takeHookLog", None, &[]).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    r.body
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                e["op"].as_str().unwrap_or_default().to_owned(),
                e["arg"].as_str().map(str::to_owned),
                e["self"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

const INSERT: &[&str] = &["before.insert", "after.insert"];
const UPDATE: &[&str] = &["before.update", "after.update"];
const REMOVE: &[&str] = &["before.remove", "after.remove"];

/// Takes the hook log and asserts it as [`assert_hooks_saw`] does.
async fn expect_hooks(server: &Http, ops: &[&str], user: Option<&str>, what: &str) {
    assert_hooks_saw(&take_hook_log(server).await, ops, user, what);
}

/// Asserts the log holds exactly `ops` (once each), each handed `user` as its argument and as `this.userId`.
fn assert_hooks_saw(
    log: &[(String, Option<String>, Option<String>)],
    ops: &[&str],
    user: Option<&str>,
    what: &str,
) {
    // (In any order: the log's timestamps may tie.)
    let mut got: Vec<&str> = log.iter().map(|(op, _, _)| op.as_str()).collect();
    got.sort_unstable();
    let mut ops = ops.to_vec();
    ops.sort_unstable();
    assert_eq!(got, ops, "{what}: {log:?}");
    for (op, arg, this) in log {
        assert_eq!(
            arg.as_deref(),
            user,
            "{what}: {op} was handed userId {arg:?}"
        );
        assert_eq!(
            this.as_deref(),
            user,
            "{what}: {op} saw this.userId {this:?}"
        );
    }
}

/// Every write of the routes door (and of the auto API, for comparison) hands the hooks the
/// logged-in caller, as `docs/scripts.md` says; server code hands them `null`.
async fn hooks_see_the_caller(ws: Workspace, postgres: bool) {
    write_app(&ws, 1, HOOK_USER_MAIN);
    // One instance here: its file directory is all the files there are.
    let shared = if postgres {
        "shared_storage = true"
    } else {
        ""
    };
    ws.config(&HOOK_USER_CONFIG.replace("SHARED", shared));
    let ann = ws.create_user("ann", "ann-password", &[]);
    let server = ws.serve();
    let (token, user) = server.rest_login("/api/v1/", "ann", "ann-password").await;
    assert_eq!(user, ann);
    let auth = [
        ("X-Auth-Token", token.as_str()),
        ("X-User-Id", user.as_str()),
    ];
    let me = Some(ann.as_str());

    // Insert: the hook stamps createdBy with the userId it is handed.
    let r = server
        .call("POST", "/api/v1/tasks", Some(json!({"title": "a"})), &auth)
        .await;
    assert_eq!(r.status, 201, "{}", r.raw);
    assert_eq!(r.body["data"]["createdBy"], json!(ann), "{}", r.raw);
    let id = r.body["data"]["_id"].as_str().unwrap().to_owned();
    expect_hooks(&server, INSERT, me, "routes POST").await;

    // A file upload changes the document's file field: update hooks.
    let r = server
        .http
        .post(server.url(&format!("/api/v1/tasks/{id}/files/attachments?name=a.txt")))
        .header("X-Auth-Token", &token)
        .header("Content-Type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{:?}", r.text().await);
    expect_hooks(&server, UPDATE, me, "routes file upload").await;

    // PATCH, PUT, a file delete (update hooks again), DELETE.
    let item = format!("/api/v1/tasks/{id}");
    let writes = [
        ("PATCH", item.clone(), Some(json!({"done": true})), UPDATE),
        ("PUT", item.clone(), Some(json!({"title": "b"})), UPDATE),
        (
            "DELETE",
            format!("{item}/files/attachments/a.txt"),
            None,
            UPDATE,
        ),
        ("DELETE", item.clone(), None, REMOVE),
    ];
    for (method, path, body, ops) in writes {
        let r = server.call(method, &path, body, &auth).await;
        assert_eq!(r.status, 200, "{method} {path}: {}", r.raw);
        expect_hooks(&server, ops, me, &format!("routes {method} {path}")).await;
    }

    // A batch cannot run the hooks between its writes: it refuses the hooked collection, and
    // nothing is written (no write escapes the hooks by going through a batch).
    let batch = json!({"requests": [
        {"method": "POST", "url": "plain", "body": {"n": 1}},
        {"method": "POST", "url": "tasks", "body": {"title": "c"}}
    ]});
    let r = server
        .call("POST", "/api/v1/batch", Some(batch), &auth)
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert!(r.raw.contains("hooks"), "{}", r.raw);
    let r = server.call("GET", "/api/v1/plain", None, &[]).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.raw);
    expect_hooks(&server, &[], me, "routes batch").await;

    // The auto API, the same caller (both login headers are taken there too).
    let r = server
        .call(
            "POST",
            "/tasks",
            Some(json!({"title": "d"})),
            &[("Authorization", &format!("Bearer {token}"))],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    expect_hooks(&server, INSERT, me, "auto API insert").await;

    // Server code: null.
    let r = server
        .call("POST", "/methods/serverInsert", None, &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    expect_hooks(&server, INSERT, None, "server insert").await;

    // An anonymous write is refused before any hook runs (writes need a login).
    let r = server
        .call("POST", "/api/v1/tasks", Some(json!({"title": "e"})), &[])
        .await;
    assert_eq!(r.status, 401, "{}", r.raw);
    expect_hooks(&server, &[], None, "anonymous POST").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_hooks_see_the_caller_of_every_routes_door_write() {
    hooks_see_the_caller(Workspace::new(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_hooks_see_the_caller_of_every_routes_door_write_on_postgres() {
    hooks_see_the_caller(Workspace::on_postgres(), true).await;
}
