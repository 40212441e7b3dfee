//! The credential variants both front doors must answer alike, as data: each door's parity test
//! sends every row to its login route and checks the outcome class.
//!
//! The setup every door's test makes: user **ada** (email `ada@example.com`, password
//! `correct horse`) and user **bob** (email `bob@example.com`, password `bob's own`). In bodies,
//! `{ADA_ID}` stands for ada's `_id`, `{DIGEST}` for the SHA-256 hex digest of ada's password
//! and `{DIGEST_UPPER}` for the same in upper case.

/// What a login attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginOutcome {
    /// A token for ada.
    Success,
    /// Incorrect credentials.
    Unauthorized,
    /// Too many attempts (with `Retry-After`).
    TooMany,
    /// A body the door cannot read at all.
    BadRequest,
}

/// One row: a login body, with how many wrong-password attempts for ada precede it from the
/// same address.
#[derive(Debug, Clone, Copy)]
pub struct LoginVariant {
    /// What the row checks.
    pub name: &'static str,
    /// The `Content-Type` sent.
    pub content_type: &'static str,
    /// The body sent (with the placeholders of the module docs).
    pub body: &'static str,
    /// Wrong-password logins as ada sent first (`{"username":"ada","password":"wrong"}`).
    pub failures_before: u32,
    /// The outcome both doors must give.
    pub expected: LoginOutcome,
}

const JSON: &str = "application/json";
const FORM: &str = "application/x-www-form-urlencoded";

const fn row(name: &'static str, body: &'static str, expected: LoginOutcome) -> LoginVariant {
    LoginVariant {
        name,
        content_type: JSON,
        body,
        failures_before: 0,
        expected,
    }
}

/// The variants. Defaults: 5 failed logins per account and address in 10 s.
pub const LOGIN_VARIANTS: &[LoginVariant] = &[
    row(
        "username and password",
        r#"{"username": "ada", "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "email and password",
        r#"{"email": "ada@example.com", "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "email wins over another user's username",
        r#"{"email": "ada@example.com", "username": "bob", "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "user as a username",
        r#"{"user": "ada", "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "user as an email",
        r#"{"user": "ada@example.com", "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "user as {id}",
        r#"{"user": {"id": "{ADA_ID}"}, "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "user as {username}",
        r#"{"user": {"username": "ada"}, "password": "correct horse"}"#,
        LoginOutcome::Success,
    ),
    row(
        "digest with its algorithm",
        r#"{"username": "ada", "password": {"digest": "{DIGEST}", "algorithm": "sha-256"}}"#,
        LoginOutcome::Success,
    ),
    row(
        "digest without an algorithm is refused",
        r#"{"username": "ada", "password": {"digest": "{DIGEST}"}}"#,
        LoginOutcome::Unauthorized,
    ),
    row(
        "hashed upper-case hex",
        r#"{"username": "ada", "password": "{DIGEST_UPPER}", "hashed": true}"#,
        LoginOutcome::Success,
    ),
    LoginVariant {
        name: "form-encoded body",
        content_type: FORM,
        body: "username=ada&password=correct+horse",
        failures_before: 0,
        expected: LoginOutcome::Success,
    },
    row("empty body", "", LoginOutcome::Unauthorized),
    row(
        "JSON array body",
        r#"[{"username": "ada", "password": "correct horse"}]"#,
        LoginOutcome::Unauthorized,
    ),
    row(
        "malformed JSON",
        r#"{"username": "#,
        LoginOutcome::BadRequest,
    ),
    row(
        "wrong password",
        r#"{"username": "ada", "password": "wrong"}"#,
        LoginOutcome::Unauthorized,
    ),
    LoginVariant {
        name: "correct password after 5 failures from the same address",
        content_type: JSON,
        body: r#"{"username": "ada", "password": "correct horse"}"#,
        failures_before: 5,
        expected: LoginOutcome::TooMany,
    },
    LoginVariant {
        name: "another form of the same account after 5 failures",
        content_type: JSON,
        body: r#"{"user": {"id": "{ADA_ID}"}, "password": "correct horse"}"#,
        failures_before: 5,
        expected: LoginOutcome::TooMany,
    },
];

/// A row's body with the placeholders filled in.
pub fn fill(body: &str, ada_id: &str, digest: &str) -> String {
    body.replace("{ADA_ID}", ada_id)
        .replace("{DIGEST_UPPER}", &digest.to_ascii_uppercase())
        .replace("{DIGEST}", digest)
}
