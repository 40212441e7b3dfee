//! Sign-in by a mailed code or link: [`Lifecycle::request_email_code`] and
//! [`Lifecycle::confirm_email_code`].
//!
//! A request writes one outbox document (as the other mail requests do), so it costs the same
//! and answers the same whether or not an account has the address. The sender resolves it into
//! a *challenge*, one document of [`EMAIL_CODES`] per address (`_id`: the hash of the folded
//! address; a newer request replaces it), and a mail:
//!
//! - an account has the address, or `email_code_signup` is on: the mail holds a code of
//!   `email_code_digits` digits and a link to `{app_url}/email-code?token=...` (256 random
//!   bits);
//! - otherwise the mail says that no account has this address, and the challenge holds a code
//!   and a link nobody is told, so confirming does the same work for both.
//!
//! The challenge keeps the code's SHA-256 (salted) and the link's SHA-256, the account (or none
//! for a sign-up), the expiry and the attempts so far. A confirmation with a code first takes
//! one attempt (a conditional `$inc` on `attempts < email_code_attempts` and `expires > now`:
//! across instances no more attempts than that are ever checked), then compares the code in
//! constant time. A confirmation with the link's token looks the challenge up by its hash. Either
//! redeems it by removing it (of two at once exactly one removes it), so code and link work once
//! between them. Failed confirmations also count per client address and per email address in
//! the store ([`crate::RateLimiter`]), so guessing is bounded across codes and instances.
//!
//! A six-digit code has only 20 bits: its hash would not hold out against someone who reads
//! the database. It is good for its lifetime and its attempts only, which is what bounds a
//! guesser; the link's token is the strong secret.

use std::net::IpAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portico_store::{Document, Query, Selector, Update, UpdateOptions, document_id};
use rand::Rng;
use serde_json::{Value, json};

use super::super::{LoginToken, NewUser, hash_token, lookup};
use super::outbox::now_ms;
use super::{Lifecycle, Mail, client_key, stored_address};
use crate::{Error, RateLimiter};

/// The collection of outstanding sign-in codes, one per address (see the module docs).
pub const EMAIL_CODES: &str = "portico_email_codes";

/// The longest link token accepted for a lookup (a real one has 43 characters).
const MAX_TOKEN_LEN: usize = 128;

/// What proves the mailbox: the code with its address, or the link's token.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmailCodeProof {
    /// The code of the mail to `email`.
    Code {
        /// The address the code was mailed to.
        email: String,
        /// The digits.
        code: String,
    },
    /// The token of the mailed link (`{app_url}/email-code?token=...`).
    Link(String),
}

impl std::fmt::Debug for EmailCodeProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmailCodeProof::Code { email, .. } => f
                .debug_struct("Code")
                .field("email", email)
                .field("code", &"<hidden>")
                .finish(),
            EmailCodeProof::Link(_) => f.write_str("Link(<hidden>)"),
        }
    }
}

/// Why a sign-in by mailed code or link did not succeed. [`EmailCodeError::code`] is the word a
/// door answers with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmailCodeError {
    /// The code or link is wrong, used, expired, or out of attempts (the same answer for each,
    /// and for an address without an account).
    #[error("The code or link is invalid or has expired; ask for a new one")]
    InvalidCode,
    /// The account has two-factor codes on: send `totp` with the code (the code still works).
    #[error("This account needs a two-factor code: send it as `totp` with the code")]
    TotpRequired,
    /// The two-factor code is wrong, of another time or used; the mailed code is used up.
    #[error("The two-factor code is invalid")]
    TotpInvalid,
    /// Too many failed confirmations from this client or for this address: wait this long.
    #[error("Too many attempts; try again later")]
    TooManyAttempts(Duration),
    /// A platform or store failure.
    #[error(transparent)]
    Platform(#[from] Error),
}

impl EmailCodeError {
    /// The word a door answers with (`invalid-code`, `totp-required`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            EmailCodeError::InvalidCode => "invalid-code",
            EmailCodeError::TotpRequired => "totp-required",
            EmailCodeError::TotpInvalid => "totp-invalid",
            EmailCodeError::TooManyAttempts(_) => "too-many-requests",
            EmailCodeError::Platform(e) if e.is_unavailable() => "unavailable",
            EmailCodeError::Platform(_) => "internal-server-error",
        }
    }
}

impl From<portico_store::Error> for EmailCodeError {
    fn from(e: portico_store::Error) -> EmailCodeError {
        EmailCodeError::Platform(e.into())
    }
}

type CodeResult<T> = std::result::Result<T, EmailCodeError>;

