//! Accounts: users with passwords and login tokens, in the layout existing apps use.
//!
//! A user document in the `users` collection:
//!
//! ```json
//! {
//!   "_id": "…", "createdAt": "2026-11-22T03:44:59.123Z",
//!   "services": {
//!     "password": {"argon2": "$argon2id$…"},            // or "bcrypt": "$2b$…" (imported)
//!     "resume": {"loginTokens": [{"when": "…", "hashedToken": "…"}]},
//!     "lowercase": {"username": "ada", "emails": ["ada@example.org"]}   // indexed lookup copies
//!   },
//!   "username": "ada", "emails": [{"address": "ada@example.org", "verified": false}],
//!   "profile": {}, "roles": ["admin"]
//! }
//! ```
//!
//! | part | file |
//! |---|---|
//! | the service, its settings and the user shapes | `mod.rs` |
//! | creating, finding, listing and removing users; profiles | `users.rs` |
//! | roles | `roles.rs` |
//! | password digests and hashes; checks, changes, logins | `password.rs` |
//! | login tokens: issue, lookup, expiry, removal | `token.rs`, `token_cache.rs` |
//! | username and email lookups, lowercase copies | `lookup.rs` |
//! | importing users exported by existing apps | `import.rs` |
//! | verification, password reset, email change by mail; the outbox | `lifecycle/` |
//! | sign-in with OpenID Connect providers | `lifecycle/oidc/` |
//! | two-factor codes (TOTP) and recovery codes | `totp.rs` |
//! | guests: accounts without credentials, their upgrade and removal | `guests.rs` |
//! | API keys: hashed keys acting as service accounts | `api_keys.rs` |
//! | passkeys (WebAuthn): registration, login, listing and removal | `passkeys/` |
//! | login and registration as both doors call them, with limits on failures ([`crate::LoginService`]) | `login/` |

mod api_keys;
mod guests;
mod import;
mod lifecycle;
pub(crate) mod login;
mod lookup;
mod passkeys;
mod password;
mod roles;
mod token;
mod token_cache;
mod totp;
mod users;

use std::collections::HashSet;
use std::sync::Arc;

use portico_store::{Document, Selector, Store, Update, UpdateOptions};
use serde_json::{Map, Value, json};

pub use api_keys::{API_KEYS, ApiKeyInfo};
pub(crate) use guests::touch_every as guest_touch_every;
pub use guests::{GuestUpgrade, is_guest};
pub use import::import_value;
pub use lifecycle::{
    EMAIL_CODES, EmailCodeError, EmailCodeProof, IDENTITIES, Lifecycle, MAIL_NAMES, Mail,
    MailLimits, MailSender, MailTemplate, MailTemplates, MailTransport, OAUTH2_LOGINS, OAuth2,
    OAuth2Preset, OAuth2Profile, OAuth2Provider, OIDC_LOGINS, OUTBOX, Oidc, OidcCallback,
    OidcError, OidcProvider, OidcStart, SenderOptions, SmtpTransport, acceptable_provider_url,
    has_verified_email, is_mail_language, mail_placeholders, preferred_languages,
    unknown_placeholders,
};
pub use passkeys::{
    PASSKEY_CEREMONIES, PASSKEYS, PasskeyBegin, PasskeyConfig, PasskeyError, PasskeyInfo,
};
pub use password::{Password, password_digest};
pub use roles::user_has_any_role;
pub use token::hash_token;
pub use totp::{TotpRefusal, TotpSetup, totp_code, totp_enabled};

use self::password::{blocking, dummy_hash};
use crate::{Error, Result};

/// The collection holding the users.
pub const USERS: &str = "users";

/// The collection of outstanding mailed tokens, stored hashed (see `lifecycle/tokens.rs`).
pub const ACCOUNT_TOKENS: &str = "portico_account_tokens";

