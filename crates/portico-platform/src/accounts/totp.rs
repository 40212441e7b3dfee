//! Two-factor codes (TOTP, RFC 6238): 6 digits from HMAC-SHA-1 of the 30-second step count, with
//! a 160-bit secret; a code of the step before or after the server's also counts (clocks drift),
//! and each step's code works once. A few one-time recovery codes stand in for a lost device.
//!
//! In the user record: `services.totp = {secret, enabled, lastStep, recoveryCodes}` (the
//! recovery codes as SHA-256 hashes), and `services.totp.pending` between setup and enable.

use data_encoding::BASE32_NOPAD;
use hmac::{Hmac, KeyInit, Mac};
use portico_store::{Document, Selector, Update, UpdateOptions, document_id, lookup_path};
use rand::Rng;
use serde_json::{Value, json};
use sha1::Sha1;

use super::{Accounts, USERS, hash_token};
use crate::{Error, Result};

/// Seconds per step.
const STEP: i64 = 30;
/// How many recovery codes `enable` hands out.
const RECOVERY_CODES: usize = 8;

/// What a user needs to add the account to an authenticator app.
#[derive(Clone, PartialEq, Eq)]
pub struct TotpSetup {
    /// The secret, base32 (for typing in).
    pub secret: String,
    /// The `otpauth://totp/...` URI (for a QR code).
    pub uri: String,
}

impl std::fmt::Debug for TotpSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TotpSetup").finish_non_exhaustive()
    }
}

/// Why a two-factor check refused a login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotpRefusal {
    /// The account has two-factor codes on and the login sent none.
    Missing,
    /// The code is wrong, of another time, or used already.
    Invalid,
}

/// The 6-digit code of `secret` (base32) for the Unix time `unix_secs`; `None` for a secret
/// that is not base32. Authenticator apps compute the same.
///
/// ```
/// // RFC 6238's SHA-1 test secret at T = 59 s: 94287082, of which the last 6 digits.
/// let secret = data_encoding::BASE32_NOPAD.encode(b"12345678901234567890");
/// assert_eq!(portico_platform::totp_code(&secret, 59).as_deref(), Some("287082"));
/// ```
pub fn totp_code(secret: &str, unix_secs: i64) -> Option<String> {
    let key = BASE32_NOPAD
        .decode(secret.trim_end_matches('=').as_bytes())
        .ok()?;
    Some(code_at(&key, unix_secs.div_euclid(STEP)))
}

fn code_at(key: &[u8], step: i64) -> String {
    let Ok(mut mac) = <Hmac<Sha1> as KeyInit>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(&step.to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let offset = usize::from(digest[digest.len() - 1] & 0x0f);
    let bin = u32::from_be_bytes([
        digest[offset] & 0x7f,
        digest[offset + 1],
        digest[offset + 2],
        digest[offset + 3],
    ]);
    format!("{:06}", bin % 1_000_000)
}

/// The step (previous, current or next) whose code `code` is, if any.
fn matching_step(secret: &str, code: &str, now: i64) -> Option<i64> {
    let key = BASE32_NOPAD.decode(secret.as_bytes()).ok()?;
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let current = now.div_euclid(STEP);
    (current - 1..=current + 1).find(|&step| constant_eq(&code_at(&key, step), code))
}

fn constant_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

fn totp_of(user: &Document) -> Option<&serde_json::Map<String, Value>> {
    lookup_path(user, "services.totp")
        .first()
        .and_then(|v| v.as_object())
}

/// True when the user has two-factor codes on.
pub fn totp_enabled(user: &Document) -> bool {
    totp_of(user)
        .and_then(|t| t.get("enabled"))
        .and_then(Value::as_bool)
        == Some(true)
}

fn recovery_code() -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghjkmnpqrstuvwxyz23456789_";
    let mut bytes = [0u8; 10];
    rand::rng().fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
        .collect()
}

impl Accounts {
    /// Starts two-factor setup: a new secret (kept pending until [`Accounts::totp_enable`]) and
    /// its `otpauth://` URI labelled with the account's name and `issuer`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when codes are on already (disable them first),
    /// [`Error::UserNotFound`]; store failures.
    pub async fn totp_setup(&self, user_id: &str, issuer: &str) -> Result<TotpSetup> {
        let user = self.require_user(user_id).await?;
        if totp_enabled(&user) {
            return Err(Error::InvalidArgument(
                "Two-factor codes are on already; turn them off first".into(),
            ));
        }
        let mut key = [0u8; 20];
        rand::rng().fill_bytes(&mut key);
        let secret = BASE32_NOPAD.encode(&key);
        let update = Update::parse(
            &json!({"$set": {"services.totp": {"pending": secret, "enabled": false}}}),
        )?;
        self.update_user(user_id, &update).await?;
        let name = user
            .get("username")
            .and_then(Value::as_str)
            .or_else(|| {
                lookup_path(&user, "emails.address")
                    .first()
                    .and_then(|v| v.as_str())
            })
            .unwrap_or(user_id);
        let label = |s: &str| {
            s.replace(
                |c: char| {
                    !c.is_ascii_alphanumeric() && c != '@' && c != '.' && c != '-' && c != '_'
                },
                "%20",
            )
        };
        let uri = format!(
            "otpauth://totp/{}:{}?secret={secret}&issuer={}&algorithm=SHA1&digits=6&period=30",
            label(issuer),
            label(name),
            label(issuer)
        );
        Ok(TotpSetup { secret, uri })
    }

