//! Short-lived download tokens, for protected files in `<img src>` (which sends no header).

use std::time::Duration;

use rand::distr::{Alphanumeric, SampleString};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{FileError, Files};
use crate::Platform;

/// The collection download tokens are kept in (hashed), so every instance on one database
/// accepts them.
pub const FILE_TOKENS: &str = "portico_file_tokens";

/// How long a download token is accepted.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(120);

fn token_id(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn now_ms() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0)
}

impl Files {
    /// A new download token for `user_id`, accepted for [`TOKEN_LIFETIME`]; returns it and
    /// its expiry (milliseconds since the epoch). Only its hash is stored.
    ///
    /// # Errors
    /// Store failures.
    pub async fn issue_token(
        &self,
        platform: &Platform,
        user_id: &str,
    ) -> Result<(String, u64), FileError> {
        let token = Alphanumeric.sample_string(&mut rand::rng(), 43);
        let expires =
            now_ms().saturating_add(u64::try_from(TOKEN_LIFETIME.as_millis()).unwrap_or(u64::MAX));
        let doc = json!({"_id": token_id(&token), "userId": user_id, "expires": expires});
        let doc = match doc {
            Value::Object(map) => map,
            _ => return Err(FileError::Store("token document".into())),
        };
        platform.collection(FILE_TOKENS).insert(doc).await?;
        Ok((token, expires))
    }

    /// The user a download token was issued to, while it is accepted.
    ///
    /// # Errors
    /// Store failures.
    pub async fn token_user(
        &self,
        platform: &Platform,
        token: &str,
    ) -> Result<Option<String>, FileError> {
        if token.is_empty() || token.len() > 100 {
            return Ok(None);
        }
        let Some(doc) = platform
            .collection(FILE_TOKENS)
            .get(&token_id(token))
            .await?
        else {
            return Ok(None);
        };
        let expires = doc.get("expires").and_then(Value::as_u64).unwrap_or(0);
        if expires <= now_ms() {
            return Ok(None);
        }
        Ok(doc.get("userId").and_then(Value::as_str).map(str::to_owned))
    }

    /// Removes the tokens that expired; returns how many.
    ///
    /// # Errors
    /// Store failures.
    pub async fn purge_tokens(&self, platform: &Platform) -> Result<u64, FileError> {
        let selector = crate::Selector::parse(&json!({"expires": {"$lte": now_ms()}}))
            .map_err(crate::Error::from)?;
        Ok(platform.collection(FILE_TOKENS).remove(&selector).await?)
    }
}
