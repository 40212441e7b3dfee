//! Sign-in with OpenID Connect providers: the authorization code flow with PKCE (S256), state
//! and nonce, as a confidential client.
//!
//! | step | call |
//! |---|---|
//! | send the browser to the provider | [`Oidc::begin`]: the provider's URL and the state to bind to the browser |
//! | the provider sends it back | [`Oidc::finish`]: checks everything, finds, links or creates the account; a one-time code |
//! | the application trades the code | [`Oidc::exchange`]: a login token (the code works once, for 60 s) |
//!
//! A sign-in in progress is a document of [`OIDC_LOGINS`] whose `_id` is the hash of its state,
//! holding the nonce and the PKCE verifier for 10 minutes: the provider may send the browser
//! back to another instance on the same database, and a state works once. The one-time code is
//! a token like the mailed ones (256 random bits, stored hashed, single use), so a login token
//! never appears in a URL. [`link`](self::link) says which account an identity signs in to.

mod discovery;
mod id_token;
mod link;
pub(super) mod providers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portico_store::Store;
use rand::Rng;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub use discovery::acceptable_url;
pub use link::IDENTITIES;
// The OAuth2 sign-in (a sibling module) shares these.
pub(super) use self::discovery::json_reply;
pub(super) use self::id_token::Identity;
pub(super) use self::link::account_of;

use self::discovery::Discovered;
use self::id_token::Refusal;
use super::tokens::{self, TokenKind};
use crate::accounts::{Accounts, LoginToken, totp_enabled};
use crate::{Error, Result};
use providers::{Named, Providers};

/// The collection of sign-ins in progress (state, nonce, PKCE verifier), by hashed state.
pub const OIDC_LOGINS: &str = "portico_oidc_logins";

/// An OpenID Connect provider users may sign in with.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OidcProvider {
    /// The name in `/auth/oidc/{name}` (lowercase letters, digits, `-` and `_`).
    pub name: String,
    /// The issuer; its metadata is read from `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// This server's client id at the provider.
    pub client_id: String,
    /// Its client secret.
    pub client_secret: String,
    /// The scopes asked for (default `openid`, `email`, `profile`).
    pub scopes: Vec<String>,
}

impl OidcProvider {
    /// A provider with the default scopes.
    pub fn new(
        name: impl Into<String>,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> OidcProvider {
        OidcProvider {
            name: name.into(),
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: ["openid", "email", "profile"].map(str::to_owned).to_vec(),
        }
    }
}

impl std::fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcProvider")
            .field("name", &self.name)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<hidden>")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// Why a sign-in with a provider did not succeed. [`OidcError::code`] is the word a door
/// answers with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OidcError {
    /// No provider of this name is configured.
    #[error("No sign-in provider of this name")]
    UnknownProvider,
    /// The state is missing, unknown, used, expired, of another provider, or not the one this
    /// browser started with.
    #[error("The sign-in is unknown, was used already or has expired; start again")]
    InvalidState,
    /// The provider answered the browser with an error (the person cancelled, ...).
    #[error("The provider did not sign you in ({0})")]
    Refused(String),
    /// The provider could not be reached or answered something unusable.
    #[error("The sign-in provider is unavailable; try again later")]
    Unavailable(String),
    /// The provider's reply failed a check (ID token signature, issuer, audience, expiry,
    /// nonce, ...).
    #[error("The provider's answer failed a check: {0}")]
    InvalidResponse(String),
    /// `require_verified_email` is on and the provider gave no verified address.
    #[error("This server needs a verified email address, and the provider gave none")]
    EmailNotVerified,
    /// An account has the provider's (verified) address, but its own address is not verified,
    /// so it is not linked: verify its address or reset its password, then sign in again.
    #[error(
        "An account with this address exists and its address is not verified; verify it (or \
         reset the password), then sign in again"
    )]
    AccountUnverified,
    /// The one-time code is unknown, used or expired.
    #[error("The sign-in code is invalid or has expired")]
    InvalidCode,
    /// The account has two-factor codes on: send `totp` with the code.
    #[error("This account needs a two-factor code: send it as `totp` with the code")]
    TotpRequired,
    /// The two-factor code is wrong, of another time or used; the sign-in code is used up.
    #[error("The two-factor code is invalid")]
    TotpInvalid,
    /// A platform or store failure.
    #[error(transparent)]
    Platform(#[from] Error),
}

