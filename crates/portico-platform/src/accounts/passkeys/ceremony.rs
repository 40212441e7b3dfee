//! The two ceremonies, registration and login, each a begin and a finish (see `mod.rs`).

use std::net::IpAddr;

use portico_store::{Document, Selector, Update, UpdateOptions, document_id};
use serde_json::{Value, json};
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Uuid,
};

use super::super::token::new_token;
use super::super::{Accounts, LoginToken, UserSelector, hash_token, is_service_account};
use super::{
    LIFETIME, MAX_NAME, PASSKEY_CEREMONIES, PASSKEYS, PasskeyBegin, PasskeyError, PasskeyInfo,
    PasskeyResult, credential_key, stored_passkey,
};
use crate::time::now_ms;
use crate::{Error, Limit};

/// Ceremonies begun per client address (each stores a document for five minutes).
const BEGIN_LIMIT: Limit = Limit::new(120, std::time::Duration::from_secs(600));

/// The kinds of ceremony.
const REGISTER: &str = "register";
/// A login: the authenticator names the account by its discoverable credential (a login that
/// named an account keeps that name beside it).
const DISCOVERABLE: &str = "discoverable";

fn to_json<T: serde::Serialize>(value: &T) -> PasskeyResult<Value> {
    serde_json::to_value(value)
        .map_err(|e| PasskeyError::Platform(Error::Internal(format!("passkey state: {e}"))))
}

fn from_json<T: serde::de::DeserializeOwned>(value: Option<&Value>) -> PasskeyResult<T> {
    let value = value.ok_or(PasskeyError::InvalidCeremony)?;
    serde_json::from_value(value.clone()).map_err(|_| PasskeyError::InvalidCeremony)
}

