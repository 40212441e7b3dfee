//! `?expand=` and `?search=` on the auto API's publications, in the `portico` binary on SQLite
//! and PostgreSQL: a related collection is read only under its `[auto.rules.<c>] read` rules
//! (owner scope, roles, field rules; `users` as `_id` and `profile`; no rule: never), and a
//! search ranks what the publication publishes, following updates, removals and imports.

use serde_json::{Value, json};

use super::common::{Http, Reply, Workspace};

const CONFIG: &str = r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "users"
[[api.collection]]
name = "posts"
relations = { author = "people", box = "vault", tags = "tags", writer = "users" }
search = ["title", "body"]
[[api.collection]]
name = "people"
relations = { team = "teams" }
[[api.collection]]
name = "vault"
[[api.collection]]
name = "tags"
field_rules = { internal = "role:staff" }
[[api.collection]]
name = "teams"

[auto]
auth_failure_delay_ms = 0
[auto.rules.posts]
insert = "authenticated"
update = "authenticated"
remove = "authenticated"
[auto.rules.people]
insert = "authenticated"
read = "anyone"
[auto.rules.vault]
insert = "authenticated"
read = "owner:ownerId"
[auto.rules.tags]
insert = "authenticated"
read = "authenticated"
[auto.rules.teams]
insert = "authenticated"
[auto.rules.users]
read = "authenticated"

[[auto.publication]]
name = "posts"
collection = "posts"
selector = { hidden = { "$ne" = true } }
[[auto.publication]]
name = "mine"
collection = "posts"
owner_field = "ownerId"
[[auto.publication]]
name = "brief"
collection = "posts"
fields = { title = 1, author = 1 }
[[auto.publication]]
name = "teams"
collection = "teams"
"#;

fn bearer(token: &str) -> Vec<(&'static str, String)> {
    if token.is_empty() {
        Vec::new()
    } else {
        vec![("Authorization", format!("Bearer {token}"))]
    }
}

async fn call(server: &Http, method: &str, path: &str, body: Option<Value>, token: &str) -> Reply {
    let headers = bearer(token);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    server.call(method, path, body, &headers).await
}

async fn insert(server: &Http, collection: &str, doc: Value, token: &str) -> String {
    let r = call(server, "POST", &format!("/{collection}"), Some(doc), token).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    r.body.as_str().unwrap_or_default().to_owned()
}

/// The published posts of a reply, by `_id`.
fn post<'a>(reply: &'a Reply, id: &str) -> &'a Value {
    reply.body["posts"]
        .as_array()
        .and_then(|docs| docs.iter().find(|d| d["_id"] == id))
        .unwrap_or(&Value::Null)
}

