//! Passkeys (WebAuthn) on the served app, over real HTTP:
//!
//! - a software authenticator in Python (Yubico's python-fido2 and `cryptography`, pinned by
//!   `crates/portico-cli/tests/support/passkeys/requirements.txt`, in the venv `ci/test.sh`
//!   makes) registers and logs in without a browser, on SQLite and across two instances of one
//!   PostgreSQL database: discoverable and with a username, replays, another origin's assertion,
//!   forged signatures and removed passkeys refused; a guest upgrades with a passkey; a passkey
//!   login skips the TOTP prompt;
//! - headless Chromium's virtual authenticator (DevTools protocol, driven by playwright-core from
//!   the admin page's pinned install) on a page of `http://localhost:PORT`.
//!
//! Needs the venv (`ci/test.sh` makes it, or set `PORTICO_PASSKEY_PYTHON`), Node.js with `npm ci`
//! run in `crates/portico-admin/tests/browser`, Debian's `chromium` (or `CHROMIUM`) and Debian's
//! `postgresql`. Without any of them the tests fail saying what is missing; they never skip.
//! (`portico check` and `serve` refusing half-written passkey settings is a test of the binary,
//! in portico-cli.)

use std::path::{Path, PathBuf};

use serde_json::json;

use super::common::{Http, Workspace, x_auth};

/// The passkey helpers: the software authenticator, its venv, the browser script.
fn support() -> PathBuf {
    portico_testkit::support_dir().join("passkeys")
}

/// The venv's python with fido2 (see the module docs).
fn python() -> PathBuf {
    let python = std::env::var_os("PORTICO_PASSKEY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| support().join(".venv/bin/python"));
    let ok = std::process::Command::new(&python)
        .args(["-c", "import fido2, cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the passkey tests need python-fido2 in {}: python3 -m venv {dir}/.venv && \
         {dir}/.venv/bin/pip install -r {dir}/requirements.txt (as ci/test.sh does), or set \
         PORTICO_PASSKEY_PYTHON",
        python.display(),
        dir = support().display()
    );
    python
}

/// Runs a scenario of `soft_authenticator.py`; asserts it passed, returns its output.
async fn scenario(name: &str, args: serde_json::Value) -> String {
    let output = tokio::process::Command::new(python())
        .arg(support().join("soft_authenticator.py"))
        .arg(name)
        .arg(args.to_string())
        .output()
        .await
        .expect("run the software authenticator");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.lines().last() == Some("ok: all"),
        "the {name} scenario failed:\n{stdout}\n{stderr}"
    );
    stdout
}

const ORIGIN: &str = "https://app.portico.test";

fn config(accounts: &str) -> String {
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n\
         [accounts]\napp_url = \"http://app.test\"\n{accounts}\n"
    )
}

fn passkeys(origin: &str, rp_id: &str) -> String {
    config(&format!(
        "allow_guests = true\nrp_id = \"{rp_id}\"\nrp_name = \"Portico tests\"\n\
         origins = [\"{origin}\", \"https://other.{rp_id}\"]"
    ))
}