    /// Turns two-factor codes on once `code` shows the authenticator has the pending secret;
    /// returns the one-time recovery codes (shown once, stored hashed).
    ///
    /// # Errors
    /// [`Error::InvalidToken`] for a wrong code or no pending setup; store failures.
    pub async fn totp_enable(&self, user_id: &str, code: &str) -> Result<Vec<String>> {
        let user = self.require_user(user_id).await?;
        let pending = totp_of(&user)
            .and_then(|t| t.get("pending"))
            .and_then(Value::as_str)
            .ok_or(Error::InvalidToken)?
            .to_owned();
        let step = matching_step(&pending, code, now_secs()).ok_or(Error::InvalidToken)?;
        let codes: Vec<String> = (0..RECOVERY_CODES).map(|_| recovery_code()).collect();
        let hashed: Vec<String> = codes.iter().map(|c| hash_token(c)).collect();
        // Only the setup that was checked is enabled: a setup started meanwhile wins.
        let selector = Selector::parse(&json!({"_id": user_id, "services.totp.pending": pending}))?;
        let update = Update::parse(&json!({"$set": {"services.totp": {
            "secret": pending, "enabled": true, "lastStep": step, "recoveryCodes": hashed,
        }}}))?;
        let result = self
            .store()
            .update(USERS, &selector, &update, UpdateOptions::default())
            .await?;
        if result.modified == 0 {
            return Err(Error::InvalidToken);
        }
        Ok(codes)
    }

    /// Turns two-factor codes off, given a current code or a recovery code.
    ///
    /// # Errors
    /// [`Error::InvalidToken`] for a wrong or used code; store failures.
    pub async fn totp_disable(&self, user_id: &str, code: &str) -> Result<()> {
        let user = self.require_user(user_id).await?;
        if !totp_enabled(&user) {
            return Err(Error::InvalidToken);
        }
        if self.check_totp(&user, Some(code)).await.is_err() {
            return Err(Error::InvalidToken);
        }
        let update = Update::parse(&json!({"$unset": {"services.totp": ""}}))?;
        self.update_user(user_id, &update).await?;
        Ok(())
    }

    /// Checks the second factor of a login of `user`: nothing to check when codes are off;
    /// otherwise a code of the previous, current or next step newer than the last one used,
    /// or an unused recovery code (which is then used up).
    ///
    /// # Errors
    /// The [`TotpRefusal`]; store failures count as [`TotpRefusal::Invalid`] (logged).
    pub async fn check_totp(
        &self,
        user: &Document,
        code: Option<&str>,
    ) -> std::result::Result<(), TotpRefusal> {
        let Some(totp) = totp_of(user).filter(|_| totp_enabled(user)) else {
            return Ok(());
        };
        let code = code
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .ok_or(TotpRefusal::Missing)?;
        let user_id = document_id(user).ok_or(TotpRefusal::Invalid)?;
        let secret = totp
            .get("secret")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let last = totp.get("lastStep").cloned().unwrap_or(json!(0));
        let (selector, update) = match matching_step(secret, code, now_secs()) {
            Some(step) if step > last.as_i64().unwrap_or(0) => (
                // The step moves forward once: of two logins with one code, one wins.
                json!({"_id": user_id, "services.totp.lastStep": last}),
                json!({"$set": {"services.totp.lastStep": step}}),
            ),
            Some(_) => return Err(TotpRefusal::Invalid),
            None => {
                let hashed = hash_token(code);
                (
                    json!({"_id": user_id, "services.totp.recoveryCodes": hashed}),
                    json!({"$pull": {"services.totp.recoveryCodes": hashed}}),
                )
            }
        };
        let used = async {
            let selector = Selector::parse(&selector)?;
            let update = Update::parse(&update)?;
            let result = self
                .store()
                .update(USERS, &selector, &update, UpdateOptions::default())
                .await?;
            Ok::<bool, Error>(result.modified == 1)
        };
        match used.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(TotpRefusal::Invalid),
            Err(e) => {
                tracing::warn!(error = %e, "could not check a two-factor code");
                Err(TotpRefusal::Invalid)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6238_sha1_vectors() {
        // RFC 6238, appendix B (SHA-1, 8 digits): the last 6 digits are the 6-digit codes.
        let secret = BASE32_NOPAD.encode(b"12345678901234567890");
        for (t, code) in [
            (59, "287082"),
            (1_111_111_109, "081804"),
            (1_111_111_111, "050471"),
            (1_234_567_890, "005924"),
            (2_000_000_000, "279037"),
            (20_000_000_000, "353130"),
        ] {
            assert_eq!(totp_code(&secret, t).as_deref(), Some(code), "T = {t}");
        }
        assert_eq!(matching_step(&secret, "287082", 59 + 30), Some(1));
        assert_eq!(matching_step(&secret, "287082", 59 + 60), None);
        assert_eq!(matching_step(&secret, "28708", 59), None);
    }
}
