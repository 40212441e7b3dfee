//! Importing users exported by existing apps: extended JSON converted to stored documents.

use portico_store::Document;
use serde_json::{Map, Value};

use super::{Accounts, USERS, hash_token, lookup, object, taken_name_error};
use crate::time::{from_millis, now_iso, parse_date, to_iso};
use crate::{Error, Result};

/// Converts extended-JSON values anywhere in `value`: `{"$date": ms}`, `{"$date": "ISO-8601"}` and
/// `{"$date": {"$numberLong": "ms"}}` become ISO-8601 UTC strings with milliseconds,
/// `{"$oid": "hex"}` becomes the hex string, `{"$numberLong": "n"}` and `{"$numberInt": "n"}` become
/// numbers. Everything else is kept as is.
///
/// ```
/// # use portico_platform::import_value;
/// # use serde_json::json;
/// let v = import_value(json!({"_id": {"$oid": "5f1d7a3e9b1e8a3f4c2d1e0f"}, "at": {"$date": 0}}))?;
/// assert_eq!(v, json!({"_id": "5f1d7a3e9b1e8a3f4c2d1e0f", "at": "1970-01-01T00:00:00.000Z"}));
/// # Ok::<(), portico_platform::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] for a `$date` that is not a date, an `$oid` that is not a hex string,
/// or a number that does not parse.
pub fn import_value(value: Value) -> Result<Value> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(import_value)
            .collect::<Result<_>>()
            .map(Value::Array),
        Value::Object(map) => import_object(map),
        other => Ok(other),
    }
}

fn import_object(map: Map<String, Value>) -> Result<Value> {
    if map.len() == 1 {
        if let Some(date) = map.get("$date") {
            let time = match date {
                Value::Number(n) => n.as_i64().and_then(from_millis),
                other => parse_date(&Value::Object(
                    [("$date".to_string(), other.clone())].into_iter().collect(),
                )),
            };
            return time.map(|t| Value::String(to_iso(t))).ok_or_else(|| {
                Error::InvalidArgument(format!("not a date: {{\"$date\": {date}}}"))
            });
        }
        if let Some(oid) = map.get("$oid") {
            return match oid.as_str() {
                Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    Ok(Value::String(hex.to_ascii_lowercase()))
                }
                _ => Err(Error::InvalidArgument(format!(
                    "not an object id: {{\"$oid\": {oid}}}"
                ))),
            };
        }
        for key in ["$numberLong", "$numberInt"] {
            if let Some(n) = map.get(key) {
                return n
                    .as_str()
                    .and_then(|s| s.parse::<i64>().ok())
                    .map(Value::from)
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!("not a number: {{\"{key}\": {n}}}"))
                    });
            }
        }
    }
    map.into_iter()
        .map(|(k, v)| import_value(v).map(|v| (k, v)))
        .collect::<Result<Map<_, _>>>()
        .map(Value::Object)
}

impl Accounts {
    /// Imports a user record exported by an existing app and returns its id.
    ///
    /// Extended-JSON values are converted ([`import_value`]); a login token without `when` is
    /// stamped with the import time (so it works, then expires on schedule); a legacy plain
    /// `token` is replaced by its `hashedToken`. Password hashes (bcrypt or argon2) are kept.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for malformed extended JSON or an `_id` that is not a string;
    /// a store error when the `_id` exists already; [`Error::UserExists`] when another user
    /// holds the username or an email, also in another case (names are unique, see
    /// [`Accounts::create_user`]).
    pub async fn import_user(&self, user: Document) -> Result<String> {
        let mut doc = object(import_value(Value::Object(user))?);
        match doc.get("_id") {
            None => {
                let mut with_id = Document::new();
                with_id.insert("_id".into(), Value::String(portico_store::new_id()));
                with_id.extend(doc);
                doc = with_id;
            }
            Some(Value::String(id)) if !id.is_empty() => {}
            Some(_) => {
                return Err(Error::InvalidArgument(
                    "a user's _id must be a string".into(),
                ));
            }
        }
        let now = now_iso();
        let tokens = doc
            .get_mut("services")
            .and_then(|s| s.get_mut("resume"))
            .and_then(|r| r.get_mut("loginTokens"))
            .and_then(Value::as_array_mut);
        for entry in tokens.into_iter().flatten() {
            let Value::Object(entry) = entry else {
                continue;
            };
            if !entry.contains_key("hashedToken")
                && let Some(Value::String(plain)) = entry.shift_remove("token")
            {
                entry.insert("hashedToken".into(), Value::String(hash_token(&plain)));
            }
            if entry.get("when").is_none_or(Value::is_null) {
                entry.insert("when".into(), Value::String(now.clone()));
            }
        }
        lookup::set_lowercase_fields(&mut doc);
        self.store()
            .insert(USERS, doc)
            .await
            .map_err(taken_name_error)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_date_form_becomes_the_same_iso_string() {
        let v = import_value(json!([
            {"$date": 1_700_000_000_123i64},
            {"$date": "2023-11-14T22:13:20.123Z"},
            {"$date": "2023-11-14T23:13:20.123+01:00"},
            {"$date": {"$numberLong": "1700000000123"}}
        ]));
        let iso = "2023-11-14T22:13:20.123Z";
        assert_eq!(v.ok(), Some(json!([iso, iso, iso, iso])));
    }

    #[test]
    fn nested_values_are_converted_and_others_kept() {
        let v = import_value(json!({
            "services": {"resume": {"loginTokens": [{"when": {"$date": 0}, "hashedToken": "h"}]}},
            "n": {"$numberLong": "42"},
            "plain": {"$date": 1, "other": 2}
        }));
        assert_eq!(
            v.ok(),
            Some(json!({
                "services": {"resume": {"loginTokens": [
                    {"when": "1970-01-01T00:00:00.000Z", "hashedToken": "h"}
                ]}},
                "n": 42,
                "plain": {"$date": 1, "other": 2}
            }))
        );
    }

    #[test]
    fn malformed_values_are_refused() {
        assert!(import_value(json!({"$date": "soon"})).is_err());
        assert!(import_value(json!({"$date": true})).is_err());
        assert!(import_value(json!({"$oid": "xyz"})).is_err());
        assert!(import_value(json!({"$numberLong": "1e3"})).is_err());
    }
}
