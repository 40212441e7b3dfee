//! The small app of the account tests, which send mail: a routes door with default login and
//! an `items` collection that needs a login, the auto door over `things`, accounts whose links
//! point at [`APP_URL`], and mail to an [`crate::mail::SmtpSink`]. With the helpers that read
//! its mails and call it.

use serde_json::{Value, json};

use crate::mail::SmtpSink;
use crate::{Http, Reply};

/// The app address the mailed links point at.
pub const APP_URL: &str = "http://app.test";

/// What the app adds to the base config.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra<'a> {
    /// `allow_register = true` in `[auto]`: sign-up through `POST /users/register`.
    pub register: bool,
    /// `[admin] enabled = true`: the admin page.
    pub admin: bool,
    /// Lines added to `[accounts]`.
    pub accounts: &'a str,
}

/// The config of the app, mailing through `smtp` (a sink's [`SmtpSink::url`]).
pub fn config(smtp: &str, extra: Extra<'_>) -> String {
    let register = if extra.register {
        "allow_register = true\n"
    } else {
        ""
    };
    let admin = if extra.admin {
        "[admin]\nenabled = true\n"
    } else {
        ""
    };
    let accounts = extra.accounts;
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [[api.collection]]\nname = \"items\"\nauth_required = true\n\
         [auto]\nauth_failure_delay_ms = 0\ncollections = [\"things\"]\n{register}\
         {admin}\
         [accounts]\napp_url = \"{APP_URL}\"\n{accounts}\n\
         [email]\nsmtp_url = \"{smtp}\"\nfrom = \"Portico <no-reply@example.com>\"\nretry_max_secs = 1\n"
    )
}

/// A POST of `body` to `path` with `headers`.
pub async fn post(server: &Http, path: &str, body: Value, headers: &[(&str, &str)]) -> Reply {
    server.call("POST", path, Some(body), headers).await
}

/// The token of the link to `{APP_URL}/{path}?token=...` in a mail to `to`.
pub fn link_token(mail: &Value, to: &str, path: &str) -> String {
    crate::mail::link_token(mail, to, &format!("{APP_URL}/{path}"))
}

/// The code and the link's token of a sign-in mail to `to`.
pub fn code_and_token(mail: &Value, to: &str) -> (String, String) {
    crate::mail::code_and_token(mail, to, &format!("{APP_URL}/email-code"))
}

/// Asks for a sign-in code for `email` and waits for mail number `n` (1-based); returns it.
pub async fn request_code(server: &Http, sink: &SmtpSink, email: &str, n: usize) -> Value {
    let r = post(server, "/auth/email-code", json!({"email": email}), &[]).await;
    assert_eq!(r.status, 202, "{}", r.raw);
    let mails = sink.wait_for(n).await;
    mails[n - 1].clone()
}

/// A code other than `code`, of as many digits.
pub fn wrong_code(code: &str) -> String {
    let n: u32 = code.parse().unwrap_or(0);
    format!("{:06}", (n + 1) % 1_000_000)
}

/// The status of `GET /api/items` with the login token `token`.
pub async fn items_status(server: &Http, token: &str) -> u16 {
    server
        .call("GET", "/api/items", None, &[("X-Auth-Token", token)])
        .await
        .status
}
