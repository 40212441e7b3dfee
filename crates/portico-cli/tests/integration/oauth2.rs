//! Sign-in with an OAuth2 provider through the binary: `preset = "github"` against a
//! GitHub-compatible provider (`tests/support/oauth2/github.mjs`, Node's standard library
//! only) that checks the client, the redirect URI and the PKCE verifier and serves `/user` and
//! `/user/emails`. The redirects are followed by hand with a cookie jar, as a browser would.
//! Covered: sign-up, sign-in again to the same account, the exchange, linking only by a
//! verified primary address (and only to a verified account), a state replayed or brought by
//! another browser, a stolen code injected into another sign-in (PKCE), on PostgreSQL a
//! sign-in begun on one instance and finished on another; and `portico check` on the presets.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use reqwest::Url;
use serde_json::{Value, json};

use super::common::{Http, Process, Workspace, text, x_auth};
use super::oidc::{Browser, free_port};

const APP: &str = "http://app.test";
const CLIENT_ID: &str = "portico-app";
const SECRET: &str = "local-github-secret";

/// The GitHub-compatible provider, listening on a free port of this machine.
struct GitHub {
    child: Child,
    base_url: String,
    api_url: String,
    /// Kept open: the provider may write more.
    _stdout: BufReader<std::process::ChildStdout>,
    /// Its stderr, shown when a test fails.
    log: tempfile::NamedTempFile,
}

impl GitHub {
    /// Starts the provider with one OAuth app whose redirect URI is `redirect_uri`.
    fn start(redirect_uri: &str) -> GitHub {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/oauth2/github.mjs");
        let log = tempfile::NamedTempFile::new().expect("log file");
        let mut child = Command::new("node")
            .arg(&script)
            .args([CLIENT_ID, SECRET, redirect_uri])
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
        GitHub {
            child,
            base_url: first["base_url"].as_str().expect("base_url").to_owned(),
            api_url: first["api_url"].as_str().expect("api_url").to_owned(),
            _stdout: stdout,
            log,
        }
    }
}

impl Drop for GitHub {
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

fn query_of(url: &str) -> HashMap<String, String> {
    Url::parse(url)
        .expect("url")
        .query_pairs()
        .into_owned()
        .collect()
}

/// From Portico's `/auth/oauth2/github` to the provider's redirect back, signing in at the
/// provider as `login` (its form's fields: id, login, email, verified); the callback URL, not
/// followed yet.
async fn sign_in_at_github(
    browser: &mut Browser,
    server: &Http,
    github: &GitHub,
    login: &[(&str, &str)],
) -> String {
    let start = browser.get(&server.url("/auth/oauth2/github")).await;
    assert_eq!(start.status, 302, "{}", start.body);
    let authorize = start.location.expect("to the provider");
    assert!(
        authorize.starts_with(&format!("{}/login/oauth/authorize?", github.base_url)),
        "{authorize}"
    );
    let query = query_of(&authorize);
    assert_eq!(query["client_id"], CLIENT_ID);
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["scope"], "read:user user:email");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["code_challenge"].len(), 43, "{query:?}");
    assert_eq!(
        query["redirect_uri"],
        server.url("/auth/oauth2/github/callback")
    );
    assert!(query["state"].len() >= 43, "{query:?}");
    assert!(!authorize.contains("verifier") && !authorize.contains(SECRET));
    let cookie = browser
        .cookie(&server.base, "portico_oauth2")
        .expect("state cookie");
    assert_eq!(cookie, query["state"], "the state is bound to the browser");

    let to_login = browser.get(&authorize).await;
    assert_eq!(to_login.status, 302, "{}", to_login.body);
    let page = to_login.location.expect("to the login page");
    let form = browser.get(&page).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let done = browser.send("POST", &page, Some(login)).await;
    assert_eq!(done.status, 302, "{}", done.body);
    let callback = done.location.expect("back to portico");
    assert!(
        callback.starts_with(&server.url("/auth/oauth2/github/callback?")),
        "{callback}"
    );
    callback
}

