//! The account lifecycle: proving an email address, resetting a forgotten password and moving
//! an account to a new address, each through a mailed link.
//!
//! | step | request (no account oracle, rate limited) | confirm |
//! |---|---|---|
//! | verify an address | [`Lifecycle::request_verification`] | [`Lifecycle::confirm_verification`] |
//! | reset a password | [`Lifecycle::request_password_reset`] | [`Lifecycle::confirm_password_reset`]: every login token stops working |
//! | change the address | [`Lifecycle::request_email_change`] (logged in) | [`Lifecycle::confirm_email_change`] |
//! | sign in by a mailed code or link | [`Lifecycle::request_email_code`] | [`Lifecycle::confirm_email_code`]: a login token (see `email_code.rs`) |
//!
//! A request checks its rate limits (per client address and per email address, counted in the
//! store so instances share them), writes one document to the [outbox](OUTBOX) and returns: the
//! same work, reply and timing whether or not an account has the address. The sender task
//! ([`Lifecycle::start_sender`]) looks the account up, issues the token (see `tokens.rs`:
//! 256 random bits, stored hashed, single use, expiring, void once a newer one is issued or
//! the password or address changes) and sends the mail, retrying while the mail server is down.

mod email_code;
mod oauth2;
mod oidc;
mod outbox;
mod smtp;
mod templates;
mod tokens;

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use portico_store::{Document, Store, Update, document_id};
use serde_json::{Value, json};

pub use email_code::{EMAIL_CODES, EmailCodeError, EmailCodeProof};
pub use oauth2::{OAUTH2_LOGINS, OAuth2, OAuth2Preset, OAuth2Profile, OAuth2Provider};
pub use oidc::{
    IDENTITIES, OIDC_LOGINS, Oidc, OidcCallback, OidcError, OidcProvider, OidcStart,
    acceptable_url as acceptable_provider_url,
};
pub use outbox::{Mail, MailSender, MailTransport, OUTBOX, SenderOptions};
pub use smtp::SmtpTransport;
pub use templates::{
    MAIL_NAMES, MailTemplate, MailTemplates, is_language_tag as is_mail_language,
    placeholders as mail_placeholders, preferred_languages, unknown_placeholders,
};

use self::tokens::TokenKind;
use super::{Accounts, Password, lookup};
use crate::{Error, Limit, RateLimiter, Result};

/// Limits on the mail requests (counted per client address and per email address, every
/// request counts). `None` turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailLimits {
    /// Requests per client address (default 20 per hour).
    pub per_address: Option<Limit>,
    /// Requests per email address (default 5 per hour).
    pub per_email: Option<Limit>,
}

impl Default for MailLimits {
    fn default() -> Self {
        MailLimits {
            per_address: Some(Limit::new(20, std::time::Duration::from_secs(3600))),
            per_email: Some(Limit::new(5, std::time::Duration::from_secs(3600))),
        }
    }
}

struct Inner {
    accounts: Accounts,
    store: Arc<dyn Store>,
    /// Wakes this process's sender when a request is queued.
    wake: tokio::sync::Notify,
    /// True once a sender runs in this process.
    sending: AtomicBool,
}

/// The account lifecycle service (get it with [`crate::Platform::lifecycle`]). Cheap to clone.
#[derive(Clone)]
pub struct Lifecycle {
    inner: Arc<Inner>,
    /// The `Accept-Language` of the request asking (see [`Lifecycle::with_accept_language`]).
    accept_language: Option<Arc<str>>,
}

impl std::fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lifecycle")
            .field("sends_mail", &self.sends_mail())
            .finish_non_exhaustive()
    }
}

/// True when one of the user's addresses is verified.
pub fn has_verified_email(user: &Document) -> bool {
    user.get("emails")
        .and_then(Value::as_array)
        .is_some_and(|emails| {
            emails
                .iter()
                .any(|e| e.get("verified").and_then(Value::as_bool) == Some(true))
        })
}

/// The user's address equal to `email` apart from case, as stored.
fn stored_address(user: &Document, email: &str) -> Option<String> {
    user.get("emails")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|e| e.get("address").and_then(Value::as_str))
        .find(|a| lookup::fold(a) == lookup::fold(email))
        .map(str::to_owned)
}