/// The default path of hashed login tokens inside a user document (the routes spec's `auth.token`).
pub const TOKEN_PATH: &str = "services.resume.loginTokens.hashedToken";

const LOGIN_TOKENS: &str = "services.resume.loginTokens";
/// The prefix of a path to a field of each login token (`services.resume.loginTokens.hashedToken`).
const LOGIN_TOKEN_FIELDS: &str = "services.resume.loginTokens.";

/// Settings of the accounts service.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::AccountsConfig;
///
/// let accounts = AccountsConfig::default()
///     .password_min_length(12)
///     .require_verified_email(true)
///     .app_url("https://app.example.com");
/// assert_eq!(accounts.password_min_length, 12);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccountsConfig {
    /// How long a login token stays valid after its `when` (default 90 days).
    pub token_lifetime: chrono::Duration,
    /// When true, front doors should not let clients create accounts (the platform itself still can).
    pub forbid_client_account_creation: bool,
    /// When true, a password login of an account without a verified email address is refused
    /// ([`crate::LoginError::EmailNotVerified`]), on every door and the admin page.
    pub require_verified_email: bool,
    /// The shortest password a client or an admin may choose, in characters (default 8):
    /// checked by sign-ups on both doors ([`crate::LoginService::register`]), password resets
    /// and the admin page ([`Accounts::check_password_length`]). Server code and the operator's
    /// `portico users` commands set what they set.
    pub password_min_length: usize,
    /// The application's address: mailed links are `{app_url}/verify-email?token=...`,
    /// `{app_url}/reset-password?token=...` and `{app_url}/confirm-email-change?token=...`.
    pub app_url: String,
    /// How long a verification link works (default 24 hours).
    pub verify_email_lifetime: chrono::Duration,
    /// How long a password-reset link works (default 1 hour).
    pub password_reset_lifetime: chrono::Duration,
    /// How long an email-change link works (default 1 hour).
    pub email_change_lifetime: chrono::Duration,
    /// Limits on the requests that send mail.
    pub mail_limits: MailLimits,
    /// The texts of the mails.
    pub mail_templates: MailTemplates,
    /// The address clients reach this server at (default `http://localhost:8080`): OpenID
    /// Connect providers send the browser back to `{server_url}/auth/oidc/{name}/callback`.
    pub server_url: String,
    /// The OpenID Connect providers users may sign in with (see [`crate::Oidc`]).
    pub oidc: Vec<OidcProvider>,
    /// The OAuth2 providers users may sign in with (see [`crate::OAuth2`]); they send the
    /// browser back to `{server_url}/auth/oauth2/{name}/callback`.
    pub oauth2: Vec<OAuth2Provider>,
    /// Sign-ins with a provider started per client address (default 30 per 10 minutes; `None`
    /// turns the limit off). Each start stores a pending sign-in for 10 minutes, so the limit
    /// also bounds what one client can make the server store.
    pub oidc_start_limit: Option<crate::Limit>,
    /// When true, a sign-in by mailed code or link ([`Lifecycle::request_email_code`]) to an
    /// address no account has makes an account for it (its address verified) instead of
    /// mailing that no account has it. Off when `forbid_client_account_creation` is on.
    pub email_code_signup: bool,
    /// How long a mailed sign-in code and its link work (default 10 minutes).
    pub email_code_lifetime: chrono::Duration,
    /// The digits of a mailed sign-in code, 6 to 8 (default 6).
    pub email_code_digits: u32,
    /// The guesses one mailed code allows, across every instance (default 5); then it is void.
    pub email_code_attempts: u32,
    /// Failed sign-in code confirmations per client address (default 30 per 10 minutes; `None`
    /// turns the limit off).
    pub email_code_failures_per_address: Option<crate::Limit>,
    /// Failed sign-in code confirmations per email address (default 10 per hour; `None` turns
    /// the limit off).
    pub email_code_failures_per_email: Option<crate::Limit>,
    /// When true, clients may make guest accounts ([`Accounts::create_guest`]). Default false;
    /// off too when `forbid_client_account_creation` is on.
    pub allow_guests: bool,
    /// How long a guest may go unused before the sweep removes it with its owned documents
    /// (default 30 days).
    pub guest_ttl: chrono::Duration,
    /// The `(collection, field)` pairs whose documents a guest owns when the field holds its
    /// id: removed with the guest.
    pub guest_owned: Vec<(String, String)>,
    /// Guests made per client address (default 10 per hour; `None` turns the limit off).
    pub guest_limit: Option<crate::Limit>,
    /// How long a token an admin gets to act as a user works ([`Accounts::impersonate`];
    /// default 15 minutes).
    pub impersonation_lifetime: chrono::Duration,
    /// Passkeys (WebAuthn): on when set, with the relying party's id, name and origins (see
    /// [`PasskeyConfig`]). Default off.
    pub passkeys: Option<PasskeyConfig>,
}

