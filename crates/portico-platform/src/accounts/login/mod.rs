//! Login and registration as one service that both front doors call: credential forms, the
//! lookup order, and limits on failed logins and on sign-ups. A door only shapes the reply.
//!
//! # Limits, and why they are shaped so
//!
//! Failed logins are counted per **account and client address**: after
//! [`LoginLimits::per_identity`] failures (default 5 in 10 s) from one address, that address gets
//! [`LoginError::TooManyAttempts`] for that account until the window frees a slot, whichever
//! form names the account (username, email, `{id}`: they count as one). A correct password
//! from *another* address is still checked, so an attacker cannot lock the owner out of their
//! account (a lockout anyone can trigger is a denial of service; OWASP's guidance is to slow
//! the guessing source rather than lock the account). Guessing spread over many addresses is
//! bounded by an account-wide ceiling of [`ACCOUNT_FACTOR`] times the per-identity budget in the
//! same window, past which every address waits. Each address is also limited across all
//! accounts ([`LoginLimits::per_address`], default 20 in 10 s). A refused attempt (429) does
//! not check the password and is not counted, so it says nothing about the password.
//!
//! Sign-ups are limited per client address ([`LoginLimits::register_per_address`], default 10
//! a minute), counting every attempt: each one costs a password hash.
//!
//! The client address comes from the door (which applies its trusted-proxy rule); without one,
//! every caller shares the key `unknown`.

mod credentials;

use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use crate::{Error, LoginToken, NewUser, Platform, RateLimiter, UserSelector};
use credentials::{Registration, identity_of, password_of};
use portico_store::document_id;

/// How many times the per-identity budget an account accepts from all addresses together.
pub const ACCOUNT_FACTOR: u32 = 4;

pub use crate::rate_limit::Limit;

/// The limits of a [`LoginService`]; `None` turns one off.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::LoginLimits;
///
/// // No limit on sign-ups per client address.
/// let limits = LoginLimits::default().register_per_address(None);
/// assert!(limits.register_per_address.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginLimits {
    /// Failed logins per account and client address (default 5 per 10 s).
    pub per_identity: Option<Limit>,
    /// Failed logins per client address, over all accounts (default 20 per 10 s).
    pub per_address: Option<Limit>,
    /// Sign-up attempts per client address (default 10 per 60 s).
    pub register_per_address: Option<Limit>,
}

impl LoginLimits {
    /// Sets [`per_identity`](LoginLimits::per_identity): failed logins per account and client
    /// address (default 5 per 10 s) (`None` turns it off).
    pub fn per_identity(mut self, per_identity: Option<Limit>) -> Self {
        self.per_identity = per_identity;
        self
    }

    /// Sets [`per_address`](LoginLimits::per_address): failed logins per client address, over all
    /// accounts (default 20 per 10 s) (`None` turns it off).
    pub fn per_address(mut self, per_address: Option<Limit>) -> Self {
        self.per_address = per_address;
        self
    }

    /// Sets [`register_per_address`](LoginLimits::register_per_address): sign-up attempts per
    /// client address (default 10 per 60 s) (`None` turns it off).
    pub fn register_per_address(mut self, register_per_address: Option<Limit>) -> Self {
        self.register_per_address = register_per_address;
        self
    }
}

impl Default for LoginLimits {
    fn default() -> Self {
        LoginLimits {
            per_identity: Some(Limit::new(5, Duration::from_secs(10))),
            per_address: Some(Limit::new(20, Duration::from_secs(10))),
            register_per_address: Some(Limit::new(10, Duration::from_secs(60))),
        }
    }
}

/// Why a login or a sign-up did not give a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// Wrong or missing credentials, unknown user, no password set: one answer for every cause.
    #[error("Incorrect credentials")]
    Failed,
    /// Too many attempts; try again after the duration.
    #[error("Too many attempts; try again later")]
    TooManyAttempts(Duration),
    /// Sign-ups are turned off.
    #[error("Signups forbidden")]
    SignupsForbidden,
    /// The password was right, but the account has two-factor codes on and the login body has
    /// no `totp` field; no token was issued.
    #[error("This account needs a two-factor code: send it as `totp` with the password")]
    TotpRequired,
    /// The password was right, but the `totp` code is wrong, of another time, or used already
    /// (a recovery code works once too); counts as a failed login.
    #[error("The two-factor code is wrong or was used already")]
    TotpInvalid,
    /// The password was right, but the account has no verified email address and the platform
    /// requires one (`require_verified_email`); no token was issued.
    #[error(
        "The email address of this account is not verified; follow the link in the verification mail first"
    )]
    EmailNotVerified,
    /// The sign-up body is not acceptable (the message says why), or the username or email is
    /// taken.
    #[error("{0}")]
    InvalidUser(String),
    /// The platform failed (logged by the door, never sent).
    #[error(transparent)]
    Platform(Error),
}

