//! API keys: long-lived secrets for servers and scripts, each acting as its own service account.
//!
//! [`Accounts::add_api_key`] makes a service account (a user document with `service: true`,
//! the username `key:NAME`, the key's roles, no password and no login tokens) and a key of
//! `pk_` and 43 random characters (258 bits), returned once. [`API_KEYS`] keeps only its
//! SHA-256 (the document's `_id`), with the name (unique), the service account, the roles, the
//! creation time, the expiry and the last use.
//!
//! A request sends the key where it would send a login token (`X-Auth-Token`, `Authorization:
//! Bearer`) or as `X-Api-Key`. Every token lookup ([`Accounts::user_by_hashed_token`]) that
//! finds no login token looks for a key of that hash, so a key works on every door and on the
//! live socket. The key is read on every request, never cached: a revoked key
//! ([`Accounts::revoke_api_key`]) stops working at the next request, on every instance. The
//! revocation also removes the service account, which ends live streams and sockets
//! authenticated with the key (they re-check their caller when a user changes). The last use
//! is written at most once a minute per key.

use portico_store::{Document, Query, Selector, Sort, Update, UpdateOptions, document_id};
use serde_json::{Value, json};

use super::token::new_token;
use super::{Accounts, NewUser, USERS, hash_token, is_service_account};
use crate::time::{from_millis, now_ms, to_iso};
use crate::{Error, Result};

/// The collection of API keys, stored hashed.
pub const API_KEYS: &str = "portico_api_keys";

/// The prefix of every key (so a leaked one is recognised).
const KEY_PREFIX: &str = "pk_";
/// How often a key's last use is written at most.
const LAST_USE_EVERY_MS: i64 = 60_000;

/// One key as listed: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiKeyInfo {
    /// The key's name.
    pub name: String,
    /// The roles its service account holds.
    pub roles: Vec<String>,
    /// The service account's id.
    pub user_id: String,
    /// When it was made (ISO-8601).
    pub created_at: String,
    /// When it stops working (ISO-8601), if ever.
    pub expires: Option<String>,
    /// When it was last used (ISO-8601, to the minute), if ever.
    pub last_used: Option<String>,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn iso_of(doc: &Document, key: &str) -> Option<String> {
    doc.get(key)
        .and_then(Value::as_i64)
        .filter(|ms| *ms > 0)
        .and_then(from_millis)
        .map(to_iso)
}

impl Accounts {
    pub(crate) async fn prepare_api_keys(&self) -> Result<()> {
        self.store().ensure_unique_index(API_KEYS, "name").await?;
        Ok(())
    }

