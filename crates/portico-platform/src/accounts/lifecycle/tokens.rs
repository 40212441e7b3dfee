//! Mailed tokens: the secrets in verification, reset and email-change links.
//!
//! Each token is 32 bytes from the operating system's CSPRNG (256 bits), written as 43
//! characters of `a-zA-Z0-9-_`. The store keeps only its SHA-256 (as the document's `_id` in
//! [`ACCOUNT_TOKENS`]), with its kind, user, address and expiry, so a copy of the database does
//! not hold a usable link. A token is redeemed by removing its document: of two redemptions at
//! once, on one instance or many, exactly one removes it. Issuing a token removes the user's
//! older ones of the same kind, and a password or email change removes all of the user's.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration;
use portico_store::{Document, Selector, Store};
use rand::Rng;
use serde_json::{Value, json};

use super::super::hash_token;
use crate::{Error, Result};

use super::super::ACCOUNT_TOKENS;

/// The longest token accepted for a lookup (a real one has 43 characters).
const MAX_TOKEN_LEN: usize = 128;

/// What a mailed token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Proves the user reads mail at an address.
    VerifyEmail,
    /// Sets a new password.
    PasswordReset,
    /// Moves the account to a new address.
    EmailChange,
    /// The one-time code an OpenID Connect sign-in hands the application (not mailed: it is
    /// in the redirect to `{app_url}/oidc`), exchanged for a login token.
    OidcCode,
}

impl TokenKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            TokenKind::VerifyEmail => "verify-email",
            TokenKind::PasswordReset => "password-reset",
            TokenKind::EmailChange => "email-change",
            TokenKind::OidcCode => "oidc-code",
        }
    }
}

/// A token that was redeemed: whose it was and for which address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redeemed {
    pub(crate) user_id: String,
    pub(crate) email: String,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Creates the index on the tokens' user.
pub(crate) async fn prepare(store: &dyn Store) -> Result<()> {
    store.ensure_index(ACCOUNT_TOKENS, "userId").await?;
    Ok(())
}

/// Issues a token of `kind` for `user_id` and `email`, valid for `lifetime`; the user's older
/// tokens of this kind stop working. Returns the plain token (it is stored only hashed).
pub(crate) async fn issue(
    store: &dyn Store,
    kind: TokenKind,
    user_id: &str,
    email: &str,
    lifetime: Duration,
) -> Result<String> {
    let older = Selector::parse(&json!({"userId": user_id, "kind": kind.name()}))?;
    store.remove(ACCOUNT_TOKENS, &older).await?;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = URL_SAFE_NO_PAD.encode(bytes);
    let doc: Document = json!({
        "_id": hash_token(&token),
        "kind": kind.name(),
        "userId": user_id,
        "email": email,
        "expires": now_ms().saturating_add(lifetime.num_milliseconds()),
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    store.insert(ACCOUNT_TOKENS, doc).await?;
    Ok(token)
}

/// Redeems a token of `kind`: it works once, before it expires.
///
/// # Errors
/// [`Error::InvalidToken`] for an unknown, used, expired or other kind of token.
pub(crate) async fn redeem(store: &dyn Store, kind: TokenKind, token: &str) -> Result<Redeemed> {
    let (id, doc) = find(store, kind, token).await?;
    // Removing is the redemption: a second one, here or on another instance, removes nothing.
    if store.remove(ACCOUNT_TOKENS, &Selector::by_id(&id)).await? == 0 {
        return Err(Error::InvalidToken);
    }
    redeemed(&doc)
}

/// What a token of `kind` would redeem, without using it up.
///
/// # Errors
/// As [`redeem`].
pub(crate) async fn peek(store: &dyn Store, kind: TokenKind, token: &str) -> Result<Redeemed> {
    let (_, doc) = find(store, kind, token).await?;
    redeemed(&doc)
}

/// The stored id and document of a token of `kind`.
async fn find(store: &dyn Store, kind: TokenKind, token: &str) -> Result<(String, Document)> {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(Error::InvalidToken);
    }
    let id = hash_token(token);
    let doc = store
        .get(ACCOUNT_TOKENS, &id)
        .await?
        .ok_or(Error::InvalidToken)?;
    if doc.get("kind").and_then(Value::as_str) != Some(kind.name()) {
        return Err(Error::InvalidToken);
    }
    Ok((id, doc))
}

/// The user and address of a token's document, unless it expired.
fn redeemed(doc: &Document) -> Result<Redeemed> {
    let expires = doc.get("expires").and_then(Value::as_i64).unwrap_or(0);
    let (Some(user_id), Some(email)) = (
        doc.get("userId").and_then(Value::as_str),
        doc.get("email").and_then(Value::as_str),
    ) else {
        return Err(Error::InvalidToken);
    };
    if expires <= now_ms() {
        return Err(Error::InvalidToken);
    }
    Ok(Redeemed {
        user_id: user_id.to_owned(),
        email: email.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_works_once_and_a_newer_one_voids_it() {
        let store = portico_store::open("memory:").await.unwrap();
        let s = store.as_ref();
        let hour = Duration::hours(1);
        let first = issue(s, TokenKind::PasswordReset, "u1", "a@x.org", hour)
            .await
            .unwrap();
        assert_eq!(first.len(), 43);
        let second = issue(s, TokenKind::PasswordReset, "u1", "a@x.org", hour)
            .await
            .unwrap();
        assert!(matches!(
            redeem(s, TokenKind::PasswordReset, &first).await,
            Err(Error::InvalidToken)
        ));
        // The wrong kind neither works nor uses the token up.
        assert!(redeem(s, TokenKind::VerifyEmail, &second).await.is_err());
        let ok = redeem(s, TokenKind::PasswordReset, &second).await.unwrap();
        assert_eq!(ok.user_id, "u1");
        assert!(redeem(s, TokenKind::PasswordReset, &second).await.is_err());
        // Stored hashed only.
        let third = issue(s, TokenKind::VerifyEmail, "u1", "a@x.org", hour)
            .await
            .unwrap();
        assert!(s.get(ACCOUNT_TOKENS, &third).await.unwrap().is_none());
        s.remove(
            ACCOUNT_TOKENS,
            &Selector::parse(&json!({"userId": "u1"})).unwrap(),
        )
        .await
        .unwrap();
        assert!(redeem(s, TokenKind::VerifyEmail, &third).await.is_err());
    }

    #[tokio::test]
    async fn an_expired_token_is_refused() {
        let store = portico_store::open("memory:").await.unwrap();
        let s = store.as_ref();
        let token = issue(s, TokenKind::VerifyEmail, "u", "a@x.org", Duration::zero())
            .await
            .unwrap();
        assert!(redeem(s, TokenKind::VerifyEmail, &token).await.is_err());
    }
}
