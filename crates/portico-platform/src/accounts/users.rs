//! Users: creating, finding, listing, removing them, and their profile.

use portico_store::{Document, Query, Selector, document_id};
use serde_json::{Map, Value, json};

use super::password::{Password, blocking, hash_digest};
use super::{Accounts, NewUser, USERS, UserSelector, lookup, set, taken_name_error};
use crate::time::now_iso;
use crate::{Error, Result};

impl Accounts {
    /// Creates a user and returns its id.
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for an empty password, a malformed email, an empty username, a
    /// profile that is not an object, or neither username nor email; [`Error::UserExists`] when
    /// the username or email is taken, also when it differs only in case. Nothing is written then.
    pub async fn create_user(&self, user: NewUser) -> Result<String> {
        if user.username.is_none() && user.email.is_none() {
            return Err(Error::InvalidUser("Need to set a username or email".into()));
        }
        self.insert_user(user, false).await
    }

    /// Creates a user as [`Accounts::create_user`] does, except that neither a username nor
    /// an email is needed (an account that signs in with an OpenID Connect provider only), and
    /// the email, if any, is stored verified when `email_verified`.
    pub(crate) async fn insert_user(&self, user: NewUser, email_verified: bool) -> Result<String> {
        self.insert_user_with(user, email_verified, Document::new())
            .await
    }

    /// Creates a user as [`Accounts::insert_user`] does, with the top-level fields of `extra`
    /// (`guest`, `service`, ...) in the same write.
    pub(crate) async fn insert_user_with(
        &self,
        user: NewUser,
        email_verified: bool,
        extra: Document,
    ) -> Result<String> {
        let username = user.username.map(|u| u.trim().to_string());
        let email = user.email.map(|e| e.trim().to_string());
        if username.as_deref() == Some("") {
            return Err(Error::InvalidUser("Username may not be empty".into()));
        }
        if let Some(e) = &email
            && !lookup::is_valid_email(e)
        {
            return Err(Error::InvalidUser(format!("Invalid email address {e:?}")));
        }
        let profile = match user.profile {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => Some(p),
            Some(_) => return Err(Error::InvalidUser("Profile must be an object".into())),
        };
        let digest = user.password.as_ref().map(Password::digest).transpose()?;
        // Fail fast on a taken name before paying for a hash; checked again under the lock.
        self.check_free(username.as_deref(), email.as_deref())
            .await?;
        let hash = match digest {
            Some(d) => Some(blocking(move || hash_digest(&d)).await??),
            None => None,
        };

        let mut services = Map::new();
        if let Some(h) = hash {
            services.insert("password".into(), json!({ "argon2": h }));
        }
        services.insert("resume".into(), json!({ "loginTokens": [] }));
        let mut doc = Document::new();
        let id = portico_store::new_id();
        doc.insert("_id".into(), Value::String(id.clone()));
        doc.insert("createdAt".into(), Value::String(now_iso()));
        doc.insert("services".into(), Value::Object(services));
        if let Some(u) = username.clone() {
            doc.insert("username".into(), Value::String(u));
        }
        if let Some(e) = email.clone() {
            doc.insert(
                "emails".into(),
                json!([{ "address": e, "verified": email_verified }]),
            );
        }
        doc.insert("profile".into(), profile.unwrap_or_else(|| json!({})));
        doc.insert("roles".into(), json!(user.roles));
        for (key, value) in extra {
            doc.entry(key).or_insert(value);
        }

        lookup::set_lowercase_fields(&mut doc);

        // The check above gives the friendly error in the common case; the unique indexes on
        // the lowercase copies decide races, also between instances on one database: of two
        // sign-ups of `Ann` and `ann` at once, exactly one is inserted.
        let _guard = self.inner.signup.lock().await;
        self.check_free(username.as_deref(), email.as_deref())
            .await?;
        self.store()
            .insert(USERS, doc)
            .await
            .map_err(taken_name_error)
    }

    pub(super) async fn check_free(
        &self,
        username: Option<&str>,
        email: Option<&str>,
    ) -> Result<()> {
        // The exact check also covers records written without the lowercase copies.
        if let Some(u) = username
            && self.exists("username", lookup::LOWER_USERNAME, u).await?
        {
            return Err(Error::UserExists("Username already exists.".into()));
        }
        if let Some(e) = email
            && self
                .exists("emails.address", lookup::LOWER_EMAILS, e)
                .await?
        {
            return Err(Error::UserExists("Email already exists.".into()));
        }
        Ok(())
    }

