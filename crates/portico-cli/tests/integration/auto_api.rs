//! Every `[auto]` key, observed over HTTP.

use serde_json::{Value, json};

use super::common::{Http, Workspace};

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn as_user(
    server: &Http,
    method: &str,
    path: &str,
    body: Option<Value>,
    token: &str,
) -> super::common::Reply {
    let auth = bearer(token);
    server
        .call(method, path, body, &[("Authorization", auth.as_str())])
        .await
}

const CONFIG: &str = r#"
[auto]
collections = ["widgets", "gadgets"]
object_id_collections = ["gadgets"]
response_headers = { "Access-Control-Allow-Origin" = "*", "X-Api" = "auto" }
allow_register = true

[auto.rules.widgets]
insert = "authenticated"
update = "owner:ownerId"
remove = "role:admin"

[auto.rules.gadgets]
insert = "anyone"

[[auto.publication]]
name = "widgets"
collection = "widgets"
selector = { hidden = { "$ne" = true } }
sort = { rank = -1 }
fields = { secret = 0 }

[[auto.publication]]
name = "my-widgets"
collection = "widgets"
url = "mine/widgets"
http_method = "post"
auth_required = true
"#;

#[tokio::test]
async fn rules_publications_headers_and_ids() {
    let ws = Workspace::new();
    ws.config(CONFIG);
    ws.add_user("root", "root-password", &["admin"]);
    let server = ws.serve();

    // allow_register: a new account over HTTP, then its token.
    let reg = server
        .call(
            "POST",
            "/users/register",
            Some(json!({"username": "ann", "password": "ann-password"})),
            &[],
        )
        .await;
    assert_eq!(reg.status, 200, "{}", reg.raw);
    let (ann, ann_id) = server.auto_login("ann", "ann-password").await;
    let (root, _) = server.auto_login("root", "root-password").await;

    // insert = authenticated
    let anon = server
        .call("POST", "/widgets", Some(json!({"name": "x"})), &[])
        .await;
    assert_eq!(anon.status, 403, "{}", anon.raw);
    let mut ids = Vec::new();
    for (rank, hidden) in [(1, false), (3, false), (2, true), (4, false)] {
        let r = as_user(
            &server,
            "POST",
            "/widgets",
            Some(json!({"rank": rank, "hidden": hidden, "secret": "s", "ownerId": ann_id})),
            &ann,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.raw);
        ids.push(r.body.as_str().unwrap_or_default().to_owned());
    }
    // response_headers
    assert_eq!(anon.header("x-api"), Some("auto"));
    assert_eq!(anon.header("access-control-allow-origin"), Some("*"));

    // update = owner:ownerId — the owner may, another user may not, nor hand it over.
    let patch = as_user(
        &server,
        "PATCH",
        &format!("/widgets/{}", ids[0]),
        Some(json!({"name": "mine"})),
        &ann,
    )
    .await;
    assert_eq!(
        (patch.status, patch.body.clone()),
        (200, json!(1)),
        "{}",
        patch.raw
    );
    let other = as_user(
        &server,
        "PATCH",
        &format!("/widgets/{}", ids[0]),
        Some(json!({"name": "no"})),
        &root,
    )
    .await;
    assert_eq!(other.status, 403, "{}", other.raw);
    let handover = as_user(
        &server,
        "PATCH",
        &format!("/widgets/{}", ids[0]),
        Some(json!({"ownerId": "x"})),
        &ann,
    )
    .await;
    assert_eq!(handover.status, 403, "{}", handover.raw);

    // remove = role:admin
    let del = as_user(
        &server,
        "DELETE",
        &format!("/widgets/{}", ids[3]),
        None,
        &ann,
    )
    .await;
    assert_eq!(del.status, 403, "{}", del.raw);
    let del = as_user(
        &server,
        "DELETE",
        &format!("/widgets/{}", ids[3]),
        None,
        &root,
    )
    .await;
    assert_eq!(
        (del.status, del.body.clone()),
        (200, json!(1)),
        "{}",
        del.raw
    );

    // publication: selector, sort, fields.
    let publ = server.call("GET", "/publications/widgets", None, &[]).await;
    assert_eq!(publ.status, 200, "{}", publ.raw);
    let docs = publ.body["widgets"].as_array().cloned().unwrap_or_default();
    let ranks: Vec<Value> = docs.iter().map(|d| d["rank"].clone()).collect();
    assert_eq!(
        ranks,
        vec![json!(3), json!(1)],
        "selector and sort: {}",
        publ.raw
    );
    assert!(docs[0].get("secret").is_none(), "fields = {{ secret = 0 }}");
    // url, http_method, auth_required.
    let anon_mine = server.call("POST", "/mine/widgets", None, &[]).await;
    assert_eq!(anon_mine.status, 200, "{}", anon_mine.raw);
    assert_eq!(anon_mine.body, json!({"widgets": []}));
    let mine = as_user(&server, "POST", "/mine/widgets", None, &ann).await;
    let ranks: Vec<Value> = mine.body["widgets"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|d| d["rank"].clone())
        .collect();
    assert_eq!(ranks.len(), 3, "{}", mine.raw);
    assert_eq!(
        server.call("GET", "/mine/widgets", None, &[]).await.status,
        405
    );

    // object_id_collections: new ids are 24 hex characters.
    let gadget = server
        .call("POST", "/gadgets", Some(json!({"n": 1})), &[])
        .await;
    assert_eq!(gadget.status, 200, "{}", gadget.raw);
    let id = gadget.body.as_str().unwrap_or_default();
    assert!(
        id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    // A collection without rules for an operation refuses it.
    let no_rule = server
        .call("DELETE", &format!("/gadgets/{id}"), None, &[])
        .await;
    assert_eq!(no_rule.status, 403, "{}", no_rule.raw);

    // The api-routes listing agrees with `portico routes`.
    let listing = server
        .call("GET", "/publications/api-routes", None, &[])
        .await;
    let paths: Vec<String> = listing.body["api-routes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r["path"].as_str().map(str::to_owned))
        .collect();
    let printed = super::common::text(&ws.run(&["routes", "--config", "portico.toml"]).stdout);
    for path in &paths {
        assert!(
            printed.contains(path.as_str()),
            "{path} missing from `portico routes`:\n{printed}"
        );
    }
}

/// A rule of `nobody` refuses every id alike: 403 for a document that exists and for one that
/// does not, so the answer tells no one which ids exist.
#[tokio::test]
async fn a_nobody_rule_refuses_every_id_alike() {
    let ws = Workspace::new();
    ws.config(
        "[auto]\ncollections = [\"notes\"]\n[auto.rules.notes]\ninsert = \"anyone\"\nupdate = \"nobody\"\nremove = \"nobody\"\n",
    );
    let server = ws.serve();
    let made = server
        .call("POST", "/notes", Some(json!({"text": "kept"})), &[])
        .await;
    assert_eq!(made.status, 200, "{}", made.raw);
    let id = made.body.as_str().unwrap_or_default().to_owned();
    for target in [id.as_str(), "missing-id"] {
        let update = server
            .call(
                "PATCH",
                &format!("/notes/{target}"),
                Some(json!({"text": "changed"})),
                &[],
            )
            .await;
        assert_eq!(update.status, 403, "update of {target}: {}", update.raw);
        let remove = server
            .call("DELETE", &format!("/notes/{target}"), None, &[])
            .await;
        assert_eq!(remove.status, 403, "remove of {target}: {}", remove.raw);
    }
}

#[tokio::test]
async fn register_can_be_turned_off() {
    let ws = Workspace::new();
    ws.config("[auto]\ncollections = []\nallow_register = false\n");
    let server = ws.serve();
    let reg = server
        .call(
            "POST",
            "/users/register",
            Some(json!({"username": "ann", "password": "pw"})),
            &[],
        )
        .await;
    assert_eq!(reg.status, 403, "{}", reg.raw);
    let listing = super::common::text(&ws.run(&["routes", "--config", "portico.toml"]).stdout);
    let register = listing
        .lines()
        .find(|l| l.contains("/users/register"))
        .unwrap_or_default();
    assert!(register.contains("closed (403)"), "{listing}");
}
