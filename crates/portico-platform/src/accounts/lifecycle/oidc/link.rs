//! Which account a provider's identity signs in to.
//!
//! 1. An account linked to this provider and `sub` before: that one.
//! 2. Else, when the provider says it verified the address (`email_verified`) and an account
//!    has that address: linked, but only if the account's address is verified too. An account
//!    whose address nobody proved may have been made by someone else in the owner's name
//!    (waiting for the owner to sign in and hand it over); it is refused instead
//!    ([`super::OidcError::AccountUnverified`]), and its owner can verify it (or reset its
//!    password) first. Only someone who proved the address to the provider learns that.
//! 3. Else a new account: with the address, verified, when the provider verified it; without
//!    an address otherwise. An address the provider did not verify is never looked up, so
//!    nothing about other accounts shows in what happens.
//!
//! Links are documents of [`IDENTITIES`] whose `_id` is the hash of provider and `sub`: of
//! two first sign-ins at once, on one instance or many, one inserts the link and the other
//! signs in to the account it names.

use portico_store::{Document, Selector, Store, document_id};
use serde_json::{Value, json};

use super::super::super::{Accounts, NewUser, hash_token, lookup};
use super::OidcError;
use super::id_token::Identity;
use crate::Error;

/// The collection of links between provider identities and accounts.
pub const IDENTITIES: &str = "portico_account_identities";

fn link_id(provider: &str, sub: &str) -> String {
    hash_token(&format!("{provider}\n{sub}"))
}

/// True when `user` has `email` (any case) and it is verified.
fn holds_verified(user: &Document, email: &str) -> bool {
    user.get("emails")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|e| {
            e.get("address")
                .and_then(Value::as_str)
                .is_some_and(|a| lookup::fold(a) == lookup::fold(email))
                && e.get("verified").and_then(Value::as_bool) == Some(true)
        })
}

/// The account `identity` of `provider` signs in to (created or linked as the module says).
pub(in crate::accounts::lifecycle) async fn account_of(
    accounts: &Accounts,
    store: &dyn Store,
    provider: &str,
    identity: &Identity,
) -> Result<Document, OidcError> {
    let id = link_id(provider, &identity.sub);
    if let Some(user) = linked_user(accounts, store, &id).await? {
        return Ok(user);
    }
    let verified_email = identity
        .email
        .as_deref()
        .filter(|_| identity.email_verified)
        .filter(|e| lookup::is_valid_email(e));
    if accounts.config().require_verified_email && verified_email.is_none() {
        return Err(OidcError::EmailNotVerified);
    }
    let (user_id, created) = match verified_email {
        Some(email) => match accounts.find_user_by_email(email).await? {
            Some(user) if holds_verified(&user, email) => (owned_id(&user)?, false),
            Some(_) => return Err(OidcError::AccountUnverified),
            None => {
                let new = NewUser {
                    email: Some(email.to_owned()),
                    ..NewUser::default()
                };
                match accounts.insert_user(new, true).await {
                    Ok(id) => (id, true),
                    // Made meanwhile (a sign-up, another sign-in): decide again, once.
                    Err(Error::UserExists(_)) => match accounts.find_user_by_email(email).await? {
                        Some(user) if holds_verified(&user, email) => (owned_id(&user)?, false),
                        _ => return Err(OidcError::AccountUnverified),
                    },
                    Err(e) => return Err(e.into()),
                }
            }
        },
        None => (accounts.insert_user(NewUser::default(), false).await?, true),
    };
    let link: Document = json!({
        "_id": id,
        "provider": provider,
        "subject": identity.sub,
        "userId": user_id,
        "createdAt": crate::time::now_iso(),
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    match store.insert(IDENTITIES, link).await {
        Ok(_) => {}
        Err(portico_store::Error::DuplicateId { .. }) => {
            // Another sign-in of this identity linked first: use its account.
            if created {
                accounts.remove_user(&user_id).await?;
            }
            return linked_user(accounts, store, &id)
                .await?
                .ok_or(OidcError::Platform(Error::Internal(
                    "an identity link vanished while signing in".into(),
                )));
        }
        Err(e) => return Err(Error::from(e).into()),
    }
    accounts
        .find_user_by_id(&user_id)
        .await?
        .ok_or(OidcError::Platform(Error::UserNotFound))
}

fn owned_id(user: &Document) -> Result<String, OidcError> {
    document_id(user)
        .map(str::to_owned)
        .ok_or(OidcError::Platform(Error::UserNotFound))
}

/// The account the link `id` names; a link to a removed account is removed.
async fn linked_user(
    accounts: &Accounts,
    store: &dyn Store,
    id: &str,
) -> Result<Option<Document>, OidcError> {
    let Some(link) = store.get(IDENTITIES, id).await.map_err(Error::from)? else {
        return Ok(None);
    };
    let user_id = link
        .get("userId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(user) = accounts.find_user_by_id(user_id).await? {
        return Ok(Some(user));
    }
    store
        .remove(IDENTITIES, &Selector::by_id(id))
        .await
        .map_err(Error::from)?;
    Ok(None)
}
