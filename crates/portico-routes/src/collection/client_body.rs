//! Checks on client bodies: a body is data, never a modifier.

use portico_store::Document;
use serde_json::Value;

use crate::Reply;

/// Where a body is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyUse {
    /// A new document (post): dotted keys refused, a string `_id` allowed.
    Create,
    /// A whole replacement (put): dotted keys refused, `_id` may only repeat the url's.
    Replace,
    /// Some fields (patch): top-level dotted keys are nested paths, `_id` may only repeat the url's.
    Change,
}

fn bad(message: String) -> Reply {
    Reply::error(400, message)
}

fn check_nested(value: &Value, path: &str) -> Result<(), Reply> {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k.starts_with('$') {
                    return Err(bad(format!(
                        "Field names may not start with '$' ({path}.{k})"
                    )));
                }
                if k.contains('.') {
                    return Err(bad(format!("Field names may not contain '.' ({path}.{k})")));
                }
                check_nested(v, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_nested(v, &format!("{path}.{i}"))),
        _ => Ok(()),
    }
}

/// Checks a client body; removes an `_id` that only repeats `id`.
pub(crate) fn check(body: &mut Document, how: BodyUse, id: Option<&str>) -> Result<(), Reply> {
    for (key, value) in body.iter() {
        if key.starts_with('$') {
            return Err(bad(format!(
                "Field names may not start with '$' ({key}): the body is data, not a modifier"
            )));
        }
        if key.is_empty() {
            return Err(bad("Field names may not be empty".into()));
        }
        if key.contains('.') {
            if how != BodyUse::Change {
                return Err(bad(format!("Field names may not contain '.' ({key})")));
            }
            if key.split('.').any(str::is_empty) {
                return Err(bad(format!("Invalid field path {key:?}")));
            }
            if key.split('.').next() == Some("_id") {
                return Err(bad("The _id of an item cannot be changed".into()));
            }
        }
        check_nested(value, key)?;
    }
    match (body.get("_id"), how) {
        (None, _) => {}
        (Some(Value::String(_)), BodyUse::Create) => {}
        (Some(_), BodyUse::Create) => return Err(bad("_id must be a string".into())),
        (Some(Value::String(given)), _) if Some(given.as_str()) == id => {
            body.remove("_id");
        }
        (Some(_), _) => return Err(bad("The _id of an item cannot be changed".into())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    #[test]
    fn dollar_keys_are_refused_everywhere() {
        for how in [BodyUse::Create, BodyUse::Replace, BodyUse::Change] {
            assert!(check(&mut doc(json!({"$set": {"a": 1}})), how, Some("x")).is_err());
            assert!(check(&mut doc(json!({"a": {"$gt": 1}})), how, Some("x")).is_err());
        }
    }

    #[test]
    fn dotted_keys_only_on_change() {
        assert!(check(&mut doc(json!({"a.b": 1})), BodyUse::Create, None).is_err());
        assert!(check(&mut doc(json!({"a.b": 1})), BodyUse::Replace, Some("x")).is_err());
        assert!(check(&mut doc(json!({"a.b": 1})), BodyUse::Change, Some("x")).is_ok());
        assert!(
            check(
                &mut doc(json!({"a": {"b.c": 1}})),
                BodyUse::Change,
                Some("x")
            )
            .is_err()
        );
    }

    #[test]
    fn id_changes_are_refused() {
        let mut same = doc(json!({"_id": "x", "a": 1}));
        assert!(check(&mut same, BodyUse::Replace, Some("x")).is_ok());
        assert!(!same.contains_key("_id"));
        assert!(check(&mut doc(json!({"_id": "y"})), BodyUse::Change, Some("x")).is_err());
        assert!(check(&mut doc(json!({"_id": 5})), BodyUse::Create, None).is_err());
        assert!(check(&mut doc(json!({"_id": "mine"})), BodyUse::Create, None).is_ok());
    }
}
