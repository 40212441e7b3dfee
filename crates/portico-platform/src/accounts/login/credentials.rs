//! Reading login and registration bodies: one lookup order and one set of password forms for
//! every door.

use serde_json::{Map, Value};

use crate::{Password, UserSelector};

fn non_empty(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Who a login body names, in this order: `email`, then `username`, then the legacy `user` (a
/// string judged an email when it holds `@`, or an object `{email}`, `{username}` or `{id}`).
pub(crate) fn identity_of(body: &Map<String, Value>) -> Option<UserSelector> {
    if let Some(email) = non_empty(body.get("email")) {
        return Some(UserSelector::Email(email));
    }
    if let Some(name) = non_empty(body.get("username")) {
        return Some(UserSelector::Username(name));
    }
    match body.get("user")? {
        Value::String(_) => non_empty(body.get("user")).map(UserSelector::Either),
        Value::Object(user) => {
            if let Some(email) = non_empty(user.get("email")) {
                Some(UserSelector::Email(email))
            } else if let Some(name) = non_empty(user.get("username")) {
                Some(UserSelector::Username(name))
            } else {
                non_empty(user.get("id")).map(UserSelector::Id)
            }
        }
        _ => None,
    }
}

/// The password of a body: `password` as a non-empty string (the SHA-256 hex digest when
/// `hashed` is `true` or `"true"`), or `{digest, algorithm: "sha-256"}` (the algorithm is
/// required). Digests are compared in lowercase.
pub(crate) fn password_of(body: &Map<String, Value>) -> Option<Password> {
    match body.get("password")? {
        Value::String(text) if text.is_empty() => None,
        Value::String(text) => {
            // `true`, or `"true"` from a form-encoded body (whose fields are all strings).
            let hashed = matches!(body.get("hashed"), Some(Value::Bool(true)))
                || matches!(body.get("hashed"), Some(Value::String(s)) if s == "true");
            if hashed {
                Some(Password::Digest(text.to_ascii_lowercase()))
            } else {
                Some(Password::Plain(text.clone()))
            }
        }
        Value::Object(object) => {
            let algorithm = object.get("algorithm").and_then(Value::as_str)?;
            if !algorithm.eq_ignore_ascii_case("sha-256") {
                return None;
            }
            let digest = object.get("digest")?.as_str()?;
            (!digest.is_empty()).then(|| Password::Digest(digest.to_ascii_lowercase()))
        }
        _ => None,
    }
}

/// A registration body.
#[derive(Debug)]
pub(crate) struct Registration {
    pub(crate) username: Option<String>,
    pub(crate) email: Option<String>,
    pub(crate) password: Password,
    pub(crate) profile: Option<Value>,
}

impl Registration {
    /// Reads a registration body; the message says what is wrong.
    pub(crate) fn from_body(body: Option<&Value>) -> Result<Registration, String> {
        let body = body
            .and_then(Value::as_object)
            .ok_or("The body must be a JSON object")?;
        let password = password_of(body).ok_or("Password may not be empty")?;
        let profile = match body.get("profile") {
            None | Some(Value::Null) => None,
            Some(profile @ Value::Object(_)) => Some(profile.clone()),
            Some(_) => return Err("profile must be an object".into()),
        };
        Ok(Registration {
            username: non_empty(body.get("username")),
            email: non_empty(body.get("email")),
            password,
            profile,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn identity_order_is_email_username_user() {
        let id = |v: Value| identity_of(&obj(v));
        assert_eq!(
            id(json!({"email": "A@x.io", "username": "bob"})),
            Some(UserSelector::Email("A@x.io".into()))
        );
        assert_eq!(
            id(json!({"username": "bob", "user": "x@y"})),
            Some(UserSelector::Username("bob".into()))
        );
        assert_eq!(
            id(json!({"user": "bob"})),
            Some(UserSelector::Either("bob".into()))
        );
        assert_eq!(
            id(json!({"user": {"id": "u1"}})),
            Some(UserSelector::Id("u1".into()))
        );
        assert_eq!(
            id(json!({"user": {"email": "a@x.io", "id": "u1"}})),
            Some(UserSelector::Email("a@x.io".into()))
        );
        assert_eq!(id(json!({"username": "  "})), None);
        assert_eq!(id(json!({"user": 3})), None);
    }

    #[test]
    fn password_forms() {
        let pw = |v: Value| password_of(&obj(v));
        assert_eq!(
            pw(json!({"password": "pw"})),
            Some(Password::Plain("pw".into()))
        );
        assert_eq!(
            pw(json!({"password": "AB", "hashed": true})),
            Some(Password::Digest("ab".into()))
        );
        assert_eq!(
            pw(json!({"password": "ab", "hashed": "true"})),
            Some(Password::Digest("ab".into()))
        );
        assert_eq!(
            pw(json!({"password": {"digest": "FF", "algorithm": "SHA-256"}})),
            Some(Password::Digest("ff".into()))
        );
        assert_eq!(pw(json!({"password": {"digest": "ff"}})), None);
        assert_eq!(
            pw(json!({"password": {"digest": "ff", "algorithm": "md5"}})),
            None
        );
        assert_eq!(pw(json!({"password": ""})), None);
        assert_eq!(pw(json!({})), None);
    }

    #[test]
    fn registration_needs_a_password_and_an_object_profile() {
        assert!(Registration::from_body(Some(&json!({"username": "a"}))).is_err());
        assert!(
            Registration::from_body(Some(
                &json!({"username": "a", "password": "p", "profile": 3})
            ))
            .is_err()
        );
        assert!(Registration::from_body(None).is_err());
        let r = Registration::from_body(Some(
            &json!({"email": "a@x.io", "password": "p", "profile": {"n": 1}}),
        ))
        .unwrap();
        assert_eq!(r.email.as_deref(), Some("a@x.io"));
        assert_eq!(r.profile, Some(json!({"n": 1})));
    }
}
