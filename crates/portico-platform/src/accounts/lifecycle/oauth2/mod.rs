//! Sign-in with OAuth2 providers that are not OpenID Connect ones (GitHub, GitLab, Discord,
//! or any provider with an authorization endpoint, a token endpoint and a user API): the
//! authorization code flow with PKCE (S256) and state, as a confidential client.
//!
//! | step | call |
//! |---|---|
//! | send the browser to the provider | [`OAuth2::begin`]: the provider's URL and the state to bind to the browser |
//! | the provider sends it back | [`OAuth2::finish`]: checks the state, trades the code for an access token, reads the user API, finds, links or creates the account; a one-time code |
//! | the application trades the code | [`crate::Oidc::exchange`]: the same one-time codes as OpenID Connect sign-ins |
//!
//! Everything but the proof of who signed in is as [`crate::Oidc`] does it: a sign-in in
//! progress is a document of [`OAUTH2_LOGINS`] (hashed state, PKCE verifier, 10 minutes) so
//! another instance on the same database may finish it, a state works once, and the account
//! is found, linked by a verified address on both sides only, or created by the same rules
//! (links are kept as provider `oauth2:{name}`, apart from OpenID Connect providers of the same
//! name). Without an ID token, who signed in is what the provider's user API answers for the
//! access token (see `profile.rs`); the access token is used for that and dropped.

mod profile;
mod provider;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portico_store::Store;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub use provider::{OAuth2Preset, OAuth2Profile, OAuth2Provider};

use super::oidc::providers::{Named, Providers};
use super::oidc::{OidcCallback, OidcError, OidcStart, json_reply, random_token};
use crate::accounts::Accounts;

/// The collection of OAuth2 sign-ins in progress (state, PKCE verifier), by hashed state.
pub const OAUTH2_LOGINS: &str = "portico_oauth2_logins";

type Inner = Providers<OAuth2Provider>;

/// Sign-in with OAuth2 providers (get it with [`crate::Platform::oauth2`]). Cheap to clone.
#[derive(Clone)]
pub struct OAuth2 {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuth2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2")
            .field("providers", &self.names())
            .finish_non_exhaustive()
    }
}

impl Named for OAuth2Provider {
    fn name(&self) -> &str {
        &self.name
    }
}

impl OAuth2 {
    pub(crate) fn new(accounts: Accounts, store: Arc<dyn Store>) -> OAuth2 {
        let providers = accounts.config().oauth2.clone();
        OAuth2 {
            inner: Arc::new(Providers::new(accounts, store, providers, "oauth2")),
        }
    }

    pub(crate) async fn prepare(&self) -> crate::Result<()> {
        self.inner.prepare(OAUTH2_LOGINS).await
    }

    /// The names of the configured providers, in order.
    pub fn names(&self) -> Vec<String> {
        self.inner.names()
    }

    /// Where provider `name` sends the browser back.
    pub fn callback_url(&self, name: &str) -> String {
        self.inner.callback_url(name)
    }

    fn provider(&self, name: &str) -> Result<&OAuth2Provider, OidcError> {
        self.inner.get(name)
    }

    fn http(&self) -> Result<&reqwest::Client, OidcError> {
        self.inner.http()
    }

