//! Accounts: users with passwords and login tokens, in the layout existing apps use.
//!
//! A user document in the `users` collection:
//!
//! ```json
//! {
//!   "_id": "…", "createdAt": "2026-11-22T03:44:59.123Z",
//!   "services": {
//!     "password": {"argon2": "$argon2id$…"},            // or "bcrypt": "$2b$…" (imported)
//!     "resume": {"loginTokens": [{"when": "…", "hashedToken": "…"}]},
//!     "lowercase": {"username": "ada", "emails": ["ada@example.org"]}   // indexed lookup copies
//!   },
//!   "username": "ada", "emails": [{"address": "ada@example.org", "verified": false}],
//!   "profile": {}, "roles": ["admin"]
//! }
//! ```

mod import;
mod lookup;
mod password;
mod roles;
mod token;
mod token_cache;

use std::collections::HashSet;
use std::sync::{Arc, PoisonError};

use chrono::{DateTime, Utc};
use portico_store::{
    Document, Query, Selector, Store, Update, UpdateOptions, document_id, lookup_path,
};
use serde_json::{Map, Value, json};

pub use import::import_value;
pub use password::{Password, password_digest};
pub use roles::user_has_any_role;
pub use token::hash_token;

use self::password::{StoredHash, blocking, dummy_hash, hash_digest};
use crate::time::{now_iso, parse_date};
use crate::{Error, Result};

/// The collection holding the users.
pub const USERS: &str = "users";

/// The default path of hashed login tokens inside a user document (the routes spec's `auth.token`).
pub const TOKEN_PATH: &str = "services.resume.loginTokens.hashedToken";

const LOGIN_TOKENS: &str = "services.resume.loginTokens";
/// The prefix of a path to a field of each login token (`services.resume.loginTokens.hashedToken`).
const LOGIN_TOKEN_FIELDS: &str = "services.resume.loginTokens.";

/// Settings of the accounts service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountsConfig {
    /// How long a login token stays valid after its `when` (default 90 days).
    pub token_lifetime: chrono::Duration,
    /// When true, front doors should not let clients create accounts (the platform itself still can).
    pub forbid_client_account_creation: bool,
}

impl Default for AccountsConfig {
    fn default() -> Self {
        AccountsConfig {
            token_lifetime: chrono::Duration::days(90),
            forbid_client_account_creation: false,
        }
    }
}

/// A user to create.
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    /// The username (trimmed); a username or an email is required.
    pub username: Option<String>,
    /// The email address (trimmed); stored as `emails: [{address, verified: false}]`.
    pub email: Option<String>,
    /// The password; a user without one cannot log in with a password.
    pub password: Option<Password>,
    /// The profile, an object.
    pub profile: Option<Value>,
    /// Initial roles.
    pub roles: Vec<String>,
}

/// How a login names the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserSelector {
    /// By `_id`.
    Id(String),
    /// By username.
    Username(String),
    /// By email address.
    Email(String),
    /// The legacy `user` field: an email when it contains `@`, else a username.
    Either(String),
}

/// A freshly issued login token. The plain `token` is available only here, once.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginToken {
    /// The user logged in.
    pub user_id: String,
    /// The plain token to hand to the client.
    pub token: String,
    /// When it was issued (ISO-8601).
    pub when: String,
}

impl std::fmt::Debug for LoginToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginToken")
            .field("user_id", &self.user_id)
            .field("token", &"<hidden>")
            .field("when", &self.when)
            .finish()
    }
}

struct Inner {
    store: Arc<dyn Store>,
    config: AccountsConfig,
    /// Serialises the uniqueness check and insert of sign-ups within this process.
    signup: tokio::sync::Mutex<()>,
    /// Token paths known to be indexed (the default one, and custom ones once looked up).
    indexed_token_paths: std::sync::Mutex<HashSet<String>>,
    /// Tokens resolved before, kept until the users collection is written (see `token_cache.rs`).
    tokens: token_cache::TokenCache,
}

/// The accounts service (get it with [`crate::Platform::accounts`]). Cheap to clone.
#[derive(Clone)]
pub struct Accounts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Only `_id`, `username`, `emails`, `profile` and `roles` of a user: what may be shown to others.
pub fn public_user(user: &Document) -> Document {
    ["_id", "username", "emails", "profile", "roles"]
        .into_iter()
        .filter_map(|k| user.get(k).map(|v| (k.to_string(), v.clone())))
        .collect()
}

fn object(value: Value) -> Document {
    match value {
        Value::Object(m) => m,
        _ => Document::new(),
    }
}

fn set(path: &str, value: Value) -> Result<Update> {
    let mut fields = Map::new();
    fields.insert(path.to_string(), value);
    Ok(Update::parse(&json!({ "$set": fields }))?)
}

