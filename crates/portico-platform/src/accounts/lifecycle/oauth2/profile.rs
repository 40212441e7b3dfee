//! Reading who signed in from a provider's user API, with the access token: the person's
//! stable id (never the login name, which people may change) and their address, verified
//! only when the provider says so.

use serde_json::Value;

use super::super::oidc::OidcError;
use super::super::oidc::{Identity, json_reply};
use super::{OAuth2Profile, OAuth2Provider};

/// Sent to every user API (GitHub refuses requests without one).
const USER_AGENT: &str = concat!("portico/", env!("CARGO_PKG_VERSION"));

/// `GET url` with the access token; its JSON reply.
async fn get(
    http: &reqwest::Client,
    url: &str,
    access: &str,
    what: &str,
) -> Result<Value, OidcError> {
    let response = http
        .get(url)
        .bearer_auth(access)
        .header("accept", "application/json")
        .header("user-agent", USER_AGENT)
        .send()
        .await
        .map_err(|e| OidcError::Unavailable(format!("{what}: {e}")))?;
    json_reply(response, what)
        .await
        .map_err(OidcError::InvalidResponse)
}

/// The value at `path` (dots go into objects).
fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// An id as text: a non-empty string, or a whole number (GitHub's and GitLab's ids).
fn id_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.trim().is_empty() && s.len() <= 256 => Some(s.trim().to_owned()),
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

/// A non-empty address, trimmed.
fn address(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
}

/// Who the access token of `provider` belongs to.
pub(super) async fn identity(
    http: &reqwest::Client,
    provider: &OAuth2Provider,
    access: &str,
) -> Result<Identity, OidcError> {
    let user = get(http, &provider.userinfo_url, access, "user API").await?;
    let emails = match &provider.profile {
        OAuth2Profile::GitHub { emails_url } => {
            Some(get(http, emails_url, access, "user emails API").await?)
        }
        _ => None,
    };
    read(&provider.profile, &user, emails.as_ref())
}

/// The identity in the user API's reply (and GitHub's list of addresses).
fn read(
    profile: &OAuth2Profile,
    user: &Value,
    emails: Option<&Value>,
) -> Result<Identity, OidcError> {
    let (id, email, email_verified) = match profile {
        OAuth2Profile::GitHub { .. } => {
            let primary = emails
                .and_then(Value::as_array)
                .ok_or_else(|| OidcError::InvalidResponse("user emails API: not a list".into()))?
                .iter()
                .find(|e| e.get("primary").and_then(Value::as_bool) == Some(true));
            (
                id_text(user.get("id")),
                primary.and_then(|e| address(e.get("email"))),
                primary
                    .and_then(|e| e.get("verified"))
                    .and_then(Value::as_bool)
                    == Some(true),
            )
        }
        OAuth2Profile::GitLab => (
            id_text(user.get("id")),
            address(user.get("email")),
            user.get("confirmed_at")
                .and_then(Value::as_str)
                .is_some_and(|at| !at.is_empty()),
        ),
        OAuth2Profile::Discord => (
            id_text(user.get("id")),
            address(user.get("email")),
            user.get("verified").and_then(Value::as_bool) == Some(true),
        ),
        OAuth2Profile::Fields {
            id,
            email,
            email_verified,
        } => (
            id_text(at(user, id)),
            address(at(user, email)),
            email_verified
                .as_deref()
                .and_then(|field| at(user, field))
                .and_then(Value::as_bool)
                == Some(true),
        ),
    };
    let sub = id.ok_or_else(|| OidcError::InvalidResponse("user API: no id".into()))?;
    Ok(Identity {
        sub,
        email,
        email_verified,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_strings_or_whole_numbers() {
        assert_eq!(id_text(Some(&json!(583231))), Some("583231".into()));
        assert_eq!(
            id_text(Some(&json!("80351110224678912"))),
            Some("80351110224678912".into())
        );
        assert_eq!(id_text(Some(&json!(""))), None);
        assert_eq!(id_text(Some(&json!(1.5))), None);
        assert_eq!(id_text(Some(&json!(null))), None);
        assert_eq!(id_text(None), None);
        let user = json!({"data": {"id": 7}});
        assert_eq!(id_text(at(&user, "data.id")), Some("7".into()));
    }

    fn who(
        profile: &OAuth2Profile,
        user: Value,
        emails: Option<Value>,
    ) -> (String, Option<String>, bool) {
        let i = read(profile, &user, emails.as_ref()).expect("an identity");
        (i.sub, i.email, i.email_verified)
    }

    #[test]
    fn each_profile_reads_its_provider_s_reply() {
        let gitlab = OAuth2Profile::GitLab;
        let confirmed = json!({"id": 42, "username": "ann", "email": "ann@example.org",
                               "confirmed_at": "2024-01-02T03:04:05Z"});
        assert_eq!(
            who(&gitlab, confirmed, None),
            ("42".into(), Some("ann@example.org".into()), true)
        );
        let unconfirmed = json!({"id": 42, "email": "ann@example.org", "confirmed_at": null});
        assert!(!who(&gitlab, unconfirmed, None).2);

        let discord = OAuth2Profile::Discord;
        let user =
            json!({"id": "80351110224678912", "email": "nelly@discord.com", "verified": true});
        assert_eq!(
            who(&discord, user, None),
            (
                "80351110224678912".into(),
                Some("nelly@discord.com".into()),
                true
            )
        );
        let user = json!({"id": "8035", "email": "nelly@discord.com", "verified": false});
        assert!(!who(&discord, user, None).2);
        let user = json!({"id": "8035", "email": null});
        assert_eq!(who(&discord, user, None), ("8035".into(), None, false));

        let github = OAuth2Profile::GitHub {
            emails_url: String::new(),
        };
        let emails = json!([
            {"email": "other@example.net", "primary": false, "verified": true},
            {"email": "octo@example.org", "primary": true, "verified": false}
        ]);
        assert_eq!(
            who(&github, json!({"id": 583231, "email": null}), Some(emails)),
            ("583231".into(), Some("octo@example.org".into()), false),
            "the primary address only, with its own verification"
        );
        assert!(matches!(
            read(
                &github,
                &json!({"id": 1}),
                Some(&json!({"message": "Not Found"}))
            ),
            Err(OidcError::InvalidResponse(_))
        ));

        let fields = OAuth2Profile::Fields {
            id: "data.sub".into(),
            email: "data.mail".into(),
            email_verified: Some("data.ok".into()),
        };
        let user = json!({"data": {"sub": "u-1", "mail": "a@example.org", "ok": true}});
        assert_eq!(
            who(&fields, user, None),
            ("u-1".into(), Some("a@example.org".into()), true)
        );
        let unsure = OAuth2Profile::Fields {
            id: "id".into(),
            email: "email".into(),
            email_verified: None,
        };
        assert!(
            !who(
                &unsure,
                json!({"id": 3, "email": "a@example.org", "email_verified": true}),
                None
            )
            .2
        );
        assert!(matches!(
            read(&unsure, &json!({"email": "a@example.org"}), None),
            Err(OidcError::InvalidResponse(_))
        ));
    }
}