impl OidcError {
    /// The word a door answers with (`invalid-state`, `totp-required`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            OidcError::UnknownProvider => "unknown-provider",
            OidcError::InvalidState => "invalid-state",
            OidcError::Refused(_) => "provider-refused",
            OidcError::Unavailable(_) => "provider-unavailable",
            OidcError::InvalidResponse(_) => "invalid-response",
            OidcError::EmailNotVerified => "email-not-verified",
            OidcError::AccountUnverified => "account-not-verified",
            OidcError::InvalidCode => "invalid-code",
            OidcError::TotpRequired => "totp-required",
            OidcError::TotpInvalid => "totp-invalid",
            OidcError::Platform(e) if e.is_unavailable() => "unavailable",
            OidcError::Platform(_) => "internal-server-error",
        }
    }
}

impl From<portico_store::Error> for OidcError {
    fn from(e: portico_store::Error) -> OidcError {
        OidcError::Platform(e.into())
    }
}

/// The start of a sign-in: where to send the browser, and the state to bind to it (the
/// door sets it as a cookie and hands it back to [`Oidc::finish`]).
#[derive(Clone, PartialEq, Eq)]
pub struct OidcStart {
    /// The provider's authorization URL with this sign-in's parameters.
    pub url: String,
    /// The state (also in `url`).
    pub state: String,
}

impl std::fmt::Debug for OidcStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcStart").finish_non_exhaustive()
    }
}

/// The query of the provider's redirect back, and the state the browser holds.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OidcCallback {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207), checked when present.
    pub iss: Option<String>,
    /// `error`, when the provider did not sign the person in.
    pub error: Option<String>,
    /// The state this browser started with (the door's cookie).
    pub browser_state: Option<String>,
}

struct Inner {
    providers: Providers<OidcProvider>,
    discovered: Mutex<HashMap<String, Arc<Discovered>>>,
}

/// Sign-in with OpenID Connect providers (get it with [`crate::Platform::oidc`]). Cheap to
/// clone.
#[derive(Clone)]
pub struct Oidc {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("providers", &self.names())
            .finish_non_exhaustive()
    }
}

/// 256 random bits, base64url: a state, a nonce, a PKCE verifier.
pub(super) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

