//! Passwords: the client-compatible SHA-256 digest, argon2id hashing, bcrypt verification, and
//! the accounts' password checks, changes and logins.
//!
//! Existing apps never hash the password itself but the lowercase hex SHA-256 of it (computed on
//! the client or the server), so a client may send that digest instead of the password. New hashes
//! are argon2id over the digest; bcrypt hashes of imported users still verify.

use std::sync::OnceLock;

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use chrono::Utc;
use portico_store::{Document, Update, document_id, lookup_path};
use rand::Rng;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Accounts, LOGIN_TOKENS, LoginToken, UserSelector};
use crate::time::parse_date;
use crate::{Error, Result};

/// A password as a client sends it.
#[derive(Clone, PartialEq, Eq)]
pub enum Password {
    /// The password itself.
    Plain(String),
    /// Its lowercase hex SHA-256 digest, as computed by [`password_digest`] (the login body's
    /// `hashed: true`, or `{digest, algorithm: "sha-256"}`).
    Digest(String),
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a password, not even in logs.
        match self {
            Password::Plain(_) => f.write_str("Password::Plain(<hidden>)"),
            Password::Digest(_) => f.write_str("Password::Digest(<hidden>)"),
        }
    }
}

impl Password {
    /// The digest the stored hashes are computed over.
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for an empty password or a digest that is not 64 hex digits.
    pub fn digest(&self) -> Result<String> {
        match self {
            Password::Plain(p) if p.is_empty() => {
                Err(Error::InvalidUser("Password may not be empty".into()))
            }
            Password::Plain(p) => Ok(password_digest(p)),
            Password::Digest(d) => {
                if d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(d.to_ascii_lowercase())
                } else {
                    Err(Error::InvalidUser(
                        "A password digest must be 64 hexadecimal digits (SHA-256)".into(),
                    ))
                }
            }
        }
    }
}

/// The lowercase hex SHA-256 of `password`, computed as existing apps' clients compute it: each
/// UTF-16 code unit is UTF-8 encoded on its own, so a character outside the Basic Multilingual
/// Plane becomes two 3-byte surrogate sequences instead of one 4-byte sequence.
///
/// ```
/// # use portico_platform::password_digest;
/// assert_eq!(
///     password_digest("abc"),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
pub fn password_digest(password: &str) -> String {
    let mut bytes = Vec::with_capacity(password.len() + 8);
    for unit in password.encode_utf16() {
        encode_code_unit(unit, &mut bytes);
    }
    hex::encode(Sha256::digest(&bytes))
}

/// UTF-8 encoding of one UTF-16 code unit, surrogates included (as CESU-8 does).
fn encode_code_unit(unit: u16, out: &mut Vec<u8>) {
    let u = u32::from(unit);
    // The masks keep every pushed value below 256, so the casts cannot truncate.
    match u {
        0..=0x7f => out.push(u as u8),
        0x80..=0x7ff => {
            out.push((0xc0 | (u >> 6)) as u8);
            out.push((0x80 | (u & 0x3f)) as u8);
        }
        _ => {
            out.push((0xe0 | (u >> 12)) as u8);
            out.push((0x80 | ((u >> 6) & 0x3f)) as u8);
            out.push((0x80 | (u & 0x3f)) as u8);
        }
    }
}

/// argon2id with m = 19456 KiB, t = 2, p = 1.
fn argon2() -> Result<Argon2<'static>> {
    let params = Params::new(19456, 2, 1, None)
        .map_err(|e| Error::Internal(format!("argon2 parameters: {e}")))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// A new argon2id hash (PHC string) of `digest`. CPU-bound: call on the blocking pool.
pub(crate) fn hash_digest(digest: &str) -> Result<String> {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let hash: PasswordHash = argon2()?
        .hash_password_with_salt(digest.as_bytes(), &salt)
        .map_err(|e| Error::Internal(format!("argon2: {e}")))?;
    Ok(hash.to_string())
}

/// The stored hash of a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredHash {
    /// An argon2 PHC string.
    Argon2(String),
    /// A bcrypt hash (`$2a$`, `$2b$`, `$2y$`).
    Bcrypt(String),
}

