//! Sign-in with an OpenID Connect provider through the binary, against a real provider (npm's
//! oidc-provider, `tests/support/oidc/provider.mjs`, installed by `.ci/run` with `npm ci`):
//! the redirects are followed by hand over HTTP with a cookie jar, as a browser would, and
//! the provider's login form is posted. Covered: the whole code flow and the exchange for a
//! login token that works; a state replayed, altered or brought by another browser; an ID
//! token with another sign-in's nonce; linking by a verified address only, and the same
//! outcome whether or not an account has an unverified provider address; two-factor codes on
//! the exchange; on PostgreSQL, a sign-in begun on one instance and finished on another.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use reqwest::Url;
use serde_json::{Value, json};

use super::common::{Http, Process, Workspace, x_auth};

const APP: &str = "http://app.test";
const SECRET: &str = "local-test-secret";

/// The test provider, listening on a free port of this machine.
struct Provider {
    child: Child,
    issuer: String,
    /// Kept open: the provider may write more.
    _stdout: BufReader<std::process::ChildStdout>,
    /// Its stderr, shown when a test fails.
    log: tempfile::NamedTempFile,
}

impl Provider {
    /// Starts the provider with one client whose redirect URI is `redirect_uri`.
    fn start(redirect_uri: &str) -> Provider {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "run `npm ci` in {} (.ci/run does)",
            dir.display()
        );
        let log = tempfile::NamedTempFile::new().expect("log file");
        let mut child = Command::new("node")
            .arg(dir.join("provider.mjs"))
            .args(["portico", SECRET, redirect_uri])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.reopen().expect("log file")))
            .spawn()
            .expect("start node (Debian: nodejs)");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("read the provider's first line");
        let first: Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            panic!(
                "the provider did not start: {line:?}\n{}",
                std::fs::read_to_string(log.path()).unwrap_or_default()
            )
        });
        Provider {
            child,
            issuer: first["issuer"].as_str().expect("issuer").to_owned(),
            _stdout: stdout,
            log,
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "provider log:\n{}",
                std::fs::read_to_string(self.log.path()).unwrap_or_default()
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A browser driven by hand: cookies kept per host and port (paths ignored), redirects not
/// followed (each hop is a step of the test).
#[derive(Default)]
pub(super) struct Browser {
    pub(super) cookies: HashMap<String, HashMap<String, String>>,
}

/// One hop: the status and where it points.
pub(super) struct Hop {
    pub(super) status: u16,
    pub(super) location: Option<String>,
    pub(super) body: String,
}

fn origin(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

impl Browser {
    pub(super) async fn send(
        &mut self,
        method: &str,
        url: &str,
        form: Option<&[(&str, &str)]>,
    ) -> Hop {
        let url = Url::parse(url).expect("url");
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let mut request = http.request(method.parse().expect("method"), url.clone());
        let jar = self.cookies.entry(origin(&url)).or_default();
        if !jar.is_empty() {
            let cookie: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header("cookie", cookie.join("; "));
        }
        if let Some(form) = form {
            let body: String = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            request = request
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body);
        }
        let response = request.send().await.expect("request");
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap_or_default();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let Some((name, value)) = pair.trim().split_once('=') else {
                continue;
            };
            let gone = attributes.to_ascii_lowercase().contains("max-age=0")
                || attributes.contains("1970")
                || value.is_empty();
            if gone {
                jar.remove(name);
            } else {
                jar.insert(name.to_owned(), value.to_owned());
            }
        }
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(|l| url.join(l).expect("location").to_string());
        let body = response.text().await.unwrap_or_default();
        Hop {
            status,
            location,
            body,
        }
    }

    pub(super) async fn get(&mut self, url: &str) -> Hop {
        self.send("GET", url, None).await
    }

    /// The value of the cookie `name` this browser holds for `url`'s host.
    pub(super) fn cookie(&self, url: &str, name: &str) -> Option<String> {
        let url = Url::parse(url).expect("url");
        self.cookies.get(&origin(&url))?.get(name).cloned()
    }

    /// From Portico's `/auth/oidc/local` to the provider's redirect back, signing in at the
    /// provider with `login` (its form's fields); the callback URL, not followed yet.
    async fn sign_in_at_provider(&mut self, server: &Http, login: &[(&str, &str)]) -> String {
        let start = self.get(&server.url("/auth/oidc/local")).await;
        assert_eq!(start.status, 302, "{}", start.body);
        let authorize = start.location.expect("to the provider");
        let query: HashMap<String, String> = Url::parse(&authorize)
            .expect("url")
            .query_pairs()
            .into_owned()
            .collect();
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["response_type"], "code");
        assert!(
            query["state"].len() >= 43 && query["nonce"].len() >= 43,
            "{query:?}"
        );
        assert!(!authorize.contains("verifier") && !authorize.contains(SECRET));
        let cookie = self
            .cookie(&server.base, "portico_oidc")
            .expect("state cookie");
        assert_eq!(cookie, query["state"], "the state is bound to the browser");

        let to_login = self.get(&authorize).await;
        assert_eq!(to_login.status, 303, "{}", to_login.body);
        let interaction = to_login.location.expect("to the login");
        let form = self.get(&interaction).await;
        assert_eq!(form.status, 200, "{}", form.body);
        let done = self.send("POST", &interaction, Some(login)).await;
        assert_eq!(done.status, 303, "{}", done.body);
        let resume = self.get(&done.location.expect("resume")).await;
        assert_eq!(resume.status, 303, "{}", resume.body);
        let callback = resume.location.expect("back to portico");
        assert!(
            callback.starts_with(&server.url("/auth/oidc/local/callback?")),
            "{callback}"
        );
        callback
    }

    /// Follows the provider's redirect back to Portico: `Ok(code)` from
    /// `{APP}/oidc?code=...`, `Err(word)` from `{APP}/oidc?error=...`.
    async fn back_at_portico(&mut self, callback: &str) -> Result<String, String> {
        let hop = self.get(callback).await;
        assert_eq!(hop.status, 302, "{}", hop.body);
        let target = hop.location.expect("to the application");
        assert!(target.starts_with(&format!("{APP}/oidc?")), "{target}");
        assert!(
            !target.contains("token"),
            "no login token in a URL: {target}"
        );
        let query: HashMap<String, String> = Url::parse(&target)
            .expect("url")
            .query_pairs()
            .into_owned()
            .collect();
        match (query.get("code"), query.get("error")) {
            (Some(code), None) => Ok(code.clone()),
            (None, Some(error)) => Err(error.clone()),
            _ => panic!("neither code nor error: {target}"),
        }
    }
}

