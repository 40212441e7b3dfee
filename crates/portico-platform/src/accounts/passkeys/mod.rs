//! Passkeys (WebAuthn Level 2, checked by the `webauthn-rs` crate): a logged-in user registers
//! passkeys, each with a name, and logs in with one, naming the account or not (a discoverable
//! credential names it). A passkey login counts as two factors: it never asks for a TOTP code.
//!
//! Passkeys are on when [`crate::AccountsConfig::passkeys`] is set (the relying party's id, its
//! name and the origins pages call from); [`PasskeyConfig::check`] says what is wrong with one.
//!
//! Every ceremony has two calls, *begin* and *finish*, which may reach different instances: a
//! begin stores the ceremony's state (the challenge, what it expects) in [`PASSKEY_CEREMONIES`]
//! under the SHA-256 of a random ceremony id (256 bits) that only the caller gets, for five
//! minutes. The finish must bring the ceremony id back (and, for a registration, come from the
//! same account); it consumes the ceremony by removing it before anything else (of two
//! finishes of one ceremony, one gets it), so a challenge works once and a replayed
//! assertion is refused. Stale ceremonies are removed by the next begins.
//!
//! A registered passkey is one document of [`PASSKEYS`]: its id (what `DELETE
//! /auth/passkeys/{id}` names), the account, the account's WebAuthn user handle (a UUID shared
//! by the account's passkeys), the credential id (base64url, unique), the name, the public key
//! with its signature counter as `webauthn-rs` keeps them, and when it was made and last used.
//! A login checks the signature against the stored key, the origin of the client data against
//! the configured origins, user verification, and that the signature counter (when the
//! authenticator keeps one) moved forward; the new counter is written on the condition that the
//! stored one is still the one checked. A removed passkey is no document, so it is refused; a
//! passkey of an account removed since is refused, and removed.
//!
//! A guest that registers a passkey is a guest no more (its id and documents stay), as with
//! the other upgrades.

mod ceremony;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portico_store::{Document, Query, Selector, Sort};
use serde_json::{Value, json};
use webauthn_rs::prelude::{Passkey, Url, Webauthn, WebauthnBuilder};

use super::Accounts;
use crate::time::{from_millis, to_iso};
use crate::{Error, Result};

/// The collection of registered passkeys (see the module docs).
pub const PASSKEYS: &str = "portico_passkeys";

/// The collection of passkey ceremonies between their begin and finish, stored under the hash
/// of their id.
pub const PASSKEY_CEREMONIES: &str = "portico_passkey_ceremonies";

/// The longest name of a passkey, in characters.
const MAX_NAME: usize = 64;

/// How long a ceremony may take between its begin and its finish (and the timeout the options
/// give the browser).
const LIFETIME: std::time::Duration = std::time::Duration::from_secs(300);

/// The relying party of passkeys: its id, its name and the origins allowed to call.
///
/// ```
/// use portico_platform::PasskeyConfig;
///
/// let passkeys = PasskeyConfig::new("example.com", ["https://app.example.com"]).rp_name("Example");
/// assert!(passkeys.check().is_ok());
/// assert!(PasskeyConfig::new("example.com", ["https://example.org"]).check().is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PasskeyConfig {
    /// The relying party id: a domain name, that of the origins or one they are under
    /// (`example.com` for `https://app.example.com`). Passkeys are bound to it.
    pub rp_id: String,
    /// The name authenticators show (default: the relying party id).
    pub rp_name: String,
    /// The origins pages call from (`https://app.example.com`; `http://localhost:PORT` on this
    /// machine); an assertion made for another origin is refused. At least one.
    pub origins: Vec<String>,
}