    /// Starts a sign-in with provider `name` for the caller at `client`: stores its state and
    /// PKCE verifier and returns the provider's URL to send the browser to. The starts count
    /// against the accounts' `oidc_start_limit` together with OpenID Connect ones.
    ///
    /// # Errors
    /// [`OidcError::UnknownProvider`]; [`Error::TooManyRequests`] past the limit for
    /// `client`; store failures.
    pub async fn begin(
        &self,
        name: &str,
        client: Option<std::net::IpAddr>,
    ) -> Result<OidcStart, OidcError> {
        let provider = self.provider(name)?;
        self.inner.admit(client).await?;
        let verifier = random_token();
        let fields = json!({"verifier": verifier})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let state = self.inner.record_login(OAUTH2_LOGINS, name, fields).await?;
        let query = {
            let mut query = form_urlencoded::Serializer::new(String::new());
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &provider.client_id)
                .append_pair("redirect_uri", &self.callback_url(name))
                .append_pair("state", &state);
            if !provider.scopes.is_empty() {
                query.append_pair("scope", &provider.scopes.join(" "));
            }
            if provider.pkce {
                let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                query
                    .append_pair("code_challenge", &challenge)
                    .append_pair("code_challenge_method", "S256");
            }
            query.finish()
        };
        let endpoint = &provider.auth_url;
        let joiner = if endpoint.contains('?') { '&' } else { '?' };
        Ok(OidcStart {
            url: format!("{endpoint}{joiner}{query}"),
            state,
        })
    }

    /// Finishes a sign-in with provider `name` when the provider sends the browser back:
    /// checks the state (against the browser's too), trades the code for an access token,
    /// reads who signed in from the user API, finds, links or creates the account, and
    /// returns a one-time code for [`crate::Oidc::exchange`].
    ///
    /// # Errors
    /// Every [`OidcError`] but the code and two-factor ones.
    pub async fn finish(&self, name: &str, callback: OidcCallback) -> Result<String, OidcError> {
        let provider = self.provider(name)?;
        let verifier = self.take_state(name, &callback).await?;
        if let Some(error) = callback.error {
            return Err(OidcError::Refused(error.chars().take(100).collect()));
        }
        let code = callback
            .code
            .filter(|c| !c.is_empty())
            .ok_or_else(|| OidcError::InvalidResponse("no code".into()))?;
        let access = self.access_token(provider, &code, &verifier).await?;
        let identity = profile::identity(self.http()?, provider, &access).await?;
        self.inner
            .code_for(&format!("oauth2:{name}"), identity)
            .await
    }

    /// Uses up the sign-in of `callback`'s state (which must be the browser's too, of
    /// provider `name`, not expired); its PKCE verifier.
    async fn take_state(&self, name: &str, callback: &OidcCallback) -> Result<String, OidcError> {
        let login = self.inner.take_login(OAUTH2_LOGINS, name, callback).await?;
        let verifier = login.get("verifier").and_then(Value::as_str);
        Ok(verifier.unwrap_or_default().to_owned())
    }

    /// Trades `code` (with the PKCE `verifier`) for an access token at the token endpoint;
    /// the client authenticates with its id and secret in the body, as GitHub, GitLab and
    /// Discord all take them.
    async fn access_token(
        &self,
        provider: &OAuth2Provider,
        code: &str,
        verifier: &str,
    ) -> Result<String, OidcError> {
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", &self.callback_url(&provider.name))
                .append_pair("client_id", &provider.client_id)
                .append_pair("client_secret", &provider.client_secret);
            if provider.pkce {
                form.append_pair("code_verifier", verifier);
            }
            form.finish()
        };
        let response = self
            .http()?
            .post(&provider.token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(format!("token request: {e}")))?;
        let reply: Value = json_reply(response, "token request")
            .await
            .map_err(OidcError::InvalidResponse)?;
        // GitHub answers a bad code (or verifier) with 200 and an `error`.
        if let Some(error) = reply.get("error").and_then(Value::as_str) {
            let error: String = error.chars().take(100).collect();
            return Err(OidcError::InvalidResponse(format!(
                "token request: {error}"
            )));
        }
        if let Some(kind) = reply.get("token_type").and_then(Value::as_str)
            && !kind.eq_ignore_ascii_case("bearer")
        {
            return Err(OidcError::InvalidResponse(format!(
                "token request: a {:?} token, not a bearer one",
                kind.chars().take(20).collect::<String>()
            )));
        }
        reply
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| OidcError::InvalidResponse("token request: no access_token".into()))
    }
}