/// `[accounts]` with the provider, and a routes API whose collection needs a login.
fn config(issuer: &str, server_url: &str) -> String {
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"items\"\nauth_required = true\n\
         [accounts]\napp_url = \"{APP}\"\nserver_url = \"{server_url}\"\n\
         [[accounts.oidc]]\nname = \"local\"\nissuer = \"{issuer}\"\nclient_id = \"portico\"\n\
         client_secret_env = \"OIDC_LOCAL_SECRET\"\n"
    )
}

fn serve_on(ws: &Workspace, port: u16) -> Process {
    Process::start_with_env(
        &ws.path(""),
        &[
            "serve",
            "--config",
            "portico.toml",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ],
        &[("OIDC_LOCAL_SECRET", SECRET)],
    )
}

async fn exchange(server: &Http, body: Value) -> super::common::Reply {
    server
        .call("POST", "/auth/oidc/exchange", Some(body), &[])
        .await
}

/// Signs in as `login` from start to login token; the exchange's reply (200 checked).
async fn sign_in(server: &Http, login: &[(&str, &str)]) -> Value {
    let mut browser = Browser::default();
    let callback = browser.sign_in_at_provider(server, login).await;
    let code = browser
        .back_at_portico(&callback)
        .await
        .unwrap_or_else(|e| panic!("sign-in refused: {e}"));
    let reply = exchange(server, json!({ "code": code })).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply.body
}

fn verified(sub: &'static str, email: &'static str) -> [(&'static str, &'static str); 3] {
    [("sub", sub), ("email", email), ("email_verified", "true")]
}

