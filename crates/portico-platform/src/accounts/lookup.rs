//! Finding users by username or email: exact first, else a unique case-insensitive match.

use portico_store::{Document, Selector};
use serde_json::{Map, Value};

use crate::Result;

/// `{path: value}`.
pub(crate) fn exact(path: &str, value: &str) -> Result<Selector> {
    let mut m = Map::new();
    m.insert(path.to_string(), Value::String(value.to_string()));
    Ok(Selector::parse(&Value::Object(m))?)
}

/// Lowercase copy of the username, kept beside the record's own fields and indexed.
pub(crate) const LOWER_USERNAME: &str = "services.lowercase.username";
/// Lowercase copies of the email addresses, kept beside the record's own fields and indexed.
pub(crate) const LOWER_EMAILS: &str = "services.lowercase.emails";
/// The object holding both lowercase copies.
pub(crate) const LOWER_LOWERCASE: &str = "services.lowercase";

/// The case-folded form lookups compare.
pub(crate) fn fold(s: &str) -> String {
    s.to_lowercase()
}

/// Sets `services.lowercase.{username, emails}` from the record's `username` and `emails`.
///
/// Case-insensitive lookups use these indexed copies instead of a case-insensitive regex, which
/// no index can serve: a regex scans every user, so a login by an unknown name would cost
/// (and reveal, by its timing) a scan of the whole collection.
pub(crate) fn set_lowercase_fields(doc: &mut Document) {
    let username = doc.get("username").and_then(Value::as_str).map(fold);
    let emails: Vec<Value> = doc
        .get("emails")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("address").and_then(Value::as_str))
        .map(|a| Value::String(fold(a)))
        .collect();
    let mut lowercase = Map::new();
    if let Some(u) = username {
        lowercase.insert("username".into(), Value::String(u));
    }
    lowercase.insert("emails".into(), Value::Array(emails));
    let services = doc
        .entry("services")
        .or_insert_with(|| Value::Object(Map::new()));
    if !services.is_object() {
        *services = Value::Object(Map::new());
    }
    if let Value::Object(services) = services {
        services.insert("lowercase".into(), Value::Object(lowercase));
    }
}

/// Sets the lowercase copies ([`set_lowercase_fields`]) and returns them, for a `$set` of
/// [`LOWER_LOWERCASE`].
pub(crate) fn lowercase_copies(doc: &mut Document) -> Value {
    set_lowercase_fields(doc);
    doc.get("services")
        .and_then(|s| s.get("lowercase"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Checks an email address: one `@`, a non-empty local part, a dotted domain, no spaces.
pub(crate) fn is_valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && email.len() <= 254
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_copies_follow_username_and_emails() {
        let mut doc = match serde_json::json!({
            "username": "ÄDA",
            "emails": [{"address": "Ada@Example.ORG"}, {"address": "x@Y.de"}],
            "services": {"password": {"argon2": "h"}}
        }) {
            Value::Object(m) => m,
            _ => Document::new(),
        };
        set_lowercase_fields(&mut doc);
        assert_eq!(
            doc["services"],
            serde_json::json!({
                "password": {"argon2": "h"},
                "lowercase": {"username": "äda", "emails": ["ada@example.org", "x@y.de"]}
            })
        );
    }

    #[test]
    fn emails_are_checked_for_their_basic_shape() {
        for good in ["a@b.co", "first.last+tag@example.org", "ü@exämple.de"] {
            assert!(is_valid_email(good), "{good}");
        }
        for bad in [
            "", "plain", "@b.co", "a@", "a@b", "a@@b.co", "a b@c.de", "a@.b", "a@b.", "a@b..c",
        ] {
            assert!(!is_valid_email(bad), "{bad}");
        }
    }
}