/// The login service of a platform (see the module docs). Cheap to clone. The failure counts
/// live in the store (the `portico_login_failures` collection, see [`RateLimiter`]), so every
/// service of a platform, and every instance of a server on one database, counts together,
/// whatever limits each checks them against.
///
/// ```
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use portico_platform::{LoginError, LoginLimits, NewUser, Password, Platform};
/// use serde_json::json;
/// let platform = Platform::open("memory:").await?;
/// platform.accounts().create_user(NewUser {
///     username: Some("ada".into()),
///     password: Some(Password::Plain("secret".into())),
///     ..NewUser::default()
/// }).await?;
/// let logins = platform.login_service(LoginLimits::default());
/// let token = logins.login(Some(&json!({"username": "ada", "password": "secret"})), None).await?;
/// assert_eq!(token.token.len(), 43);
/// let wrong = logins.login(Some(&json!({"username": "ada", "password": "nope"})), None).await;
/// assert!(matches!(wrong, Err(LoginError::Failed)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LoginService {
    platform: Platform,
    limits: LoginLimits,
}

/// The `totp` field of a login body: a string, or a number (zero-padded to 6 digits).
fn totp_field(fields: &serde_json::Map<String, Value>) -> Option<String> {
    match fields.get("totp")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => n.as_u64().map(|n| format!("{n:06}")),
        _ => None,
    }
}

fn address_key(client: Option<IpAddr>) -> String {
    client.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string())
}

impl LoginService {
    pub(crate) fn new(platform: Platform, limits: LoginLimits) -> Self {
        LoginService { platform, limits }
    }

    /// The limits this service checks.
    pub fn limits(&self) -> &LoginLimits {
        &self.limits
    }

    async fn check(&self, key: &str, limit: Option<Limit>) -> Result<(), LoginError> {
        match limit {
            Some(l) => RateLimiter::new(l.attempts, l.per)
                .check(self.platform.store().as_ref(), key)
                .await
                .map_err(LoginError::TooManyAttempts),
            None => Ok(()),
        }
    }

    /// Records a failure of each key, kept for the window of its limit.
    async fn record(&self, keys: &[(&str, Option<Limit>)]) {
        for (key, limit) in keys {
            let per = limit.map_or(Duration::from_secs(60), |l| l.per);
            RateLimiter::new(1, per)
                .record_failure(self.platform.store().as_ref(), key)
                .await;
        }
    }