impl AccountsConfig {
    /// Sets [`token_lifetime`](AccountsConfig::token_lifetime): how long a login token stays valid
    /// after its `when` (default 90 days).
    pub fn token_lifetime(mut self, token_lifetime: chrono::Duration) -> Self {
        self.token_lifetime = token_lifetime;
        self
    }

    /// Sets [`forbid_client_account_creation`](AccountsConfig::forbid_client_account_creation):
    /// when true, front doors should not let clients create accounts (the platform itself still
    /// can).
    pub fn forbid_client_account_creation(mut self, forbid_client_account_creation: bool) -> Self {
        self.forbid_client_account_creation = forbid_client_account_creation;
        self
    }

    /// Sets [`require_verified_email`](AccountsConfig::require_verified_email): when true, a
    /// password login of an account without a verified email address is refused
    /// ([`crate::LoginError::EmailNotVerified`]), on every door and the admin page.
    pub fn require_verified_email(mut self, require_verified_email: bool) -> Self {
        self.require_verified_email = require_verified_email;
        self
    }

    /// Sets [`password_min_length`](AccountsConfig::password_min_length): the shortest password a
    /// client or an admin may choose, in characters (default 8).
    pub fn password_min_length(mut self, password_min_length: usize) -> Self {
        self.password_min_length = password_min_length;
        self
    }

    /// Sets [`app_url`](AccountsConfig::app_url): the application's address.
    pub fn app_url(mut self, app_url: impl Into<String>) -> Self {
        self.app_url = app_url.into();
        self
    }

    /// Sets [`verify_email_lifetime`](AccountsConfig::verify_email_lifetime): how long a
    /// verification link works (default 24 hours).
    pub fn verify_email_lifetime(mut self, verify_email_lifetime: chrono::Duration) -> Self {
        self.verify_email_lifetime = verify_email_lifetime;
        self
    }

    /// Sets [`password_reset_lifetime`](AccountsConfig::password_reset_lifetime): how long a
    /// password-reset link works (default 1 hour).
    pub fn password_reset_lifetime(mut self, password_reset_lifetime: chrono::Duration) -> Self {
        self.password_reset_lifetime = password_reset_lifetime;
        self
    }

    /// Sets [`email_change_lifetime`](AccountsConfig::email_change_lifetime): how long an
    /// email-change link works (default 1 hour).
    pub fn email_change_lifetime(mut self, email_change_lifetime: chrono::Duration) -> Self {
        self.email_change_lifetime = email_change_lifetime;
        self
    }

    /// Sets [`mail_limits`](AccountsConfig::mail_limits): limits on the requests that send mail.
    pub fn mail_limits(mut self, mail_limits: MailLimits) -> Self {
        self.mail_limits = mail_limits;
        self
    }

    /// Sets [`mail_templates`](AccountsConfig::mail_templates): the texts of the mails.
    pub fn mail_templates(mut self, mail_templates: MailTemplates) -> Self {
        self.mail_templates = mail_templates;
        self
    }

