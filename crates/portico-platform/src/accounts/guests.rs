//! Guests: accounts with no credentials that a client makes for itself
//! ([`Accounts::create_guest`]), which later add a username or email and a password
//! ([`Accounts::upgrade_guest`]) and keep their id, and so every document that names it.
//!
//! A guest's user document has `guest: true` and `lastActive` (milliseconds since the epoch):
//! set when it is made, and moved forward when one of its login tokens is resolved, at most once
//! per [`touch_every`] (a tenth of `guest_ttl`, at most an hour), so a busy guest does not write
//! on every request. An upgrade removes both fields.
//!
//! A guest unused for `guest_ttl` is removed by the sweep ([`crate::Platform::start_guest_sweeper`]),
//! which every instance may run: it reads a batch of guests whose `lastActive` is older, and for
//! each removes the user *on the condition that it is still such a guest* (of two instances,
//! and against an upgrade or a request meanwhile, the condition decides: exactly one removes
//! it, and a guest used or upgraded since is kept), then its owned documents: those of each
//! `(collection, field)` of [`crate::AccountsConfig::guest_owned`] whose field holds its id.
//! The removals go through the store, so the change feed sees them (the files cleaner deletes
//! their files, live lists drop them); collection hooks and rules do not run. A crash between
//! the two leaves documents naming an account that no longer exists.

use std::net::IpAddr;
use std::time::Duration;

use portico_store::{Document, Query, Selector, Sort, Update, UpdateOptions, document_id};
use serde_json::{Value, json};

use super::password::{Password, blocking, hash_digest};
use super::{Accounts, LoginToken, NewUser, USERS, lookup, taken_name_error};
use crate::time::now_ms;
use crate::{Error, Result};

/// Guests removed per batch of the sweep.
const SWEEP_BATCH: u64 = 100;
/// Batches per sweep at most (the next sweep goes on).
const SWEEP_BATCHES: usize = 100;

/// How often a guest's `lastActive` is moved forward at most: a tenth of the time to live,
/// at most an hour, at least a second.
pub(crate) fn touch_every(ttl: chrono::Duration) -> Duration {
    let ttl = ttl.to_std().unwrap_or(Duration::ZERO);
    (ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(3600))
}

/// True when `user` is a guest.
pub fn is_guest(user: &Document) -> bool {
    user.get("guest").and_then(Value::as_bool) == Some(true)
}

/// What a guest adds when it becomes a full account.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct GuestUpgrade {
    /// A username (a username or an email is needed).
    pub username: Option<String>,
    /// An email address (stored unverified).
    pub email: Option<String>,
    /// The password.
    pub password: Option<Password>,
}

impl std::fmt::Debug for GuestUpgrade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestUpgrade")
            .field("username", &self.username)
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

impl GuestUpgrade {
    /// An upgrade to `username` (if any), `email` (if any) and `password`.
    pub fn new(username: Option<String>, email: Option<String>, password: Password) -> Self {
        GuestUpgrade {
            username,
            email,
            password: Some(password),
        }
    }
}

impl Accounts {
    /// Makes a guest account and logs it in. Counted per client address
    /// ([`crate::AccountsConfig::guest_limit`]).
    ///
    /// # Errors
    /// [`Error::AccessDenied`] when guests are off (`allow_guests` false, or client account
    /// creation forbidden); [`Error::TooManyRequests`] past the limit; store failures.
    pub async fn create_guest(&self, client: Option<IpAddr>) -> Result<LoginToken> {
        let config = self.config();
        if !config.allow_guests || config.forbid_client_account_creation {
            return Err(Error::AccessDenied);
        }
        let key = super::lifecycle::client_key("guest", client);
        super::lifecycle::count_request(self.store(), &key, config.guest_limit).await?;
        // Made with its flag in one write: never an account without credentials that no sweep
        // would remove.
        let flag = json!({"guest": true, "lastActive": now_ms()});
        let extra = flag.as_object().cloned().unwrap_or_default();
        let id = self
            .insert_user_with(NewUser::default(), false, extra)
            .await?;
        self.issue_token(&id, false).await
    }

    /// Turns the guest `user_id` into a full account with a username or email and a password;
    /// it keeps its id, login tokens and documents. Returns the email, when one was added (to
    /// send its verification mail).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the account is not a guest (any more);
    /// [`Error::InvalidUser`] for neither username nor email, a malformed email, an empty
    /// username, a missing or short password; [`Error::UserExists`] for a taken username or
    /// email; store failures.
    pub async fn upgrade_guest(
        &self,
        user_id: &str,
        upgrade: GuestUpgrade,
    ) -> Result<Option<String>> {
        let username = upgrade.username.map(|u| u.trim().to_owned());
        let email = upgrade.email.map(|e| e.trim().to_owned());
        if username.is_none() && email.is_none() {
            return Err(Error::InvalidUser("Need to set a username or email".into()));
        }
        if username.as_deref() == Some("") {
            return Err(Error::InvalidUser("Username may not be empty".into()));
        }
        if let Some(e) = &email
            && !lookup::is_valid_email(e)
        {
            return Err(Error::InvalidUser(format!("Invalid email address {e:?}")));
        }
        let password = upgrade
            .password
            .ok_or_else(|| Error::InvalidUser("Need a password".into()))?;
        self.check_password_length(&password)?;
        let digest = password.digest()?;
        let mut user = self
            .find_user_by_id(user_id)
            .await?
            .filter(is_guest)
            .ok_or_else(|| Error::InvalidArgument("This account is not a guest".into()))?;
        self.check_free(username.as_deref(), email.as_deref())
            .await?;
        let hash = blocking(move || hash_digest(&digest)).await??;
        let mut set = serde_json::Map::new();
        if let Some(u) = &username {
            user.insert("username".into(), json!(u));
            set.insert("username".into(), json!(u));
        }
        if let Some(e) = &email {
            let emails = json!([{"address": e, "verified": false}]);
            user.insert("emails".into(), emails.clone());
            set.insert("emails".into(), emails);
        }
        set.insert(
            lookup::LOWER_LOWERCASE.into(),
            lookup::lowercase_copies(&mut user),
        );
        set.insert("services.password".into(), json!({"argon2": hash}));
        let update = Update::parse(&json!({
            "$set": set, "$unset": {"guest": "", "lastActive": ""}
        }))?;
        if !self.update_while_guest(user_id, &update).await? {
            return Err(Error::InvalidArgument("This account is not a guest".into()));
        }
        Ok(email)
    }