    /// Logs in with a login body (see the module docs for the forms) from `client`.
    ///
    /// # Errors
    /// [`LoginError::Failed`] for every kind of bad credentials, [`LoginError::TooManyAttempts`]
    /// past a limit, [`LoginError::Platform`] when the store fails.
    pub async fn login(
        &self,
        body: Option<&Value>,
        client: Option<IpAddr>,
    ) -> Result<LoginToken, LoginError> {
        let address = format!("address:{}", address_key(client));
        self.check(&address, self.limits.per_address).await?;
        let fields = body.and_then(Value::as_object);
        let identity = fields.and_then(identity_of);
        let password = fields.and_then(password_of);
        let Some(selector) = identity else {
            // A malformed login is a failed login; with no identity, only the address counts.
            self.record(&[(&address, self.limits.per_address)]).await;
            return Err(LoginError::Failed);
        };
        let accounts = self.platform.accounts();
        let user = accounts
            .find_user(&selector)
            .await
            .map_err(LoginError::Platform)?;
        let account = match user.as_ref().and_then(document_id) {
            Some(id) => format!("account:{id}"),
            None => match &selector {
                UserSelector::Id(id) => format!("account:{id}"),
                UserSelector::Username(name)
                | UserSelector::Email(name)
                | UserSelector::Either(name) => format!("name:{}", name.to_lowercase()),
            },
        };
        let pair = format!("{account}|{address}");
        self.check(&pair, self.limits.per_identity).await?;
        let ceiling = self.limits.per_identity.map(|l| Limit {
            attempts: l.attempts.saturating_mul(ACCOUNT_FACTOR),
            per: l.per,
        });
        self.check(&account, ceiling).await?;
        let failed = [
            (address.as_str(), self.limits.per_address),
            (account.as_str(), ceiling),
            (pair.as_str(), self.limits.per_identity),
        ];
        let Some(password) = password else {
            self.record(&failed).await;
            return Err(LoginError::Failed);
        };
        let verified = user.as_ref().is_some_and(crate::has_verified_email);
        let second_factor = user.as_ref().filter(|u| crate::totp_enabled(u)).cloned();
        match accounts.authenticate(user, &password).await {
            Ok((user_id, prune)) => {
                if let Some(user) = second_factor {
                    let code = fields.and_then(totp_field);
                    match accounts.check_totp(&user, code.as_deref()).await {
                        Ok(()) => {}
                        Err(crate::TotpRefusal::Missing) => return Err(LoginError::TotpRequired),
                        Err(crate::TotpRefusal::Invalid) => {
                            // Guessing codes counts like guessing passwords.
                            self.record(&failed).await;
                            return Err(LoginError::TotpInvalid);
                        }
                    }
                }
                RateLimiter::new(1, Duration::ZERO)
                    .reset(self.platform.store().as_ref(), &pair)
                    .await;
                if accounts.config().require_verified_email && !verified {
                    return Err(LoginError::EmailNotVerified);
                }
                accounts
                    .issue_token(&user_id, prune)
                    .await
                    .map_err(LoginError::Platform)
            }
            Err(err) if err.is_client_error() => {
                self.record(&failed).await;
                Err(LoginError::Failed)
            }
            Err(err) => Err(LoginError::Platform(err)),
        }
    }

    /// Creates an account from a sign-up body (`username` and/or `email`, `password`, optional
    /// `profile` object) and logs it in. When the platform sends mail, a verification mail goes
    /// to the new address; when it requires verified addresses, the account is created and
    /// [`LoginError::EmailNotVerified`] returned instead of a token. `allowed` is the door's own
    /// switch; the platform's `forbid_client_account_creation` also refuses.
    ///
    /// # Errors
    /// [`LoginError::SignupsForbidden`], [`LoginError::TooManyAttempts`],
    /// [`LoginError::InvalidUser`] for a bad body or a taken name, [`LoginError::Platform`].
    pub async fn register(
        &self,
        body: Option<&Value>,
        client: Option<IpAddr>,
        allowed: bool,
    ) -> Result<LoginToken, LoginError> {
        let accounts = self.platform.accounts();
        if !allowed || accounts.config().forbid_client_account_creation {
            return Err(LoginError::SignupsForbidden);
        }
        let key = format!("register:{}", address_key(client));
        self.check(&key, self.limits.register_per_address).await?;
        // Every attempt counts: each costs a password hash.
        self.record(&[(&key, self.limits.register_per_address)])
            .await;
        let registration = Registration::from_body(body).map_err(LoginError::InvalidUser)?;
        accounts
            .check_password_length(&registration.password)
            .map_err(|e| LoginError::InvalidUser(e.to_string()))?;
        let email = registration.email.clone();
        let created = accounts
            .create_user(NewUser {
                username: registration.username,
                email: registration.email,
                password: Some(registration.password),
                profile: registration.profile,
                roles: Vec::new(),
            })
            .await;
        let user_id = match created {
            Ok(id) => id,
            Err(err) if err.is_client_error() => {
                return Err(LoginError::InvalidUser(err.to_string()));
            }
            Err(err) => return Err(LoginError::Platform(err)),
        };
        // A new address gets its verification mail when this server sends mail.
        let lifecycle = self.platform.lifecycle();
        if let (Some(email), true) = (email, lifecycle.sends_mail()) {
            lifecycle
                .queue_verification(&email)
                .await
                .map_err(LoginError::Platform)?;
        }
        if accounts.config().require_verified_email {
            // The account exists; it logs in once the address is verified.
            return Err(LoginError::EmailNotVerified);
        }
        accounts
            .new_login_token(&user_id)
            .await
            .map_err(LoginError::Platform)
    }
}
