//! Login on both front doors, the parts the `portico` binary answers for: `portico routes`
//! says who may call an endpoint with `auth = "optional"`, and `portico check` refuses any other
//! mode. The rest (every credential variant alike on both doors, both header styles, the
//! delayed 401 and 403) is in `crates/portico-accounts/tests/integration/login_parity.rs`.

use serde_json::json;

use super::common::Workspace;

/// Issue 39, item 8: `auth = "optional"` on a public endpoint of either door attaches the caller
/// of a valid token (so field rules and owner scopes see them), refuses an invalid token with
/// 401, and lets a caller without one in anonymous; without it (the default) the routes door's
/// public endpoint reads no token at all.
#[tokio::test]
async fn auth_optional_attaches_a_valid_token_and_refuses_an_invalid_one_on_both_doors() {
    let ws = Workspace::new();
    ws.config(
        r#"
[[api]]
use_default_auth = true
auth_failure_delay_ms = 0

[[api.collection]]
name = "cards"
auth = "optional"
field_rules = { secret = "owner:ownerId" }

[[api.collection]]
name = "posters"
field_rules = { secret = "owner:ownerId" }
endpoints = { get = { auth = "optional" } }

[auto]
collections = ["notes"]
auth_failure_delay_ms = 0

[auto.rules.notes]
insert = "authenticated"
auth = "optional"

[[auto.publication]]
name = "mine"
collection = "cards"
owner_field = "ownerId"
auth = "optional"

[[auto.publication]]
name = "mineLenient"
collection = "cards"
owner_field = "ownerId"
"#,
    );
    ws.add_user("ada", "correct horse", &[]);
    // The route listing says who may call: anyone, as themselves when they send a token.
    let routes = super::common::text(&ws.run(&["routes", "--config", "portico.toml"]).stdout);
    let line = |path: &str| {
        routes
            .lines()
            .find(|l| l.starts_with("GET") && l.split_whitespace().nth(1) == Some(path))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("/api/cards/:id").contains("public (as the caller when logged in)"),
        "{routes}"
    );
    assert!(
        line("/api/posters/:id").contains("public (as the caller when logged in)"),
        "{routes}"
    );
    assert!(line("/api/posters").contains("public  "), "{routes}");
    let server = ws.serve();
    let (token, ada) = server.rest_login("/api/", "ada", "correct horse").await;
    let good = [("X-Auth-Token", token.as_str())];
    let bad = [("X-Auth-Token", "not-a-token")];
    let bearer_bad = [("Authorization", "Bearer not-a-token")];

    // Writes still need a login (auth = "optional" changes only endpoints that need none).
    let r = server
        .call(
            "POST",
            "/api/cards",
            Some(json!({"ownerId": ada, "secret": "s1"})),
            &[],
        )
        .await;
    assert_eq!(r.status, 401, "{}", r.raw);
    for collection in ["cards", "posters"] {
        let r = server
            .call(
                "POST",
                &format!("/api/{collection}"),
                Some(json!({"_id": "c1", "ownerId": ada, "secret": "s1"})),
                &good,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.raw);
    }

    // Routes door, auth = "optional" on the collection: the owner sees the field, an anonymous
    // caller does not, an invalid token is a 401.
    let r = server.call("GET", "/api/cards/c1", None, &good).await;
    assert_eq!(
        (r.status, &r.body["data"]["secret"]),
        (200, &json!("s1")),
        "{}",
        r.raw
    );
    let r = server.call("GET", "/api/cards", None, &good).await;
    assert_eq!(r.body["data"][0]["secret"], "s1", "{}", r.raw);
    let r = server.call("GET", "/api/cards/c1", None, &[]).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.body["data"].get("secret").is_none(), "{}", r.raw);
    for headers in [&bad, &bearer_bad] {
        let r = server.call("GET", "/api/cards/c1", None, headers).await;
        assert_eq!(r.status, 401, "{}", r.raw);
    }

    // On one endpoint only; the others keep the default: a public endpoint reads no token, so
    // the owner is anonymous there and a bad token changes nothing.
    let r = server.call("GET", "/api/posters/c1", None, &good).await;
    assert_eq!(r.body["data"]["secret"], "s1", "{}", r.raw);
    let r = server.call("GET", "/api/posters/c1", None, &bad).await;
    assert_eq!(r.status, 401, "{}", r.raw);
    let r = server.call("GET", "/api/posters", None, &good).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert!(r.body["data"][0].get("secret").is_none(), "{}", r.raw);
    let r = server.call("GET", "/api/posters", None, &bad).await;
    assert_eq!(r.status, 200, "{}", r.raw);

    // Auto API: a valid token is the caller's (as by default), an invalid one a 401 where
    // auth = "optional" (by default it runs anonymous).
    let r = server.call("GET", "/publications/mine", None, &good).await;
    assert_eq!(
        r.body["cards"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.raw
    );
    let r = server.call("GET", "/publications/mine", None, &[]).await;
    assert_eq!(
        (r.status, &r.body),
        (200, &json!({"cards": []})),
        "{}",
        r.raw
    );
    for headers in [&bad, &bearer_bad] {
        let r = server
            .call("GET", "/publications/mine", None, headers)
            .await;
        assert_eq!(r.status, 401, "{}", r.raw);
        let r = server
            .call("POST", "/notes", Some(json!({"t": 1})), headers)
            .await;
        assert_eq!(r.status, 401, "{}", r.raw);
        let r = server
            .call("GET", "/publications/mineLenient", None, headers)
            .await;
        assert_eq!(
            (r.status, &r.body),
            (200, &json!({"cards": []})),
            "{}",
            r.raw
        );
    }
    let r = server
        .call("POST", "/notes", Some(json!({"t": 1})), &good)
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let r = server
        .call("POST", "/notes", Some(json!({"t": 1})), &[])
        .await;
    assert_eq!(r.status, 403, "{}", r.raw);
}

/// `auth` takes one mode; anything else is a config error naming the key.
#[test]
fn auth_takes_only_optional() {
    let ws = Workspace::new();
    let err =
        ws.check_refuses("[[api]]\n[[api.collection]]\nname = \"cards\"\nauth = \"required\"\n");
    assert!(
        err.contains("api.collection.auth") && err.contains("optional"),
        "{err}"
    );
    let err = ws.check_refuses("[auto]\ncollections = [\"n\"]\n[auto.rules.n]\nauth = \"maybe\"\n");
    assert!(err.contains("auto.rules.n.auth"), "{err}");
}