    /// Sets [`server_url`](AccountsConfig::server_url): the address clients reach this server at
    /// (default `http://localhost:8080`).
    pub fn server_url(mut self, server_url: impl Into<String>) -> Self {
        self.server_url = server_url.into();
        self
    }

    /// Sets [`oidc`](AccountsConfig::oidc): the OpenID Connect providers users may sign in with
    /// (see [`crate::Oidc`]).
    pub fn oidc(mut self, oidc: Vec<OidcProvider>) -> Self {
        self.oidc = oidc;
        self
    }

    /// Sets [`oauth2`](AccountsConfig::oauth2): the OAuth2 providers users may sign in with
    /// (see [`crate::OAuth2`]).
    pub fn oauth2(mut self, oauth2: Vec<OAuth2Provider>) -> Self {
        self.oauth2 = oauth2;
        self
    }

    /// Sets [`oidc_start_limit`](AccountsConfig::oidc_start_limit): sign-ins with a provider
    /// started per client address (default 30 per 10 minutes (`None` turns it off).
    pub fn oidc_start_limit(mut self, oidc_start_limit: Option<crate::Limit>) -> Self {
        self.oidc_start_limit = oidc_start_limit;
        self
    }

    /// Sets [`email_code_signup`](AccountsConfig::email_code_signup): whether a sign-in by mailed
    /// code makes an account for an address no account has.
    pub fn email_code_signup(mut self, email_code_signup: bool) -> Self {
        self.email_code_signup = email_code_signup;
        self
    }

    /// Sets [`email_code_lifetime`](AccountsConfig::email_code_lifetime): how long a mailed
    /// sign-in code and its link work (default 10 minutes).
    pub fn email_code_lifetime(mut self, email_code_lifetime: chrono::Duration) -> Self {
        self.email_code_lifetime = email_code_lifetime;
        self
    }

    /// Sets [`email_code_digits`](AccountsConfig::email_code_digits): the digits of a mailed
    /// sign-in code (6 to 8; others are taken as the nearest).
    pub fn email_code_digits(mut self, email_code_digits: u32) -> Self {
        self.email_code_digits = email_code_digits.clamp(6, 8);
        self
    }

    /// Sets [`email_code_attempts`](AccountsConfig::email_code_attempts): the guesses one mailed
    /// code allows.
    pub fn email_code_attempts(mut self, email_code_attempts: u32) -> Self {
        self.email_code_attempts = email_code_attempts;
        self
    }

    /// Sets [`email_code_failures_per_address`](AccountsConfig::email_code_failures_per_address):
    /// failed sign-in code confirmations per client address.
    pub fn email_code_failures_per_address(mut self, limit: Option<crate::Limit>) -> Self {
        self.email_code_failures_per_address = limit;
        self
    }

    /// Sets [`email_code_failures_per_email`](AccountsConfig::email_code_failures_per_email):
    /// failed sign-in code confirmations per email address.
    pub fn email_code_failures_per_email(mut self, limit: Option<crate::Limit>) -> Self {
        self.email_code_failures_per_email = limit;
        self
    }

    /// Sets [`allow_guests`](AccountsConfig::allow_guests): whether clients may make guest
    /// accounts.
    pub fn allow_guests(mut self, allow_guests: bool) -> Self {
        self.allow_guests = allow_guests;
        self
    }

    /// Sets [`guest_ttl`](AccountsConfig::guest_ttl): how long a guest may go unused.
    pub fn guest_ttl(mut self, guest_ttl: chrono::Duration) -> Self {
        self.guest_ttl = guest_ttl;
        self
    }

    /// Sets [`guest_owned`](AccountsConfig::guest_owned): the `(collection, field)` pairs of the
    /// documents removed with a guest.
    pub fn guest_owned(mut self, guest_owned: Vec<(String, String)>) -> Self {
        self.guest_owned = guest_owned;
        self
    }