impl Lifecycle {
    pub(crate) fn new(accounts: Accounts, store: Arc<dyn Store>) -> Lifecycle {
        Lifecycle {
            inner: Arc::new(Inner {
                accounts,
                store,
                wake: tokio::sync::Notify::new(),
                sending: AtomicBool::new(false),
            }),
            accept_language: None,
        }
    }

    /// The same service, noting `accept_language` (a request's `Accept-Language` header) in
    /// the mail requests it makes: a mail to an account without a `locale` is written in the
    /// first of these languages that has texts (see [`MailTemplates`]).
    pub fn with_accept_language(&self, accept_language: Option<&str>) -> Lifecycle {
        let value = accept_language
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| v.chars().take(256).collect::<String>());
        Lifecycle {
            inner: self.inner.clone(),
            accept_language: value.map(Arc::from),
        }
    }

    /// The languages to write a mail to `user` in (its `locale` or `profile.locale`, then the
    /// request's, as the queued `doc` noted it).
    fn languages(user: Option<&Document>, doc: &Document) -> Vec<String> {
        let locale = user.and_then(|u| {
            u.get("locale")
                .or_else(|| u.get("profile").and_then(|p| p.get("locale")))
                .and_then(Value::as_str)
        });
        let accept = doc.get("acceptLanguage").and_then(Value::as_str);
        templates::preferred_languages(locale, accept)
    }

    pub(crate) async fn prepare(&self) -> Result<()> {
        tokens::prepare(self.store()).await?;
        self.prepare_email_codes().await?;
        outbox::prepare(self.store()).await
    }

    fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    fn accounts(&self) -> &Accounts {
        &self.inner.accounts
    }

    /// True once [`Lifecycle::start_sender`] runs in this process.
    pub fn sends_mail(&self) -> bool {
        self.inner.sending.load(Ordering::Relaxed)
    }

    /// Starts the task that sends the outbox's mail through `transport`; it stops when the
    /// returned handle is dropped. Every instance on one database may run one: each mail is
    /// sent by one of them.
    pub fn start_sender(
        &self,
        transport: Arc<dyn MailTransport>,
        options: SenderOptions,
    ) -> MailSender {
        self.inner.sending.store(true, Ordering::Relaxed);
        MailSender::start(self.clone(), transport, options)
    }

    /// Checks and counts one request against the limits of `client` and `email`.
    async fn limit(&self, client: Option<IpAddr>, email: &str) -> Result<()> {
        let limits = self.accounts().config().mail_limits;
        let address = client_key("mail-address", client);
        let email = format!("mail-email:{}", lookup::fold(email.trim()));
        for (key, limit) in [(address, limits.per_address), (email, limits.per_email)] {
            count_request(self.store(), &key, limit).await?;
        }
        Ok(())
    }

    async fn enqueue(&self, doc: Value) -> Result<()> {
        let mut doc = doc.as_object().cloned().unwrap_or_default();
        if let Some(language) = &self.accept_language {
            doc.insert("acceptLanguage".into(), Value::String(language.to_string()));
        }
        outbox::enqueue(self.store(), doc).await?;
        self.inner.wake.notify_one();
        Ok(())
    }

    /// Asks for a verification mail to `email`. Answers the same whether or not an account has
    /// the address (the mail goes only to an account's unverified address).
    ///
    /// # Errors
    /// [`Error::TooManyRequests`] past a limit; store failures.
    pub async fn request_verification(&self, email: &str, client: Option<IpAddr>) -> Result<()> {
        self.limit(client, email).await?;
        self.enqueue(json!({"kind": TokenKind::VerifyEmail.name(), "email": email.trim()}))
            .await
    }

    /// Queues a verification mail to a new account's `email` (no rate limit: sign-ups have
    /// their own).
    pub(crate) async fn queue_verification(&self, email: &str) -> Result<()> {
        self.enqueue(json!({"kind": TokenKind::VerifyEmail.name(), "email": email.trim()}))
            .await
    }

    /// Asks for a password-reset mail to `email`. Answers the same whether or not an account
    /// has the address.
    ///
    /// # Errors
    /// [`Error::TooManyRequests`] past a limit; store failures.
    pub async fn request_password_reset(&self, email: &str, client: Option<IpAddr>) -> Result<()> {
        self.limit(client, email).await?;
        self.enqueue(json!({"kind": TokenKind::PasswordReset.name(), "email": email.trim()}))
            .await
    }

    /// Asks to move the account `user_id` to `new_email`: a mail with a link goes to the new
    /// address (none when another account holds it).
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for a malformed address, [`Error::TooManyRequests`]; store failures.
    pub async fn request_email_change(
        &self,
        user_id: &str,
        new_email: &str,
        client: Option<IpAddr>,
    ) -> Result<()> {
        let new_email = new_email.trim();
        if !lookup::is_valid_email(new_email) {
            return Err(Error::InvalidUser(format!(
                "Invalid email address {new_email:?}"
            )));
        }
        self.limit(client, new_email).await?;
        self.enqueue(json!({
            "kind": TokenKind::EmailChange.name(), "userId": user_id, "email": new_email
        }))
        .await
    }

    /// Turns a queued request into its mail (issuing the token), or `None` when there is
    /// nothing to send.
    pub(crate) async fn resolve(&self, doc: &Document) -> Result<Option<Mail>> {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        let email = doc.get("email").and_then(Value::as_str).unwrap_or_default();
        if kind == "email-code" {
            let guest = doc.get("guestId").and_then(Value::as_str);
            return self.resolve_email_code(email, guest, doc).await;
        }
        let config = self.accounts().config();
        let (kind, user, address, lifetime, path) = match kind {
            "verify-email" | "password-reset" => {
                let Some(user) = self.accounts().find_user_by_email(email).await? else {
                    return Ok(None);
                };
                let address = stored_address(&user, email).unwrap_or_else(|| email.to_owned());
                if kind == "verify-email" {
                    let verified = user
                        .get("emails")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .any(|e| {
                            e.get("address").and_then(Value::as_str) == Some(address.as_str())
                                && e.get("verified").and_then(Value::as_bool) == Some(true)
                        });
                    if verified {
                        return Ok(None);
                    }
                    let lifetime = config.verify_email_lifetime;
                    (
                        TokenKind::VerifyEmail,
                        user,
                        address,
                        lifetime,
                        "verify-email",
                    )
                } else {
                    let lifetime = config.password_reset_lifetime;
                    (
                        TokenKind::PasswordReset,
                        user,
                        address,
                        lifetime,
                        "reset-password",
                    )
                }
            }
            "email-change" => {
                let user_id = doc
                    .get("userId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(user) = self.accounts().find_user_by_id(user_id).await? else {
                    return Ok(None);
                };
                if let Some(holder) = self.accounts().find_user_by_email(email).await? {
                    if document_id(&holder) != Some(user_id) {
                        tracing::info!(
                            user = user_id,
                            "email change to an address another account holds: no mail"
                        );
                    }
                    return Ok(None);
                }
                let lifetime = config.email_change_lifetime;
                (
                    TokenKind::EmailChange,
                    user,
                    email.to_owned(),
                    lifetime,
                    "confirm-email-change",
                )
            }
            _ => return Ok(None),
        };
        let user_id = document_id(&user).unwrap_or_default();
        let token = tokens::issue(self.store(), kind, user_id, &address, lifetime).await?;
        let link = format!(
            "{}/{path}?token={token}",
            config.app_url.trim_end_matches('/')
        );
        let languages = Lifecycle::languages(Some(&user), doc);
        let (subject, text, html) = config.mail_templates.render_in(
            kind.name(),
            &languages,
            &[
                ("link", &link),
                ("email", &address),
                ("app_url", &config.app_url),
            ],
        );
        Ok(Some(Mail {
            to: address,
            subject,
            text,
            html,
        }))
    }

    /// Marks the address of a verification link verified; returns the address.
    ///
    /// # Errors
    /// [`Error::InvalidToken`] for an unknown, used or expired token (or one whose address the
    /// account no longer has); store failures.
    pub async fn confirm_verification(&self, token: &str) -> Result<String> {
        let redeemed = tokens::redeem(self.store(), TokenKind::VerifyEmail, token).await?;
        self.mark_verified(&redeemed.user_id, &redeemed.email)
            .await?
            .ok_or(Error::InvalidToken)
    }

    /// Sets `verified` on the user's `email`; the address as stored, or `None` when the user
    /// does not have it.
    async fn mark_verified(&self, user_id: &str, email: &str) -> Result<Option<String>> {
        let Some(user) = self.accounts().find_user_by_id(user_id).await? else {
            return Ok(None);
        };
        let Some(address) = stored_address(&user, email) else {
            return Ok(None);
        };
        let emails: Vec<Value> = user
            .get("emails")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| {
                let mut e = e.clone();
                if e.get("address").and_then(Value::as_str) == Some(address.as_str())
                    && let Some(o) = e.as_object_mut()
                {
                    o.insert("verified".into(), Value::Bool(true));
                }
                e
            })
            .collect();
        let update = Update::parse(&json!({"$set": {"emails": emails}}))?;
        self.accounts().update_user(user_id, &update).await?;
        Ok(Some(address))
    }

    /// Sets the password of a reset link: the link and every other mailed token of the account
    /// stop working, and so does every login token (the user logs in again). The address the
    /// link went to counts as verified. Returns the user's id.
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for a password shorter than `password_min_length` (the link still
    /// works then), [`Error::InvalidToken`]; store failures.
    pub async fn confirm_password_reset(&self, token: &str, password: Password) -> Result<String> {
        self.accounts().check_password_length(&password)?;
        password.digest()?;
        let redeemed = tokens::redeem(self.store(), TokenKind::PasswordReset, token).await?;
        let user_id = redeemed.user_id;
        self.accounts()
            .set_password(&user_id, password)
            .await
            .map_err(|e| match e {
                Error::UserNotFound => Error::InvalidToken,
                other => other,
            })?;
        self.accounts().remove_all_tokens(&user_id).await?;
        self.mark_verified(&user_id, &redeemed.email).await?;
        Ok(user_id)
    }

    /// Moves the account of an email-change link to its new address (verified, replacing the
    /// old ones); every other mailed token of the account stops working. Returns the address.
    ///
    /// # Errors
    /// [`Error::InvalidToken`], [`Error::UserExists`] when another account took the address
    /// meanwhile; store failures.
    pub async fn confirm_email_change(&self, token: &str) -> Result<String> {
        let redeemed = tokens::redeem(self.store(), TokenKind::EmailChange, token).await?;
        let user_id = redeemed.user_id;
        let Some(mut user) = self.accounts().find_user_by_id(&user_id).await? else {
            return Err(Error::InvalidToken);
        };
        let address = redeemed.email;
        user.insert(
            "emails".into(),
            json!([{ "address": address, "verified": true }]),
        );
        let lowercase = lookup::lowercase_copies(&mut user);
        let update = Update::parse(&json!({"$set": {
            "emails": user.get("emails"),
            lookup::LOWER_LOWERCASE: lowercase,
        }}))?;
        self.accounts()
            .update_user(&user_id, &update)
            .await
            .map_err(|e| match e {
                Error::Store(s) => super::taken_name_error(s),
                other => other,
            })?;
        self.accounts().void_mailed_tokens(&user_id).await?;
        Ok(address)
    }
}
/// The rate-limit key of a client address (`{prefix}:{ip}`, or `{prefix}:unknown`).
pub(crate) fn client_key(prefix: &str, client: Option<IpAddr>) -> String {
    match client {
        Some(ip) => format!("{prefix}:{ip}"),
        None => format!("{prefix}:unknown"),
    }
}

/// Counts one request under `key` against `limit` (every request counts; `None`: no limit).
///
/// # Errors
/// [`Error::TooManyRequests`] past the limit.
pub(crate) async fn count_request(
    store: &dyn Store,
    key: &str,
    limit: Option<Limit>,
) -> Result<()> {
    let Some(limit) = limit else { return Ok(()) };
    let limiter = RateLimiter::new(limit.attempts, limit.per);
    limiter
        .check(store, key)
        .await
        .map_err(Error::TooManyRequests)?;
    limiter.record_failure(store, key).await;
    Ok(())
}
