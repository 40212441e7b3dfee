//! Login tokens: random secrets stored only as their SHA-256; issuing, finding, expiring and
//! removing them on a user's record.

use std::sync::PoisonError;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use portico_store::{Document, Selector, Update, UpdateOptions, lookup_path};
use rand::Rng;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    Accounts, LOGIN_TOKEN_FIELDS, LOGIN_TOKENS, LoginToken, TOKEN_PATH, USERS, lookup, set,
    token_cache,
};
use crate::time::{now_iso, parse_date};
use crate::{Error, Result};

/// The alphabet of login tokens: `a-zA-Z0-9-_` (64 symbols, so 6 random bits each).
const TOKEN_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Length of a login token: 43 characters (258 random bits).
pub(crate) const TOKEN_LEN: usize = 43;

/// A new login token: 43 characters of `a-zA-Z0-9-_` from a CSPRNG.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_LEN];
    rand::rng().fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(TOKEN_ALPHABET[usize::from(b & 63)]))
        .collect()
}

/// The stored form of a login token: padded standard base64 of its SHA-256 (44 characters).
///
/// ```
/// # use portico_platform::hash_token;
/// assert_eq!(hash_token(""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
/// ```
pub fn hash_token(token: &str) -> String {
    STANDARD.encode(Sha256::digest(token.as_bytes()))
}

impl Accounts {
    /// Issues a new login token for the user: stores only its hash, with `when`, and returns the
    /// plain token once. Tokens expired for longer than the lifetime are pruned on the way.
    ///
    /// # Errors
    /// [`Error::UserNotFound`], store failures.
    pub async fn new_login_token(&self, user_id: &str) -> Result<LoginToken> {
        self.issue_token(user_id, true).await
    }