impl Accounts {
    pub(crate) fn new(store: Arc<dyn Store>, config: AccountsConfig) -> Accounts {
        Accounts {
            inner: Arc::new(Inner {
                store,
                config,
                signup: tokio::sync::Mutex::new(()),
                indexed_token_paths: std::sync::Mutex::new(HashSet::from([TOKEN_PATH.to_string()])),
                tokens: token_cache::TokenCache::default(),
            }),
        }
    }

    /// Creates the indexes on the token path, `username`, `emails.address` and their lowercase
    /// copies (unique: see [`Accounts::create_user`]); prepares the dummy hash failed logins
    /// verify against.
    pub(crate) async fn prepare(&self) -> Result<()> {
        // Make the dummy hash now, so the first failed login does not pay for it (and take longer).
        blocking(|| {
            dummy_hash();
        })
        .await?;
        for path in [TOKEN_PATH, "username", "emails.address"] {
            self.store().ensure_index(USERS, path).await?;
        }
        for path in [lookup::LOWER_USERNAME, lookup::LOWER_EMAILS] {
            match self.store().ensure_unique_index(USERS, path).await {
                Ok(()) => {}
                // Records from before unique names (an old file, an import) that differ only in
                // case: keep serving them; names are then unique only within this process.
                Err(portico_store::Error::DuplicateKey { .. }) => {
                    tracing::warn!(
                        path,
                        "users differing only in case exist; usernames and emails stay \
                         unique within one process only (rename them to fix)"
                    );
                    self.store().ensure_index(USERS, path).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &AccountsConfig {
        &self.inner.config
    }

    async fn update_user(&self, user_id: &str, update: &Update) -> Result<u64> {
        let result = self
            .store()
            .update(
                USERS,
                &Selector::by_id(user_id),
                update,
                UpdateOptions::default(),
            )
            .await?;
        Ok(result.matched)
    }

    // ----- users -----

    /// Creates a user and returns its id.
    ///
    /// # Errors
    /// [`Error::InvalidUser`] for an empty password, a malformed email, an empty username, a
    /// profile that is not an object, or neither username nor email; [`Error::UserExists`] when
    /// the username or email is taken, also when it differs only in case. Nothing is written then.
    pub async fn create_user(&self, user: NewUser) -> Result<String> {
        let username = user.username.map(|u| u.trim().to_string());
        let email = user.email.map(|e| e.trim().to_string());
        if username.as_deref() == Some("") {
            return Err(Error::InvalidUser("Username may not be empty".into()));
        }
        if let Some(e) = &email {
            if !lookup::is_valid_email(e) {
                return Err(Error::InvalidUser(format!("Invalid email address {e:?}")));
            }
        }
        if username.is_none() && email.is_none() {
            return Err(Error::InvalidUser("Need to set a username or email".into()));
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
                json!([{ "address": e, "verified": false }]),
            );
        }
        doc.insert("profile".into(), profile.unwrap_or_else(|| json!({})));
        doc.insert("roles".into(), json!(user.roles));

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

    async fn check_free(&self, username: Option<&str>, email: Option<&str>) -> Result<()> {
        // The exact check also covers records written without the lowercase copies.
        if let Some(u) = username {
            if self.exists("username", lookup::LOWER_USERNAME, u).await? {
                return Err(Error::UserExists("Username already exists.".into()));
            }
        }
        if let Some(e) = email {
            if self
                .exists("emails.address", lookup::LOWER_EMAILS, e)
                .await?
            {
                return Err(Error::UserExists("Email already exists.".into()));
            }
        }
        Ok(())
    }

    async fn exists(&self, path: &str, lower_path: &str, value: &str) -> Result<bool> {
        let store = self.store();
        Ok(store.count(USERS, &lookup::exact(path, value)?).await? > 0
            || store
                .count(USERS, &lookup::exact(lower_path, &lookup::fold(value))?)
                .await?
                > 0)
    }

    async fn find_by(&self, path: &str, lower_path: &str, value: &str) -> Result<Option<Document>> {
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
            lookup::set_lowercase_fields(&mut user);
            let lowercase = user
                .get("services")
                .and_then(|s| s.get("lowercase"))
                .cloned()
                .unwrap_or(Value::Null);
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

    // ----- roles -----

    /// Adds roles to the user (roles held already are kept once).
    ///
    /// # Errors
    /// [`Error::UserNotFound`], store failures.
    pub async fn add_roles(&self, user_id: &str, roles: &[String]) -> Result<()> {
        let update = Update::parse(&json!({ "$addToSet": { "roles": { "$each": roles } } }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        Ok(())
    }

    /// Removes roles from the user.
    ///
    /// # Errors
    /// [`Error::UserNotFound`], store failures.
    pub async fn remove_roles(&self, user_id: &str, roles: &[String]) -> Result<()> {
        let update = Update::parse(&json!({ "$pull": { "roles": { "$in": roles } } }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        Ok(())
    }

    async fn require_user(&self, user_id: &str) -> Result<Document> {
        self.find_user_by_id(user_id)
            .await?
            .ok_or(Error::UserNotFound)
    }

    // ----- passwords -----

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

    /// Sets a new password (argon2id), replacing any bcrypt hash. Login tokens are kept.
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
        Ok(())
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
        self.issue_token(&user_id, prune).await
    }

    /// True when `user` holds a login token past its lifetime.
    fn has_expired_tokens(&self, user: &Document) -> bool {
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

    async fn upgrade_hash(&self, user_id: &str, digest: String) -> Result<()> {
        let hash = blocking(move || hash_digest(&digest)).await??;
        let update = Update::parse(&json!({
            "$set": { "services.password.argon2": hash },
            "$unset": { "services.password.bcrypt": "" }
        }))?;
        self.update_user(user_id, &update).await?;
        Ok(())
    }

    // ----- login tokens -----

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
    async fn issue_token(&self, user_id: &str, prune: bool) -> Result<LoginToken> {
        let token = token::new_token();
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
    async fn prune_expired(&self, user_id: &str) {
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
    async fn ensure_token_index(&self, path: &str) -> Result<()> {
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
        if let Some(user) = self.inner.tokens.get(store, USERS, path, hashed) {
            return Ok(Some(user));
        }
        // Read before the lookup: a write committing after this point makes the entry stale.
        let stamp = token_cache::TokenCache::stamp(store, USERS);
        self.ensure_token_index(path).await?;
        let Some(user) = store.find_one(USERS, &lookup::exact(path, hashed)?).await? else {
            return Ok(None);
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
        lookup_path(user, LOGIN_TOKENS)
            .into_iter()
            .flat_map(|v| match v {
                Value::Array(items) => items.iter().collect::<Vec<_>>(),
                other => vec![other],
            })
            .filter_map(Value::as_object)
            .filter(|entry| {
                lookup_path(entry, field)
                    .into_iter()
                    .any(|v| v.as_str() == Some(hashed))
            })
            .filter_map(|entry| entry.get("when").and_then(parse_date))
            .map(|when| when + lifetime)
            .max()
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

    // ----- import -----

    /// Imports a user record exported by an existing app and returns its id.
    ///
    /// Extended-JSON values are converted ([`import_value`]); a login token without `when` is
    /// stamped with the import time (so it works, then expires on schedule); a legacy plain
    /// `token` is replaced by its `hashedToken`. Password hashes (bcrypt or argon2) are kept.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for malformed extended JSON or an `_id` that is not a string;
    /// a store error when the `_id` exists already; [`Error::UserExists`] when another user
    /// holds the username or an email, also in another case (names are unique, see
    /// [`Accounts::create_user`]).
    pub async fn import_user(&self, user: Document) -> Result<String> {
        let mut doc = object(import_value(Value::Object(user))?);
        match doc.get("_id") {
            None => {
                let mut with_id = Document::new();
                with_id.insert("_id".into(), Value::String(portico_store::new_id()));
                with_id.extend(doc);
                doc = with_id;
            }
            Some(Value::String(id)) if !id.is_empty() => {}
            Some(_) => {
                return Err(Error::InvalidArgument(
                    "a user's _id must be a string".into(),
                ));
            }
        }
        let now = now_iso();
        let tokens = doc
            .get_mut("services")
            .and_then(|s| s.get_mut("resume"))
            .and_then(|r| r.get_mut("loginTokens"))
            .and_then(Value::as_array_mut);
        for entry in tokens.into_iter().flatten() {
            let Value::Object(entry) = entry else {
                continue;
            };
            if !entry.contains_key("hashedToken") {
                if let Some(Value::String(plain)) = entry.shift_remove("token") {
                    entry.insert("hashedToken".into(), Value::String(hash_token(&plain)));
                }
            }
            if entry.get("when").is_none_or(Value::is_null) {
                entry.insert("when".into(), Value::String(now.clone()));
            }
        }
        lookup::set_lowercase_fields(&mut doc);
        self.store()
            .insert(USERS, doc)
            .await
            .map_err(taken_name_error)
    }
}

/// A unique index on a lowercase copy refusing a write: the username or email is taken.
fn taken_name_error(e: portico_store::Error) -> Error {
    match e {
        portico_store::Error::DuplicateKey { path, .. } if path == lookup::LOWER_USERNAME => {
            Error::UserExists("Username already exists.".into())
        }
        portico_store::Error::DuplicateKey { path, .. } if path == lookup::LOWER_EMAILS => {
            Error::UserExists("Email already exists.".into())
        }
        other => other.into(),
    }
}