    pub(super) async fn exists(&self, path: &str, lower_path: &str, value: &str) -> Result<bool> {
        let store = self.store();
        Ok(store.count(USERS, &lookup::exact(path, value)?).await? > 0
            || store
                .count(USERS, &lookup::exact(lower_path, &lookup::fold(value))?)
                .await?
                > 0)
    }

    pub(super) async fn find_by(
        &self,
        path: &str,
        lower_path: &str,
        value: &str,
    ) -> Result<Option<Document>> {
        if value.is_empty() {
            return Ok(None);
        }
        if let Some(user) = self
            .store()
            .find_one(USERS, &lookup::exact(path, value)?)
            .await?
        {
            return Ok(Some(user));
        }
        let mut query = Query::new(lookup::exact(lower_path, &lookup::fold(value))?);
        query.limit = Some(2);
        let mut found = self.store().find(USERS, &query).await?;
        Ok(if found.len() == 1 { found.pop() } else { None })
    }

    /// Adds the indexed lowercase copies of username and emails (`services.lowercase`) to user
    /// records written without them (for example inserted straight into the store rather than
    /// through [`Accounts::create_user`] or [`Accounts::import_user`]); returns how many were
    /// updated. Case-insensitive lookups find only records that have them. A record whose name
    /// another user holds in another case is left without them (and logged).
    ///
    /// # Errors
    /// Store failures.
    pub async fn ensure_lowercase_fields(&self) -> Result<u64> {
        let missing = Selector::parse(&json!({ "services.lowercase": { "$exists": false } }))?;
        let users = self.store().find(USERS, &Query::new(missing)).await?;
        let mut updated = 0;
        for mut user in users {
            let Some(id) = document_id(&user).map(str::to_string) else {
                continue;
            };
            let lowercase = lookup::lowercase_copies(&mut user);
            match self
                .update_user(&id, &set("services.lowercase", lowercase)?)
                .await
            {
                Ok(n) => updated += n,
                // Another user holds this name in another case: this record keeps exact-case
                // lookups only.
                Err(Error::Store(portico_store::Error::DuplicateKey { path, .. })) => {
                    tracing::warn!(user = %id, path, "name taken in another case; left as is");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(updated)
    }

    /// The user with this `_id`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_user_by_id(&self, id: &str) -> Result<Option<Document>> {
        Ok(self.store().get(USERS, id).await?)
    }

    /// The user with this username: an exact match, else the only case-insensitive match.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_user_by_username(&self, username: &str) -> Result<Option<Document>> {
        self.find_by("username", lookup::LOWER_USERNAME, username.trim())
            .await
    }

    /// The user with this email address: an exact match, else the only case-insensitive match.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_user_by_email(&self, email: &str) -> Result<Option<Document>> {
        self.find_by("emails.address", lookup::LOWER_EMAILS, email.trim())
            .await
    }

    /// The user a [`UserSelector`] names.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_user(&self, selector: &UserSelector) -> Result<Option<Document>> {
        match selector {
            UserSelector::Id(id) => self.find_user_by_id(id).await,
            UserSelector::Username(u) => self.find_user_by_username(u).await,
            UserSelector::Email(e) => self.find_user_by_email(e).await,
            UserSelector::Either(s) if s.contains('@') => self.find_user_by_email(s).await,
            UserSelector::Either(s) => self.find_user_by_username(s).await,
        }
    }

    /// Every user document, whole (use [`public_user`] before showing them).
    ///
    /// # Errors
    /// Store failures.
    pub async fn list_users(&self) -> Result<Vec<Document>> {
        Ok(self.store().find(USERS, &Query::default()).await?)
    }

    /// Removes a user; true when it existed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove_user(&self, user_id: &str) -> Result<bool> {
        Ok(self
            .store()
            .remove(USERS, &Selector::by_id(user_id))
            .await?
            > 0)
    }

    /// Replaces the user's profile (an object).
    ///
    /// # Errors
    /// [`Error::InvalidUser`] when `profile` is not an object, [`Error::UserNotFound`].
    pub async fn set_profile(&self, user_id: &str, profile: Value) -> Result<()> {
        if !profile.is_object() {
            return Err(Error::InvalidUser("Profile must be an object".into()));
        }
        if self.update_user(user_id, &set("profile", profile)?).await? == 0 {
            return Err(Error::UserNotFound);
        }
        Ok(())
    }
}