    /// Sets [`impersonation_lifetime`](AccountsConfig::impersonation_lifetime): how long a token
    /// an admin gets to act as a user works.
    pub fn impersonation_lifetime(mut self, impersonation_lifetime: chrono::Duration) -> Self {
        self.impersonation_lifetime = impersonation_lifetime;
        self
    }

    /// Sets [`passkeys`](AccountsConfig::passkeys): passkeys on with these settings (`None`:
    /// off).
    pub fn passkeys(mut self, passkeys: Option<PasskeyConfig>) -> Self {
        self.passkeys = passkeys;
        self
    }

    /// Sets [`guest_limit`](AccountsConfig::guest_limit): guests made per client address.
    pub fn guest_limit(mut self, guest_limit: Option<crate::Limit>) -> Self {
        self.guest_limit = guest_limit;
        self
    }
}

impl Default for AccountsConfig {
    fn default() -> Self {
        AccountsConfig {
            token_lifetime: chrono::Duration::days(90),
            forbid_client_account_creation: false,
            require_verified_email: false,
            password_min_length: 8,
            app_url: "http://localhost:3000".to_owned(),
            verify_email_lifetime: chrono::Duration::hours(24),
            password_reset_lifetime: chrono::Duration::hours(1),
            email_change_lifetime: chrono::Duration::hours(1),
            mail_limits: MailLimits::default(),
            mail_templates: MailTemplates::default(),
            server_url: "http://localhost:8080".to_owned(),
            oidc: Vec::new(),
            oauth2: Vec::new(),
            oidc_start_limit: Some(crate::Limit::new(30, std::time::Duration::from_secs(600))),
            email_code_signup: false,
            email_code_lifetime: chrono::Duration::minutes(10),
            email_code_digits: 6,
            email_code_attempts: 5,
            email_code_failures_per_address: Some(crate::Limit::new(
                30,
                std::time::Duration::from_secs(600),
            )),
            email_code_failures_per_email: Some(crate::Limit::new(
                10,
                std::time::Duration::from_secs(3600),
            )),
            allow_guests: false,
            guest_ttl: chrono::Duration::days(30),
            guest_owned: Vec::new(),
            guest_limit: Some(crate::Limit::new(10, std::time::Duration::from_secs(3600))),
            impersonation_lifetime: chrono::Duration::minutes(15),
            passkeys: None,
        }
    }
}

/// A user to create.
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    /// The username (trimmed); a username or an email is required.
    pub username: Option<String>,
    /// The email address (trimmed); stored as `emails: [{address, verified: false}]`.
    pub email: Option<String>,
    /// The password; a user without one cannot log in with a password.
    pub password: Option<Password>,
    /// The profile, an object.
    pub profile: Option<Value>,
    /// Initial roles.
    pub roles: Vec<String>,
}

/// How a login names the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserSelector {
    /// By `_id`.
    Id(String),
    /// By username.
    Username(String),
    /// By email address.
    Email(String),
    /// The legacy `user` field: an email when it contains `@`, else a username.
    Either(String),
}

/// A freshly issued login token. The plain `token` is available only here, once.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginToken {
    /// The user logged in.
    pub user_id: String,
    /// The plain token to hand to the client.
    pub token: String,
    /// When it was issued (ISO-8601).
    pub when: String,
}

impl std::fmt::Debug for LoginToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginToken")
            .field("user_id", &self.user_id)
            .field("token", &"<hidden>")
            .field("when", &self.when)
            .finish()
    }
}

struct Inner {
    store: Arc<dyn Store>,
    config: AccountsConfig,
    /// Serialises the uniqueness check and insert of sign-ups within this process.
    signup: tokio::sync::Mutex<()>,
    /// Token paths known to be indexed (the default one, and custom ones once looked up).
    indexed_token_paths: std::sync::Mutex<HashSet<String>>,
    /// Tokens resolved before, kept until the users collection is written (see `token_cache.rs`).
    tokens: token_cache::TokenCache,
}