/// Registers through `a`, logs in through `b` (see `soft_authenticator.py`).
async fn register_here_log_in_there(a: &Http, b: &Http) {
    let (token, _) = a.rest_login("/api/", "ada", "ada-password").await;
    let out = scenario(
        "register_and_login",
        json!({"a": a.base, "b": b.base, "origin": ORIGIN, "token": token, "username": "ada",
               "api": ["GET", "/api/notes"]}),
    )
    .await;
    for step in [
        "ok: a registration for another origin is refused (401)",
        "ok: login/finish, discoverable (200)",
        "ok: the login token on /api/notes (200)",
        "ok: a replayed assertion (same ceremony) is refused (400)",
        "ok: a replayed assertion (new ceremony) is refused (401)",
        "ok: login/finish with a username (200)",
        "ok: a passkey of another account than the one named is refused (401)",
        "ok: a cross-origin assertion is refused (401)",
        "ok: a removed passkey is refused (401)",
    ] {
        assert!(out.contains(step), "missing {step:?} in:\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passkeys_without_a_browser_on_sqlite() {
    let ws = Workspace::new();
    ws.config(&passkeys(ORIGIN, "portico.test"));
    ws.create_user("ada", "ada-password", &[]);
    ws.create_user("tess", "tess-password", &[]);
    let server = ws.serve();
    register_here_log_in_there(&server, &server).await;
    let (token, _) = server.rest_login("/api/", "tess", "tess-password").await;
    scenario(
        "guest_and_totp",
        json!({"a": server.base, "origin": ORIGIN, "token": token, "username": "tess",
               "password": "tess-password"}),
    )
    .await;
    // Begins and finishes that are malformed: clear errors, no panic.
    let begin = server
        .call("POST", "/auth/passkey/login/begin", Some(json!([1])), &[])
        .await;
    assert_eq!(begin.status, 400, "{}", begin.raw);
    for body in [
        json!({}),
        json!({"ceremony": "nope", "credential": {}}),
        json!({"ceremony": "x", "credential": "text"}),
    ] {
        let r = server
            .call(
                "POST",
                "/auth/passkey/login/finish",
                Some(body.clone()),
                &[],
            )
            .await;
        assert_eq!(r.status, 400, "{body}: {}", r.raw);
    }
    let begun = server
        .call("POST", "/auth/passkey/login/begin", None, &[])
        .await;
    let ceremony = begun.body["ceremony"].as_str().unwrap_or_default();
    let r = server
        .call(
            "POST",
            "/auth/passkey/login/finish",
            Some(json!({"ceremony": ceremony, "credential": {"id": "x"}})),
            &[],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert_eq!(r.body["error"], "invalid-credential", "{}", r.raw);
    let anonymous = server
        .call("GET", "/auth/passkeys", None, &x_auth("not-a-token"))
        .await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passkeys_across_two_instances_of_postgres() {
    let ws = Workspace::on_postgres();
    ws.config(&passkeys(ORIGIN, "portico.test"));
    ws.create_user("ada", "ada-password", &[]);
    let a = ws.serve();
    let b = ws.serve();
    register_here_log_in_there(&a, &b).await;
}

/// A port free now on 127.0.0.1 (the page's server takes it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passkeys_in_chromium_with_its_virtual_authenticator() {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "the passkey browser test needs Chromium at {chromium}: apt-get install -y chromium (as \
         ci/test.sh does) or set CHROMIUM"
    );
    let driver = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../portico-admin/tests/browser/node_modules/playwright-core");
    assert!(
        driver.is_dir(),
        "the passkey browser test needs playwright-core: run `npm ci` in \
         crates/portico-admin/tests/browser (as ci/test.sh does)"
    );
    let port = free_port();
    let origin = format!("http://localhost:{port}");
    let ws = Workspace::new();
    ws.config(&passkeys(&origin, "localhost"));
    let ada = ws.create_user("ada", "ada-password", &[]);
    let server = ws.serve();
    let output = tokio::process::Command::new("node")
        .arg(support().join("browser.mjs"))
        .env("PORTICO_URL", &server.base)
        .env("PAGE_PORT", port.to_string())
        .env("PASSKEY_USER", "ada")
        .env("PASSKEY_PASSWORD", "ada-password")
        .env("CHROMIUM", &chromium)
        .output()
        .await
        .expect("run node (the passkey browser test needs Node.js on the PATH)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser script failed:\n{stderr}\n{stdout}"
    );
    let seen: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no results from the browser script:\n{stdout}\n{stderr}"));
    assert_eq!(seen["userId"], json!(ada), "{seen}");
    assert_eq!(seen["who"], "logged in with a passkey", "{seen}");
    assert_eq!(seen["allowCredentials"], json!([]), "username-less: {seen}");
    assert_eq!(seen["apiStatus"], 200, "{seen}");
    assert_eq!(
        (&seen["replayStatus"], &seen["replayError"]),
        (&json!(400), &json!("invalid-ceremony")),
        "{seen}"
    );
    assert_eq!(seen["replayFreshStatus"], 401, "{seen}");
    assert_eq!(seen["listed"], json!(["this browser"]), "{seen}");
    assert_eq!(
        (&seen["removedStatus"], &seen["removedError"]),
        (&json!(401), &json!("passkey-refused")),
        "{seen}"
    );
}