    /// Issues a token; prunes expired ones when `prune` (a login knows whether there are any, and
    /// so spares itself the second write when there are none).
    pub(crate) async fn issue_token(&self, user_id: &str, prune: bool) -> Result<LoginToken> {
        let token = new_token();
        let when = now_iso();
        let update = Update::parse(&json!({
            "$push": { LOGIN_TOKENS: { "when": when, "hashedToken": hash_token(&token) } }
        }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        if prune {
            self.prune_expired(user_id).await;
        }
        Ok(LoginToken {
            user_id: user_id.to_string(),
            token,
            when,
        })
    }

    /// Removes the user's tokens whose `when` (ISO string) is older than the lifetime. Best effort.
    pub(super) async fn prune_expired(&self, user_id: &str) {
        let cutoff = crate::time::to_iso(Utc::now() - self.inner.config.token_lifetime);
        let pruned = Update::parse(&json!({
            "$pull": { LOGIN_TOKENS: { "when": { "$lt": cutoff } } }
        }));
        let result = match pruned {
            Ok(update) => self.update_user(user_id, &update).await,
            Err(e) => Err(e.into()),
        };
        if let Err(e) = result {
            tracing::debug!(user_id, error = %e, "could not prune expired login tokens");
        }
    }

    /// The user holding the plain login `token` at the default path, unless it expired.
    ///
    /// # Errors
    /// Store failures.
    pub async fn user_by_token(&self, token: &str) -> Result<Option<Document>> {
        if token.is_empty() {
            return Ok(None);
        }
        self.user_by_hashed_token(TOKEN_PATH, &hash_token(token))
            .await
    }

    /// Indexes a custom token path the first time it is used, so no token lookup scans the users.
    pub(super) async fn ensure_token_index(&self, path: &str) -> Result<()> {
        let indexed = self
            .inner
            .indexed_token_paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(path);
        if indexed {
            return Ok(());
        }
        self.store().ensure_index(USERS, path).await?;
        self.inner
            .indexed_token_paths
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_string());
        Ok(())
    }

    /// The user whose record holds `hashed` at `path` (the routes spec's `auth.token`). When the
    /// path lies inside `services.resume.loginTokens`, an expired token resolves to no one.
    /// A custom path is indexed on first use.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unusable path; store failures.
    pub async fn user_by_hashed_token(&self, path: &str, hashed: &str) -> Result<Option<Document>> {
        if hashed.is_empty() {
            return Ok(None);
        }
        if path.is_empty() || path.starts_with('$') || path.split('.').any(str::is_empty) {
            return Err(Error::InvalidArgument(format!(
                "invalid token path {path:?}"
            )));
        }
        let store = self.store();
        // The stamp is read before the lookup: a write committing after it makes the entry stale.
        let stamp = match self.inner.tokens.get(store, USERS, path, hashed).await {
            token_cache::Cached::Hit(user) => {
                self.touch_guest(&user).await;
                return Ok(Some(user));
            }
            token_cache::Cached::Miss(stamp) => stamp,
        };
        self.ensure_token_index(path).await?;
        let Some(user) = store.find_one(USERS, &lookup::exact(path, hashed)?).await? else {
            // No login token: an API key, perhaps (never cached, so a revocation is seen at once).
            return self.user_by_api_key(hashed).await;
        };
        if !path.starts_with(LOGIN_TOKEN_FIELDS) {
            if let Some(stamp) = stamp {
                self.inner.tokens.put(stamp, path, hashed, &user, None);
            }
            return Ok(Some(user));
        }
        let expires = self.token_expiry(&user, path, hashed);
        let Some(expires) = expires.filter(|at| Utc::now() < *at) else {
            return Ok(None);
        };
        if let Some(stamp) = stamp {
            self.inner
                .tokens
                .put(stamp, path, hashed, &user, Some(expires));
        }
        self.touch_guest(&user).await;
        Ok(Some(user))
    }

    /// When the token `hashed` at `path` of `user` expires: its `when` plus the token lifetime
    /// (the latest, should it be listed twice). `None` for a path outside the login-token list
    /// (such tokens do not expire) or a token without a readable `when`.
    pub(crate) fn token_expiry(
        &self,
        user: &Document,
        path: &str,
        hashed: &str,
    ) -> Option<DateTime<Utc>> {
        let field = path.strip_prefix(LOGIN_TOKEN_FIELDS)?;
        let lifetime = self.inner.config.token_lifetime;
        login_token_entries(user)
            .filter(|entry| {
                lookup_path(entry, field)
                    .into_iter()
                    .any(|v| v.as_str() == Some(hashed))
            })
            .filter_map(|entry| {
                let when = entry.get("when").and_then(parse_date)?;
                // An impersonation token lives shorter (its own lifetime, never longer).
                let own = entry
                    .get("lifetimeSecs")
                    .and_then(Value::as_i64)
                    .map_or(lifetime, chrono::Duration::seconds);
                Some(when + own.min(lifetime))
            })
            .max()
    }

    /// Issues a token acting as `user_id` for the admin `admin_id`, valid for
    /// `impersonation_lifetime` (15 minutes by default, never longer than a login token). The
    /// token's entry names the admin, so every write made with it can be logged with both ids
    /// ([`Accounts::impersonator_of`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for the admin's own account or an API key's service account;
    /// [`Error::UserNotFound`]; store failures.
    pub async fn impersonate(&self, admin_id: &str, user_id: &str) -> Result<LoginToken> {
        if admin_id == user_id {
            return Err(Error::InvalidArgument("You cannot act as yourself".into()));
        }
        let user = self.require_user(user_id).await?;
        if super::is_service_account(&user) {
            return Err(Error::InvalidArgument(
                "An API key's service account cannot be acted as".into(),
            ));
        }
        let token = new_token();
        let when = now_iso();
        let lifetime = self.config().impersonation_lifetime.num_seconds().max(1);
        let update = Update::parse(&json!({
            "$push": { LOGIN_TOKENS: {
                "when": when, "hashedToken": hash_token(&token),
                "impersonator": admin_id, "lifetimeSecs": lifetime
            } }
        }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        Ok(LoginToken {
            user_id: user_id.to_string(),
            token,
            when,
        })
    }

    /// The admin acting through the login token `hashed` of `user`, when it is an
    /// impersonation token ([`Accounts::impersonate`]).
    pub fn impersonator_of(user: &Document, hashed: &str) -> Option<String> {
        login_token_entries(user)
            .find(|entry| entry.get("hashedToken").and_then(Value::as_str) == Some(hashed))
            .and_then(|entry| entry.get("impersonator").and_then(Value::as_str))
            .map(str::to_owned)
    }

    /// Removes one login token (logout); true when the user held it.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove_token(&self, user_id: &str, token: &str) -> Result<bool> {
        self.remove_hashed_token(user_id, &hash_token(token)).await
    }

    /// Removes one login token given its hash; true when the user held it.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove_hashed_token(&self, user_id: &str, hashed: &str) -> Result<bool> {
        let update = Update::parse(&json!({
            "$pull": { LOGIN_TOKENS: { "hashedToken": hashed } }
        }))?;
        let result = self
            .store()
            .update(
                USERS,
                &Selector::by_id(user_id),
                &update,
                UpdateOptions::default(),
            )
            .await?;
        Ok(result.modified > 0)
    }

    /// Removes every login token of the user (logout everywhere); returns how many there were.
    ///
    /// # Errors
    /// [`Error::UserNotFound`], store failures.
    pub async fn remove_all_tokens(&self, user_id: &str) -> Result<u64> {
        let user = self.require_user(user_id).await?;
        let count = lookup_path(&user, LOGIN_TOKENS)
            .first()
            .and_then(|v| v.as_array())
            .map_or(0, Vec::len);
        if self
            .update_user(user_id, &set(LOGIN_TOKENS, json!([]))?)
            .await?
            == 0
        {
            return Err(Error::UserNotFound);
        }
        Ok(u64::try_from(count).unwrap_or(u64::MAX))
    }
}

/// The entries of `user`'s login-token list (`services.resume.loginTokens`), each an object.
fn login_token_entries(user: &Document) -> impl Iterator<Item = &serde_json::Map<String, Value>> {
    lookup_path(user, LOGIN_TOKENS)
        .into_iter()
        .flat_map(|v| match v {
            Value::Array(items) => items.iter().collect::<Vec<_>>(),
            other => vec![other],
        })
        .filter_map(Value::as_object)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn tokens_are_43_url_safe_characters_and_differ() {
        let tokens: HashSet<String> = (0..100).map(|_| new_token()).collect();
        assert_eq!(tokens.len(), 100);
        for t in &tokens {
            assert_eq!(t.len(), TOKEN_LEN);
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{t}"
            );
        }
    }

    #[test]
    fn hashed_tokens_are_padded_base64_of_sha256() {
        let h = hash_token("abc");
        assert_eq!(h, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
        assert_eq!(h.len(), 44);
    }
}
