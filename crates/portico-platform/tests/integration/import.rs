//! Importing users exported by an existing app: bcrypt hashes, hashed tokens, `$date` values.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use portico_platform::{Error, Password, Platform, UserSelector, hash_token};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::{TestResult, doc};

/// The export of one user, as an existing app writes it: a bcrypt hash (cost 4 to keep the test
/// fast) over the SHA-256 hex of "hunter2", login tokens stored as base64 SHA-256 with `$date`s.
fn exported_user() -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let digest = hex::encode(Sha256::digest(b"hunter2"));
    let bcrypt = bcrypt::hash(&digest, 4)?.replacen("$2b$", "$2a$", 1);
    let hashed = |t: &str| STANDARD.encode(Sha256::digest(t.as_bytes()));
    let now_ms = Utc::now().timestamp_millis();
    let day = 86_400_000i64;
    Ok(json!({
        "_id": {"$oid": "5F1D7A3E9B1E8A3F4C2D1E0F"},
        "createdAt": {"$date": "2020-02-03T04:05:06Z"},
        "username": "legacy",
        "emails": [{"address": "legacy@example.org", "verified": true}],
        "services": {
            "password": {"bcrypt": bcrypt},
            "resume": {"loginTokens": [
                {"when": {"$date": now_ms - 10 * day}, "hashedToken": hashed("fresh-token")},
                {"when": {"$date": {"$numberLong": (now_ms - 100 * day).to_string()}}, "hashedToken": hashed("expired-token")},
                {"when": {"$date": "2999-01-01T00:00:00.000Z"}, "hashedToken": hashed("iso-token")},
                {"hashedToken": hashed("undated-token")}
            ]}
        },
        "profile": {"name": "Legacy"}
    }))
}

on_every_backend! {
    async fn imported_bcrypt_users_keep_password_and_unexpired_tokens(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts.import_user(doc(exported_user()?)).await?;
        assert_eq!(id, "5f1d7a3e9b1e8a3f4c2d1e0f");
        let user = accounts.find_user_by_id(&id).await?.ok_or("imported")?;
        assert_eq!(user["createdAt"], json!("2020-02-03T04:05:06.000Z"));
        let tokens = user["services"]["resume"]["loginTokens"].as_array().ok_or("tokens")?;
        assert!(tokens.iter().all(|t| t["when"].is_string()), "{tokens:?}");
        assert_eq!(hash_token("fresh-token").len(), 44);

        // Unexpired tokens resolve; the expired one does not; the undated one was stamped now.
        for token in ["fresh-token", "iso-token", "undated-token"] {
            let found = accounts.user_by_token(token).await?.ok_or(format!("{token} resolves"))?;
            assert_eq!(found["_id"], json!(id));
        }
        assert!(accounts.user_by_token("expired-token").await?.is_none());

        // The bcrypt password works, wrong ones fail, and a login replaces bcrypt by argon2id.
        let by_email = UserSelector::Email("LEGACY@example.org".into());
        assert!(matches!(
            accounts.login(&by_email, &Password::Plain("hunter3".into())).await,
            Err(Error::LoginFailed)
        ));
        let login = accounts.login(&by_email, &Password::Plain("hunter2".into())).await?;
        assert_eq!(login.user_id, id);
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        let password = &user["services"]["password"];
        assert!(password.get("bcrypt").is_none(), "{password}");
        assert!(password["argon2"].as_str().is_some_and(|h| h.starts_with("$argon2id$")));
        let digest = Password::Digest(hex::encode(Sha256::digest(b"hunter2")));
        let again = accounts.login(&UserSelector::Username("legacy".into()), &digest).await?;
        assert!(accounts.user_by_token(&again.token).await?.is_some());
        assert!(accounts.user_by_token("fresh-token").await?.is_some());

        // Importing the same record again is a conflict, not an overwrite.
        assert!(accounts.import_user(doc(exported_user()?)).await.is_err());
        Ok(())
    }

    async fn legacy_plain_tokens_are_hashed_on_import(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts
            .import_user(doc(json!({
                "username": "old",
                "services": {"resume": {"loginTokens": [{"when": {"$date": 0}, "token": "plain-old"}]}}
            })))
            .await?;
        let user = accounts.find_user_by_id(&id).await?.ok_or("imported")?;
        let entry = &user["services"]["resume"]["loginTokens"][0];
        assert_eq!(entry["hashedToken"], json!(hash_token("plain-old")));
        assert!(entry.get("token").is_none());
        // Dated 1970: long expired.
        assert!(accounts.user_by_token("plain-old").await?.is_none());
        assert!(matches!(
            accounts.import_user(doc(json!({"createdAt": {"$date": "never"}}))).await,
            Err(Error::InvalidArgument(_))
        ));
        Ok(())
    }
}