    /// Applies `update` to `user_id` only while it is a guest (of two upgrades at once, one
    /// applies); false when it is not one (any more).
    pub(super) async fn update_while_guest(&self, user_id: &str, update: &Update) -> Result<bool> {
        let still_guest = Selector::parse(&json!({"_id": user_id, "guest": true}))?;
        let result = self
            .store()
            .update(USERS, &still_guest, update, UpdateOptions::default())
            .await
            .map_err(taken_name_error)?;
        Ok(result.matched > 0)
    }

    /// Gives the guest `user_id` the address `email`, verified (a mailed code proved it), so
    /// that it is a guest no more; `None` when it is not a guest (any more).
    ///
    /// # Errors
    /// [`Error::UserExists`] when another account has the address; store failures.
    pub(crate) async fn attach_email_to_guest(
        &self,
        user_id: &str,
        email: &str,
    ) -> Result<Option<Document>> {
        let Some(mut user) = self.find_user_by_id(user_id).await?.filter(is_guest) else {
            return Ok(None);
        };
        let emails = json!([{"address": email, "verified": true}]);
        user.insert("emails".into(), emails.clone());
        let update = Update::parse(&json!({
            "$set": {"emails": emails, lookup::LOWER_LOWERCASE: lookup::lowercase_copies(&mut user)},
            "$unset": {"guest": "", "lastActive": ""}
        }))?;
        if !self.update_while_guest(user_id, &update).await? {
            return Ok(None);
        }
        self.find_user_by_id(user_id).await
    }

    /// Moves a guest's `lastActive` forward when it is older than [`touch_every`] (best effort:
    /// a failure is logged).
    pub(crate) async fn touch_guest(&self, user: &Document) {
        if !is_guest(user) {
            return;
        }
        let every = i64::try_from(touch_every(self.config().guest_ttl).as_millis()).unwrap_or(0);
        let last = user.get("lastActive").and_then(Value::as_i64).unwrap_or(0);
        let now = now_ms();
        if now.saturating_sub(last) < every {
            return;
        }
        let Some(id) = document_id(user) else { return };
        let touched = async {
            let update = Update::parse(&json!({"$set": {"lastActive": now}}))?;
            let selector = Selector::parse(&json!({"_id": id, "guest": true}))?;
            self.store()
                .update(USERS, &selector, &update, UpdateOptions::default())
                .await?;
            Ok::<(), Error>(())
        };
        if let Err(e) = touched.await {
            tracing::warn!(error = %e, "could not note a guest's activity");
        }
    }

    /// Removes the guests unused for `guest_ttl` and their owned documents (see the module
    /// docs); returns how many guests were removed.
    ///
    /// # Errors
    /// Store failures (what was removed before stays removed).
    pub async fn sweep_guests(&self) -> Result<usize> {
        let ttl = self.config().guest_ttl.num_milliseconds();
        let cutoff = now_ms().saturating_sub(ttl);
        let mut removed = 0;
        // Bounded, should a document keep matching the query but not the removal.
        for _ in 0..SWEEP_BATCHES {
            let stale = json!({"guest": true, "lastActive": {"$lt": cutoff}});
            let mut query = Query::new(Selector::parse(&stale)?);
            query.sort = Some(Sort::by("lastActive", true)?);
            query.limit = Some(SWEEP_BATCH);
            let batch = self.store().find(USERS, &query).await?;
            let full = u64::try_from(batch.len()).is_ok_and(|n| n == SWEEP_BATCH);
            for user in batch {
                let Some(id) = document_id(&user) else {
                    continue;
                };
                let still = Selector::parse(&json!({
                    "_id": id, "guest": true, "lastActive": {"$lt": cutoff}
                }))?;
                if self.store().remove(USERS, &still).await? == 0 {
                    continue; // used, upgraded or removed meanwhile
                }
                removed += 1;
                for (collection, field) in &self.config().guest_owned {
                    let mut owner = serde_json::Map::new();
                    owner.insert(field.clone(), json!(id));
                    let owned = Selector::parse(&Value::Object(owner))?;
                    self.store().remove(collection, &owned).await?;
                }
            }
            if !full {
                break;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_scale_with_the_time_to_live() {
        assert_eq!(
            touch_every(chrono::Duration::days(30)),
            Duration::from_secs(3600)
        );
        assert_eq!(
            touch_every(chrono::Duration::seconds(20)),
            Duration::from_secs(2)
        );
        assert_eq!(
            touch_every(chrono::Duration::seconds(2)),
            Duration::from_secs(1)
        );
    }
}