/// Follows the provider's redirect back to Portico: `Ok(code)` from `{APP}/oauth2?code=...`,
/// `Err(word)` from `{APP}/oauth2?error=...`.
async fn back_at_portico(browser: &mut Browser, callback: &str) -> Result<String, String> {
    let hop = browser.get(callback).await;
    assert_eq!(hop.status, 302, "{}", hop.body);
    let target = hop.location.expect("to the application");
    assert!(target.starts_with(&format!("{APP}/oauth2?")), "{target}");
    assert!(!target.contains("token"), "no token in a URL: {target}");
    let query = query_of(&target);
    match (query.get("code"), query.get("error")) {
        (Some(code), None) => Ok(code.clone()),
        (None, Some(error)) => Err(error.clone()),
        _ => panic!("neither code nor error: {target}"),
    }
}

/// `[accounts]` with the GitHub preset moved to the local provider, and a routes API whose
/// collection needs a login.
fn config(github: &GitHub, server_url: &str) -> String {
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"items\"\nauth_required = true\n\
         [accounts]\napp_url = \"{APP}\"\nserver_url = \"{server_url}\"\n\
         [[accounts.oauth2]]\npreset = \"github\"\nclient_id = \"{CLIENT_ID}\"\n\
         client_secret_env = \"GITHUB_CLIENT_SECRET\"\n\
         base_url = \"{}\"\napi_url = \"{}\"\n",
        github.base_url, github.api_url
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
        &[("GITHUB_CLIENT_SECRET", SECRET)],
    )
}

async fn exchange(server: &Http, body: Value) -> super::common::Reply {
    server
        .call("POST", "/auth/oauth2/exchange", Some(body), &[])
        .await
}

/// Signs in as `login` from start to login token; the exchange's reply (200 checked).
async fn sign_in(server: &Http, github: &GitHub, login: &[(&str, &str)]) -> Value {
    let mut browser = Browser::default();
    let callback = sign_in_at_github(&mut browser, server, github, login).await;
    let code = back_at_portico(&mut browser, &callback)
        .await
        .unwrap_or_else(|e| panic!("sign-in refused: {e}"));
    let reply = exchange(server, json!({ "code": code })).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    reply.body
}

/// A GitHub user whose primary address is `email`, verified or not.
fn user<'a>(id: &'a str, email: &'a str, verified: bool) -> [(&'a str, &'a str); 4] {
    [
        ("id", id),
        ("login", "octo"),
        ("email", email),
        ("verified", if verified { "true" } else { "false" }),
    ]
}