    /// Makes the key `name` with `roles`, valid for `lifetime` (forever without one); returns
    /// the key, which is stored only hashed and cannot be shown again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name not of letters, digits, `-`, `_`, `.` (1 to 64) or
    /// a lifetime not above zero; [`Error::Conflict`] when a key has the name; store failures.
    pub async fn add_api_key(
        &self,
        name: &str,
        roles: Vec<String>,
        lifetime: Option<chrono::Duration>,
    ) -> Result<String> {
        if !valid_name(name) {
            return Err(Error::InvalidArgument(format!(
                "a key's name is 1 to 64 letters, digits, -, _ and . (not {name:?})"
            )));
        }
        if lifetime.is_some_and(|d| d <= chrono::Duration::zero()) {
            return Err(Error::InvalidArgument(
                "a key's lifetime must be above zero".into(),
            ));
        }
        let taken = Selector::parse(&json!({"name": name}))?;
        if self.store().count(API_KEYS, &taken).await? > 0 {
            return Err(Error::Conflict(format!("a key named {name:?} exists")));
        }
        let new = NewUser {
            username: Some(format!("key:{name}")),
            roles: roles.clone(),
            ..NewUser::default()
        };
        // The service flag in the same write as the account.
        let service = json!({"service": true})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let user_id = self.insert_user_with(new, false, service).await?;
        let key = format!("{KEY_PREFIX}{}", new_token());
        let expires = lifetime.map(|d| now_ms().saturating_add(d.num_milliseconds()));
        let doc: Document = json!({
            "_id": hash_token(&key),
            "name": name,
            "userId": user_id,
            "roles": roles,
            "createdAt": now_ms(),
            "expires": expires,
            "lastUsed": 0,
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        if let Err(e) = self.store().insert(API_KEYS, doc).await {
            self.remove_user(&user_id).await?;
            return Err(match e {
                portico_store::Error::DuplicateKey { .. } => {
                    Error::Conflict(format!("a key named {name:?} exists"))
                }
                e => e.into(),
            });
        }
        Ok(key)
    }

    /// Every key, by name: never the key itself.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list_api_keys(&self) -> Result<Vec<ApiKeyInfo>> {
        let mut query = Query::new(Selector::parse(&json!({}))?);
        query.sort = Some(Sort::by("name", true)?);
        let docs = self.store().find(API_KEYS, &query).await?;
        Ok(docs
            .iter()
            .map(|doc| {
                let text = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default();
                ApiKeyInfo {
                    name: text("name").to_owned(),
                    roles: doc
                        .get("roles")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|r| r.as_str().map(str::to_owned))
                        .collect(),
                    user_id: text("userId").to_owned(),
                    created_at: iso_of(doc, "createdAt").unwrap_or_default(),
                    expires: iso_of(doc, "expires"),
                    last_used: iso_of(doc, "lastUsed"),
                }
            })
            .collect())
    }

    /// Revokes the key `name`: it stops working at the next request on every instance, and its
    /// service account is removed. False when no key has the name.
    ///
    /// # Errors
    /// Store failures.
    pub async fn revoke_api_key(&self, name: &str) -> Result<bool> {
        let by_name = Selector::parse(&json!({"name": name}))?;
        let Some(doc) = self.store().find_one(API_KEYS, &by_name).await? else {
            return Ok(false);
        };
        let Some(id) = document_id(&doc) else {
            return Ok(false);
        };
        let removed = self.store().remove(API_KEYS, &Selector::by_id(id)).await?;
        if let Some(user_id) = doc.get("userId").and_then(Value::as_str) {
            let service = Selector::parse(&json!({"_id": user_id, "service": true}))?;
            self.store().remove(USERS, &service).await?;
        }
        Ok(removed > 0)
    }

    /// The service account of the key whose hash is `hashed`, while the key is valid; notes
    /// its use (at most once a minute).
    pub(crate) async fn user_by_api_key(&self, hashed: &str) -> Result<Option<Document>> {
        let Some(key) = self.store().get(API_KEYS, hashed).await? else {
            return Ok(None);
        };
        let now = now_ms();
        if key
            .get("expires")
            .and_then(Value::as_i64)
            .is_some_and(|at| at <= now)
        {
            return Ok(None);
        }
        let user_id = key
            .get("userId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(user) = self
            .find_user_by_id(user_id)
            .await?
            .filter(is_service_account)
        else {
            return Ok(None);
        };
        let last = key.get("lastUsed").and_then(Value::as_i64).unwrap_or(0);
        if now.saturating_sub(last) >= LAST_USE_EVERY_MS {
            let stale = Selector::parse(&json!({"_id": hashed, "lastUsed": last}))?;
            let used = Update::parse(&json!({"$set": {"lastUsed": now}}))?;
            if let Err(e) = self
                .store()
                .update(API_KEYS, &stale, &used, UpdateOptions::default())
                .await
            {
                tracing::warn!(error = %e, "could not note an API key's use");
            }
        }
        Ok(Some(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_words() {
        assert!(valid_name("ci") && valid_name("deploy-bot_2.prod"));
        assert!(!valid_name("") && !valid_name("a b") && !valid_name(&"x".repeat(65)));
    }
}
