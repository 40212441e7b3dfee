//! Reading login and registration bodies.

use portico_platform::{Password, UserSelector};
use serde_json::{Map, Value};

use crate::ApiError;

/// Who logs in, and with what password.
pub(crate) struct Credentials {
    pub(crate) user: UserSelector,
    pub(crate) password: Password,
}

/// The password of a body: `password` as a string (a digest when `hashed` is true), or
/// `{digest, algorithm: "sha-256"}`.
fn password_of(body: &Map<String, Value>) -> Option<Password> {
    match body.get("password")? {
        Value::String(text) => {
            // `true`, or `"true"` from a form-encoded body (whose fields are all strings).
            let hashed = matches!(body.get("hashed"), Some(Value::Bool(true)))
                || matches!(body.get("hashed"), Some(Value::String(s)) if s == "true");
            if hashed {
                Some(Password::Digest(text.clone()))
            } else {
                Some(Password::Plain(text.clone()))
            }
        }
        Value::Object(object) => {
            let algorithm = object.get("algorithm").and_then(Value::as_str)?;
            if !algorithm.eq_ignore_ascii_case("sha-256") {
                return None;
            }
            Some(Password::Digest(object.get("digest")?.as_str()?.to_owned()))
        }
        _ => None,
    }
}

fn non_empty(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl Credentials {
    /// The credentials of a login body, or `None` when it lacks a usable identity or password.
    pub(crate) fn from_body(body: Option<&Value>) -> Option<Credentials> {
        let body = body?.as_object()?;
        let user = if let Some(name) = non_empty(body.get("username")) {
            UserSelector::Username(name)
        } else if let Some(email) = non_empty(body.get("email")) {
            UserSelector::Email(email)
        } else {
            match body.get("user")? {
                Value::String(_) => UserSelector::Either(non_empty(body.get("user"))?),
                Value::Object(user) => {
                    if let Some(name) = non_empty(user.get("username")) {
                        UserSelector::Username(name)
                    } else if let Some(email) = non_empty(user.get("email")) {
                        UserSelector::Email(email)
                    } else {
                        UserSelector::Id(non_empty(user.get("id"))?)
                    }
                }
                _ => return None,
            }
        };
        Some(Credentials {
            user,
            password: password_of(body)?,
        })
    }

    /// The key failures are counted under for this identity (case-insensitive).
    pub(crate) fn identity_key(&self) -> String {
        match &self.user {
            UserSelector::Id(id) => format!("id:{id}"),
            UserSelector::Username(name)
            | UserSelector::Either(name)
            | UserSelector::Email(name) => {
                format!("user:{}", name.to_lowercase())
            }
        }
    }
}

/// A registration body.
pub(crate) struct Registration {
    pub(crate) username: Option<String>,
    pub(crate) email: Option<String>,
    pub(crate) password: Password,
    pub(crate) profile: Option<Value>,
}

impl Registration {
    /// Reads a registration body.
    ///
    /// # Errors
    /// 400 `invalid-user` when the body is not an object, has no password, or a profile that is
    /// not an object. (A missing username and email is refused by the platform, also with 400.)
    pub(crate) fn from_body(body: Option<&Value>) -> Result<Registration, ApiError> {
        let invalid = |reason: &str| ApiError::bad_request("invalid-user", reason);
        let body = body
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("The body must be a JSON object"))?;
        let password = password_of(body).ok_or_else(|| invalid("Password may not be empty"))?;
        let profile = match body.get("profile") {
            None | Some(Value::Null) => None,
            Some(profile @ Value::Object(_)) => Some(profile.clone()),
            Some(_) => return Err(invalid("profile must be an object")),
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

    #[test]
    fn identity_fields_in_order_of_preference() {
        let c = Credentials::from_body(Some(&json!({"username": "ada", "password": "p"}))).unwrap();
        assert_eq!(c.user, UserSelector::Username("ada".into()));
        let c = Credentials::from_body(Some(&json!({"email": "a@x.io", "password": "p"}))).unwrap();
        assert_eq!(c.user, UserSelector::Email("a@x.io".into()));
        let c = Credentials::from_body(Some(&json!({"user": "a@x.io", "password": "p"}))).unwrap();
        assert_eq!(c.user, UserSelector::Either("a@x.io".into()));
        let c =
            Credentials::from_body(Some(&json!({"user": {"id": "u1"}, "password": "p"}))).unwrap();
        assert_eq!(c.user, UserSelector::Id("u1".into()));
    }

    #[test]
    fn hashed_passwords() {
        let c = Credentials::from_body(Some(
            &json!({"username": "a", "password": "abc", "hashed": true}),
        ))
        .unwrap();
        assert_eq!(c.password, Password::Digest("abc".into()));
        let c = Credentials::from_body(Some(
            &json!({"username": "a", "password": "abc", "hashed": "true"}),
        ))
        .unwrap();
        assert_eq!(c.password, Password::Digest("abc".into()));
        let c = Credentials::from_body(Some(
            &json!({"username": "a", "password": {"digest": "d", "algorithm": "sha-256"}}),
        ))
        .unwrap();
        assert_eq!(c.password, Password::Digest("d".into()));
        assert!(
            Credentials::from_body(Some(
                &json!({"username": "a", "password": {"digest": "d", "algorithm": "md5"}})
            ))
            .is_none()
        );
    }

    #[test]
    fn missing_parts_are_none() {
        assert!(Credentials::from_body(None).is_none());
        assert!(Credentials::from_body(Some(&json!({"password": "p"}))).is_none());
        assert!(Credentials::from_body(Some(&json!({"username": "a"}))).is_none());
        assert!(Credentials::from_body(Some(&json!({"username": " ", "password": "p"}))).is_none());
        assert!(Credentials::from_body(Some(&json!([1]))).is_none());
    }

    #[test]
    fn identity_key_ignores_case() {
        let a = Credentials::from_body(Some(&json!({"username": "Ada", "password": "p"}))).unwrap();
        let b = Credentials::from_body(Some(&json!({"user": "ada", "password": "p"}))).unwrap();
        assert_eq!(a.identity_key(), b.identity_key());
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
        let r = Registration::from_body(Some(
            &json!({"email": "a@x.io", "password": "p", "profile": {"n": 1}}),
        ))
        .unwrap();
        assert_eq!(r.email.as_deref(), Some("a@x.io"));
        assert_eq!(r.profile, Some(json!({"n": 1})));
    }
}
