//! Every admin API call needs the admin role: 401 without a valid token, 403 for any other user.

use reqwest::{Client, Method, StatusCode};
use serde_json::json;

use super::common::{ADMIN, PLAIN, Server};

/// Every call of the admin API but the login, with a body where it takes one.
fn calls(user_id: &str) -> Vec<(Method, String, Option<serde_json::Value>)> {
    let u = |p: &str| format!("/_/api{p}");
    vec![
        (Method::GET, u("/me"), None),
        (Method::POST, u("/logout"), None),
        (Method::GET, u("/collections"), None),
        (Method::GET, u("/collections/articles/documents"), None),
        (
            Method::POST,
            u("/collections/articles/documents"),
            Some(json!({"title": "x"})),
        ),
        (Method::GET, u("/collections/articles/documents/a01"), None),
        (
            Method::PUT,
            u("/collections/articles/documents/a01"),
            Some(json!({"title": "x"})),
        ),
        (
            Method::DELETE,
            u("/collections/articles/documents/a01"),
            None,
        ),
        (
            Method::POST,
            u("/collections/albums/documents/trip/files/docs?name=x.txt"),
            Some(json!("file bytes")),
        ),
        (
            Method::GET,
            u("/collections/albums/documents/trip/files/docs/x.txt"),
            None,
        ),
        (
            Method::DELETE,
            u("/collections/albums/documents/trip/files/docs/x.txt"),
            None,
        ),
        (Method::GET, u("/users"), None),
        (
            Method::POST,
            u("/users"),
            Some(json!({"username": "mallory", "password": "pw-123456"})),
        ),
        (Method::DELETE, u(&format!("/users/{user_id}")), None),
        (
            Method::PUT,
            u(&format!("/users/{user_id}/roles")),
            Some(json!({"roles": ["admin"]})),
        ),
        (
            Method::PUT,
            u(&format!("/users/{user_id}/password")),
            Some(json!({"password": "pw-123456"})),
        ),
        (Method::POST, u(&format!("/users/{user_id}/logout")), None),
        (Method::GET, u("/routes"), None),
        (Method::GET, u("/no-such-call"), None),
    ]
}

async fn send(
    client: &Client,
    server: &Server,
    (method, path, body): &(Method, String, Option<serde_json::Value>),
    token: Option<&str>,
    query_token: Option<&str>,
) -> StatusCode {
    let mut url = server.url(path);
    if let Some(t) = query_token {
        url = format!("{url}?token={t}&X-Auth-Token={t}");
    }
    let mut request = client.request(method.clone(), url);
    if let Some(t) = token {
        request = request.header("X-Auth-Token", t);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn every_admin_call_refuses_anonymous_callers_and_non_admins() {
    let server = Server::start().await;
    let client = Client::new();
    let bob = server.token(PLAIN.0, PLAIN.1).await;
    let dave = server.user_id("dave").await;
    for call in calls(&dave) {
        assert_eq!(
            send(&client, &server, &call, None, None).await,
            401,
            "anonymous {call:?}"
        );
        assert_eq!(
            send(
                &client,
                &server,
                &call,
                Some("not-a-real-token-at-all"),
                None
            )
            .await,
            401,
            "bad token {call:?}"
        );
        // A token in the URL is never read.
        let admin = server.token(ADMIN.0, ADMIN.1).await;
        assert_eq!(
            send(&client, &server, &call, None, Some(&admin)).await,
            401,
            "token in URL {call:?}"
        );
        assert_eq!(
            send(&client, &server, &call, Some(&bob), None).await,
            403,
            "non-admin {call:?}"
        );
    }
    // Nothing the refused calls asked for happened.
    let trip = server.document("albums", "trip").await;
    assert!(trip.get("docs").is_none(), "no file was attached: {trip:?}");
    let accounts = server.platform.accounts();
    assert!(
        accounts
            .find_user_by_username("mallory")
            .await
            .unwrap()
            .is_none()
    );
    assert!(accounts.find_user_by_id(&dave).await.unwrap().is_some());
    let bob_user = accounts
        .find_user_by_username(PLAIN.0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bob_user["roles"], json!(["editor"]));
    assert!(
        accounts.user_by_token(&bob).await.unwrap().is_some(),
        "bob's session survives"
    );
    let a01 = server
        .platform
        .collection("articles")
        .get("a01")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a01["title"], "Article 01");

    // The same calls with the admin's token are let through (logout last: it ends the session).
    let admin = server.token(ADMIN.0, ADMIN.1).await;
    for call in calls(&dave)
        .into_iter()
        .filter(|c| !c.1.ends_with("/logout") || c.1.contains("/users/"))
    {
        let status = send(&client, &server, &call, Some(&admin), None).await;
        assert!(status != 401 && status != 403, "admin {call:?}: {status}");
    }
    let header = client
        .get(server.url("/_/api/me"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(header.status(), 200, "Authorization: Bearer works too");
}

#[tokio::test]
async fn a_role_taken_away_closes_the_page_at_once() {
    let server = Server::start().await;
    let client = Client::new();
    let admin = server.token(ADMIN.0, ADMIN.1).await;
    let me = |t: String| {
        let client = client.clone();
        let url = server.url("/_/api/collections");
        async move {
            client
                .get(url)
                .header("X-Auth-Token", t)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(me(admin.clone()).await, 200);
    let id = server.user_id(ADMIN.0).await;
    server
        .platform
        .accounts()
        .remove_roles(&id, &["admin".into()])
        .await
        .unwrap();
    assert_eq!(me(admin).await, 403);
}

#[tokio::test]
async fn the_page_sets_no_cookie_and_allows_only_its_own_script() {
    let server = Server::start().await;
    let client = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = client.get(server.url("/_/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let html = page.text().await.unwrap();
    assert!(html.contains("<script src=\"app.js\""), "{html}");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing from other hosts"
    );
    for asset in ["/_/app.js", "/_/app.css"] {
        let reply = client.get(server.url(asset)).send().await.unwrap();
        assert_eq!(reply.status(), 200, "{asset}");
        let body = reply.text().await.unwrap();
        assert!(
            !body.contains("https://") && !body.contains("http://"),
            "{asset} loads nothing from elsewhere"
        );
    }
    let script = client
        .get(server.url("/_/app.js"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !script.contains("innerHTML")
            && !script.contains("insertAdjacentHTML")
            && !script.contains("document.write")
    );
    let redirect = client.get(server.url("/_")).send().await.unwrap();
    assert_eq!(redirect.status(), 308);
    assert_eq!(redirect.headers()["location"], "/_/");

    let login = client
        .post(server.url("/_/api/login"))
        .json(&json!({"user": ADMIN.0, "password": ADMIN.1}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    assert!(
        login.headers().get("set-cookie").is_none(),
        "no ambient credential"
    );
    assert_eq!(login.headers()["cache-control"], "no-store");
}
