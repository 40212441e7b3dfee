//! `portico users`: create, list, change the roles of and remove accounts.

use std::fmt::Write as _;

use portico_platform::{NewUser, Password, Platform};
use portico_store::Document;
use serde_json::Value;

/// What `portico users add` creates.
#[derive(Debug, Clone, Default)]
pub struct NewAccount {
    /// `--username`.
    pub username: Option<String>,
    /// `--email`.
    pub email: Option<String>,
    /// `--password` (hashed before it is stored).
    pub password: String,
    /// `--role`, any number of times.
    pub roles: Vec<String>,
}

/// Creates an account and returns its id.
///
/// # Errors
/// [`crate::Error::Platform`] when the platform refuses it: no username nor email, an empty
/// password, a malformed email, or a username or email taken (also differing only in case).
pub async fn add(platform: &Platform, account: NewAccount) -> crate::Result<String> {
    let id = platform
        .accounts()
        .create_user(NewUser {
            username: account.username,
            email: account.email,
            password: Some(Password::Plain(account.password)),
            profile: None,
            roles: account.roles,
        })
        .await?;
    Ok(id)
}

/// Every account, as stored (password hashes and tokens included: callers print [`summary`]).
///
/// # Errors
/// Store failures.
pub async fn list(platform: &Platform) -> crate::Result<Vec<Document>> {
    Ok(platform.accounts().list_users().await?)
}

/// One account as a line: id, username, emails, roles, and how many login tokens it holds.
pub fn summary(user: &Document) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("-").to_owned();
    let emails: Vec<&str> = user
        .get("emails")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|e| e.get("address").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let roles: Vec<&str> = user
        .get("roles")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let tokens = user
        .get("services")
        .and_then(|s| s.get("resume"))
        .and_then(|r| r.get("loginTokens"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut line = String::new();
    let _ = write!(
        line,
        "{}  username={}  emails={}  roles={}  tokens={tokens}",
        text(user.get("_id")),
        text(user.get("username")),
        if emails.is_empty() {
            "-".to_owned()
        } else {
            emails.join(",")
        },
        if roles.is_empty() {
            "-".to_owned()
        } else {
            roles.join(",")
        },
    );
    line
}

/// Finds an account by id, then username, then email.
///
/// # Errors
/// [`crate::Error::Usage`] when no account matches, store failures.
pub async fn find(platform: &Platform, who: &str) -> crate::Result<Document> {
    let accounts = platform.accounts();
    if let Some(user) = accounts.find_user_by_id(who).await? {
        return Ok(user);
    }
    if let Some(user) = accounts.find_user_by_username(who).await? {
        return Ok(user);
    }
    if who.contains('@')
        && let Some(user) = accounts.find_user_by_email(who).await?
    {
        return Ok(user);
    }
    Err(crate::Error::Usage(format!(
        "no user `{who}` (give an id, a username or an email)"
    )))
}

fn id_of(user: &Document) -> crate::Result<String> {
    user.get("_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| crate::Error::Usage("the user record has no string _id".to_owned()))
}

/// Adds roles to an account; returns the account's id.
///
/// # Errors
/// As [`find`], and store failures.
pub async fn add_roles(platform: &Platform, who: &str, roles: &[String]) -> crate::Result<String> {
    let id = id_of(&find(platform, who).await?)?;
    platform.accounts().add_roles(&id, roles).await?;
    Ok(id)
}

/// Removes roles from an account; returns the account's id.
///
/// # Errors
/// As [`find`], and store failures.
pub async fn remove_roles(
    platform: &Platform,
    who: &str,
    roles: &[String],
) -> crate::Result<String> {
    let id = id_of(&find(platform, who).await?)?;
    platform.accounts().remove_roles(&id, roles).await?;
    Ok(id)
}

/// Sets a new password; returns the account's id. Existing login tokens stay valid (use
/// [`logout`] to end them too).
///
/// # Errors
/// As [`find`]; [`crate::Error::Platform`] for an empty password.
pub async fn set_password(
    platform: &Platform,
    who: &str,
    password: String,
) -> crate::Result<String> {
    let id = id_of(&find(platform, who).await?)?;
    platform
        .accounts()
        .set_password(&id, Password::Plain(password))
        .await?;
    Ok(id)
}

/// Ends every session of an account (removes all its login tokens); returns the account's id and
/// how many tokens were removed.
///
/// # Errors
/// As [`find`], and store failures.
pub async fn logout(platform: &Platform, who: &str) -> crate::Result<(String, u64)> {
    let id = id_of(&find(platform, who).await?)?;
    let removed = platform.accounts().remove_all_tokens(&id).await?;
    Ok((id, removed))
}

/// Removes an account; returns its id.
///
/// # Errors
/// As [`find`], and store failures.
pub async fn remove(platform: &Platform, who: &str) -> crate::Result<String> {
    let id = id_of(&find(platform, who).await?)?;
    platform.accounts().remove_user(&id).await?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn summary_shows_the_public_fields_and_counts_tokens() {
        let user = json!({
            "_id": "abc", "username": "ann",
            "emails": [{"address": "ann@example.com", "verified": false}],
            "roles": ["admin", "editor"],
            "services": {"password": {"argon2": "secret-hash"}, "resume": {"loginTokens": [{"when": "x", "hashedToken": "y"}]}}
        });
        let line = summary(user.as_object().unwrap_or(&Document::new()));
        assert_eq!(
            line,
            "abc  username=ann  emails=ann@example.com  roles=admin,editor  tokens=1"
        );
        assert!(!line.contains("secret-hash"));
    }
}