impl StoredHash {
    /// The hash under `services.password` of a user document, argon2 preferred.
    pub(crate) fn of_user(user: &portico_store::Document) -> Option<StoredHash> {
        let password = user.get("services")?.get("password")?;
        if let Some(h) = password.get("argon2").and_then(|v| v.as_str()) {
            return Some(StoredHash::Argon2(h.to_string()));
        }
        password
            .get("bcrypt")
            .and_then(|v| v.as_str())
            .map(|h| StoredHash::Bcrypt(h.to_string()))
    }

    /// True when `digest` matches. CPU-bound: call on the blocking pool. A malformed stored hash
    /// never matches.
    pub(crate) fn verify(&self, digest: &str) -> bool {
        match self {
            StoredHash::Argon2(h) => {
                let Ok(parsed) = PasswordHash::new(h) else {
                    return false;
                };
                // Parameters come from the hash itself, so older or tuned hashes still verify.
                Argon2::default()
                    .verify_password(digest.as_bytes(), &parsed)
                    .is_ok()
            }
            StoredHash::Bcrypt(h) => bcrypt::verify(digest, h).unwrap_or(false),
        }
    }
}

/// A fixed argon2id hash of a random digest, verified against when there is no user (or no
/// password), so a failed login costs one hash whatever its cause.
pub(crate) fn dummy_hash() -> &'static StoredHash {
    static DUMMY: OnceLock<StoredHash> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        let digest = hex::encode(Sha256::digest(secret));
        // Should hashing ever fail, a well-formed hash with the same parameters still costs the
        // same to verify; this one is of an unknowable input.
        let hash = hash_digest(&digest).unwrap_or_else(|_| {
            "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
             RdescudvJCsgt3ub+b+dWRWJTmaaJObG0iaJiE1R6uA"
                .to_string()
        });
        StoredHash::Argon2(hash)
    })
}

type Job = Box<dyn FnOnce() + Send>;

/// The password-hashing threads: as many as the machine has cores (at most 4), fed by one queue.
///
/// Why not the blocking pool: an argon2id hash takes 19 MiB and tens of milliseconds of CPU. On
/// tokio's blocking pool a login storm runs one hash per waiting request on as many threads as it
/// takes, which measured 1.4 GB peak RSS (freed blocks stay in per-thread malloc arenas) and
/// starved the other requests of CPU. A fixed pool bounds both: memory to a few hashes, CPU to the
/// pool's threads (which run at the lowest scheduling priority); logins past that wait in the queue.
fn hash_pool() -> Option<&'static std::sync::mpsc::Sender<Job>> {
    static POOL: OnceLock<Option<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<Job>();
        let receiver = std::sync::Arc::new(std::sync::Mutex::new(receiver));
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let mut started = 0;
        for i in 0..threads {
            let receiver = receiver.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("portico-password-{i}"))
                .spawn(move || {
                    // Hashing yields the CPU to request handling: at the lowest priority, a login
                    // storm slows logins, not every other request. Failing to lower it is harmless.
                    let _ = thread_priority::set_current_thread_priority(
                        thread_priority::ThreadPriority::Min,
                    );
                    loop {
                        let job = match receiver.lock() {
                            Ok(queue) => queue.recv(),
                            Err(poisoned) => poisoned.into_inner().recv(),
                        };
                        let Ok(job) = job else { return };
                        // A panicking job drops its reply sender (its caller gets an error);
                        // the thread lives on for the next job.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                });
            if spawned.is_ok() {
                started += 1;
            }
        }
        (started > 0).then_some(sender)
    })
    .as_ref()
}

/// Runs CPU-bound password work off the async runtime, on the password-hashing threads (see
/// [`hash_pool`]), or on the blocking pool should those threads be unavailable.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    let failed = || Error::Internal("password task failed".into());
    let Some(pool) = hash_pool() else {
        return tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| Error::Internal(format!("password task failed: {e}")));
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = reply.send(f());
    });
    pool.send(job).map_err(|_| failed())?;
    answer.await.map_err(|_| failed())
}