impl PasskeyConfig {
    /// Passkeys for the relying party `rp_id`, called from `origins`.
    pub fn new(
        rp_id: impl Into<String>,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> PasskeyConfig {
        PasskeyConfig {
            rp_id: rp_id.into(),
            rp_name: String::new(),
            origins: origins.into_iter().map(Into::into).collect(),
        }
    }

    /// Sets [`rp_name`](PasskeyConfig::rp_name): the name authenticators show.
    pub fn rp_name(mut self, rp_name: impl Into<String>) -> PasskeyConfig {
        self.rp_name = rp_name.into();
        self
    }

    /// Sets [`origins`](PasskeyConfig::origins): the origins pages call from.
    pub fn origins(mut self, origins: Vec<String>) -> PasskeyConfig {
        self.origins = origins;
        self
    }

    /// The WebAuthn checker of these settings.
    ///
    /// # Errors
    /// A message saying what is wrong: no relying party id, no origin, an origin that is not
    /// an `http(s)://` address, or one not on the relying party id's domain.
    pub fn webauthn(&self) -> std::result::Result<Webauthn, String> {
        let rp_id = self.rp_id.trim();
        if rp_id.is_empty() || rp_id.contains(|c: char| c == '/' || c == ':' || c.is_whitespace()) {
            return Err(format!(
                "the relying party id must be a domain name, as in \"example.com\" (not {rp_id:?})"
            ));
        }
        let mut origins = Vec::new();
        for origin in &self.origins {
            let url = Url::parse(origin.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.path() == "/")
                .filter(|u| u.query().is_none() && u.fragment().is_none())
                .ok_or_else(|| {
                    format!(
                        "write each origin as scheme://host[:port], as in \"https://app.{rp_id}\" \
                         (not {origin:?})"
                    )
                })?;
            let on_domain = url
                .domain()
                .is_some_and(|d| d == rp_id || d.ends_with(&format!(".{rp_id}")));
            if !on_domain {
                return Err(format!(
                    "the origin {origin:?} is not on the relying party id's domain {rp_id:?}"
                ));
            }
            origins.push(url);
        }
        let Some((first, rest)) = origins.split_first() else {
            return Err("passkeys need at least one origin pages call from".into());
        };
        let mut builder = WebauthnBuilder::new(rp_id, first)
            .map_err(|e| format!("passkeys: {e}"))?
            .timeout(LIFETIME);
        let name = self.rp_name.trim();
        if !name.is_empty() {
            builder = builder.rp_name(name);
        }
        for origin in rest {
            builder = builder.append_allowed_origin(origin);
        }
        builder.build().map_err(|e| format!("passkeys: {e}"))
    }

    /// Checks the settings (see [`PasskeyConfig::webauthn`]).
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn check(&self) -> std::result::Result<(), String> {
        self.webauthn().map(|_| ())
    }
}

/// A passkey as listed: never its key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PasskeyInfo {
    /// Its id (for removal).
    pub id: String,
    /// The name given at registration.
    pub name: String,
    /// When it was registered (ISO-8601).
    pub created_at: String,
    /// When it last logged in (ISO-8601), if ever.
    pub last_used: Option<String>,
}

impl PasskeyInfo {
    fn of(doc: &Document) -> PasskeyInfo {
        let text = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default();
        let iso = |k: &str| {
            doc.get(k)
                .and_then(Value::as_i64)
                .filter(|ms| *ms > 0)
                .and_then(from_millis)
                .map(to_iso)
        };
        PasskeyInfo {
            id: text("_id").to_owned(),
            name: text("name").to_owned(),
            created_at: iso("createdAt").unwrap_or_default(),
            last_used: iso("lastUsed"),
        }
    }
}

/// What a begin hands the client: the ceremony id to send back with the finish, and the
/// options for `navigator.credentials.create()` or `.get()` (`{"publicKey": {...}}`, binary
/// values as base64url strings).
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct PasskeyBegin {
    /// The ceremony id (43 characters), stored only hashed.
    pub ceremony: String,
    /// `{"publicKey": {...}}`: WebAuthn's creation or request options in their JSON form.
    pub options: Value,
}

impl std::fmt::Debug for PasskeyBegin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasskeyBegin")
            .field("ceremony", &"<hidden>")
            .field("options", &self.options)
            .finish()
    }
}

/// Why a passkey call did not succeed. [`PasskeyError::code`] is the word a door answers with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PasskeyError {
    /// This server has no passkey settings.
    #[error("Passkeys are off on this server")]
    Off,
    /// The ceremony id is unknown, used, expired, or of another kind or account.
    #[error("The passkey ceremony is unknown, used or expired; begin again")]
    InvalidCeremony,
    /// The credential is not a WebAuthn credential in its JSON form.
    #[error("The credential is malformed: {0}")]
    Malformed(String),
    /// The credential did not pass: wrong signature, challenge, origin or counter, no user
    /// verification, or a passkey that is unknown, removed, or of another account.
    #[error("The passkey was refused")]
    Refused,
    /// The passkey is registered already (to this account or another).
    #[error("This passkey is registered already")]
    Taken,
    /// The name is blank or longer than 64 characters.
    #[error("A passkey's name is 1 to 64 characters")]
    InvalidName,
    /// Service accounts (API keys) have no passkeys.
    #[error("Service accounts have no passkeys")]
    ServiceAccount,
    /// The server requires a verified email address and the account has none.
    #[error("This account's email address is not verified")]
    EmailNotVerified,
    /// A platform or store failure (or too many ceremonies from this client).
    #[error(transparent)]
    Platform(#[from] Error),
}