fn unverified(sub: &'static str, email: &'static str) -> [(&'static str, &'static str); 3] {
    [("sub", sub), ("email", email), ("email_verified", "false")]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_a_provider_through_the_binary() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let provider = Provider::start(&format!("{base}/auth/oidc/local/callback"));
    let ws = Workspace::new();
    ws.config(&config(&provider.issuer, &base));
    let bob = ws.add_account("bob", Some("bob@example.org"), "bob-password", &[]);
    std::fs::write(
        ws.path("carol.json"),
        json!([{"_id": "carol-id", "username": "carol",
                "emails": [{"address": "Carol@Example.org", "verified": true}]}])
        .to_string(),
    )
    .unwrap();
    let db = ws.database();
    let out = ws.run(&[
        "import",
        "--database",
        &db,
        "--collection",
        "users",
        "carol.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = serve_on(&ws, port);

    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["oidc"], json!(["local"]), "{}", methods.raw);

    // The whole flow: a new account, with the provider's verified address, and a login token
    // that works (the code works once).
    let mut browser = Browser::default();
    let callback = browser
        .sign_in_at_provider(&server, &verified("alice-sub", "alice@example.org"))
        .await;
    let code = browser.back_at_portico(&callback).await.expect("signed in");
    assert_eq!(code.len(), 43, "256-bit code");
    assert_eq!(
        browser.cookie(&server.base, "portico_oidc"),
        None,
        "the state cookie is removed"
    );
    let reply = exchange(&server, json!({ "code": code })).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let alice = reply.body["id"].as_str().unwrap().to_owned();
    let token = reply.body["token"].as_str().unwrap().to_owned();
    assert!(reply.body["tokenExpires"].is_string(), "{}", reply.raw);
    let items = server
        .call("GET", "/api/items", None, &x_auth(&token))
        .await;
    assert_eq!(items.status, 200, "the token works: {}", items.raw);
    let again = exchange(&server, json!({ "code": code })).await;
    assert_eq!(again.status, 400, "{}", again.raw);
    assert_eq!(again.body["error"], "invalid-code");
    // The provider's redirect replayed: the state worked once.
    assert_eq!(
        browser.back_at_portico(&callback).await,
        Err("invalid-state".into())
    );

    // A second sign-in of the same identity is the same account.
    let second = sign_in(&server, &verified("alice-sub", "alice@example.org")).await;
    assert_eq!(second["id"], json!(alice));

    // The state altered on the way back.
    let mut browser = Browser::default();
    let callback = browser
        .sign_in_at_provider(&server, &verified("alice-sub", "alice@example.org"))
        .await;
    let mut url = Url::parse(&callback).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .map(|(k, v)| {
            if k == "state" {
                (k, format!("{v}x"))
            } else {
                (k, v)
            }
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    assert_eq!(
        browser.back_at_portico(url.as_str()).await,
        Err("invalid-state".into())
    );

    // A callback URL carried to another browser (login CSRF): refused there, and the state it
    // carried is still good in the browser that began the sign-in.
    let mut browser = Browser::default();
    let callback = browser
        .sign_in_at_provider(&server, &verified("alice-sub", "alice@example.org"))
        .await;
    let mut other = Browser::default();
    assert_eq!(
        other.back_at_portico(&callback).await,
        Err("invalid-state".into())
    );
    assert!(browser.back_at_portico(&callback).await.is_ok());

    // An ID token with a nonce other than this sign-in's.
    let mut browser = Browser::default();
    let mischief = [
        ("sub", "eve-sub"),
        ("email", "eve@example.org"),
        ("email_verified", "true"),
        ("mischief", "nonce"),
    ];
    let callback = browser.sign_in_at_provider(&server, &mischief).await;
    assert_eq!(
        browser.back_at_portico(&callback).await,
        Err("invalid-response".into())
    );

    // Linked by a verified address on both sides (case aside).
    let carol = sign_in(&server, &verified("carol-sub", "carol@example.org")).await;
    assert_eq!(carol["id"], "carol-id", "linked to the verified account");

    // Bob's address is not verified here: the provider's verified address does not take over
    // the account (which anyone could have made in Bob's name).
    let mut browser = Browser::default();
    let callback = browser
        .sign_in_at_provider(&server, &verified("bob-sub", "bob@example.org"))
        .await;
    assert_eq!(
        browser.back_at_portico(&callback).await,
        Err("account-not-verified".into())
    );
    // Bob can still log in with his password.
    let (_, bob_id) = server.rest_login("/api/", "bob", "bob-password").await;
    assert_eq!(bob_id, bob);

    // An address the provider did not verify is never linked, and what happens is the same
    // whether or not an account has it: a new account without the address.
    let taken = sign_in(&server, &unverified("mallory-1", "carol@example.org")).await;
    let free = sign_in(&server, &unverified("mallory-2", "nobody@example.org")).await;
    for new in [&taken, &free] {
        assert_ne!(new["id"], "carol-id");
        assert_ne!(new["id"], json!(bob));
        assert_ne!(new["id"], json!(alice));
    }
    assert_ne!(taken["id"], free["id"]);
    let listed = ws.run(&["users", "list", "--database", &db]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(!listed.contains("nobody@example.org"), "{listed}");

    // Two-factor codes on: the exchange needs `totp` (the code stays usable without it).
    let auth = x_auth(&token);
    let setup = server
        .call("POST", "/auth/totp/setup", Some(json!({})), &auth)
        .await;
    assert_eq!(setup.status, 200, "{}", setup.raw);
    let secret = setup.body["secret"].as_str().unwrap().to_owned();
    let now = chrono::Utc::now().timestamp();
    let code_at = |t: i64| portico_platform::totp_code(&secret, t).expect("code");
    let enable = server
        .call(
            "POST",
            "/auth/totp/enable",
            Some(json!({"code": code_at(now - 30)})),
            &auth,
        )
        .await;
    assert_eq!(enable.status, 200, "{}", enable.raw);
    let mut browser = Browser::default();
    let callback = browser
        .sign_in_at_provider(&server, &verified("alice-sub", "alice@example.org"))
        .await;
    let code = browser.back_at_portico(&callback).await.expect("signed in");
    let missing = exchange(&server, json!({ "code": code })).await;
    assert_eq!(missing.status, 401, "{}", missing.raw);
    assert_eq!(missing.body["error"], "totp-required");
    let with_totp = exchange(&server, json!({ "code": code, "totp": code_at(now) })).await;
    assert_eq!(with_totp.status, 200, "{}", with_totp.raw);
    assert_eq!(with_totp.body["id"], json!(alice));

    // An unknown provider.
    let unknown = server.call("GET", "/auth/oidc/nope", None, &[]).await;
    assert_eq!(unknown.status, 404, "{}", unknown.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_begun_on_one_instance_finishes_on_another_on_postgres() {
    let (port_a, port_b) = (free_port(), free_port());
    let base_a = format!("http://127.0.0.1:{port_a}");
    let provider = Provider::start(&format!("{base_a}/auth/oidc/local/callback"));
    let ws = Workspace::on_postgres();
    ws.config(&config(&provider.issuer, &base_a));
    let a = serve_on(&ws, port_a);
    let b = serve_on(&ws, port_b);

    let mut browser = Browser::default();
    let callback = browser
        .sign_in_at_provider(&a, &verified("dana-sub", "dana@example.org"))
        .await;
    // The provider sent the browser to instance A's address; a load balancer sends it to B.
    let state = browser.cookie(&a.base, "portico_oidc").expect("cookie");
    let on_b = callback.replace(&a.base, &b.base);
    browser
        .cookies
        .entry(format!("127.0.0.1:{port_b}"))
        .or_default()
        .insert("portico_oidc".into(), state);
    let code = browser.back_at_portico(&on_b).await.expect("finished on B");
    // The state is used up for A too, and the code from B works on A, once.
    assert_eq!(
        browser.back_at_portico(&callback).await,
        Err("invalid-state".into())
    );
    let reply = exchange(&a, json!({ "code": code })).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let token = reply.body["token"].as_str().unwrap().to_owned();
    let items = b.call("GET", "/api/items", None, &x_auth(&token)).await;
    assert_eq!(items.status, 200, "{}", items.raw);
    assert_eq!(exchange(&b, json!({ "code": code })).await.status, 400);
    let again = sign_in(&a, &verified("dana-sub", "dana@example.org")).await;
    assert_eq!(again["id"], reply.body["id"]);
}

/// Each start stores a pending sign-in, so starts are limited per client address
/// (`oidc_rate_limit_per_address`): past it 429 with `Retry-After`, and other clients go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_starts_are_limited_per_client_address() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let provider = Provider::start(&format!("{base}/auth/oidc/local/callback"));
    let ws = Workspace::new();
    let config = config(&provider.issuer, &base).replace(
        "[accounts]\n",
        "[accounts]\noidc_rate_limit_per_address = { attempts = 3, per_seconds = 600 }\n",
    );
    ws.config(&format!("trusted_proxies = [\"127.0.0.1\"]\n{config}"));
    let server = serve_on(&ws, port);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let start = |client: &'static str| {
        http.get(server.url("/auth/oidc/local"))
            .header("x-forwarded-for", client)
            .send()
    };
    for n in 0..3 {
        let started = start("203.0.113.5").await.unwrap();
        assert_eq!(started.status(), 302, "start {n}");
        let to = started.headers()["location"].to_str().unwrap().to_owned();
        assert!(to.starts_with(&provider.issuer), "{to}");
    }
    let refused = start("203.0.113.5").await.unwrap();
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=600).contains(&wait), "{wait}");
    assert!(refused.headers().get("location").is_none());
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "too-many-requests", "{body}");
    assert_eq!(start("203.0.113.6").await.unwrap().status(), 302);
}