impl Named for OidcProvider {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Oidc {
    pub(crate) fn new(accounts: Accounts, store: Arc<dyn Store>) -> Oidc {
        let providers = accounts.config().oidc.clone();
        Oidc {
            inner: Arc::new(Inner {
                providers: Providers::new(accounts, store, providers, "oidc"),
                discovered: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub(crate) async fn prepare(&self) -> Result<()> {
        self.inner.providers.prepare(OIDC_LOGINS).await
    }

    fn store(&self) -> &dyn Store {
        self.inner.providers.store()
    }

    /// The names of the configured providers, in order.
    pub fn names(&self) -> Vec<String> {
        self.inner.providers.names()
    }

    /// Where provider `name` sends the browser back.
    pub fn callback_url(&self, name: &str) -> String {
        self.inner.providers.callback_url(name)
    }

    fn provider(&self, name: &str) -> Result<&OidcProvider, OidcError> {
        self.inner.providers.get(name)
    }

    fn http(&self) -> Result<&reqwest::Client, OidcError> {
        self.inner.providers.http()
    }

    /// The provider's metadata and keys, fetched when not kept (or kept too long, or when
    /// `refetch_keys` and the keys are older than 30 s).
    async fn discovered(
        &self,
        provider: &OidcProvider,
        refetch_keys: bool,
    ) -> Result<Arc<Discovered>, OidcError> {
        let kept = self
            .inner
            .discovered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&provider.name)
            .cloned();
        let http = self.http()?;
        let fresh = match kept {
            Some(d) if d.fetched.elapsed() < discovery::KEEP => {
                if !refetch_keys || d.keys_fetched.elapsed() < discovery::REFETCH_KEYS {
                    return Ok(d);
                }
                let keys = discovery::fetch_keys(http, &d.metadata.jwks_uri).await;
                let mut d = (*d).clone();
                d.keys = keys.map_err(OidcError::Unavailable)?;
                d.keys_fetched = Instant::now();
                d
            }
            _ => discovery::discover(http, &provider.issuer)
                .await
                .map_err(OidcError::Unavailable)?,
        };
        let fresh = Arc::new(fresh);
        self.inner
            .discovered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(provider.name.clone(), fresh.clone());
        Ok(fresh)
    }

    /// Starts a sign-in with provider `name` for the caller at `client`: stores its state,
    /// nonce and PKCE verifier and returns the provider's URL to send the browser to.
    ///
    /// # Errors
    /// [`OidcError::UnknownProvider`]; [`OidcError::Unavailable`] when the provider's metadata
    /// cannot be read; [`Error::TooManyRequests`] past the accounts' `oidc_start_limit` for
    /// `client`; store failures.
    pub async fn begin(
        &self,
        name: &str,
        client: Option<std::net::IpAddr>,
    ) -> Result<OidcStart, OidcError> {
        let provider = self.provider(name)?;
        self.inner.providers.admit(client).await?;
        let discovered = self.discovered(provider, false).await?;
        let (nonce, verifier) = (random_token(), random_token());
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let fields = json!({"nonce": nonce, "verifier": verifier});
        let fields = fields.as_object().cloned().unwrap_or_default();
        let state = (self.inner.providers)
            .record_login(OIDC_LOGINS, name, fields)
            .await?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &provider.client_id)
            .append_pair("redirect_uri", &self.callback_url(name))
            .append_pair("scope", &provider.scopes.join(" "))
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        let endpoint = &discovered.metadata.authorization_endpoint;
        let joiner = if endpoint.contains('?') { '&' } else { '?' };
        Ok(OidcStart {
            url: format!("{endpoint}{joiner}{query}"),
            state,
        })
    }

    /// Finishes a sign-in with provider `name` when the provider sends the browser back:
    /// checks the state (against the browser's too), trades the code for tokens, verifies the
    /// ID token, finds, links or creates the account, and returns a one-time code for
    /// [`Oidc::exchange`].
    ///
    /// # Errors
    /// Every [`OidcError`] but the code and two-factor ones.
    pub async fn finish(&self, name: &str, callback: OidcCallback) -> Result<String, OidcError> {
        let provider = self.provider(name)?;
        let login = (self.inner.providers)
            .take_login(OIDC_LOGINS, name, &callback)
            .await?;
        let field = |k: &str| login.get(k).and_then(Value::as_str).unwrap_or_default();
        if let Some(error) = callback.error {
            return Err(OidcError::Refused(error.chars().take(100).collect()));
        }
        if let Some(iss) = callback.iss.as_deref() {
            let expected = self.discovered(provider, false).await?;
            if !discovery::issuer_matches(&expected.metadata.issuer, iss) {
                return Err(OidcError::InvalidResponse(
                    "the iss parameter is not the provider's".into(),
                ));
            }
        }
        let code = callback
            .code
            .filter(|c| !c.is_empty())
            .ok_or_else(|| OidcError::InvalidResponse("no code".into()))?;
        let identity = self
            .identity(provider, &code, field("verifier"), field("nonce"))
            .await?;
        self.inner.providers.code_for(name, identity).await
    }

    /// Trades the code at the token endpoint and verifies the ID token; the identity, with
    /// the address from the userinfo endpoint when the ID token has none.
    async fn identity(
        &self,
        provider: &OidcProvider,
        code: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<Identity, OidcError> {
        let discovered = self.discovered(provider, false).await?;
        let metadata = &discovered.metadata;
        let basic = metadata.basic_auth();
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", &self.callback_url(&provider.name))
                .append_pair("code_verifier", verifier);
            if !basic {
                form.append_pair("client_id", &provider.client_id)
                    .append_pair("client_secret", &provider.client_secret);
            }
            form.finish()
        };
        let mut request = self.http()?.post(&metadata.token_endpoint);
        if basic {
            // RFC 6749 2.3.1: both are form-encoded before they go into Basic.
            let encode =
                |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(
                encode(&provider.client_id),
                Some(encode(&provider.client_secret)),
            );
        }
        let response = request
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(format!("token request: {e}")))?;
        let tokens: Value = discovery::json_reply(response, "token request")
            .await
            .map_err(OidcError::InvalidResponse)?;
        let id_token = tokens
            .get("id_token")
            .and_then(Value::as_str)
            .ok_or_else(|| OidcError::InvalidResponse("no id_token".into()))?;
        let check = |d: &Discovered| {
            id_token::verify(
                id_token,
                &d.keys,
                // The configured issuer, or the multi-tenant template standing for it.
                &d.metadata.issuer,
                &provider.client_id,
                nonce,
            )
        };
        let mut identity = match check(&discovered) {
            Err(Refusal::UnknownKey) => {
                let refreshed = self.discovered(provider, true).await?;
                check(&refreshed)
            }
            other => other,
        }
        .map_err(|r| match r {
            Refusal::UnknownKey => OidcError::InvalidResponse("unknown signing key".into()),
            Refusal::Invalid(why) => OidcError::InvalidResponse(format!("ID token: {why}")),
        })?;
        let access_token = tokens.get("access_token").and_then(Value::as_str);
        if let (None, Some(url), Some(access)) =
            (&identity.email, &metadata.userinfo_endpoint, access_token)
        {
            let response = self
                .http()?
                .get(url)
                .bearer_auth(access)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| OidcError::Unavailable(format!("userinfo: {e}")))?;
            let claims: Value = discovery::json_reply(response, "userinfo")
                .await
                .map_err(OidcError::InvalidResponse)?;
            // The userinfo reply is the ID token's person only when `sub` is the same.
            match Identity::of(&claims) {
                Some(info) if info.sub == identity.sub => {
                    identity.email = info.email;
                    identity.email_verified = info.email_verified;
                }
                _ => {
                    return Err(OidcError::InvalidResponse(
                        "userinfo is about someone else".into(),
                    ));
                }
            }
        }
        Ok(identity)
    }