impl PasskeyError {
    /// The word a door answers with (`passkeys-off`, `invalid-ceremony`, `passkey-refused`...).
    pub fn code(&self) -> &'static str {
        match self {
            PasskeyError::Off => "passkeys-off",
            PasskeyError::InvalidCeremony => "invalid-ceremony",
            PasskeyError::Malformed(_) => "invalid-credential",
            PasskeyError::Refused => "passkey-refused",
            PasskeyError::Taken => "passkey-taken",
            PasskeyError::InvalidName => "invalid-name",
            PasskeyError::ServiceAccount => "not-allowed",
            PasskeyError::EmailNotVerified => "email-not-verified",
            PasskeyError::Platform(Error::TooManyRequests(_)) => "too-many-requests",
            PasskeyError::Platform(e) if e.is_unavailable() => "unavailable",
            PasskeyError::Platform(_) => "internal-server-error",
        }
    }
}

impl From<portico_store::Error> for PasskeyError {
    fn from(e: portico_store::Error) -> PasskeyError {
        PasskeyError::Platform(e.into())
    }
}

type PasskeyResult<T> = std::result::Result<T, PasskeyError>;

/// The base64url form of a credential id, as stored.
fn credential_key(raw_id: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(raw_id)
}

/// The stored passkey of a record.
fn stored_passkey(doc: &Document) -> Option<Passkey> {
    serde_json::from_value(doc.get("passkey")?.clone()).ok()
}

impl Accounts {
    /// Creates the passkeys' indexes (credential ids unique) once the settings are checked.
    pub(crate) async fn prepare_passkeys(&self) -> Result<()> {
        let Some(config) = &self.config().passkeys else {
            return Ok(());
        };
        config.check().map_err(Error::InvalidArgument)?;
        self.store()
            .ensure_unique_index(PASSKEYS, "credentialId")
            .await?;
        self.store().ensure_index(PASSKEYS, "userId").await?;
        self.store()
            .ensure_index(PASSKEY_CEREMONIES, "expires")
            .await?;
        Ok(())
    }

    /// True when passkeys are on ([`crate::AccountsConfig::passkeys`] is set).
    pub fn passkeys_on(&self) -> bool {
        self.config().passkeys.is_some()
    }

    /// The WebAuthn checker; [`PasskeyError::Off`] when passkeys are off.
    fn webauthn(&self) -> PasskeyResult<Webauthn> {
        let config = self.config().passkeys.as_ref().ok_or(PasskeyError::Off)?;
        config.webauthn().map_err(|why| {
            tracing::error!(error = %why, "passkey settings");
            PasskeyError::Platform(Error::InvalidArgument(why))
        })
    }

    /// The user's passkey records, oldest first.
    async fn passkey_records(&self, user_id: &str) -> Result<Vec<Document>> {
        let mut query = Query::new(Selector::parse(&json!({"userId": user_id}))?);
        query.sort = Some(Sort::by("createdAt", true)?);
        Ok(self.store().find(PASSKEYS, &query).await?)
    }

    /// The user's passkeys, oldest first: never their keys.
    ///
    /// # Errors
    /// [`PasskeyError::Off`]; store failures.
    pub async fn list_passkeys(&self, user_id: &str) -> PasskeyResult<Vec<PasskeyInfo>> {
        self.webauthn()?;
        let records = self.passkey_records(user_id).await?;
        Ok(records.iter().map(PasskeyInfo::of).collect())
    }

    /// Removes the user's passkey `id`: it logs in no more, on every instance. False when the
    /// user has no passkey of that id.
    ///
    /// # Errors
    /// [`PasskeyError::Off`]; store failures.
    pub async fn remove_passkey(&self, user_id: &str, id: &str) -> PasskeyResult<bool> {
        self.webauthn()?;
        let of_user = Selector::parse(&json!({"_id": id, "userId": user_id}))?;
        Ok(self.store().remove(PASSKEYS, &of_user).await? > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        let good = PasskeyConfig::new("localhost", ["http://localhost:8080"]);
        assert!(good.check().is_ok());
        let two = PasskeyConfig::new(
            "example.com",
            ["https://example.com", "https://a.example.com"],
        );
        assert!(two.check().is_ok());
        for bad in [
            PasskeyConfig::new("", ["https://example.com"]),
            PasskeyConfig::new("example.com", Vec::<String>::new()),
            PasskeyConfig::new("example.com", ["https://badexample.com"]),
            PasskeyConfig::new("example.com", ["example.com"]),
            PasskeyConfig::new("example.com", ["https://example.com/path"]),
            PasskeyConfig::new("https://example.com", ["https://example.com"]),
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
        assert_eq!(credential_key(&[0xfb, 0xff]), "-_8");
    }
}
