//! Checking client bodies for the collection write endpoints.
//!
//! A client body is data, never a modifier: a `$`-prefixed field name anywhere in it, or a PATCH
//! that would change `_id`, is refused with 400 before anything is written. Inserted documents
//! may not use dotted field names either (a PATCH may: there a dotted name is a nested path, as
//! `$set` treats it).

use portico_store::{Document, IdKind, new_object_id};
use serde_json::{Map, Value};

use crate::ApiError;
use crate::args::json_type;

fn invalid(reason: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid-document", reason)
}

/// Refuses an id that is not an object id in an object-id collection.
pub(crate) fn check_id(id: &str, object_ids: bool) -> Result<(), ApiError> {
    if object_ids && !IdKind::ObjectId.is_valid(id) {
        return Err(ApiError::bad_request(
            "invalid-id",
            format!("{id:?} is not an object id (24 hexadecimal characters)"),
        ));
    }
    Ok(())
}

/// Finds the first `$`-prefixed field name at any depth of `value`.
fn find_dollar_key(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) => map.iter().find_map(|(key, child)| {
            if key.starts_with('$') {
                Some(key.as_str())
            } else {
                find_dollar_key(child)
            }
        }),
        Value::Array(items) => items.iter().find_map(find_dollar_key),
        _ => None,
    }
}

/// Finds the first dotted field name at any depth of `value`.
fn find_dotted_key(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) => map.iter().find_map(|(key, child)| {
            if key.contains('.') {
                Some(key.as_str())
            } else {
                find_dotted_key(child)
            }
        }),
        Value::Array(items) => items.iter().find_map(find_dotted_key),
        _ => None,
    }
}

fn require_object(body: Option<Value>, what: &str) -> Result<Document, ApiError> {
    match body {
        Some(Value::Object(map)) => Ok(map),
        None => Err(invalid(format!("The body must be a JSON object {what}"))),
        Some(other) => Err(invalid(format!(
            "The body must be a JSON object {what}, not {}",
            json_type(&other)
        ))),
    }
}

fn refuse_modifiers(doc: &Document) -> Result<(), ApiError> {
    for (key, value) in doc {
        if key.starts_with('$') {
            return Err(invalid(format!(
                "Field names may not start with '$' (a body is data, not a modifier): {key:?}"
            )));
        }
        if let Some(nested) = find_dollar_key(value) {
            return Err(invalid(format!(
                "Field names may not start with '$': {nested:?} in {key:?}"
            )));
        }
    }
    Ok(())
}

/// The document a `POST /<collection>` body inserts.
///
/// # Errors
/// 400 when the body is not an object, holds a `$`-prefixed or dotted field name, or an `_id`
/// that is not a non-empty string (or not an object id in an object-id collection).
pub(crate) fn insert_document(body: Option<Value>, object_ids: bool) -> Result<Document, ApiError> {
    let mut doc = require_object(body, "to insert")?;
    refuse_modifiers(&doc)?;
    let dotted = doc.iter().find_map(|(key, value)| {
        if key.contains('.') {
            Some(key.as_str())
        } else {
            find_dotted_key(value)
        }
    });
    if let Some(key) = dotted {
        return Err(invalid(format!("Field names may not contain '.': {key:?}")));
    }
    match doc.get("_id") {
        None => {
            if object_ids {
                // In place: the parsed body has room for it (see `parse_bounded`).
                doc.shift_insert(0, "_id".into(), Value::String(new_object_id()));
            }
        }
        Some(Value::String(id)) if !id.is_empty() => check_id(id, object_ids)?,
        Some(_) => return Err(invalid("_id must be a non-empty string")),
    }
    Ok(doc)
}