impl Accounts {
    /// True when `password` is the user's password (checked on the blocking pool). A user without
    /// a password, or an empty password, never matches.
    ///
    /// # Errors
    /// [`Error::Internal`] when the hashing task fails.
    pub async fn check_password(&self, user: &Document, password: &Password) -> Result<bool> {
        let Ok(digest) = password.digest() else {
            return Ok(false);
        };
        let Some(stored) = StoredHash::of_user(user) else {
            return Ok(false);
        };
        blocking(move || stored.verify(&digest)).await
    }

    /// Checks a password a client or an admin chose against `password_min_length`. A password
    /// sent as its SHA-256 digest (the form some clients use) cannot be measured and passes.
    ///
    /// # Errors
    /// [`Error::InvalidUser`] saying how long it must be.
    pub fn check_password_length(&self, password: &Password) -> Result<()> {
        let min = self.inner.config.password_min_length;
        match password {
            Password::Plain(p) if p.chars().count() < min => Err(Error::InvalidUser(format!(
                "The password must have at least {min} characters"
            ))),
            _ => Ok(()),
        }
    }

    /// Sets a new password (argon2id), replacing any bcrypt hash. Login tokens are kept; mailed
    /// tokens (reset, verification and email-change links) stop working.
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for an empty password, [`Error::UserNotFound`].
    pub async fn set_password(&self, user_id: &str, password: Password) -> Result<()> {
        let digest = password.digest()?;
        self.require_user(user_id).await?;
        let hash = blocking(move || hash_digest(&digest)).await??;
        let update = Update::parse(&json!({
            "$set": { "services.password.argon2": hash },
            "$unset": { "services.password.bcrypt": "" }
        }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        self.void_mailed_tokens(user_id).await
    }

    /// Checks the credentials and issues a login token.
    ///
    /// Every failure (unknown user, wrong or empty password, no password set) is the same
    /// [`Error::LoginFailed`] and costs one password hash, so neither the reply nor its timing
    /// tells whether the account exists. A bcrypt hash is replaced by argon2id on success.
    ///
    /// # Errors
    /// [`Error::LoginFailed`]; store failures.
    pub async fn login(&self, selector: &UserSelector, password: &Password) -> Result<LoginToken> {
        let user = self.find_user(selector).await?;
        self.login_user(user, password).await
    }

    /// [`Accounts::login`] for a user already looked up (`None`: no such user, which fails the
    /// same way and costs the same hash).
    pub(crate) async fn login_user(
        &self,
        user: Option<Document>,
        password: &Password,
    ) -> Result<LoginToken> {
        let (user_id, prune) = self.authenticate(user, password).await?;
        self.issue_token(&user_id, prune).await
    }

    /// Checks a password login of `user` (`None`: no such user, which fails the same way and
    /// costs the same hash); the user's id, and whether it holds expired tokens to prune.
    pub(crate) async fn authenticate(
        &self,
        user: Option<Document>,
        password: &Password,
    ) -> Result<(String, bool)> {
        let digest = password.digest().ok();
        let stored = user.as_ref().and_then(StoredHash::of_user);
        let (hash, genuine) = match (&stored, &digest) {
            (Some(h), Some(_)) => (h.clone(), true),
            _ => (dummy_hash().clone(), false),
        };
        let candidate = digest.clone().unwrap_or_else(|| "0".repeat(64));
        let matched = blocking(move || hash.verify(&candidate)).await?;
        let (Some(user), Some(digest), true, true) = (user, digest, matched, genuine) else {
            return Err(Error::LoginFailed);
        };
        let user_id = document_id(&user).ok_or(Error::LoginFailed)?.to_string();
        if matches!(stored, Some(StoredHash::Bcrypt(_))) {
            // Upgrade to argon2id; a failure here must not fail a correct login.
            if let Err(e) = self.upgrade_hash(&user_id, digest).await {
                tracing::warn!(user_id, error = %e, "could not replace a bcrypt hash");
            }
        }
        let prune = self.has_expired_tokens(&user);
        Ok((user_id, prune))
    }

    /// True when `user` holds a login token past its lifetime.
    pub(super) fn has_expired_tokens(&self, user: &Document) -> bool {
        let now = Utc::now();
        let lifetime = self.inner.config.token_lifetime;
        lookup_path(user, LOGIN_TOKENS)
            .first()
            .and_then(|v| v.as_array())
            .is_some_and(|tokens| {
                tokens.iter().any(|t| {
                    t.get("when")
                        .and_then(parse_date)
                        .is_some_and(|when| when + lifetime <= now)
                })
            })
    }

    pub(super) async fn upgrade_hash(&self, user_id: &str, digest: String) -> Result<()> {
        let hash = blocking(move || hash_digest(&digest)).await??;
        let update = Update::parse(&json!({
            "$set": { "services.password.argon2": hash },
            "$unset": { "services.password.bcrypt": "" }
        }))?;
        self.update_user(user_id, &update).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_password_job_is_an_error_and_the_threads_live_on() {
        // More panics than there are threads (at most 4)...
        for _ in 0..8 {
            let failed = blocking(|| -> u8 { panic!("a password job failed") }).await;
            assert!(matches!(failed, Err(Error::Internal(_))));
        }
        // ...and every later job is still answered: no thread died with its panic.
        let answers = futures::future::join_all((0..16u8).map(|i| blocking(move || i * 2))).await;
        let answers: Vec<u8> = answers.into_iter().filter_map(Result::ok).collect();
        assert_eq!(answers, (0..16u8).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn digest_of_ascii_is_plain_sha256() {
        assert_eq!(
            password_digest("password"),
            "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
        );
    }

    #[test]
    fn digest_encodes_each_utf16_unit_separately() {
        // U+1F600 is the surrogate pair D83D DE00. Encoded unit by unit:
        // D83D -> ED A0 BD, DE00 -> ED B8 80. So the hashed bytes of "a😀" are
        // 61 ED A0 BD ED B8 80 (not 61 F0 9F 98 80).
        let bytes = [0x61u8, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80];
        let expected = hex::encode(Sha256::digest(bytes));
        assert_eq!(password_digest("a\u{1F600}"), expected);
        // SHA-256 of those seven bytes, computed outside Rust (sha256sum).
        assert_eq!(
            expected,
            "4a7ccbd515f2b1805b55eef0354184e71d61725e2eb060366972d7749834c016"
        );
        assert_ne!(
            password_digest("a\u{1F600}"),
            hex::encode(Sha256::digest("a\u{1F600}".as_bytes()))
        );
    }

    #[test]
    fn two_byte_characters_match_utf8() {
        assert_eq!(
            password_digest("héllo"),
            hex::encode(Sha256::digest("héllo".as_bytes()))
        );
    }

    #[test]
    fn digests_are_checked() {
        assert!(Password::Plain(String::new()).digest().is_err());
        assert!(Password::Digest("abc".into()).digest().is_err());
        let upper = password_digest("x").to_ascii_uppercase();
        assert_eq!(
            Password::Digest(upper).digest().ok(),
            Some(password_digest("x"))
        );
    }

    #[test]
    fn argon2_hashes_verify_and_carry_the_parameters() {
        let digest = password_digest("secret");
        let Ok(hash) = hash_digest(&digest) else {
            panic!("hashing works")
        };
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        let stored = StoredHash::Argon2(hash);
        assert!(stored.verify(&digest));
        assert!(!stored.verify(&password_digest("Secret")));
        assert!(!StoredHash::Argon2("garbage".into()).verify(&digest));
    }

    #[test]
    fn bcrypt_hashes_of_the_digest_verify() {
        let digest = password_digest("legacy");
        let Ok(hash) = bcrypt::hash(&digest, 4) else {
            panic!("bcrypt works")
        };
        let a_variant = hash.replacen("$2b$", "$2a$", 1);
        assert!(StoredHash::Bcrypt(hash).verify(&digest));
        assert!(StoredHash::Bcrypt(a_variant.clone()).verify(&digest));
        assert!(!StoredHash::Bcrypt(a_variant).verify(&password_digest("other")));
    }
}