/// The ids a search of `path` found, in order, and its total.
async fn found(server: &Http, path: &str, token: &str) -> (Vec<String>, String) {
    let r = call(server, "GET", path, None, token).await;
    assert_eq!(r.status, 200, "{path}: {}", r.raw);
    let ids = r.body["posts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|d| d["_id"].as_str().map(str::to_owned))
        .collect();
    (
        ids,
        r.header("x-total-count").unwrap_or_default().to_owned(),
    )
}

async fn publications_expand_and_search(ws: Workspace) {
    ws.config(CONFIG);
    let ann_id = ws.add_user("ann", "ann-password", &["staff"]);
    let bob_id = ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann, _) = server.auto_login("ann", "ann-password").await;
    let (bob, _) = server.auto_login("bob", "bob-password").await;

    let team = insert(&server, "teams", json!({"name": "team-core"}), &ann).await;
    let person = insert(
        &server,
        "people",
        json!({"name": "Pat", "team": team}),
        &ann,
    )
    .await;
    let ann_box = insert(
        &server,
        "vault",
        json!({"ownerId": ann_id, "pin": "pin-4321"}),
        &ann,
    )
    .await;
    let tag = insert(
        &server,
        "tags",
        json!({"name": "baking", "internal": "internal-x"}),
        &ann,
    )
    .await;
    let p1 = insert(
        &server,
        "posts",
        json!({"title": "Apple pie", "body": "with apples", "author": person, "box": ann_box,
               "tags": [tag, "gone"], "writer": ann_id, "ownerId": ann_id}),
        &ann,
    )
    .await;
    let p2 = insert(
        &server,
        "posts",
        json!({"title": "Cherry", "body": "an apple tart", "author": "missing",
               "ownerId": bob_id}),
        &bob,
    )
    .await;

    // Anonymous: people (read = anyone) but not their team (no read rule), nor the vault
    // (owner), tags or users (authenticated).
    let all = "/publications/posts?expand=author.team,box,tags,writer";
    let r = call(&server, "GET", all, None, "").await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let first = post(&r, &p1);
    assert_eq!(first["expand"]["author"]["name"], "Pat", "{}", r.raw);
    assert_eq!(first["expand"]["author"].get("expand"), None, "{}", r.raw);
    let expanded = first["expand"].as_object().cloned().unwrap_or_default();
    assert_eq!(expanded.keys().collect::<Vec<_>>(), ["author"], "{}", r.raw);
    assert_eq!(post(&r, &p2).get("expand"), None, "{}", r.raw);
    for hidden in ["pin-4321", "internal-x", "team-core"] {
        assert!(!r.raw.contains(hidden), "{hidden}: {}", r.raw);
    }

    // Bob: not ann's vault, tags without the staff-only field (the missing id left out), the
    // writer as _id and profile; still no team.
    let r = call(&server, "GET", all, None, &bob).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let first = post(&r, &p1);
    assert_eq!(first["expand"].get("box"), None, "{}", r.raw);
    let tags = first["expand"]["tags"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(tags.len(), 1, "{}", r.raw);
    assert_eq!(tags[0]["name"], "baking");
    let writer = first["expand"]["writer"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(writer.get("_id"), Some(&json!(ann_id)));
    assert!(
        writer.keys().all(|k| k == "_id" || k == "profile"),
        "{writer:?}"
    );
    for hidden in ["pin-4321", "internal-x", "team-core"] {
        assert!(!r.raw.contains(hidden), "{hidden}: {}", r.raw);
    }

    // Ann: her own vault document and the staff-only field.
    let r = call(&server, "GET", all, None, &ann).await;
    let first = post(&r, &p1);
    assert_eq!(first["expand"]["box"]["pin"], "pin-4321", "{}", r.raw);
    assert_eq!(
        first["expand"]["tags"][0]["internal"], "internal-x",
        "{}",
        r.raw
    );
    assert!(!r.raw.contains("team-core"), "{}", r.raw);

    // A relation hidden by the publication's projection is not followed.
    let r = call(
        &server,
        "GET",
        "/publications/brief?expand=author,box",
        None,
        &ann,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(
        post(&r, &p1)["expand"]["author"]["name"],
        "Pat",
        "{}",
        r.raw
    );
    assert!(!r.raw.contains("pin-4321"), "{}", r.raw);

    // Search: what the publication publishes, best first, paged, with the total.
    let (ids, total) = found(&server, "/publications/posts?search=apple", "").await;
    assert_eq!((ids.len(), total.as_str()), (2, "2"), "{ids:?}");
    let (ids, total) = found(&server, "/publications/posts?search=apple&limit=1", "").await;
    assert_eq!((ids.len(), total.as_str()), (1, "2"));
    let (ids, _) = found(
        &server,
        "/publications/posts?search=apple&skip=1&limit=5",
        "",
    )
    .await;
    assert_eq!(ids.len(), 1);
    let (ids, _) = found(&server, "/publications/posts?search=APPLE%20pie", "").await;
    assert_eq!(ids, std::slice::from_ref(&p1));
    // With expand, under the same read rules.
    let r = call(
        &server,
        "GET",
        "/publications/posts?search=pie&expand=author,box",
        None,
        &bob,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(
        post(&r, &p1)["expand"]["author"]["name"],
        "Pat",
        "{}",
        r.raw
    );
    assert!(!r.raw.contains("pin-4321"), "{}", r.raw);
    // The owner-scoped publication: each caller's own matches; anonymous callers none.
    assert_eq!(
        found(&server, "/publications/mine?search=apple", &bob)
            .await
            .0,
        std::slice::from_ref(&p2)
    );
    assert_eq!(
        found(&server, "/publications/mine?search=apple", &ann)
            .await
            .0,
        std::slice::from_ref(&p1)
    );
    assert!(
        found(&server, "/publications/mine?search=apple", "")
            .await
            .0
            .is_empty()
    );

    // The index follows updates: a post the selector now leaves out, a changed title.
    let r = call(
        &server,
        "PATCH",
        &format!("/posts/{p2}"),
        Some(json!({"hidden": true})),
        &bob,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = call(
        &server,
        "PATCH",
        &format!("/posts/{p1}"),
        Some(json!({"title": "Banana bread"})),
        &ann,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let (ids, total) = found(&server, "/publications/posts?search=apple", "").await;
    assert_eq!((ids.len(), total.as_str()), (0, "0"), "{ids:?}");
    assert_eq!(
        found(&server, "/publications/posts?search=banana", "")
            .await
            .0,
        std::slice::from_ref(&p1)
    );
    // ... removals ...
    let r = call(&server, "DELETE", &format!("/posts/{p1}"), None, &ann).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(
        found(&server, "/publications/posts?search=banana", "")
            .await
            .0
            .is_empty()
    );
    // ... and an import beside the running server.
    std::fs::write(
        ws.path("posts.json"),
        r#"[{"_id": "i1", "title": "Imported mango"}, {"_id": "i2", "body": "mango lassi", "hidden": true}]"#,
    )
    .expect("fixture");
    let out = ws.import("posts", "posts.json");
    assert!(out.status.success(), "{}", super::common::text(&out.stderr));
    let (ids, total) = found(&server, "/publications/posts?search=mango", "").await;
    assert_eq!((ids, total.as_str()), (vec!["i1".to_owned()], "1"));

    // Refused: a field that is not a relation, a search field the publication does not publish,
    // a collection without search fields, search or expand with groups or on a live stream,
    // sort with search.
    for (path, code) in [
        ("/publications/posts?expand=title", "invalid-expand"),
        ("/publications/posts?expand=a.b.c", "invalid-expand"),
        ("/publications/brief?search=mango", "invalid-search"),
        ("/publications/teams?search=core", "invalid-search"),
        (
            "/publications/posts?search=mango&sort=title",
            "invalid-search",
        ),
        (
            "/publications/posts?search=mango&group=title&count=true",
            "invalid-aggregate",
        ),
    ] {
        let r = call(&server, "GET", path, None, &ann).await;
        assert_eq!(
            (r.status, r.body["error"].as_str()),
            (400, Some(code)),
            "{path}: {}",
            r.raw
        );
    }
    for path in [
        "/publications/posts?search=mango",
        "/publications/posts?expand=author",
    ] {
        let r = server
            .call("GET", path, None, &[("Accept", "text/event-stream")])
            .await;
        assert_eq!(r.status, 400, "{path}: {}", r.raw);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_publications_on_sqlite() {
    publications_expand_and_search(Workspace::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_publications_on_postgres() {
    publications_expand_and_search(Workspace::on_postgres()).await;
}

#[test]
fn read_rules_are_checked_with_the_config() {
    let stderr = Workspace::new()
        .check_refuses("[auto]\ncollections = []\n[auto.rules.people]\nread = \"everyone\"\n");
    assert!(stderr.contains("auto.rules.people.read"), "{stderr}");
    assert!(!stderr.contains("no write endpoints"), "{stderr}");
}