    /// Trades the one-time code of a finished sign-in for a login token. When the account
    /// has two-factor codes on, `totp` is needed: without it the code stays usable
    /// ([`OidcError::TotpRequired`]); a wrong one uses the code up.
    ///
    /// # Errors
    /// [`OidcError::InvalidCode`], [`OidcError::TotpRequired`], [`OidcError::TotpInvalid`];
    /// store failures.
    pub async fn exchange(&self, code: &str, totp: Option<&str>) -> Result<LoginToken, OidcError> {
        let store = self.store();
        let accounts = &self.inner.providers.accounts;
        let peeked = tokens::peek(store, TokenKind::OidcCode, code)
            .await
            .map_err(invalid_code)?;
        let user = accounts
            .find_user_by_id(&peeked.user_id)
            .await?
            .ok_or(OidcError::InvalidCode)?;
        let needs_totp = totp_enabled(&user);
        if needs_totp && totp.is_none_or(|c| c.trim().is_empty()) {
            return Err(OidcError::TotpRequired);
        }
        let redeemed = tokens::redeem(store, TokenKind::OidcCode, code)
            .await
            .map_err(invalid_code)?;
        if needs_totp && accounts.check_totp(&user, totp).await.is_err() {
            return Err(OidcError::TotpInvalid);
        }
        let prune = accounts.has_expired_tokens(&user);
        accounts
            .issue_token(&redeemed.user_id, prune)
            .await
            .map_err(|e| match e {
                Error::UserNotFound => OidcError::InvalidCode,
                e => e.into(),
            })
    }
}

fn invalid_code(e: Error) -> OidcError {
    match e {
        Error::InvalidToken => OidcError::InvalidCode,
        e => e.into(),
    }
}
