//! Relations in the `portico` binary, on SQLite and PostgreSQL: `?expand=` on get and list puts
//! the related documents under `"expand"`, each as the caller could read it at the related
//! collection's own url (owner scope, field rules, `users` as `_id` and `profile`), nested one
//! level, with entity tags that follow the related documents.

use serde_json::{Value, json};

use super::common::{Http, Workspace, x_auth};

const CONFIG: &str = r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
[[api.collection]]
name = "users"
[[api.collection]]
name = "posts"
auth_required = true
relations = { author = "users", tags = "tags", team = "teams", box = "vault", note = "notes" }
field_rules = { note = "role:staff" }
[[api.collection]]
name = "tags"
auth_required = true
field_rules = { internal = "role:staff" }
[[api.collection]]
name = "teams"
auth_required = true
relations = { lead = "users" }
[[api.collection]]
name = "vault"
owner_field = "ownerId"
[[api.collection]]
name = "notes"
auth_required = true
[[api.collection]]
name = "shelves"
auth_required = true
relations = { box = "vault", tags = "tags" }
"#;

async fn get(server: &Http, path: &str, token: &str) -> super::common::Reply {
    server.call("GET", path, None, &x_auth(token)).await
}

async fn post(server: &Http, path: &str, body: Value, token: &str) -> String {
    let r = server.call("POST", path, Some(body), &x_auth(token)).await;
    assert_eq!(r.status, 201, "{}", r.raw);
    r.body["data"]["_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn expand_across_rule_boundaries(ws: Workspace) {
    ws.config(CONFIG);
    let ann_id = ws.add_user("ann", "ann-password", &["staff"]);
    ws.add_user("bob", "bob-password", &[]);
    let server = ws.serve();
    let (ann, _) = server.rest_login("/api/", "ann", "ann-password").await;
    let (bob, _) = server.rest_login("/api/", "bob", "bob-password").await;

    let t1 = post(
        &server,
        "/api/tags",
        json!({"name": "rust", "internal": "x1"}),
        &ann,
    )
    .await;
    let t2 = post(
        &server,
        "/api/tags",
        json!({"name": "sql", "internal": "x2"}),
        &ann,
    )
    .await;
    let team = post(
        &server,
        "/api/teams",
        json!({"name": "core", "lead": ann_id}),
        &ann,
    )
    .await;
    let ann_box = post(&server, "/api/vault", json!({"pin": 1234}), &ann).await;
    let note = post(&server, "/api/notes", json!({"text": "private"}), &ann).await;
    let p1 = post(
        &server,
        "/api/posts",
        json!({"title": "one", "author": ann_id, "tags": [t2, "gone", t1], "team": team,
               "box": ann_box, "note": note}),
        &ann,
    )
    .await;
    post(
        &server,
        "/api/posts",
        json!({"title": "two", "author": "nobody", "tags": []}),
        &ann,
    )
    .await;

    let all = "expand=author,tags,team.lead,box,note";
    // Bob: users as _id and profile, tags without the staff field, no vault of ann's, and no
    // note (its id is hidden from him, so it cannot be followed).
    let r = get(&server, &format!("/api/posts?{all}&sort=title"), &bob).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let first = &r.body["data"][0];
    assert_eq!(first["title"], "one");
    let author = first["expand"]["author"]
        .as_object()
        .expect("author expanded");
    assert_eq!(author.get("_id"), Some(&json!(ann_id)));
    assert!(
        author.keys().all(|k| k == "_id" || k == "profile"),
        "{author:?}"
    );
    // Array relations keep the array's order and leave out a missing id.
    let tags = first["expand"]["tags"].as_array().expect("tags expanded");
    let names: Vec<&Value> = tags.iter().map(|t| &t["name"]).collect();
    assert_eq!(names, vec![&json!("sql"), &json!("rust")]);
    assert!(tags.iter().all(|t| t.get("internal").is_none()), "{tags:?}");
    // Nested: the team's lead, as a user.
    let lead = &first["expand"]["team"]["expand"]["lead"];
    assert_eq!(lead["_id"], json!(ann_id), "{}", r.raw);
    assert!(lead.get("username").is_none() && lead.get("services").is_none());
    assert!(first["expand"].get("box").is_none(), "{}", r.raw);
    assert!(
        first.get("note").is_none() && first["expand"].get("note").is_none(),
        "{}",
        r.raw
    );
    // Nothing of the hidden documents and fields anywhere in the reply (JSON keys and strings,
    // so a random id that happens to hold the same letters cannot match).
    assert!(
        !r.raw.contains("\"internal\"")
            && !r.raw.contains("\"pin\"")
            && !r.raw.contains("\"private\""),
        "{}",
        r.raw
    );
    // A dangling single relation is left out; an empty array stays empty.
    let second = &r.body["data"][1];
    assert!(second["expand"].get("author").is_none(), "{}", r.raw);
    assert_eq!(second["expand"]["tags"], json!([]));

    // Ann passes every rule: her vault document, the staff fields, the note.
    let r = get(&server, &format!("/api/posts/{p1}?{all}"), &ann).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let data = &r.body["data"];
    assert_eq!(data["expand"]["box"]["pin"], 1234, "{}", r.raw);
    assert_eq!(data["expand"]["note"]["text"], "private");
    assert_eq!(data["expand"]["tags"][0]["internal"], "x2");
    // The same for Bob by id.
    let r = get(&server, &format!("/api/posts/{p1}?{all}"), &bob).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(
        !r.raw.contains("\"pin\"")
            && !r.raw.contains("\"internal\"")
            && !r.raw.contains("\"private\""),
        "{}",
        r.raw
    );
    assert_eq!(r.body["data"]["expand"]["team"]["name"], "core");

    // Entity tags cover the expanded documents: a change to a tag is a new list tag.
    let r = get(&server, "/api/posts?expand=tags", &bob).await;
    let tag = r.header("etag").expect("list etag").to_owned();
    let with_tag = [
        ("X-Auth-Token", bob.as_str()),
        ("If-None-Match", tag.as_str()),
    ];
    let again = server
        .call("GET", "/api/posts?expand=tags", None, &with_tag)
        .await;
    assert_eq!(again.status, 304);
    let r = server
        .call(
            "PATCH",
            &format!("/api/tags/{t1}"),
            Some(json!({"name": "rs"})),
            &x_auth(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let again = server
        .call("GET", "/api/posts?expand=tags", None, &with_tag)
        .await;
    assert_eq!(again.status, 200, "{}", again.raw);
    assert!(again.raw.contains("\"rs\""), "{}", again.raw);

    // A collection shown as stored (no field rules, no scope): its page is read as stored text,
    // with its total from the same read, and only the related documents are added to it,
    // under the same rules.
    for i in 0..3 {
        post(
            &server,
            "/api/shelves",
            json!({"_id": format!("s{i}"), "box": ann_box, "tags": [t2]}),
            &ann,
        )
        .await;
    }
    let r = get(&server, "/api/shelves?expand=box,tags&limit=2", &bob).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.header("x-total-count"), Some("3"));
    assert!(r.header("link").is_some_and(|l| l.contains("rel=\"next\"")));
    let shelves = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(shelves.len(), 2, "{}", r.raw);
    for shelf in &shelves {
        assert_eq!(shelf["box"], json!(ann_box));
        assert!(shelf["expand"].get("box").is_none(), "{}", r.raw);
        assert_eq!(shelf["expand"]["tags"][0]["name"], "sql", "{}", r.raw);
    }
    assert!(
        !r.raw.contains("\"pin\"") && !r.raw.contains("\"internal\""),
        "{}",
        r.raw
    );
    let r = get(&server, "/api/shelves?expand=box,tags&limit=2", &ann).await;
    assert_eq!(r.body["data"][0]["expand"]["box"]["pin"], 1234, "{}", r.raw);
    assert_eq!(r.body["data"][1]["expand"]["tags"][0]["internal"], "x2");
    let r = get(&server, "/api/shelves?expand=tags", &bob).await;
    let tag = r.header("etag").expect("list etag").to_owned();
    let with_tag = [
        ("X-Auth-Token", bob.as_str()),
        ("If-None-Match", tag.as_str()),
    ];
    let again = server
        .call("GET", "/api/shelves?expand=tags", None, &with_tag)
        .await;
    assert_eq!(again.status, 304);
    let r = server
        .call(
            "PATCH",
            &format!("/api/tags/{t2}"),
            Some(json!({"name": "sequel"})),
            &x_auth(&ann),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let again = server
        .call("GET", "/api/shelves?expand=tags", None, &with_tag)
        .await;
    assert_eq!(again.status, 200, "{}", again.raw);
    assert!(again.raw.contains("\"sequel\""), "{}", again.raw);
    // On the same path (on PostgreSQL the page, its total and the related documents are one
    // statement): array order with repeats, ids missing or not strings, a dangling single id,
    // only the page's window.
    post(
        &server,
        "/api/shelves",
        json!({"_id": "s9", "box": "gone", "tags": [t2, "missing", 7, t1, t2]}),
        &ann,
    )
    .await;
    let r = get(&server, "/api/shelves?expand=box,tags&skip=3", &bob).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.header("x-total-count"), Some("4"), "{}", r.raw);
    let shelf = &r.body["data"][0];
    assert_eq!(shelf["_id"], "s9", "{}", r.raw);
    assert!(shelf["expand"].get("box").is_none(), "{}", r.raw);
    let names: Vec<&str> = shelf["expand"]["tags"]
        .as_array()
        .map(|tags| tags.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["sequel", "rs", "sequel"], "{}", r.raw);
    assert!(!r.raw.contains("\"internal\""), "{}", r.raw);
    let r = get(&server, "/api/shelves?expand=box&limit=1", &ann).await;
    assert_eq!(r.body["data"][0]["expand"]["box"]["pin"], 1234, "{}", r.raw);

    // Mistakes are 400 naming them; a live list does not expand.
    for (query, word) in [
        ("expand=title", "title"),
        ("expand=team.lead.team", "deeper"),
        ("expand=a,b,c,d,e,f,g,h,i", "at most"),
    ] {
        let r = get(&server, &format!("/api/posts?{query}"), &bob).await;
        assert_eq!(r.status, 400, "{query}: {}", r.raw);
        assert!(r.raw.contains(word), "{query}: {}", r.raw);
    }
    let r = server
        .call(
            "GET",
            "/api/posts?expand=author",
            None,
            &[
                ("X-Auth-Token", bob.as_str()),
                ("Accept", "text/event-stream"),
            ],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_on_sqlite() {
    expand_across_rule_boundaries(Workspace::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_on_postgres() {
    expand_across_rule_boundaries(Workspace::on_postgres()).await;
}

#[test]
fn relations_are_checked_with_the_config() {
    let stderr = Workspace::new().check_refuses(
        "[[api]]\n[[api.collection]]\nname = \"posts\"\nrelations = { author = \"people\", _id = \"posts\" }\n[[api.collection]]\nname = \"users\"\nrelations = { x = \"posts\" }\n",
    );
    assert!(
        stderr.contains("`people` is not a collection of this [[api]]"),
        "{stderr}"
    );
    assert!(stderr.contains("relations._id"), "{stderr}");
    assert!(stderr.contains("cannot have relations"), "{stderr}");
}