/// The modifier `{"$set": body}` a `PATCH /<collection>/<id>` body makes.
///
/// # Errors
/// 400 when the body is not a non-empty object, holds a `$`-prefixed field name (at any depth or
/// path part), would change `_id`, has an empty path part (`a..b`), or sets both a path and a
/// path inside it (`a` and `a.b`).
pub(crate) fn update_modifier(body: Option<Value>, id: &str) -> Result<Value, ApiError> {
    let mut fields = require_object(body, "of fields to set")?;
    refuse_modifiers(&fields)?;
    match fields.get("_id") {
        None => {}
        // Setting `_id` to the value it has changes nothing; drop it rather than refuse it.
        Some(Value::String(same)) if same == id => {
            fields.shift_remove("_id");
        }
        Some(_) => return Err(invalid("The _id of a document cannot be changed")),
    }
    if fields.is_empty() {
        return Err(invalid("The body must set at least one field"));
    }
    for key in fields.keys() {
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(invalid(format!("Field path {key:?} has an empty part")));
        }
        if parts.iter().any(|p| p.starts_with('$')) {
            return Err(invalid(format!(
                "Field paths may not hold '$' parts: {key:?}"
            )));
        }
        if parts[0] == "_id" {
            return Err(invalid("The _id of a document cannot be changed"));
        }
    }
    // A path conflicts with another when one of its prefixes (at a dot) is a field too: looked
    // up in a set, so a body of many fields costs its length, not its length squared.
    let names: std::collections::HashSet<&str> = fields.keys().map(String::as_str).collect();
    for key in fields.keys() {
        for (at, _) in key.match_indices('.') {
            let prefix = &key[..at];
            if names.contains(prefix) {
                return Err(invalid(format!(
                    "Fields {prefix:?} and {key:?} conflict: one is inside the other"
                )));
            }
        }
    }
    let mut modifier = Map::new();
    modifier.insert("$set".into(), Value::Object(fields));
    Ok(Value::Object(modifier))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dollar_keys_are_refused_at_any_depth() {
        for body in [
            json!({"$unset": {"a": 1}}),
            json!({"a": {"$gt": 1}}),
            json!({"a": [{"$x": 1}]}),
        ] {
            let err = insert_document(Some(body.clone()), false).unwrap_err();
            assert_eq!(err.status_code(), http::StatusCode::BAD_REQUEST, "{body}");
            let err = update_modifier(Some(body.clone()), "x").unwrap_err();
            assert_eq!(err.status_code(), http::StatusCode::BAD_REQUEST, "{body}");
        }
        assert!(update_modifier(Some(json!({"a.$b": 1})), "x").is_err());
    }

    #[test]
    fn insert_refuses_dotted_names_and_bad_ids() {
        assert!(insert_document(Some(json!({"a.b": 1})), false).is_err());
        assert!(insert_document(Some(json!({"_id": 5})), false).is_err());
        assert!(insert_document(Some(json!({"_id": ""})), false).is_err());
        assert!(insert_document(Some(json!([1])), false).is_err());
        assert!(insert_document(None, false).is_err());
    }

    #[test]
    fn patch_cannot_change_id() {
        assert!(update_modifier(Some(json!({"_id": "other"})), "x").is_err());
        assert!(update_modifier(Some(json!({"_id.a": 1})), "x").is_err());
        assert!(update_modifier(Some(json!({})), "x").is_err());
        assert!(
            update_modifier(Some(json!({"_id": "x"})), "x").is_err(),
            "nothing left to set"
        );
    }

    #[test]
    fn patch_refuses_bad_paths() {
        assert!(update_modifier(Some(json!({"a..b": 1})), "x").is_err());
        assert!(update_modifier(Some(json!({".a": 1})), "x").is_err());
        assert!(update_modifier(Some(json!({"a": 1, "a.b": 2})), "x").is_err());
    }

    #[test]
    fn dollar_and_dot_finders() {
        assert_eq!(
            find_dollar_key(&json!({"a": [{"b": {"$c": 1}}]})),
            Some("$c")
        );
        assert_eq!(find_dollar_key(&json!({"a": "$not-a-key"})), None);
        assert_eq!(find_dotted_key(&json!({"a": {"b.c": 1}})), Some("b.c"));
    }
}
