//! Finding users by username or email: exact first, else a unique case-insensitive match.

use portico_store::Selector;
use serde_json::{Map, Value};

use crate::Result;

/// `{path: value}`.
pub(crate) fn exact(path: &str, value: &str) -> Result<Selector> {
    let mut m = Map::new();
    m.insert(path.to_string(), Value::String(value.to_string()));
    Ok(Selector::parse(&Value::Object(m))?)
}

/// `{path: {"$regex": "^<escaped value>$", "$options": "i"}}`: equal to `value` ignoring case.
pub(crate) fn case_insensitive(path: &str, value: &str) -> Result<Selector> {
    let mut cond = Map::new();
    cond.insert(
        "$regex".into(),
        Value::String(format!("^{}$", regex::escape(value))),
    );
    cond.insert("$options".into(), Value::String("i".into()));
    let mut m = Map::new();
    m.insert(path.to_string(), Value::Object(cond));
    Ok(Selector::parse(&Value::Object(m))?)
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