/// The accounts as `portico users list` prints them.
fn users(ws: &Workspace) -> String {
    let out = ws.run(&["users", "list", "--database", &ws.database()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Carol's account, with a verified address, and Bob's, whose address is not verified.
fn accounts(ws: &Workspace) -> String {
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
    assert!(out.status.success(), "{}", text(&out.stderr));
    bob
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_github_through_the_binary() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let github = GitHub::start(&format!("{base}/auth/oauth2/github/callback"));
    let ws = Workspace::new();
    ws.config(&config(&github, &base));
    let bob = accounts(&ws);
    let server = serve_on(&ws, port);

    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["oauth2"], json!(["github"]), "{}", methods.raw);
    assert_eq!(methods.body["oidc"], json!([]), "{}", methods.raw);

    // Sign-up: a new account with GitHub's verified primary address, and a token that works.
    let mut browser = Browser::default();
    let alice_login = user("1001", "alice@example.org", true);
    let callback = sign_in_at_github(&mut browser, &server, &github, &alice_login).await;
    let code = back_at_portico(&mut browser, &callback)
        .await
        .expect("signed in");
    assert_eq!(code.len(), 43, "256-bit code");
    assert_eq!(
        browser.cookie(&server.base, "portico_oauth2"),
        None,
        "the state cookie is removed"
    );
    let reply = exchange(&server, json!({ "code": code })).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let alice = reply.body["id"].as_str().unwrap().to_owned();
    let token = reply.body["token"].as_str().unwrap().to_owned();
    let items = server
        .call("GET", "/api/items", None, &x_auth(&token))
        .await;
    assert_eq!(items.status, 200, "the token works: {}", items.raw);
    let again = exchange(&server, json!({ "code": code })).await;
    assert_eq!(again.status, 400, "{}", again.raw);
    assert_eq!(again.body["error"], "invalid-code");
    let listed = users(&ws);
    let line = listed
        .lines()
        .find(|l| l.contains("alice@example.org"))
        .unwrap_or_else(|| panic!("alice's address: {listed}"));
    assert!(line.contains(&alice), "{line}");
    assert!(
        !listed.contains("secondary.example.net"),
        "only the primary address is taken: {listed}"
    );
    // The provider's redirect replayed: the state worked once.
    assert_eq!(
        back_at_portico(&mut browser, &callback).await,
        Err("invalid-state".into())
    );

    // Sign-in again: the same account (found by GitHub's user id).
    let second = sign_in(&server, &github, &alice_login).await;
    assert_eq!(second["id"], json!(alice));
    // The codes of either flow are one kind: /auth/oidc/exchange takes this one too.
    let mut browser = Browser::default();
    let callback = sign_in_at_github(&mut browser, &server, &github, &alice_login).await;
    let code = back_at_portico(&mut browser, &callback)
        .await
        .expect("signed in");
    let via_oidc = server
        .call(
            "POST",
            "/auth/oidc/exchange",
            Some(json!({ "code": code })),
            &[],
        )
        .await;
    assert_eq!(via_oidc.status, 200, "{}", via_oidc.raw);
    assert_eq!(via_oidc.body["id"], json!(alice));

    // A callback URL carried to another browser (login CSRF): refused there, and still good in
    // the browser that began the sign-in.
    let mut browser = Browser::default();
    let callback = sign_in_at_github(&mut browser, &server, &github, &alice_login).await;
    let mut other = Browser::default();
    assert_eq!(
        back_at_portico(&mut other, &callback).await,
        Err("invalid-state".into())
    );
    assert!(back_at_portico(&mut browser, &callback).await.is_ok());

    // Linked by a verified address on both sides (case aside).
    let carol = sign_in(&server, &github, &user("3003", "carol@example.org", true)).await;
    assert_eq!(carol["id"], "carol-id", "linked to the verified account");

    // Bob's address is not verified here: GitHub's verified address does not take it over.
    let mut browser = Browser::default();
    let bob_login = user("2002", "bob@example.org", true);
    let callback = sign_in_at_github(&mut browser, &server, &github, &bob_login).await;
    assert_eq!(
        back_at_portico(&mut browser, &callback).await,
        Err("account-not-verified".into())
    );
    let (_, bob_id) = server.rest_login("/api/", "bob", "bob-password").await;
    assert_eq!(bob_id, bob);

    // An address GitHub did not verify is never linked, and what happens is the same whether
    // or not an account has it: a new account without the address.
    let taken = sign_in(&server, &github, &user("4004", "carol@example.org", false)).await;
    let free = sign_in(&server, &github, &user("5005", "dave@example.org", false)).await;
    for new in [&taken, &free] {
        assert_ne!(new["id"], "carol-id");
        assert_ne!(new["id"], json!(bob));
        assert_ne!(new["id"], json!(alice));
    }
    assert_ne!(taken["id"], free["id"]);
    assert!(!users(&ws).contains("dave@example.org"));

    // An unknown provider.
    let unknown = server.call("GET", "/auth/oauth2/nope", None, &[]).await;
    assert_eq!(unknown.status, 404, "{}", unknown.raw);
    assert_eq!(unknown.body["error"], "unknown-provider");
}

/// PKCE: a code stolen from the victim's redirect and brought back in the attacker's own
/// sign-in (with the attacker's state) is traded with the attacker's verifier, which the
/// provider refuses; and the provider does check verifiers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stolen_code_in_another_sign_in_is_refused_by_pkce() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let github = GitHub::start(&format!("{base}/auth/oauth2/github/callback"));
    let ws = Workspace::new();
    ws.config(&config(&github, &base));
    let server = serve_on(&ws, port);

    // The provider refuses a token request whose verifier is not the challenge's.
    let mut browser = Browser::default();
    let victim = user("7007", "victim@example.org", true);
    let callback = sign_in_at_github(&mut browser, &server, &github, &victim).await;
    let http = reqwest::Client::new();
    let wrong: Value = http
        .post(format!("{}/login/oauth/access_token", github.base_url))
        .header("accept", "application/json")
        .form(&[
            ("client_id", CLIENT_ID),
            ("client_secret", SECRET),
            ("code", query_of(&callback)["code"].as_str()),
            (
                "code_verifier",
                "a-verifier-that-is-not-the-one-of-this-code-at-all",
            ),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wrong["error"], "bad_verification_code", "{wrong}");
    assert!(wrong.get("access_token").is_none(), "{wrong}");

    // The victim signs in; the attacker intercepts the redirect back, and injects its code
    // into a sign-in the attacker began (so the state and its cookie are the attacker's).
    let mut victim_browser = Browser::default();
    let stolen = sign_in_at_github(&mut victim_browser, &server, &github, &victim).await;
    let mut attacker = Browser::default();
    let start = attacker.get(&server.url("/auth/oauth2/github")).await;
    assert_eq!(start.status, 302);
    let attacker_state = query_of(&start.location.expect("to the provider"))["state"].clone();
    let mut injected = Url::parse(&stolen).unwrap();
    let code = query_of(&stolen)["code"].clone();
    injected
        .query_pairs_mut()
        .clear()
        .append_pair("code", &code)
        .append_pair("state", &attacker_state);
    assert_eq!(
        back_at_portico(&mut attacker, injected.as_str()).await,
        Err("invalid-response".into()),
        "the attacker's verifier does not match the victim's challenge"
    );
    assert!(
        !users(&ws).contains("victim@example.org"),
        "no account was made for the victim's identity"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_sign_in_begun_on_one_instance_finishes_on_another_on_postgres() {
    let (port_a, port_b) = (free_port(), free_port());
    let base_a = format!("http://127.0.0.1:{port_a}");
    let github = GitHub::start(&format!("{base_a}/auth/oauth2/github/callback"));
    let ws = Workspace::on_postgres();
    ws.config(&config(&github, &base_a));
    let a = serve_on(&ws, port_a);
    let b = serve_on(&ws, port_b);

    let mut browser = Browser::default();
    let dana = user("8008", "dana@example.org", true);
    let callback = sign_in_at_github(&mut browser, &a, &github, &dana).await;
    // The provider sent the browser to instance A's address; a load balancer sends it to B.
    let state = browser.cookie(&a.base, "portico_oauth2").expect("cookie");
    let on_b = callback.replace(&a.base, &b.base);
    browser
        .cookies
        .entry(format!("127.0.0.1:{port_b}"))
        .or_default()
        .insert("portico_oauth2".into(), state);
    let code = back_at_portico(&mut browser, &on_b)
        .await
        .expect("finished on B");
    assert_eq!(
        back_at_portico(&mut browser, &callback).await,
        Err("invalid-state".into()),
        "the state is used up for A too"
    );
    let reply = exchange(&a, json!({ "code": code })).await;
    assert_eq!(reply.status, 200, "{}", reply.raw);
    let token = reply.body["token"].as_str().unwrap().to_owned();
    let items = b.call("GET", "/api/items", None, &x_auth(&token)).await;
    assert_eq!(items.status, 200, "{}", items.raw);
    assert_eq!(exchange(&b, json!({ "code": code })).await.status, 400);
    let again = sign_in(&a, &github, &dana).await;
    assert_eq!(again["id"], reply.body["id"]);
}

fn check(body: &str) -> (bool, String, String) {
    let ws = Workspace::new();
    ws.config(body);
    let out = ws.run(&["check", "--config", "portico.toml"]);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

const ACCOUNTS: &str = "[accounts]\nserver_url = \"https://api.example.com\"\n";

/// The presets resolve to their providers' addresses (which `check` prints, as no provider is
/// reachable here), and mistakes are named with their key.
#[test]
fn check_resolves_the_presets_and_names_mistakes() {
    let (ok, out, err) = check(&format!(
        "{ACCOUNTS}\
         [[accounts.oidc]]\nname = \"google\"\npreset = \"google\"\nclient_id = \"g\"\n\
         client_secret_env = \"GOOGLE_SECRET\"\n\
         [[accounts.oidc]]\nname = \"microsoft\"\npreset = \"microsoft\"\nclient_id = \"m\"\n\
         client_secret_env = \"MS_SECRET\"\n\
         [[accounts.oidc]]\nname = \"contoso\"\npreset = \"microsoft\"\ntenant = \"contoso.onmicrosoft.com\"\n\
         client_id = \"c\"\nclient_secret_env = \"MS_SECRET\"\n\
         [[accounts.oauth2]]\npreset = \"github\"\nclient_id = \"gh\"\nclient_secret_env = \"GH_SECRET\"\n\
         [[accounts.oauth2]]\nname = \"ghe\"\npreset = \"github\"\nbase_url = \"https://ghe.example.com\"\n\
         client_id = \"ghe\"\nclient_secret_env = \"GHE_SECRET\"\n\
         [[accounts.oauth2]]\npreset = \"gitlab\"\nclient_id = \"gl\"\nclient_secret_env = \"GL_SECRET\"\n\
         [[accounts.oauth2]]\npreset = \"discord\"\nclient_id = \"dc\"\nclient_secret_env = \"DC_SECRET\"\n\
         [[accounts.oauth2]]\nname = \"corp\"\nauth_url = \"https://id.example.com/authorize\"\n\
         token_url = \"https://id.example.com/token\"\nuserinfo_url = \"https://id.example.com/me\"\n\
         scopes = [\"profile\"]\nid_field = \"data.id\"\nemail_verified_field = \"data.email_ok\"\n\
         client_id = \"corp\"\nclient_secret_env = \"CORP_SECRET\"\n"
    ));
    assert!(ok, "{out}{err}");
    for line in [
        "sign-in /auth/oidc/google (OpenID Connect, preset google): issuer https://accounts.google.com, scopes openid email profile",
        "sign-in /auth/oidc/microsoft (OpenID Connect, preset microsoft): issuer https://login.microsoftonline.com/common/v2.0,",
        "sign-in /auth/oidc/contoso (OpenID Connect, preset microsoft): issuer https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0,",
        "sign-in /auth/oauth2/github (OAuth2, preset github): auth_url https://github.com/login/oauth/authorize, token_url https://github.com/login/oauth/access_token, userinfo_url https://api.github.com/user, emails_url https://api.github.com/user/emails, scopes read:user user:email",
        "sign-in /auth/oauth2/ghe (OAuth2, preset github): auth_url https://ghe.example.com/login/oauth/authorize, token_url https://ghe.example.com/login/oauth/access_token, userinfo_url https://ghe.example.com/api/v3/user,",
        "sign-in /auth/oauth2/gitlab (OAuth2, preset gitlab): auth_url https://gitlab.com/oauth/authorize, token_url https://gitlab.com/oauth/token, userinfo_url https://gitlab.com/api/v4/user, scopes read_user",
        "sign-in /auth/oauth2/discord (OAuth2, preset discord): auth_url https://discord.com/oauth2/authorize, token_url https://discord.com/api/oauth2/token, userinfo_url https://discord.com/api/users/@me, scopes identify email",
        "sign-in /auth/oauth2/corp (OAuth2): auth_url https://id.example.com/authorize, token_url https://id.example.com/token, userinfo_url https://id.example.com/me, scopes profile",
    ] {
        assert!(out.contains(line), "{line}\nnot in:\n{out}");
    }

    let mistakes = [
        (
            "[[accounts.oauth2]]\npreset = \"bitbucket\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oauth2.preset`: unknown preset \"bitbucket\": write \"github\", \"gitlab\" or \"discord\"",
        ),
        (
            "[[accounts.oauth2]]\npreset = \"github\"\nclient_id = \" \"\nclient_secret_env = \"S\"\n",
            "key `accounts.oauth2.client_id`: write the client id",
        ),
        (
            "[[accounts.oauth2]]\npreset = \"github\"\nclient_secret_env = \"S\"\n",
            "client_id",
        ),
        (
            "[[accounts.oauth2]]\nname = \"corp\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oauth2.auth_url`: write a preset (\"github\", \"gitlab\" or \"discord\") or the provider's three addresses",
        ),
        (
            "[[accounts.oauth2]]\npreset = \"github\"\nbase_url = \"http://github.example.com\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oauth2.base_url`: write an https:// address",
        ),
        (
            "[[accounts.oauth2]]\npreset = \"github\"\ntoken_url = \"https://x.example/t\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oauth2.token_url`: the preset sets this",
        ),
        (
            "[[accounts.oauth2]]\npreset = \"github\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n\
             [[accounts.oauth2]]\npreset = \"github\"\nclient_id = \"y\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oauth2.name`: another [[accounts.oauth2]] provider is named \"github\"",
        ),
        (
            "[[accounts.oidc]]\nname = \"x\"\npreset = \"yahoo\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oidc.preset`: unknown preset \"yahoo\": write \"google\" or \"microsoft\"",
        ),
        (
            "[[accounts.oidc]]\nname = \"apple\"\npreset = \"apple\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oidc.preset`: preset \"apple\" is not supported: Sign in with Apple sends the browser back with a cross-site POST",
        ),
        (
            "[[accounts.oidc]]\nname = \"ms\"\npreset = \"microsoft\"\ntenant = \"consumers\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oidc.tenant`: tenant \"consumers\" is not supported",
        ),
        (
            "[[accounts.oidc]]\nname = \"g\"\npreset = \"google\"\ntenant = \"x\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oidc.tenant`: tenant goes with preset = \"microsoft\" only",
        ),
        (
            "[[accounts.oidc]]\nname = \"g\"\npreset = \"google\"\nissuer = \"https://accounts.google.com\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oidc.issuer`: the preset sets the issuer",
        ),
        (
            "[[accounts.oidc]]\nname = \"g\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
            "key `accounts.oidc.issuer`: write the provider's https:// issuer",
        ),
    ];
    for (section, expected) in mistakes {
        let (ok, out, err) = check(&format!("{ACCOUNTS}{section}"));
        assert!(!ok, "{section}: accepted\n{out}");
        assert!(
            err.contains(expected),
            "{section}\nexpected {expected:?} in:\n{err}"
        );
    }
    // Without server_url, the providers have nowhere to send the browser back to.
    let (ok, _, err) = check(
        "[accounts]\n[[accounts.oauth2]]\npreset = \"discord\"\nclient_id = \"x\"\nclient_secret_env = \"S\"\n",
    );
    assert!(!ok);
    assert!(
        err.contains("[[accounts.oauth2]] needs accounts.server_url"),
        "{err}"
    );
}
