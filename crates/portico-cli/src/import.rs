//! `portico import`: load a JSON array export (one document per element) into a collection.
//!
//! Extended-JSON values (`{"$date": ...}`, `{"$oid": ...}`) are converted by the platform's
//! [`portico_platform::import_value`]. A `users` export keeps working as accounts: password
//! hashes (bcrypt over the SHA-256 of the password) verify as they are, and hashed login tokens
//! keep their `when`, so unexpired tokens stay valid and expired ones stay refused.
//!
//! The whole file is checked before anything is written: a bad element or an `_id` that exists
//! already stops the import with nothing written. Other collections than `users` are written in
//! one all-or-nothing batch ([`portico_platform::Collection::insert_many`]): an `_id` the
//! collection has already fails the whole batch, and only then are the file's ids looked up to
//! name the ones that exist. The file is parsed from a buffered reader (its text is never held
//! whole) and each element is converted as it is taken from the parsed array.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use portico_platform::{Platform, import_value};
use portico_store::Document;
use portico_store::json::{JsonBudget, JsonLimits};
use serde_json::Value;

/// How many documents are listed by id in an error before "and N more".
const LISTED: usize = 5;

/// The read buffer for an export file.
const READ_BUFFER: usize = 1 << 20;

/// Imports the JSON array in `file` into `collection` and returns how many documents it wrote.
///
/// # Errors
/// [`crate::Error::Import`] when the file cannot be read, is not a JSON array of objects, holds a
/// value that does not convert, repeats an `_id`, or holds an `_id` the collection already has
/// (nothing is written then); [`crate::Error::Platform`] when the store fails while writing.
pub async fn import_file(
    platform: &Platform,
    collection: &str,
    file: &Path,
) -> crate::Result<usize> {
    let fail = |message: String| crate::Error::Import {
        path: file.to_owned(),
        message,
    };
    let docs = read_export_file(file).map_err(fail)?;
    let count = docs.len();
    let target = platform.collection(collection);
    if collection != portico_platform::USERS {
        return match target.insert_many(docs).await {
            Ok(_) => Ok(count),
            Err(portico_platform::Error::Store(portico_store::Error::DuplicateId {
                id, ..
            })) => {
                // Nothing was written: name the file's ids that the collection has.
                let mut existing = match read_export_file(file) {
                    Ok(again) => existing_ids(platform, collection, &again).await?,
                    Err(_) => Vec::new(),
                };
                if existing.is_empty() {
                    existing.push(id);
                }
                Err(fail(already_exist(collection, &existing)))
            }
            Err(e) => Err(e.into()),
        };
    }
    let existing = existing_ids(platform, collection, &docs).await?;
    if !existing.is_empty() {
        return Err(fail(already_exist(collection, &existing)));
    }
    if let Some(message) = taken_names(platform, &docs).await? {
        return Err(fail(message));
    }
    for doc in docs {
        // The accounts' own import: stamps tokens without `when`, hashes legacy plain tokens.
        platform.accounts().import_user(doc).await?;
    }
    Ok(count)
}

/// Reads and converts the export in `file` (see [`read_export`]).
fn read_export_file(file: &Path) -> Result<Vec<Document>, String> {
    let opened = File::open(file).map_err(|e| format!("cannot read it: {e}"))?;
    read_export(BufReader::with_capacity(READ_BUFFER, opened))
}

/// The `_id`s of `docs` that `collection` has already, in file order.
async fn existing_ids(
    platform: &Platform,
    collection: &str,
    docs: &[Document],
) -> crate::Result<Vec<String>> {
    let target = platform.collection(collection);
    let mut existing = Vec::new();
    for doc in docs {
        if let Some(id) = doc.get("_id").and_then(Value::as_str) {
            if target.get(id).await?.is_some() {
                existing.push(id.to_owned());
            }
        }
    }
    Ok(existing)
}

/// The usernames and email addresses of an account document, as written.
fn account_names(doc: &Document) -> Vec<(&'static str, String)> {
    let username = doc
        .get("username")
        .and_then(Value::as_str)
        .map(|u| ("username", u.trim().to_owned()));
    let emails = doc
        .get("emails")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("address").and_then(Value::as_str))
        .map(|a| ("email", a.trim().to_owned()));
    username.into_iter().chain(emails).collect()
}