/// The user handle (a UUID) of a passkey record.
fn handle_of(doc: &Document) -> Option<Uuid> {
    doc.get("userHandle")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// How a ceremony keeps the account a login named.
fn selector_json(selector: &UserSelector) -> Option<Value> {
    match selector {
        UserSelector::Id(id) => Some(json!({"id": id})),
        UserSelector::Username(name) => Some(json!({"username": name})),
        UserSelector::Email(email) => Some(json!({"email": email})),
        UserSelector::Either(text) => Some(json!({"either": text})),
    }
}

/// The account a ceremony's `named` field names.
fn selector_of(value: &Value) -> Option<UserSelector> {
    let object = value.as_object()?;
    let (key, text) = object.iter().next()?;
    let text = text.as_str()?.to_owned();
    Some(match key.as_str() {
        "id" => UserSelector::Id(text),
        "username" => UserSelector::Username(text),
        "email" => UserSelector::Email(text),
        _ => UserSelector::Either(text),
    })
}

/// The name a user is shown under in authenticators: username, else first email, else id.
fn display_name(user: &Document, user_id: &str) -> String {
    user.get("username")
        .and_then(Value::as_str)
        .or_else(|| {
            portico_store::lookup_path(user, "emails.address")
                .first()
                .and_then(|v| v.as_str())
        })
        .unwrap_or(user_id)
        .to_owned()
}

impl Accounts {
    /// Counts a begin against [`BEGIN_LIMIT`] for `client`, and removes stale ceremonies.
    async fn admit_ceremony(&self, client: Option<IpAddr>) -> PasskeyResult<()> {
        let key = super::super::lifecycle::client_key("passkey-begin", client);
        super::super::lifecycle::count_request(self.store(), &key, Some(BEGIN_LIMIT)).await?;
        let stale = Selector::parse(&json!({"expires": {"$lt": now_ms()}}))?;
        self.store().remove(PASSKEY_CEREMONIES, &stale).await?;
        Ok(())
    }

    /// Stores a ceremony (`fields` plus its expiry) under the hash of a new id; returns the id.
    async fn store_ceremony(&self, mut fields: Document) -> PasskeyResult<String> {
        let ceremony = new_token();
        let millis = i64::try_from(LIFETIME.as_millis()).unwrap_or(i64::MAX);
        fields.insert("_id".into(), json!(hash_token(&ceremony)));
        fields.insert("expires".into(), json!(now_ms().saturating_add(millis)));
        self.store().insert(PASSKEY_CEREMONIES, fields).await?;
        Ok(ceremony)
    }

    /// Takes (removes) the ceremony `ceremony` of one of `kinds`, unexpired; of two takes of
    /// one ceremony, one gets it.
    async fn take_ceremony(&self, ceremony: &str, kinds: &[&str]) -> PasskeyResult<Document> {
        let ceremony = ceremony.trim();
        if ceremony.is_empty() || ceremony.len() > 128 {
            return Err(PasskeyError::InvalidCeremony);
        }
        let id = hash_token(ceremony);
        let doc = self
            .store()
            .get(PASSKEY_CEREMONIES, &id)
            .await?
            .ok_or(PasskeyError::InvalidCeremony)?;
        if self
            .store()
            .remove(PASSKEY_CEREMONIES, &Selector::by_id(&id))
            .await?
            != 1
        {
            return Err(PasskeyError::InvalidCeremony);
        }
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        let expires = doc.get("expires").and_then(Value::as_i64).unwrap_or(0);
        if !kinds.contains(&kind) || expires <= now_ms() {
            return Err(PasskeyError::InvalidCeremony);
        }
        Ok(doc)
    }

    /// Begins the registration of a passkey named `name` (default "Passkey") for the logged-in
    /// user `user_id`: the options for `navigator.credentials.create()` ask for a discoverable
    /// credential with user verification, and exclude the user's passkeys.
    ///
    /// # Errors
    /// See [`PasskeyError`]; [`Error::TooManyRequests`] past 120 begins per client address in
    /// 10 minutes.
    pub async fn passkey_register_begin(
        &self,
        user_id: &str,
        name: Option<&str>,
        client: Option<IpAddr>,
    ) -> PasskeyResult<PasskeyBegin> {
        let webauthn = self.webauthn()?;
        let name = name.map(str::trim).unwrap_or("Passkey");
        if name.is_empty() || name.chars().count() > MAX_NAME {
            return Err(PasskeyError::InvalidName);
        }
        let user = self.require_user(user_id).await?;
        if is_service_account(&user) {
            return Err(PasskeyError::ServiceAccount);
        }
        self.admit_ceremony(client).await?;
        let records = self.passkey_records(user_id).await?;
        let handle = records
            .iter()
            .find_map(handle_of)
            .unwrap_or_else(Uuid::new_v4);
        let exclude = records
            .iter()
            .filter_map(stored_passkey)
            .map(|p| p.cred_id().clone())
            .collect::<Vec<_>>();
        let shown = display_name(&user, user_id);
        let (options, state) = webauthn
            .start_passkey_registration(handle, &shown, &shown, Some(exclude))
            .map_err(|e| PasskeyError::Platform(Error::Internal(format!("passkeys: {e}"))))?;
        let mut options = to_json(&options)?;
        // A discoverable credential, so that a login need not name the account.
        if let Some(selection) = options
            .pointer_mut("/publicKey/authenticatorSelection")
            .and_then(Value::as_object_mut)
        {
            selection.insert("residentKey".into(), json!("required"));
            selection.insert("requireResidentKey".into(), json!(true));
        }
        let fields = json!({
            "kind": REGISTER, "userId": user_id, "userHandle": handle.to_string(),
            "name": name, "state": to_json(&state)?,
        });
        let ceremony = self
            .store_ceremony(fields.as_object().cloned().unwrap_or_default())
            .await?;
        Ok(PasskeyBegin { ceremony, options })
    }

    /// Finishes a registration begun by the same user: checks the new credential (`credential`:
    /// what `navigator.credentials.create()` gave, in its JSON form) and stores the passkey. A
    /// guest is a guest no more.
    ///
    /// # Errors
    /// See [`PasskeyError`].
    pub async fn passkey_register_finish(
        &self,
        user_id: &str,
        ceremony: &str,
        credential: &Value,
    ) -> PasskeyResult<PasskeyInfo> {
        let webauthn = self.webauthn()?;
        let doc = self.take_ceremony(ceremony, &[REGISTER]).await?;
        if doc.get("userId").and_then(Value::as_str) != Some(user_id) {
            return Err(PasskeyError::InvalidCeremony);
        }
        let state: PasskeyRegistration = from_json(doc.get("state"))?;
        let credential: RegisterPublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Malformed(e.to_string()))?;
        let passkey = webauthn
            .finish_passkey_registration(&credential, &state)
            .map_err(|e| {
                tracing::info!(error = %e, "passkey registration refused");
                PasskeyError::Refused
            })?;
        let now = now_ms();
        let record = json!({
            "_id": new_token()[..22].to_owned(),
            "userId": user_id,
            "userHandle": doc.get("userHandle").cloned().unwrap_or(Value::Null),
            "credentialId": credential_key(passkey.cred_id().as_ref()),
            "name": doc.get("name").cloned().unwrap_or(json!("Passkey")),
            "passkey": to_json(&passkey)?,
            "counter": 0,
            "createdAt": now,
            "lastUsed": 0,
        });
        let record = record.as_object().cloned().unwrap_or_default();
        match self.store().insert(PASSKEYS, record.clone()).await {
            Ok(_) => {}
            Err(portico_store::Error::DuplicateKey { .. }) => return Err(PasskeyError::Taken),
            Err(e) => return Err(e.into()),
        }
        // A guest with a passkey is a guest no more (a full account keeps what it is).
        let upgrade = Update::parse(&json!({"$unset": {"guest": "", "lastActive": ""}}))?;
        self.update_while_guest(user_id, &upgrade).await?;
        Ok(PasskeyInfo::of(&record))
    }

    /// Begins a login. The options are the same whoever `user` names, and whether or not such
    /// an account exists or has passkeys (no account is looked up here, so neither the reply
    /// nor its timing tells): they list no credential, and the authenticator offers its
    /// discoverable ones for this relying party (every passkey is made discoverable). A named
    /// `user` is kept with the ceremony, and the login finishes only as that account.
    ///
    /// # Errors
    /// See [`PasskeyError`]; [`Error::TooManyRequests`] past 120 begins per client address in
    /// 10 minutes.
    pub async fn passkey_login_begin(
        &self,
        user: Option<&UserSelector>,
        client: Option<IpAddr>,
    ) -> PasskeyResult<PasskeyBegin> {
        let webauthn = self.webauthn()?;
        self.admit_ceremony(client).await?;
        let internal = |e: webauthn_rs::prelude::WebauthnError| {
            PasskeyError::Platform(Error::Internal(format!("passkeys: {e}")))
        };
        let (options, state) = webauthn
            .start_discoverable_authentication()
            .map_err(internal)?;
        let mut options = to_json(&options)?;
        // A login the page asks for (a button), not the autofill kind; a page wanting autofill
        // passes `mediation: "conditional"` itself.
        if let Some(object) = options.as_object_mut() {
            object.remove("mediation");
        }
        let mut fields = json!({"kind": DISCOVERABLE, "state": to_json(&state)?});
        if let Some(named) = user.and_then(selector_json) {
            fields["named"] = named;
        }
        let ceremony = self
            .store_ceremony(fields.as_object().cloned().unwrap_or_default())
            .await?;
        Ok(PasskeyBegin { ceremony, options })
    }

    /// True when the ceremony named no account, or named the account `owner`.
    async fn named_owner(&self, ceremony: &Document, owner: &str) -> PasskeyResult<bool> {
        let Some(named) = ceremony.get("named").and_then(selector_of) else {
            return Ok(true);
        };
        let user = self.find_user(&named).await?;
        Ok(user.as_ref().and_then(document_id) == Some(owner))
    }

    /// Finishes a login: checks the assertion (`credential`: what `navigator.credentials.get()`
    /// gave, in its JSON form) against the stored passkey, notes its counter and use, and logs
    /// the account in. No two-factor code is asked: a passkey with user verification is two
    /// factors.
    ///
    /// # Errors
    /// See [`PasskeyError`]; every refusal of the credential is [`PasskeyError::Refused`].
    pub async fn passkey_login_finish(
        &self,
        ceremony: &str,
        credential: &Value,
    ) -> PasskeyResult<LoginToken> {
        let webauthn = self.webauthn()?;
        let doc = self.take_ceremony(ceremony, &[DISCOVERABLE]).await?;
        let credential: PublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| PasskeyError::Malformed(e.to_string()))?;
        let by_credential = Selector::parse(&json!({
            "credentialId": credential_key(credential.get_credential_id())
        }))?;
        let record = self
            .store()
            .find_one(PASSKEYS, &by_credential)
            .await?
            .ok_or(PasskeyError::Refused)?;
        let mut passkey = stored_passkey(&record).ok_or(PasskeyError::Refused)?;
        let owner = record
            .get("userId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let refused = |e: webauthn_rs::prelude::WebauthnError| {
            tracing::info!(error = %e, "passkey login refused");
            PasskeyError::Refused
        };
        let state: DiscoverableAuthentication = from_json(doc.get("state"))?;
        let (handle, _) = webauthn
            .identify_discoverable_authentication(&credential)
            .map_err(refused)?;
        if handle_of(&record) != Some(handle) {
            return Err(PasskeyError::Refused);
        }
        let result = webauthn
            .finish_discoverable_authentication_v2(&credential, state, &passkey)
            .map_err(refused)?;
        // A login that named an account finishes only as that account.
        if !self.named_owner(&doc, &owner).await? {
            return Err(PasskeyError::Refused);
        }
        passkey.update_credential(&result);
        self.note_passkey_use(&record, &passkey, result.counter())
            .await?;
        self.log_in_by_passkey(&record, &owner).await
    }

    /// Writes the passkey's new signature counter and its last use, on the condition that the
    /// stored counter is still the one the login was checked against (of two logins at once
    /// with one counter, one passes).
    async fn note_passkey_use(
        &self,
        record: &Document,
        passkey: &Passkey,
        counter: u32,
    ) -> PasskeyResult<()> {
        let id = document_id(record).ok_or(PasskeyError::Refused)?;
        let before = record.get("counter").cloned().unwrap_or(json!(0));
        let selector = Selector::parse(&json!({"_id": id, "counter": before}))?;
        let update = Update::parse(&json!({"$set": {
            "passkey": to_json(passkey)?, "counter": counter, "lastUsed": now_ms()
        }}))?;
        let result = self
            .store()
            .update(PASSKEYS, &selector, &update, UpdateOptions::default())
            .await?;
        if result.matched == 0 {
            return Err(PasskeyError::Refused);
        }
        Ok(())
    }

    /// The login token of a passkey login for `owner`, whose passkey `record` passed.
    async fn log_in_by_passkey(&self, record: &Document, owner: &str) -> PasskeyResult<LoginToken> {
        let Some(user) = self.find_user_by_id(owner).await? else {
            // The account is gone: so is its passkey.
            if let Some(id) = document_id(record) {
                self.store().remove(PASSKEYS, &Selector::by_id(id)).await?;
            }
            return Err(PasskeyError::Refused);
        };
        if is_service_account(&user) {
            return Err(PasskeyError::Refused);
        }
        if self.config().require_verified_email && !crate::has_verified_email(&user) {
            return Err(PasskeyError::EmailNotVerified);
        }
        let prune = self.has_expired_tokens(&user);
        self.issue_token(owner, prune).await.map_err(|e| match e {
            Error::UserNotFound => PasskeyError::Refused,
            e => e.into(),
        })
    }
}