/// The challenge id of an address.
fn challenge_id(email: &str) -> String {
    hash_token(&format!("email-code\n{}", lookup::fold(email.trim())))
}

/// The stored form of a code: the SHA-256 of the challenge's salt and the code.
fn code_hash(salt: &str, code: &str) -> String {
    hash_token(&format!("{salt}\n{code}"))
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A code of `digits` decimal digits, uniformly drawn.
fn random_code(digits: u32) -> String {
    let digits = digits.clamp(6, 8);
    let bound = 10u32.pow(digits);
    let n = rand::random_range(0..bound);
    format!("{n:0width$}", width = usize::try_from(digits).unwrap_or(6))
}

/// True for 6 to 8 ASCII digits.
fn looks_like_code(code: &str) -> bool {
    (6..=8).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_digit())
}

/// Constant-time equality of two stored hashes.
fn same(a: &str, b: &str) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a.as_bytes(), b.as_bytes()).is_ok()
}

impl Lifecycle {
    /// Creates the index on the challenges' link hash.
    pub(crate) async fn prepare_email_codes(&self) -> crate::Result<()> {
        self.store().ensure_index(EMAIL_CODES, "link").await?;
        self.store().ensure_index(EMAIL_CODES, "expires").await?;
        Ok(())
    }

    /// Asks for a sign-in code and link mailed to `email`. Answers the same, after the same
    /// work, whether or not an account has the address (see the module docs for the mail).
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for a malformed address (whoever's it is),
    /// [`Error::TooManyRequests`] past the mail limits; store failures.
    pub async fn request_email_code(
        &self,
        email: &str,
        client: Option<IpAddr>,
    ) -> crate::Result<()> {
        self.queue_email_code(email, None, client).await
    }

    /// Asks for a sign-in code as [`Lifecycle::request_email_code`] does, for the guest
    /// `guest_id`: when no account has the address, the code (and link) gives it to the guest,
    /// which keeps its id and documents and is a guest no more. When an account has it, the
    /// code signs in to that account, as any other.
    ///
    /// # Errors
    /// As [`Lifecycle::request_email_code`].
    pub async fn request_email_code_for_guest(
        &self,
        guest_id: &str,
        email: &str,
        client: Option<IpAddr>,
    ) -> crate::Result<()> {
        self.queue_email_code(email, Some(guest_id), client).await
    }

    /// Checks the address and the mail limits, then queues the code request (for the guest
    /// `guest_id`, when given) for the mail sender.
    async fn queue_email_code(
        &self,
        email: &str,
        guest_id: Option<&str>,
        client: Option<IpAddr>,
    ) -> crate::Result<()> {
        let email = email.trim();
        if !lookup::is_valid_email(email) {
            return Err(Error::InvalidUser(format!(
                "Invalid email address {email:?}"
            )));
        }
        self.limit(client, email).await?;
        let mut request = json!({"kind": "email-code", "email": email});
        if let Some(guest_id) = guest_id {
            request["guestId"] = json!(guest_id);
        }
        self.enqueue(request).await
    }

    /// Turns a queued code request into its challenge and mail (see the module docs).
    pub(crate) async fn resolve_email_code(
        &self,
        email: &str,
        guest_id: Option<&str>,
        request: &Document,
    ) -> crate::Result<Option<Mail>> {
        let config = self.accounts().config();
        // Challenges nobody confirmed (in the sender, off the request path).
        let stale = Selector::parse(&json!({"expires": {"$lt": now_ms()}}))?;
        self.store().remove(EMAIL_CODES, &stale).await?;
        let user = self.accounts().find_user_by_email(email).await?;
        // A guest's request for a free address: the code gives the address to the guest.
        let guest_id = guest_id.filter(|_| user.is_none());
        let signup = config.email_code_signup && !config.forbid_client_account_creation;
        let address = user
            .as_ref()
            .and_then(|u| stored_address(u, email))
            .unwrap_or_else(|| email.to_owned());
        let user_id = user.as_ref().and_then(document_id).map(str::to_owned);
        let code = random_code(config.email_code_digits);
        let link_token = random_token();
        let salt = random_token();
        let lifetime = config.email_code_lifetime.num_milliseconds();
        let challenge = Update::parse(&json!({"$set": {
            "email": address,
            "userId": user_id,
            "signup": signup,
            "guestId": guest_id,
            "salt": salt,
            "code": code_hash(&salt, &code),
            "link": hash_token(&link_token),
            "expires": now_ms().saturating_add(lifetime),
            "attempts": 0,
        }}))?;
        self.store()
            .update(
                EMAIL_CODES,
                &Selector::by_id(&challenge_id(email)),
                &challenge,
                UpdateOptions::new(false, true),
            )
            .await?;
        let minutes = (lifetime / 60_000).max(1).to_string();
        let link = format!(
            "{}/email-code?token={link_token}",
            config.app_url.trim_end_matches('/')
        );
        let (name, values): (&str, Vec<(&str, &str)>) =
            if user_id.is_some() || signup || guest_id.is_some() {
                (
                    "email-code",
                    vec![
                        ("code", &code),
                        ("link", &link),
                        ("minutes", &minutes),
                        ("email", &address),
                        ("app_url", &config.app_url),
                    ],
                )
            } else {
                (
                    "email-code-unknown",
                    vec![("email", &address), ("app_url", &config.app_url)],
                )
            };
        let languages = Lifecycle::languages(user.as_ref(), request);
        let (subject, text, html) = config.mail_templates.render_in(name, &languages, &values);
        Ok(Some(Mail {
            to: address,
            subject,
            text,
            html,
        }))
    }

    /// Signs in with a mailed code or link: a login token for the account of the address
    /// (made now, with the address verified, when `email_code_signup` is on and none has it).
    /// The address counts as verified from then on. `totp` is needed when the account has
    /// two-factor codes on.
    ///
    /// # Errors
    /// See [`EmailCodeError`]; every refusal but the two-factor ones answers
    /// [`EmailCodeError::InvalidCode`].
    pub async fn confirm_email_code(
        &self,
        proof: &EmailCodeProof,
        totp: Option<&str>,
        client: Option<IpAddr>,
    ) -> CodeResult<LoginToken> {
        let config = self.accounts().config();
        let per_client = config.email_code_failures_per_address.map(|l| {
            (
                RateLimiter::new(l.attempts, l.per),
                client_key("email-code", client),
            )
        });
        let per_email = match proof {
            EmailCodeProof::Code { email, .. } => config.email_code_failures_per_email.map(|l| {
                let key = format!("email-code-email:{}", lookup::fold(email.trim()));
                (RateLimiter::new(l.attempts, l.per), key)
            }),
            EmailCodeProof::Link(_) => None,
        };
        let limits: Vec<&(RateLimiter, String)> =
            [&per_client, &per_email].into_iter().flatten().collect();
        for (limiter, key) in &limits {
            limiter
                .check(self.store(), key)
                .await
                .map_err(EmailCodeError::TooManyAttempts)?;
        }
        let outcome = self.confirm_checked(proof, totp).await;
        for (limiter, key) in &limits {
            match &outcome {
                Ok(_) => limiter.reset(self.store(), key).await,
                Err(EmailCodeError::InvalidCode | EmailCodeError::TotpInvalid) => {
                    limiter.record_failure(self.store(), key).await;
                }
                Err(_) => {}
            }
        }
        outcome
    }

    /// The challenge a proof matches, unused and unexpired (a code takes one attempt).
    async fn matching_challenge(&self, proof: &EmailCodeProof) -> CodeResult<Document> {
        let store = self.store();
        match proof {
            EmailCodeProof::Code { email, code } => {
                let code = code.trim();
                if !looks_like_code(code) {
                    return Err(EmailCodeError::InvalidCode);
                }
                let id = challenge_id(email);
                let max = self.accounts().config().email_code_attempts;
                let take = Selector::parse(&json!({
                    "_id": id, "attempts": {"$lt": max}, "expires": {"$gt": now_ms()}
                }))?;
                let inc = Update::parse(&json!({"$inc": {"attempts": 1}}))?;
                let taken = store
                    .update(EMAIL_CODES, &take, &inc, UpdateOptions::default())
                    .await?;
                if taken.modified != 1 {
                    return Err(EmailCodeError::InvalidCode);
                }
                let doc = store
                    .get(EMAIL_CODES, &id)
                    .await?
                    .ok_or(EmailCodeError::InvalidCode)?;
                let text = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default();
                if !same(&code_hash(text("salt"), code), text("code")) {
                    return Err(EmailCodeError::InvalidCode);
                }
                Ok(doc)
            }
            EmailCodeProof::Link(token) => {
                let token = token.trim();
                if token.is_empty() || token.len() > MAX_TOKEN_LEN {
                    return Err(EmailCodeError::InvalidCode);
                }
                let mut query = Query::new(Selector::parse(&json!({
                    "link": hash_token(token), "expires": {"$gt": now_ms()}
                }))?);
                query.limit = Some(1);
                store
                    .find(EMAIL_CODES, &query)
                    .await?
                    .into_iter()
                    .next()
                    .ok_or(EmailCodeError::InvalidCode)
            }
        }
    }

    async fn confirm_checked(
        &self,
        proof: &EmailCodeProof,
        totp: Option<&str>,
    ) -> CodeResult<LoginToken> {
        let accounts = self.accounts();
        let challenge = self.matching_challenge(proof).await?;
        let text = |k: &str| {
            challenge
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let email = text("email");
        let existing = match challenge.get("userId").and_then(Value::as_str) {
            Some(user_id) => {
                let user = accounts
                    .find_user_by_id(user_id)
                    .await?
                    .filter(|u| stored_address(u, &email).is_some())
                    .ok_or(EmailCodeError::InvalidCode)?;
                if crate::totp_enabled(&user) && totp.is_none_or(|c| c.trim().is_empty()) {
                    return Err(EmailCodeError::TotpRequired);
                }
                Some(user)
            }
            None if challenge.get("signup").and_then(Value::as_bool) == Some(true) => None,
            None if challenge.get("guestId").is_some_and(Value::is_string) => None,
            None => return Err(EmailCodeError::InvalidCode),
        };
        // Removing the challenge is the redemption: of two confirmations at once, one wins.
        let redeem =
            Selector::parse(&json!({"_id": document_id(&challenge), "link": text("link")}))?;
        if self.store().remove(EMAIL_CODES, &redeem).await? != 1 {
            return Err(EmailCodeError::InvalidCode);
        }
        let user = match existing {
            Some(user) => {
                if accounts.check_totp(&user, totp).await.is_err() {
                    return Err(EmailCodeError::TotpInvalid);
                }
                user
            }
            None => self.new_holder(&challenge, &email).await?,
        };
        let user_id = document_id(&user)
            .ok_or(EmailCodeError::InvalidCode)?
            .to_owned();
        self.mark_verified(&user_id, &email).await?;
        let prune = accounts.has_expired_tokens(&user);
        accounts
            .issue_token(&user_id, prune)
            .await
            .map_err(|e| match e {
                Error::UserNotFound => EmailCodeError::InvalidCode,
                e => e.into(),
            })
    }

    /// The account a redeemed challenge for an address no account had signs in to: the guest
    /// that asked for it, while it is one; otherwise a new account when sign-up is on.
    async fn new_holder(&self, challenge: &Document, email: &str) -> CodeResult<Document> {
        if let Some(guest_id) = challenge.get("guestId").and_then(Value::as_str) {
            match self.accounts().attach_email_to_guest(guest_id, email).await {
                Ok(Some(user)) => return Ok(user),
                Ok(None) | Err(Error::UserExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if challenge.get("signup").and_then(Value::as_bool) == Some(true) {
            return self.sign_up_by_code(email).await;
        }
        Err(EmailCodeError::InvalidCode)
    }

    /// The account a sign-up by code makes for `email` (its address verified), or the one made
    /// for it meanwhile (another confirmation, a sign-up: the code proves the mailbox).
    async fn sign_up_by_code(&self, email: &str) -> CodeResult<Document> {
        let accounts = self.accounts();
        let new = NewUser {
            email: Some(email.to_owned()),
            ..NewUser::default()
        };
        let user_id = match accounts.insert_user(new, true).await {
            Ok(id) => Some(id),
            Err(Error::UserExists(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let user = match user_id {
            Some(id) => accounts.find_user_by_id(&id).await?,
            None => accounts.find_user_by_email(email).await?,
        };
        let user = user.ok_or(EmailCodeError::InvalidCode)?;
        if crate::totp_enabled(&user) {
            // An account made meanwhile with two-factor codes on: the code alone is not enough.
            return Err(EmailCodeError::TotpRequired);
        }
        Ok(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_their_digits_and_only_digits_pass() {
        for digits in [6, 7, 8] {
            let code = random_code(digits);
            assert_eq!(code.len(), usize::try_from(digits).unwrap_or(0));
            assert!(looks_like_code(&code));
        }
        assert_eq!(random_code(3).len(), 6);
        assert!(!looks_like_code("12345"));
        assert!(!looks_like_code("123456789"));
        assert!(!looks_like_code("12345a"));
        assert!(!looks_like_code("１２３４５６"));
        assert_eq!(
            challenge_id(" Ann@Example.com"),
            challenge_id("ann@example.com")
        );
        assert!(same(&code_hash("s", "123456"), &code_hash("s", "123456")));
        assert!(!same(&code_hash("s", "123456"), &code_hash("t", "123456")));
    }
}