/// Why the accounts in `docs` cannot be imported as they are: a username or email that repeats
/// in the file or that an account has already, compared in any letter case (as sign-up and
/// `portico users add` compare them). `None` when every name is free.
///
/// # Errors
/// Store failures.
async fn taken_names(platform: &Platform, docs: &[Document]) -> crate::Result<Option<String>> {
    let users = platform.collection(portico_platform::USERS);
    let mut seen = std::collections::BTreeMap::new();
    let mut repeated = Vec::new();
    let mut taken = Vec::new();
    for (index, doc) in docs.iter().enumerate() {
        for (kind, name) in account_names(doc) {
            let folded = name.to_lowercase();
            if let Some(first) = seen.insert((kind, folded.clone()), index) {
                repeated.push(format!("{kind} {name:?} (elements {first} and {index})"));
                continue;
            }
            let (path, lower) = match kind {
                "username" => ("username", "services.lowercase.username"),
                _ => ("emails.address", "services.lowercase.emails"),
            };
            let selector = portico_store::Selector::parse(
                &serde_json::json!({"$or": [{path: name}, {lower: folded}]}),
            )
            .map_err(|e| crate::Error::Platform(e.into()))?;
            if users.count(&selector).await? > 0 {
                taken.push(format!("{kind} {name:?} (element {index})"));
            }
        }
    }
    let mut problems = Vec::new();
    if !repeated.is_empty() {
        problems.push(format!("repeated in the file: {}", listed(&repeated)));
    }
    if !taken.is_empty() {
        problems.push(format!("taken by an existing account: {}", listed(&taken)));
    }
    Ok((!problems.is_empty()).then(|| {
        format!(
            "usernames and emails must be unique in any letter case; {}; nothing was imported",
            problems.join("; ")
        )
    }))
}

/// The message for `_id`s that exist already.
fn already_exist(collection: &str, existing: &[String]) -> String {
    format!(
        "{} document{} already exist{} in `{collection}` ({}); nothing was imported",
        existing.len(),
        if existing.len() == 1 { "" } else { "s" },
        if existing.len() == 1 { "s" } else { "" },
        listed(existing)
    )
}

/// Parses and converts an export: a JSON array of objects with unique string `_id`s (when
/// present).
///
/// # Errors
/// A message naming the element (0-based) that is wrong.
pub fn parse_export(text: &str) -> Result<Vec<Document>, String> {
    read_export(text.as_bytes())
}

/// Parses and converts an export read from `reader`, as [`parse_export`] does. The source text
/// is never held whole, and each element is converted (and its parsed form dropped) in turn.
///
/// # Errors
/// A message for a read failure or invalid JSON, or naming the element (0-based) that is wrong.
pub fn read_export(reader: impl Read) -> Result<Vec<Document>, String> {
    // Nesting is bounded as for any request body. The number of values is not: the file is the
    // operator's own, and the memory it takes to import is theirs to give.
    let limits = JsonLimits {
        base_values: usize::MAX,
        ..JsonLimits::default()
    };
    let reader = JsonBudget::new(&limits, 0).reader(reader);
    let value: Value =
        serde_json::from_reader(reader).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Array(items) = value else {
        return Err("expected a JSON array of documents (one per element)".to_owned());
    };
    let mut ids = BTreeSet::new();
    let mut docs = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let converted = import_value(item).map_err(|e| format!("element {index}: {e}"))?;
        let Value::Object(doc) = converted else {
            return Err(format!("element {index} is not a JSON object"));
        };
        match doc.get("_id") {
            None => {}
            Some(Value::String(id)) if !ids.insert(id.clone()) => {
                return Err(format!(
                    "element {index}: `_id` \"{id}\" appears twice in the file"
                ));
            }
            Some(Value::String(_)) => {}
            Some(other) => {
                return Err(format!(
                    "element {index}: `_id` must be a string or {{\"$oid\": ...}}, not {other}"
                ));
            }
        }
        docs.push(doc);
    }
    Ok(docs)
}

fn listed(ids: &[String]) -> String {
    let mut text = ids
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > LISTED {
        text.push_str(&format!(" and {} more", ids.len() - LISTED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_dates_and_object_ids() {
        let docs = parse_export(
            r#"[{"_id": {"$oid": "5F1D7A3E9B1E8A3F4C2D1E0F"}, "at": {"$date": 0}}, {"n": 1}]"#,
        )
        .unwrap_or_default();
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0].get("_id"),
            Some(&Value::from("5f1d7a3e9b1e8a3f4c2d1e0f"))
        );
        assert_eq!(
            docs[0].get("at"),
            Some(&Value::from("1970-01-01T00:00:00.000Z"))
        );
    }

    #[test]
    fn refuses_what_is_not_an_array_of_objects() {
        assert!(parse_export("{}").is_err());
        assert!(parse_export("[1]").unwrap_err().contains("element 0"));
        assert!(parse_export("not json").is_err());
        let deep = format!("[{{\"a\": {}1{}}}]", "[".repeat(70), "]".repeat(70));
        let err = parse_export(&deep).unwrap_err();
        assert!(err.contains("nested deeper than 64"), "{err}");
    }

    #[test]
    fn refuses_repeated_ids_and_bad_values() {
        let err = parse_export(r#"[{"_id": "a"}, {"_id": "a"}]"#).unwrap_err();
        assert!(err.contains("element 1"), "{err}");
        let err = parse_export(r#"[{"_id": "a"}, {"at": {"$date": "yesterday"}}]"#).unwrap_err();
        assert!(err.contains("element 1"), "{err}");
        assert!(parse_export(r#"[{"_id": 7}]"#).is_err());
    }
}
