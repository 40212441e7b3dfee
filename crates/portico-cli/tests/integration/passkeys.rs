//! Passkeys (WebAuthn) settings through the binary: `portico check` and `serve` refuse
//! half-written passkey settings, and without them passkeys are off. The ceremonies themselves
//! (a software authenticator, two PostgreSQL instances, Chromium's virtual authenticator) run
//! on the served app in `crates/portico-accounts/tests/integration/passkeys.rs`.

use super::common::Workspace;

fn config(accounts: &str) -> String {
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n\
         [accounts]\napp_url = \"http://app.test\"\n{accounts}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_written_passkey_settings_are_refused_and_passkeys_are_off_without_them() {
    let ws = Workspace::new();
    for (accounts, key, why) in [
        (
            "rp_id = \"example.com\"",
            "accounts.origins",
            "passkeys need accounts.origins",
        ),
        (
            "origins = [\"https://example.com\"]",
            "accounts.rp_id",
            "passkeys need accounts.rp_id",
        ),
        (
            "rp_name = \"Example\"",
            "accounts.rp_id",
            "passkeys need accounts.rp_id",
        ),
        (
            "rp_id = \"example.com\"\norigins = [\"https://example.org\"]",
            "accounts.origins",
            "is not on the relying party id's domain",
        ),
        (
            "rp_id = \"example.com\"\norigins = [\"example.com\"]",
            "accounts.origins",
            "write each origin as scheme://host[:port]",
        ),
        (
            "rp_id = \"https://example.com\"\norigins = [\"https://example.com\"]",
            "accounts.rp_id",
            "the relying party id must be a domain name",
        ),
    ] {
        let refused = ws.check_refuses(&config(accounts));
        assert!(
            refused.contains(key) && refused.contains(why),
            "{accounts}: {refused}"
        );
        let serve = ws.serve_refuses();
        assert!(
            serve.contains(key) && serve.contains(why),
            "{accounts}: {serve}"
        );
    }
    ws.config(&config(""));
    let server = ws.serve();
    let methods = server.call("GET", "/auth/methods", None, &[]).await;
    assert_eq!(methods.body["passkeys"], false, "{}", methods.raw);
    let r = server
        .call("POST", "/auth/passkey/login/begin", None, &[])
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("passkeys-off")),
        "{}",
        r.raw
    );
}
