//! What the admin API does for an admin: login, collections and documents through the platform
//! collection's checks, accounts without their secrets, the routes of both doors.

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

use super::common::{ADMIN, PLAIN, Server, XSS};

struct Admin {
    client: Client,
    token: String,
}

impl Admin {
    async fn call(
        &self,
        server: &Server,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .request(method, server.url(&format!("/_/api{path}")))
            .header("X-Auth-Token", &self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let reply = request.send().await.unwrap();
        let status = reply.status();
        (status, reply.json().await.unwrap_or(Value::Null))
    }
}

async fn login(server: &Server, user: &str, password: &str) -> (StatusCode, Value) {
    let reply = Client::new()
        .post(server.url("/_/api/login"))
        .json(&json!({"user": user, "password": password}))
        .send()
        .await
        .unwrap();
    let status = reply.status();
    (status, reply.json().await.unwrap_or(Value::Null))
}

async fn admin(server: &Server) -> Admin {
    let (status, body) = login(server, ADMIN.0, ADMIN.1).await;
    assert_eq!(status, 200, "{body}");
    Admin {
        client: Client::new(),
        token: body["token"].as_str().unwrap().to_owned(),
    }
}

fn token_count(user: &portico_platform::Document) -> usize {
    user.get("services")
        .and_then(|s| s.pointer("/resume/loginTokens"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

#[tokio::test]
async fn login_takes_a_username_or_an_email_and_refuses_non_admins_without_leaving_a_token() {
    let server = Server::start().await;
    let (status, body) = login(&server, "ROOT@example.com", ADMIN.1).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token"].as_str().unwrap().len(), 43);
    assert_eq!(body["user"]["username"], "root");
    assert!(body["user"].get("services").is_none());

    let (status, body) = login(&server, PLAIN.0, PLAIN.1).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap().contains("admin"), "{body}");
    let bob = server
        .platform
        .accounts()
        .find_user_by_username(PLAIN.0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        token_count(&bob),
        0,
        "the refused login's token is withdrawn"
    );

    let (status, _) = login(&server, ADMIN.0, "wrong").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn login_failures_hit_the_platform_rate_limit() {
    let server = Server::start().await;
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(login(&server, ADMIN.0, "wrong").await.0.as_u16());
    }
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert_eq!(statuses[6], 429, "{statuses:?}");
    // The door's own login service shares the count (one platform, one failure log).
    let shared = server
        .platform
        .login_service(portico_platform::LoginLimits::default())
        .login(
            Some(&json!({"username": ADMIN.0, "password": ADMIN.1})),
            Some("127.0.0.1".parse().unwrap()),
        )
        .await;
    assert!(
        matches!(
            shared,
            Err(portico_platform::LoginError::TooManyAttempts(_))
        ),
        "{shared:?}"
    );
}

#[tokio::test]
async fn collections_pages_filters_and_sorts() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    let (status, body) = admin.call(&server, Method::GET, "/collections", None).await;
    assert_eq!(status, 200);
    let counts: Vec<(String, u64)> = body["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(counts.contains(&("articles".into(), 26)), "{counts:?}");
    assert!(counts.contains(&("notes".into(), 1)), "{counts:?}");
    assert!(counts.contains(&("users".into(), 3)), "{counts:?}");
    let indexes = |name: &str| {
        body["collections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["indexes"].clone())
    };
    assert_eq!(indexes("articles"), Some(json!(["-n", "tag,title"])));
    assert_eq!(indexes("notes"), Some(json!([])));

    let (_, page) = admin
        .call(
            &server,
            Method::GET,
            "/collections/articles/documents?skip=20&limit=10&sort=title",
            None,
        )
        .await;
    assert_eq!(page["total"], 26);
    let ids: Vec<&str> = page["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["_id"].as_str().unwrap())
        .collect();
    // `<` sorts before `A`: the markup title comes first, so the third page starts at a20.
    assert_eq!(ids, ["a20", "a21", "a22", "a23", "a24", "a25"]);
    let where_ = "%7B%22tag%22%3A%22red%22%2C%22n%22%3A%7B%22%24gt%22%3A20%7D%7D";
    let (_, page) = admin
        .call(
            &server,
            Method::GET,
            &format!("/collections/articles/documents?where={where_}&sort=-n"),
            None,
        )
        .await;
    let ns: Vec<u64> = page["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["n"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, [25, 23, 21]);
    assert_eq!(page["total"], 3);

    for bad in [
        "%7Bnope",
        "%5B1%5D",
        "%7B%22n%22%3A%7B%22%24bogus%22%3A1%7D%7D",
    ] {
        let (status, body) = admin
            .call(
                &server,
                Method::GET,
                &format!("/collections/articles/documents?where={bad}"),
                None,
            )
            .await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body["error"].as_str().unwrap().starts_with("Invalid where"),
            "{body}"
        );
    }
    let (status, _) = admin
        .call(
            &server,
            Method::GET,
            "/collections/nothing-here/documents",
            None,
        )
        .await;
    assert_eq!(status, 404);
}

/// Portico's own collections (`portico_*`) are left out of the list unless asked for, then
/// listed read-only: readable, never written (issue 39, item 9: the page opened on
/// `portico_account_tokens` and let an admin edit `portico_outbox`).
#[tokio::test]
async fn portico_s_own_collections_are_hidden_unless_asked_and_read_only() {
    let server = Server::start().await;
    let outbox = server.platform.collection("portico_outbox");
    outbox
        .insert(
            json!({"_id": "m1", "to": "ann@example.com", "kind": "reset"})
                .as_object()
                .unwrap()
                .clone(),
        )
        .await
        .unwrap();
    let admin = admin(&server).await;
    let names = |body: &Value| -> Vec<String> {
        body["collections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };

    let (status, body) = admin.call(&server, Method::GET, "/collections", None).await;
    assert_eq!(status, 200, "{body}");
    let listed = names(&body);
    assert!(
        listed.iter().all(|n| !n.starts_with("portico_")),
        "{listed:?}"
    );
    assert!(listed.contains(&"articles".to_owned()), "{listed:?}");
    assert!(body["internal"].as_u64().unwrap() >= 1, "{body}");

    let (status, body) = admin
        .call(&server, Method::GET, "/collections?internal=true", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let entry = body["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "portico_outbox")
        .cloned()
        .unwrap_or_else(|| panic!("portico_outbox listed with internal=true: {body}"));
    assert_eq!(entry["readOnly"], true, "{entry}");
    assert_eq!(entry["internal"], true, "{entry}");
    assert_eq!(entry["count"], 1, "{entry}");
    let articles = body["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "articles")
        .cloned()
        .unwrap();
    assert_eq!(
        (&articles["readOnly"], &articles["internal"]),
        (&json!(false), &json!(false))
    );

    // Readable...
    let docs = "/collections/portico_outbox/documents";
    let (status, page) = admin.call(&server, Method::GET, docs, None).await;
    assert_eq!(
        (status.as_u16(), &page["total"]),
        (200, &json!(1)),
        "{page}"
    );
    let (status, doc) = admin
        .call(&server, Method::GET, &format!("{docs}/m1"), None)
        .await;
    assert_eq!(
        (status.as_u16(), &doc["to"]),
        (200, &json!("ann@example.com"))
    );
    // ...never written.
    for (method, path, body) in [
        (Method::POST, docs.to_owned(), Some(json!({"to": "x"}))),
        (
            Method::PUT,
            format!("{docs}/m1"),
            Some(json!({"_id": "m1", "to": "mallory@example.com"})),
        ),
        (Method::DELETE, format!("{docs}/m1"), None),
        (
            Method::POST,
            format!("{docs}/m1/files/attachment?name=a.txt"),
            None,
        ),
    ] {
        let (status, reply) = admin.call(&server, method.clone(), &path, body).await;
        assert_eq!(status, 403, "{method} {path}: {reply}");
        assert!(
            reply["error"].as_str().unwrap().contains("read-only"),
            "{reply}"
        );
    }
    let kept = outbox.get("m1").await.unwrap().unwrap();
    assert_eq!(kept["to"], "ann@example.com");
    assert_eq!(
        outbox
            .count(&portico_platform::Selector::all())
            .await
            .unwrap(),
        1
    );
}

#[tokio::test]
async fn documents_are_written_through_the_collection_checks() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    let docs = "/collections/articles/documents";
    let (status, body) = admin
        .call(
            &server,
            Method::POST,
            docs,
            Some(json!({"_id": "a01", "title": "again"})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(!body["error"].as_str().unwrap().is_empty());
    let (status, body) = admin
        .call(&server, Method::POST, docs, Some(json!({"title": XSS})))
        .await;
    assert_eq!(status, 201);
    let id = body["_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 17);
    let (_, stored) = admin
        .call(&server, Method::GET, &format!("{docs}/{id}"), None)
        .await;
    assert_eq!(stored["title"], XSS);

    let (status, body) = admin
        .call(
            &server,
            Method::PUT,
            &format!("{docs}/a02"),
            Some(json!({"_id": "a02", "title": "replaced"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"_id": "a02", "title": "replaced"}));
    let (status, _) = admin
        .call(
            &server,
            Method::PUT,
            &format!("{docs}/a02"),
            Some(json!({"_id": "other"})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = admin
        .call(
            &server,
            Method::PUT,
            &format!("{docs}/missing"),
            Some(json!({"t": 1})),
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = admin
        .call(&server, Method::POST, docs, Some(json!([1, 2])))
        .await;
    assert_eq!(status, 400);

    let (status, body) = admin
        .call(
            &server,
            Method::POST,
            "/collections/notes/documents",
            Some(json!({"text": 5})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("Validation"),
        "{body}"
    );
    assert_eq!(
        server
            .platform
            .collection("notes")
            .count(&portico_platform::Selector::all())
            .await
            .unwrap(),
        1
    );

    let (status, _) = admin
        .call(&server, Method::DELETE, &format!("{docs}/a03"), None)
        .await;
    assert_eq!(status, 200);
    assert!(
        server
            .platform
            .collection("articles")
            .get("a03")
            .await
            .unwrap()
            .is_none()
    );
    let (status, _) = admin
        .call(&server, Method::DELETE, &format!("{docs}/a03"), None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn accounts_are_shown_without_secrets_and_managed_through_the_accounts_service() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    let (_, listed) = admin.call(&server, Method::GET, "/users", None).await;
    let (_, as_documents) = admin
        .call(&server, Method::GET, "/collections/users/documents", None)
        .await;
    for shown in [&listed, &as_documents] {
        let text = shown.to_string();
        assert!(
            !text.contains("services") && !text.contains("argon2") && !text.contains("hashedToken"),
            "{text}"
        );
    }
    assert_eq!(listed["users"].as_array().unwrap().len(), 3);
    for probe in [
        "where=%7B%22services.password.argon2%22%3A%7B%22%24regex%22%3A%22%5E%5C%5C%24%22%7D%7D",
        "sort=services.resume.loginTokens.hashedToken",
    ] {
        let (status, body) = admin
            .call(
                &server,
                Method::GET,
                &format!("/collections/users/documents?{probe}"),
                None,
            )
            .await;
        assert_eq!(status, 400, "{probe}: {body}");
    }
    let (status, _) = admin
        .call(
            &server,
            Method::PUT,
            "/collections/users/documents/x",
            Some(json!({"roles": ["admin"]})),
        )
        .await;
    assert_eq!(status, 400, "accounts are not written as plain documents");

    let (status, created) = admin
        .call(&server, Method::POST, "/users", Some(json!({"username": "carol", "email": "c@example.com", "password": "carol-pw-1", "roles": ["editor"]})))
        .await;
    assert_eq!(status, 201, "{created}");
    let carol = created["_id"].as_str().unwrap().to_owned();
    let (status, _) = admin
        .call(
            &server,
            Method::POST,
            "/users",
            Some(json!({"username": "CAROL", "password": "x1-long-password"})),
        )
        .await;
    assert_eq!(status, 400, "a taken name");
    let (_, found) = admin
        .call(&server, Method::GET, "/users?q=C%40EXAMPLE", None)
        .await;
    assert_eq!(found["users"].as_array().unwrap().len(), 1);

    let (status, _) = admin
        .call(
            &server,
            Method::PUT,
            &format!("/users/{carol}/roles"),
            Some(json!({"roles": ["reviewer", "admin"]})),
        )
        .await;
    assert_eq!(status, 200);
    let stored = server
        .platform
        .accounts()
        .find_user_by_id(&carol)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored["roles"], json!(["reviewer", "admin"]));

    // password_min_length (default 8) holds on the page too.
    let (status, short) = admin
        .call(
            &server,
            Method::PUT,
            &format!("/users/{carol}/password"),
            Some(json!({"password": "short"})),
        )
        .await;
    assert_eq!(status, 400, "{short}");
    assert!(
        short["error"].as_str().unwrap().contains("at least 8"),
        "{short}"
    );
    let (status, _) = admin
        .call(
            &server,
            Method::POST,
            "/users",
            Some(json!({"username": "dora", "password": "short"})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = admin
        .call(
            &server,
            Method::PUT,
            &format!("/users/{carol}/password"),
            Some(json!({"password": "new-carol-pw"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(login(&server, "carol", "carol-pw-1").await.0, 401);
    let (status, session) = login(&server, "carol", "new-carol-pw").await;
    assert_eq!(status, 200);
    let (_, out) = admin
        .call(
            &server,
            Method::POST,
            &format!("/users/{carol}/logout"),
            None,
        )
        .await;
    assert_eq!(out["tokensRemoved"], 1);
    let token = session["token"].as_str().unwrap();
    assert!(
        server
            .platform
            .accounts()
            .user_by_token(token)
            .await
            .unwrap()
            .is_none()
    );

    let (status, _) = admin
        .call(&server, Method::DELETE, &format!("/users/{carol}"), None)
        .await;
    assert_eq!(status, 200);
    assert!(
        server
            .platform
            .accounts()
            .find_user_by_id(&carol)
            .await
            .unwrap()
            .is_none()
    );
    let (status, _) = admin
        .call(&server, Method::DELETE, &format!("/users/{carol}"), None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn an_admin_cannot_lock_themselves_out() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    let me = server.user_id(ADMIN.0).await;
    let (status, body) = admin
        .call(
            &server,
            Method::PUT,
            &format!("/users/{me}/roles"),
            Some(json!({"roles": ["editor"]})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = admin
        .call(&server, Method::DELETE, &format!("/users/{me}"), None)
        .await;
    assert_eq!(status, 400);
    let stored = server
        .platform
        .accounts()
        .find_user_by_id(&me)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored["roles"], json!(["admin"]));
    let (status, _) = admin
        .call(
            &server,
            Method::PUT,
            &format!("/users/{me}/roles"),
            Some(json!({"roles": ["admin", "editor"]})),
        )
        .await;
    assert_eq!(status, 200, "adding roles to oneself is fine");
}

#[tokio::test]
async fn routes_of_both_doors_and_logout() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    let (_, body) = admin.call(&server, Method::GET, "/routes", None).await;
    assert_eq!(body["openapi"], "/openapi.json");
    let routes = body["routes"].as_array().unwrap();
    let has = |door: &str, method: &str, path: &str| {
        routes
            .iter()
            .any(|r| r["door"] == door && r["method"] == method && r["path"] == path)
    };
    assert!(has("routes", "GET", "/api/articles"), "{routes:?}");
    assert!(has("routes", "POST", "/api/login"), "{routes:?}");
    assert!(
        routes
            .iter()
            .any(|r| r["door"] == "auto" && r["path"].as_str().unwrap().contains("notes")),
        "{routes:?}"
    );

    let (status, _) = admin.call(&server, Method::POST, "/logout", None).await;
    assert_eq!(status, 200);
    let (status, _) = admin.call(&server, Method::GET, "/me", None).await;
    assert_eq!(status, 401);
}

/// The files calls: an upload through the files service (typed by content, metadata in the
/// document), a download and a thumbnail of any size, an edit of the JSON that keeps the file
/// fields (changing them is refused), a delete; a non-admin gets 403 before anything happens.
#[tokio::test]
async fn files_are_uploaded_downloaded_and_deleted() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    let (_, body) = admin.call(&server, Method::GET, "/collections", None).await;
    let albums = body["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "albums")
        .cloned()
        .unwrap();
    assert_eq!(albums["files"]["docs"]["max"], 3, "{albums}");
    assert_eq!(albums["files"]["photo"]["types"], json!(["image/*"]));

    let base = server.url("/_/api/collections/albums/documents/trip/files");
    let send = |method: Method, url: String, token: &str| {
        admin
            .client
            .request(method, url)
            .header("X-Auth-Token", token.to_owned())
    };
    let text = b"plain words, not an image".to_vec();
    let reply = send(
        Method::POST,
        format!("{base}/docs?name=a%2Fb.txt"),
        &admin.token,
    )
    .header("Content-Type", "text/plain")
    .body(text.clone())
    .send()
    .await
    .unwrap();
    assert_eq!(reply.status(), StatusCode::CREATED);
    let meta: Value = reply.json().await.unwrap();
    assert_eq!(
        (meta["name"].as_str(), meta["size"].as_u64()),
        (Some("b.txt"), Some(text.len() as u64))
    );
    let refused = send(
        Method::POST,
        format!("{base}/photo?name=x.png"),
        &admin.token,
    )
    .header("Content-Type", "image/png")
    .body(text.clone())
    .send()
    .await
    .unwrap();
    assert_eq!(refused.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let got = send(Method::GET, format!("{base}/docs/b.txt"), &admin.token)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(got.headers()["content-disposition"], "attachment");
    assert_eq!(got.bytes().await.unwrap().as_ref(), text.as_slice());
    let thumb = send(
        Method::GET,
        format!("{base}/docs/b.txt?thumb=160x160f"),
        &admin.token,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(thumb.status(), StatusCode::BAD_REQUEST, "not an image");

    // An edit of the JSON keeps the files; changing them is refused.
    let doc_url = "/collections/albums/documents/trip";
    let (status, kept) = admin
        .call(
            &server,
            Method::PUT,
            doc_url,
            Some(json!({"title": "Renamed"})),
        )
        .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["docs"], json!([meta]));
    let (status, body) = admin
        .call(
            &server,
            Method::PUT,
            doc_url,
            Some(json!({"title": "x", "docs": []})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = admin
        .call(
            &server,
            Method::POST,
            "/collections/albums/documents",
            Some(json!({"title": "x", "photo": meta})),
        )
        .await;
    assert_eq!(status, 403);

    // Not an admin: refused before the body is looked at.
    let bob = server.token(PLAIN.0, PLAIN.1).await;
    let reply = send(Method::DELETE, format!("{base}/docs/b.txt"), &bob)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::FORBIDDEN);

    let reply = send(Method::DELETE, format!("{base}/docs/b.txt"), &admin.token)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::OK);
    let trip = server.document("albums", "trip").await;
    assert_eq!(trip["docs"], json!([]));
    assert_eq!(trip["title"], "Renamed");
    let reply = send(Method::GET, format!("{base}/docs/b.txt"), &admin.token)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn api_keys_are_added_shown_once_listed_without_the_key_and_revoked() {
    let server = Server::start().await;
    let admin = admin(&server).await;
    // Who a key authenticates as, as every door asks (no account: not a working key).
    let holder = |key: String| {
        let accounts = server.platform.accounts();
        async move { accounts.user_by_token(&key).await.unwrap() }
    };
    let (status, body) = admin
        .call(
            &server,
            Method::POST,
            "/keys",
            Some(json!({"name": "ci", "roles": "editor, reports", "expiresDays": 90})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["name"], "ci");
    let key = body["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("pk_") && key.len() > 40, "{key}");

    // Listed with its roles and expiry, never the key or its hash.
    let (status, body) = admin.call(&server, Method::GET, "/keys", None).await;
    assert_eq!(status, 200, "{body}");
    let keys = body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{body}");
    assert_eq!(keys[0]["roles"], json!(["editor", "reports"]));
    assert!(
        keys[0]["expires"]
            .as_str()
            .is_some_and(|e| e.starts_with("20")),
        "{body}"
    );
    assert_eq!(keys[0]["lastUsed"], Value::Null);
    assert!(!body.to_string().contains(&key[3..]), "{body}");

    // The key authenticates as its service account, with its roles, and its use is noted.
    let account = holder(key.clone()).await.expect("the key authenticates");
    assert_eq!(account["_id"], keys[0]["userId"]);
    assert_eq!(account["roles"], json!(["editor", "reports"]));
    // (The use is noted beside the request, so it may land just after the reply.)
    let mut body = Value::Null;
    for _ in 0..50 {
        body = admin.call(&server, Method::GET, "/keys", None).await.1;
        if body["keys"][0]["lastUsed"].is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(body["keys"][0]["lastUsed"].is_string(), "{body}");

    // Bad input: 400 naming the problem; a taken name: 409; nothing is added.
    for (bad, says) in [
        (json!({"name": "has space"}), "name"),
        (json!({"roles": "x"}), "name is required"),
        (json!({"name": "k2", "expiresDays": 0}), "expiresDays"),
        (json!({"name": "k2", "expiresDays": "soon"}), "expiresDays"),
        (json!({"name": "k2", "roles": 7}), "roles"),
        (json!(["ci"]), "object"),
    ] {
        let (status, body) = admin
            .call(&server, Method::POST, "/keys", Some(bad.clone()))
            .await;
        assert_eq!(status, 400, "{bad} -> {body}");
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{bad} -> {body}"
        );
    }
    let (status, body) = admin
        .call(&server, Method::POST, "/keys", Some(json!({"name": "ci"})))
        .await;
    assert_eq!(status, 409, "{body}");
    let (_, body) = admin.call(&server, Method::GET, "/keys", None).await;
    assert_eq!(body["keys"].as_array().unwrap().len(), 1, "{body}");

    // Only admins manage keys, and a key cannot reach the admin API.
    let bob = server.token(PLAIN.0, PLAIN.1).await;
    for token in [bob.as_str(), key.as_str()] {
        let reply = Client::new()
            .get(server.url("/_/api/keys"))
            .header("X-Auth-Token", token)
            .send()
            .await
            .unwrap();
        assert!(
            matches!(reply.status().as_u16(), 401 | 403),
            "{}",
            reply.status()
        );
    }

    // Revoked: the key stops working at once; revoking again is 404.
    let (status, _) = admin.call(&server, Method::DELETE, "/keys/ci", None).await;
    assert_eq!(status, 204);
    assert!(holder(key.clone()).await.is_none());
    let (status, body) = admin.call(&server, Method::DELETE, "/keys/ci", None).await;
    assert_eq!(status, 404, "{body}");
    let (_, body) = admin.call(&server, Method::GET, "/keys", None).await;
    assert_eq!(body["keys"], json!([]));
}
