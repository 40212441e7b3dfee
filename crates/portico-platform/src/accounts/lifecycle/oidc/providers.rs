//! What sign-in with providers keeps alike for OpenID Connect and OAuth2: the configured
//! providers by name, where they send the browser back, the HTTP client that calls them, and
//! the store their sign-ins in progress live in.

use std::sync::Arc;
use std::time::Duration;

use portico_store::{Document, Selector, Store, document_id};
use serde_json::{Value, json};

use super::super::tokens::{self, TokenKind};
use super::{Identity, OidcCallback, OidcError, account_of, random_token};
use crate::Error;
use crate::accounts::{Accounts, hash_token};
use crate::time::{millis, now_ms};

/// How long a sign-in may stay at the provider.
const SIGN_IN_LIFETIME: Duration = Duration::from_secs(600);
/// How long the one-time code works.
const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// How long a provider may take to answer one call.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// A configured provider, known by its name.
pub(crate) trait Named {
    /// The name in its routes (`/auth/oidc/{name}`).
    fn name(&self) -> &str;
}

/// The providers of one kind of sign-in, and what calling them needs.
pub(crate) struct Providers<P> {
    pub(crate) accounts: Accounts,
    store: Arc<dyn Store>,
    list: Vec<P>,
    /// `{server_url}/auth/{door}/`: the callback is `{callback_base}{name}/callback`.
    callback_base: String,
    http: Option<reqwest::Client>,
}

impl<P: Named> Providers<P> {
    /// `list`, served under `/auth/{door}/` (`oidc`, `oauth2`); an HTTP client (no redirects
    /// followed) only when there are providers.
    pub(crate) fn new(accounts: Accounts, store: Arc<dyn Store>, list: Vec<P>, door: &str) -> Self {
        let server_url = accounts
            .config()
            .server_url
            .trim_end_matches('/')
            .to_owned();
        let http = if list.is_empty() {
            None
        } else {
            reqwest::Client::builder()
                .timeout(PROVIDER_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(
                    |e| tracing::error!(error = %e, door, "sign-in with providers: no HTTP client"),
                )
                .ok()
        };
        Providers {
            accounts,
            store,
            list,
            callback_base: format!("{server_url}/auth/{door}/"),
            http,
        }
    }

    /// With providers: the indexes of the sign-ins in progress (`logins`) and of the linked
    /// identities.
    pub(crate) async fn prepare(&self, logins: &str) -> crate::Result<()> {
        if !self.list.is_empty() {
            self.store.ensure_index(logins, "expires").await?;
            self.store.ensure_index(super::IDENTITIES, "userId").await?;
        }
        Ok(())
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The names of the providers, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.list.iter().map(|p| p.name().to_owned()).collect()
    }

    /// Where provider `name` sends the browser back.
    pub(crate) fn callback_url(&self, name: &str) -> String {
        format!("{}{name}/callback", self.callback_base)
    }

    /// The provider `name`.
    pub(crate) fn get(&self, name: &str) -> Result<&P, OidcError> {
        self.list
            .iter()
            .find(|p| p.name() == name)
            .ok_or(OidcError::UnknownProvider)
    }

    /// The client that calls the providers.
    pub(crate) fn http(&self) -> Result<&reqwest::Client, OidcError> {
        self.http
            .as_ref()
            .ok_or_else(|| OidcError::Unavailable("no HTTP client".into()))
    }

    /// Uses up the sign-in in progress that `callback`'s state names, in `logins`: the state
    /// must be the browser's too, of provider `name`, and not expired. Its stored fields
    /// (the PKCE verifier, a nonce).
    pub(crate) async fn take_login(
        &self,
        logins: &str,
        name: &str,
        callback: &OidcCallback,
    ) -> Result<Document, OidcError> {
        let state = callback.state.as_deref().unwrap_or_default();
        if state.is_empty() || state.len() > 128 || callback.browser_state.as_deref() != Some(state)
        {
            return Err(OidcError::InvalidState);
        }
        // Removing the sign-in uses its state up, here or on another instance.
        let id = hash_token(state);
        let login = self
            .store()
            .get(logins, &id)
            .await?
            .ok_or(OidcError::InvalidState)?;
        if self.store().remove(logins, &Selector::by_id(&id)).await? == 0 {
            return Err(OidcError::InvalidState);
        }
        let provider = login.get("provider").and_then(Value::as_str);
        let expires = login.get("expires").and_then(Value::as_i64).unwrap_or(0);
        if provider != Some(name) || expires <= now_ms() {
            return Err(OidcError::InvalidState);
        }
        Ok(login)
    }

    /// Counts a sign-in start by the caller at `client` against the accounts'
    /// `oidc_start_limit`, which OpenID Connect and OAuth2 starts share.
    pub(crate) async fn admit(&self, client: Option<std::net::IpAddr>) -> Result<(), OidcError> {
        let limit = self.accounts.config().oidc_start_limit;
        let key = super::super::client_key("oidc-start", client);
        super::super::count_request(self.store(), &key, limit).await?;
        Ok(())
    }

    /// Stores a sign-in with provider `name` in `logins` (with `fields`: its PKCE verifier, a
    /// nonce), removing those nobody finished; its new state.
    pub(crate) async fn record_login(
        &self,
        logins: &str,
        name: &str,
        fields: Document,
    ) -> Result<String, OidcError> {
        let stale = Selector::parse(&json!({"expires": {"$lt": now_ms()}})).map_err(Error::from)?;
        self.store().remove(logins, &stale).await?;
        let state = random_token();
        let mut doc = fields;
        doc.insert("_id".into(), Value::String(hash_token(&state)));
        doc.insert("provider".into(), Value::String(name.to_owned()));
        doc.insert(
            "expires".into(),
            json!(now_ms().saturating_add(millis(SIGN_IN_LIFETIME))),
        );
        self.store().insert(logins, doc).await?;
        Ok(state)
    }

    /// The account `identity` signs in to (found, linked as `link_as`, or created, as the
    /// identity links go), and a one-time code that trades for its login.
    pub(crate) async fn code_for(
        &self,
        link_as: &str,
        identity: Identity,
    ) -> Result<String, OidcError> {
        let user = account_of(&self.accounts, self.store(), link_as, &identity).await?;
        if self.accounts.config().require_verified_email && !super::super::has_verified_email(&user)
        {
            return Err(OidcError::EmailNotVerified);
        }
        let user_id = document_id(&user).unwrap_or_default();
        let lifetime = chrono::Duration::from_std(CODE_LIFETIME).unwrap_or_default();
        let email = identity.email.unwrap_or_default();
        Ok(tokens::issue(self.store(), TokenKind::OidcCode, user_id, &email, lifetime).await?)
    }
}
