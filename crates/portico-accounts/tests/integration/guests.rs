//! Guest accounts on the served app: made by `POST /auth/guest` (only with `allow_guests`, and
//! limited per client), upgraded with a username or email and a password while keeping their id
//! and documents, and removed with their owned documents once unused for `guest_ttl_days`, while
//! a guest in use and an upgraded one stay; on SQLite and on two instances of one PostgreSQL
//! database.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::{Http, Workspace, x_auth};
use portico_testkit::mail_app::post;

fn config(extra: &str) -> String {
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n\
         [[api.collection]]\nname = \"plain\"\n\
         [admin]\nenabled = true\n\
         [accounts]\napp_url = \"http://app.test\"\n{extra}\n"
    )
}

/// Makes a guest; returns (id, token).
async fn guest(server: &Http) -> (String, String) {
    let r = post(server, "/auth/guest", json!({}), &[]).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.body["guest"], true, "{}", r.raw);
    let s = |k: &str| r.body[k].as_str().unwrap_or_default().to_owned();
    assert!(!s("id").is_empty() && s("token").len() == 43, "{}", r.raw);
    (s("id"), s("token"))
}

/// Writes a note as the holder of `token`; returns its id.
async fn note(server: &Http, token: &str, title: &str) -> String {
    let r = post(
        server,
        "/api/notes",
        json!({"title": title}),
        &x_auth(token),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.raw);
    r.body["data"]["_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Every document of `collection`, as the admin page lists them.
async fn all_documents(server: &Http, admin: &str, collection: &str) -> String {
    let r = server
        .call(
            "GET",
            &format!("/_/api/collections/{collection}/documents"),
            None,
            &x_auth(admin),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    r.raw
}

/// The guest scenario on `a` and `b` (two instances of one database, or one server twice).
async fn guests_keep_their_work_and_idle_ones_go(a: &Http, b: &Http) {
    let methods = a.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["guests"], true, "{}", methods.raw);
    let admin = a.admin_token("root", "root-secret").await;

    // A guest writes a note, then becomes gina on the other instance: same id, same notes.
    let (gina_id, gina_token) = guest(a).await;
    let gina_note = note(a, &gina_token, "from a guest").await;
    let up = post(
        b,
        "/auth/guest/upgrade",
        json!({"username": "gina", "password": "gina-password", "roles": ["admin"], "guest": true}),
        &x_auth(&gina_token),
    )
    .await;
    assert_eq!(up.status, 200, "{}", up.raw);
    assert_eq!(up.body["id"], json!(gina_id), "{}", up.raw);
    let (token, id) = a.rest_login("/api/", "gina", "gina-password").await;
    assert_eq!(id, gina_id);
    let mine = a.call("GET", "/api/notes", None, &x_auth(&token)).await;
    assert!(mine.raw.contains(&gina_note), "{}", mine.raw);
    // The guest's own token still works; roles in the body reached nothing.
    assert_eq!(
        a.call("GET", "/api/notes", None, &x_auth(&gina_token))
            .await
            .status,
        200
    );
    let users = a.call("GET", "/_/api/users", None, &x_auth(&admin)).await;
    assert!(users.raw.contains(&gina_id), "{}", users.raw);
    let not_admin = a.call("GET", "/_/api/users", None, &x_auth(&token)).await;
    assert_eq!(not_admin.status, 403, "{}", not_admin.raw);
    let again = post(
        a,
        "/auth/guest/upgrade",
        json!({"username": "gina2", "password": "gina-password"}),
        &x_auth(&gina_token),
    )
    .await;
    assert_eq!(again.status, 400, "no longer a guest: {}", again.raw);
    // A taken name, a short password, no name: refused, and the guest stays a guest.
    let (other_id, other) = guest(b).await;
    let users = a.call("GET", "/_/api/users", None, &x_auth(&admin)).await;
    let listed = users.body["users"].as_array().cloned().unwrap_or_default();
    let flag = |id: &str| {
        listed
            .iter()
            .find(|u| u["_id"] == json!(id))
            .map(|u| u["guest"].clone())
    };
    assert_eq!(flag(&other_id), Some(json!(true)), "{}", users.raw);
    assert_eq!(flag(&gina_id), Some(Value::Null), "{}", users.raw);
    for (body, status) in [
        (json!({"username": "GINA", "password": "long-enough"}), 409),
        (json!({"username": "other", "password": "short"}), 400),
        (json!({"password": "long-enough"}), 400),
        (json!({"username": "other"}), 400),
    ] {
        let r = post(a, "/auth/guest/upgrade", body.clone(), &x_auth(&other)).await;
        assert_eq!(r.status, status, "{body}: {}", r.raw);
    }
    let anonymous = post(
        a,
        "/auth/guest/upgrade",
        json!({"username": "x", "password": "long-enough"}),
        &[],
    )
    .await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.raw);

    // An idle guest goes with its notes; a guest in use, the upgraded one and others' notes stay.
    let (idle_id, idle_token) = guest(a).await;
    let idle_note = note(b, &idle_token, "idle").await;
    let plain = post(
        a,
        "/api/plain",
        json!({"by": idle_id}),
        &x_auth(&idle_token),
    )
    .await;
    assert_eq!(plain.status, 201, "{}", plain.raw);
    let (busy_id, busy_token) = guest(b).await;
    let busy_note = note(a, &busy_token, "busy").await;
    let started = Instant::now();
    let mut turn = 0;
    while started.elapsed() < Duration::from_secs(9) {
        let server = if turn % 2 == 0 { a } else { b };
        turn += 1;
        let r = server
            .call("GET", "/api/notes", None, &x_auth(&busy_token))
            .await;
        assert_eq!(r.status, 200, "the guest in use was removed: {}", r.raw);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert_eq!(
        a.call("GET", "/api/notes", None, &x_auth(&idle_token))
            .await
            .status,
        401
    );
    assert_eq!(
        b.call("GET", "/api/notes", None, &x_auth(&idle_token))
            .await
            .status,
        401
    );
    let notes = all_documents(a, &admin, "notes").await;
    assert!(
        !notes.contains(&idle_note),
        "the idle guest's note stayed: {notes}"
    );
    assert!(
        notes.contains(&busy_note) && notes.contains(&gina_note),
        "{notes}"
    );
    // A collection without an owner field is not the guest's: its document stays.
    assert!(all_documents(a, &admin, "plain").await.contains(&idle_id));
    let users = a.call("GET", "/_/api/users", None, &x_auth(&admin)).await;
    assert!(!users.raw.contains(&idle_id), "{}", users.raw);
    assert!(
        users.raw.contains(&busy_id) && users.raw.contains(&gina_id),
        "{}",
        users.raw
    );
}

const GUESTS: &str = "allow_guests = true\nguest_ttl_days = 0.00005\n\
                      guest_rate_limit_per_address = { attempts = 5, per_seconds = 3600 }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_on_sqlite() {
    let ws = Workspace::new();
    ws.config(&config(GUESTS));
    ws.create_user("root", "root-secret", &["admin"]);
    let server = ws.serve();
    guests_keep_their_work_and_idle_ones_go(&server, &server).await;
    // Five guests per client address in the hour (four made above): the sixth is refused.
    guest(&server).await;
    let r = post(&server, "/auth/guest", json!({}), &[]).await;
    assert_eq!(r.status, 429, "{}", r.raw);
    assert!(r.header("retry-after").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_on_two_instances_of_postgres() {
    let ws = Workspace::on_postgres();
    ws.config(&config(GUESTS));
    ws.create_user("root", "root-secret", &["admin"]);
    let a = ws.serve();
    let b = ws.serve();
    guests_keep_their_work_and_idle_ones_go(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_guests_unless_allowed() {
    let ws = Workspace::new();
    ws.config(&config(""));
    let server = ws.serve();
    let r = post(&server, "/auth/guest", json!({}), &[]).await;
    assert_eq!(r.status, 403, "{}", r.raw);
    assert_eq!(r.body["error"], "guests-off", "{}", r.raw);
    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["guests"], false, "{}", methods.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailed_code_gives_a_guest_an_address_and_it_keeps_its_notes() {
    let sink = portico_testkit::mail::SmtpSink::started();
    let ws = Workspace::new();
    ws.config(&format!(
        "{}\n[email]\nsmtp_url = \"{}\"\nfrom = \"Portico <no-reply@example.com>\"\nretry_max_secs = 1\n",
        config("allow_guests = true"),
        sink.url()
    ));
    ws.create_user("root", "root-secret", &["admin"]);
    let kay = ws.create_account("kay", Some("kay@example.com"), "kay-password", &[]);
    let server = ws.serve();
    let admin = server.admin_token("root", "root-secret").await;
    let (guest_id, guest_token) = guest(&server).await;
    let kept = note(&server, &guest_token, "kept").await;
    let code_of = |mail: &Value| -> String {
        let text = mail["text"].as_str().unwrap_or_default().to_owned();
        text.split_whitespace()
            .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
            .unwrap_or_else(|| panic!("no code in {text:?}"))
            .to_owned()
    };

    // An address an account has: the code signs in to that account; the guest stays a guest.
    let r = post(
        &server,
        "/auth/email-code",
        json!({"email": "kay@example.com"}),
        &x_auth(&guest_token),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.raw);
    let code = code_of(&sink.wait_for(1).await[0]);
    let ok = post(
        &server,
        "/auth/email-code/confirm",
        json!({"email": "kay@example.com", "code": code}),
        &[],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    assert_eq!(ok.body["id"], json!(kay), "{}", ok.raw);

    // A free address: the code gives it to the guest, verified; same id, same notes.
    let r = post(
        &server,
        "/auth/email-code",
        json!({"email": "gail@example.com"}),
        &x_auth(&guest_token),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.raw);
    let mail = sink.wait_for(2).await[1].clone();
    assert_eq!(mail["to"], json!(["gail@example.com"]), "{mail}");
    let code = code_of(&mail);
    let ok = post(
        &server,
        "/auth/email-code/confirm",
        json!({"email": "gail@example.com", "code": code}),
        &[],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.raw);
    assert_eq!(ok.body["id"], json!(guest_id), "{}", ok.raw);
    let token = ok.body["token"].as_str().unwrap_or_default().to_owned();
    let mine = server
        .call("GET", "/api/notes", None, &x_auth(&token))
        .await;
    assert!(mine.raw.contains(&kept), "{}", mine.raw);
    let users = server
        .call("GET", "/_/api/users", None, &x_auth(&admin))
        .await;
    let listed = users.body["users"].as_array().cloned().unwrap_or_default();
    let gail = listed
        .iter()
        .find(|u| u["_id"] == json!(guest_id))
        .cloned()
        .unwrap_or_default();
    assert_eq!(gail["guest"], Value::Null, "{gail}");
    assert_eq!(
        gail["emails"],
        json!([{"address": "gail@example.com", "verified": true}]),
        "{gail}"
    );
    // Without a guest's token and with sign-up off, the address no account had gets no code.
    let r = post(
        &server,
        "/auth/email-code",
        json!({"email": "free@example.com"}),
        &[],
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.raw);
    let mail = sink.wait_for(3).await[2].clone();
    assert!(
        mail["text"]
            .as_str()
            .unwrap_or_default()
            .contains("no account has this address"),
        "{mail}"
    );
}