/// The accounts service (get it with [`crate::Platform::accounts`]). Cheap to clone.
#[derive(Clone)]
pub struct Accounts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// True when `user` is the service account of an API key (see `api_keys.rs`).
pub fn is_service_account(user: &Document) -> bool {
    user.get("service").and_then(Value::as_bool) == Some(true)
}

/// Only `_id`, `username`, `emails`, `profile` and `roles` of a user: what may be shown to others.
pub fn public_user(user: &Document) -> Document {
    ["_id", "username", "emails", "profile", "roles"]
        .into_iter()
        .filter_map(|k| user.get(k).map(|v| (k.to_string(), v.clone())))
        .collect()
}

fn object(value: Value) -> Document {
    match value {
        Value::Object(m) => m,
        _ => Document::new(),
    }
}

fn set(path: &str, value: Value) -> Result<Update> {
    let mut fields = Map::new();
    fields.insert(path.to_string(), value);
    Ok(Update::parse(&json!({ "$set": fields }))?)
}

impl Accounts {
    pub(crate) fn new(store: Arc<dyn Store>, config: AccountsConfig) -> Accounts {
        Accounts {
            inner: Arc::new(Inner {
                store,
                config,
                signup: tokio::sync::Mutex::new(()),
                indexed_token_paths: std::sync::Mutex::new(HashSet::from([TOKEN_PATH.to_string()])),
                tokens: token_cache::TokenCache::default(),
            }),
        }
    }

    /// Creates the indexes on the token path, `username`, `emails.address` and their lowercase
    /// copies (unique: see [`Accounts::create_user`]); prepares the dummy hash failed logins
    /// verify against.
    pub(crate) async fn prepare(&self) -> Result<()> {
        // Make the dummy hash now, so the first failed login does not pay for it (and take longer).
        blocking(|| {
            dummy_hash();
        })
        .await?;
        self.prepare_api_keys().await?;
        self.prepare_passkeys().await?;
        for path in [TOKEN_PATH, "username", "emails.address"] {
            self.store().ensure_index(USERS, path).await?;
        }
        for path in [lookup::LOWER_USERNAME, lookup::LOWER_EMAILS] {
            match self.store().ensure_unique_index(USERS, path).await {
                Ok(()) => {}
                // Records from before unique names (an old file, an import) that differ only in
                // case: keep serving them; names are then unique only within this process.
                Err(portico_store::Error::DuplicateKey { .. }) => {
                    tracing::warn!(
                        path,
                        "users differing only in case exist; usernames and emails stay \
                         unique within one process only (rename them to fix)"
                    );
                    self.store().ensure_index(USERS, path).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Voids every mailed token of the user (its password or address changed).
    pub(crate) async fn void_mailed_tokens(&self, user_id: &str) -> Result<()> {
        let of_user = Selector::parse(&json!({ "userId": user_id }))?;
        self.store().remove(ACCOUNT_TOKENS, &of_user).await?;
        Ok(())
    }

    fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &AccountsConfig {
        &self.inner.config
    }

    async fn update_user(&self, user_id: &str, update: &Update) -> Result<u64> {
        let result = self
            .store()
            .update(
                USERS,
                &Selector::by_id(user_id),
                update,
                UpdateOptions::default(),
            )
            .await?;
        Ok(result.matched)
    }
}

/// A unique index on a lowercase copy refusing a write: the username or email is taken.
fn taken_name_error(e: portico_store::Error) -> Error {
    match e {
        portico_store::Error::DuplicateKey { path, .. } if path == lookup::LOWER_USERNAME => {
            Error::UserExists("Username already exists.".into())
        }
        portico_store::Error::DuplicateKey { path, .. } if path == lookup::LOWER_EMAILS => {
            Error::UserExists("Email already exists.".into())
        }
        other => other.into(),
    }
}
