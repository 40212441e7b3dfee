//! `portico import`: load a JSON array export (one document per element) into a collection.
//!
//! Extended-JSON values (`{"$date": ...}`, `{"$oid": ...}`) are converted by the platform's
//! [`portico_platform::import_value`]. A `users` export keeps working as accounts: password
//! hashes (bcrypt over the SHA-256 of the password) verify as they are, and hashed login tokens
//! keep their `when`, so unexpired tokens stay valid and expired ones stay refused.
//!
//! Other collections than `users` are streamed: a reader thread parses the array one element at
//! a time and hands batches of [`BATCH`] converted documents to the store, which writes them all
//! in one transaction ([`portico_platform::Collection::insert_stream`]), so memory holds a few
//! batches whatever the file's size (SQLite's page cache comes on top: a bulk load raises it to
//! 192 MiB, and it fills with the database written up to that; see the CLI README), and a bad element, a repeated `_id` or one the collection
//! has already rolls everything back: nothing is written. Only then is the file read again to
//! name the ids that exist. A `users` file (accounts, a few thousand at most) is read whole and
//! checked before anything is written, as account names must be compared across the file.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::mpsc::sync_channel;

use portico_platform::{Platform, import_value};
use portico_store::Document;
use portico_store::json::{JsonBudget, JsonLimits};
use serde_json::Value;

/// How many documents are listed by id in an error before "and N more".
const LISTED: usize = 5;

/// The read buffer for an export file.
const READ_BUFFER: usize = 1 << 20;

/// Documents per batch handed from the reader thread to the store.
const BATCH: usize = 1000;

/// Batches parsed ahead of the store: the reader works while the store writes, and memory holds
/// at most this many batches (plus the one being parsed and the one being written).
const QUEUED: usize = 2;

/// Why the reader thread stopped when the store stopped taking batches (never shown: the store's
/// own error is).
const STOPPED: &str = "the import stopped";

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
    if collection != portico_platform::USERS {
        return match stream_file(platform, collection, file).await {
            Ok(count) => Ok(usize::try_from(count).unwrap_or(usize::MAX)),
            Err(portico_platform::Error::InvalidArgument(message)) => Err(fail(message)),
            Err(portico_platform::Error::Store(portico_store::Error::DuplicateId {
                id, ..
            })) => {
                // Nothing was written: name the file's ids that the collection has, or else the
                // id the file repeats.
                let (existing, more) = existing_in_file(platform, collection, file).await?;
                if existing.is_empty() {
                    return Err(fail(format!(
                        "`_id` \"{id}\" appears twice in the file; nothing was imported"
                    )));
                }
                Err(fail(already_exist_counted(collection, &existing, more)))
            }
            Err(e) => Err(e.into()),
        };
    }
    let docs = read_export_file(file).map_err(fail)?;
    let count = docs.len();
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

/// Streams the export in `file` into `collection` in one all-or-nothing write: a reader thread
/// parses and converts it in batches while the store writes. A problem with the file comes back
/// as [`portico_platform::Error::InvalidArgument`] with its message.
async fn stream_file(
    platform: &Platform,
    collection: &str,
    file: &Path,
) -> portico_platform::Result<u64> {
    let opened = File::open(file)
        .map_err(|e| portico_platform::Error::InvalidArgument(format!("cannot read it: {e}")))?;
    let (tx, rx) = sync_channel::<portico_platform::Result<Vec<Document>>>(QUEUED);
    std::thread::spawn(move || {
        let mut batch = Vec::with_capacity(BATCH);
        let read = for_each_element(opened, |_, doc| {
            batch.push(doc);
            if batch.len() >= BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                tx.send(Ok(full)).map_err(|_| STOPPED.to_owned())?;
            }
            Ok(())
        });
        // A failed send means the store stopped taking batches: its error is the answer.
        let _ = match read {
            Ok(()) if batch.is_empty() => Ok(()),
            Ok(()) => tx.send(Ok(batch)),
            Err(message) => tx.send(Err(portico_platform::Error::InvalidArgument(message))),
        };
    });
    platform
        .collection(collection)
        .insert_stream(rx.into_iter())
        .await
}

/// The first [`LISTED`] `_id`s of the export in `file` that `collection` has already, in file
/// order, and how many more it has.
async fn existing_in_file(
    platform: &Platform,
    collection: &str,
    file: &Path,
) -> crate::Result<(Vec<String>, usize)> {
    let fail = |message: String| crate::Error::Import {
        path: file.to_owned(),
        message,
    };
    let opened = File::open(file).map_err(|e| fail(format!("cannot read it: {e}")))?;
    // The ids are read in a blocking thread and looked up here, a batch at a time.
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<String>>(QUEUED);
    let reader = tokio::task::spawn_blocking(move || {
        let mut ids = Vec::with_capacity(BATCH);
        let read = for_each_element(opened, |_, doc| {
            if let Some(Value::String(id)) = doc.get("_id") {
                ids.push(id.clone());
            }
            if ids.len() >= BATCH {
                let full = std::mem::replace(&mut ids, Vec::with_capacity(BATCH));
                tx.blocking_send(full).map_err(|_| STOPPED.to_owned())?;
            }
            Ok(())
        });
        if !ids.is_empty() {
            let _ = tx.blocking_send(ids);
        }
        read
    });
    let target = platform.collection(collection);
    let (mut existing, mut more) = (Vec::new(), 0usize);
    let mut rx = rx;
    while let Some(ids) = rx.recv().await {
        for id in ids {
            if target.get(&id).await?.is_some() {
                if existing.len() < LISTED {
                    existing.push(id);
                } else {
                    more += 1;
                }
            }
        }
    }
    match reader.await {
        Ok(Ok(())) => Ok((existing, more)),
        Ok(Err(message)) => Err(fail(message)),
        Err(e) => Err(fail(format!("reading it again failed: {e}"))),
    }
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
        if let Some(id) = doc.get("_id").and_then(Value::as_str)
            && target.get(id).await?.is_some()
        {
            existing.push(id.to_owned());
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

/// The message for `_id`s that exist already: the first ones listed, `more` others counted.
fn already_exist_counted(collection: &str, listed_ids: &[String], more: usize) -> String {
    let n = listed_ids.len() + more;
    let mut names = listed_ids.join(", ");
    if more > 0 {
        names.push_str(&format!(" and {more} more"));
    }
    format!(
        "{n} document{} already exist{} in `{collection}` ({names}); nothing was imported",
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" },
    )
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
    let mut ids = BTreeSet::new();
    let mut docs = Vec::new();
    for_each_element(reader, |index, doc| {
        if let Some(Value::String(id)) = doc.get("_id")
            && !ids.insert(id.clone())
        {
            return Err(format!(
                "element {index}: `_id` \"{id}\" appears twice in the file"
            ));
        }
        docs.push(doc);
        Ok(())
    })?;
    Ok(docs)
}

/// Parses the JSON array read from `reader` one element at a time, converts each element and
/// hands it to `sink` with its index, without holding the array: an element is parsed,
/// converted and given away before the next one is read.
///
/// # Errors
/// A message for a read failure or invalid JSON, naming the element (0-based) that is not an
/// object, does not convert or has an `_id` that is not a string; or the first error of `sink`
/// (which stops the reading).
pub fn for_each_element(
    reader: impl Read,
    sink: impl FnMut(usize, Document) -> Result<(), String>,
) -> Result<(), String> {
    use serde::Deserializer as _;
    // Nesting is bounded as for any request body. The number of values is not: the file is the
    // operator's own. The buffer sits above the budget so that it counts large chunks.
    let mut limits = JsonLimits::default();
    limits.base_values = usize::MAX;
    let budgeted = JsonBudget::new(&limits, 0).reader(reader);
    let buffered = BufReader::with_capacity(READ_BUFFER, budgeted);
    let mut de = serde_json::Deserializer::from_reader(buffered);
    let mut elements = Elements {
        sink,
        index: 0,
        failed: None,
    };
    let parsed = (&mut de)
        .deserialize_seq(&mut elements)
        .and_then(|()| de.end());
    if let Some(message) = elements.failed {
        return Err(message);
    }
    parsed.map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            "expected a JSON array of documents (one per element)".to_owned()
        }
        _ => format!("not valid JSON: {e}"),
    })
}

/// The visitor of [`for_each_element`]: converts each element of the array and calls `sink`,
/// keeping the first failure's message (the parser's error then only says where it stopped).
struct Elements<F> {
    sink: F,
    index: usize,
    failed: Option<String>,
}

impl<'de, F> serde::de::Visitor<'de> for &mut Elements<F>
where
    F: FnMut(usize, Document) -> Result<(), String>,
{
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of documents")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<Value>()? {
            let index = self.index;
            self.index += 1;
            if let Err(message) = convert(index, item).and_then(|doc| (self.sink)(index, doc)) {
                self.failed = Some(message);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// Converts element `index` of an export into a document whose `_id`, when present, is a
/// string.
fn convert(index: usize, item: Value) -> Result<Document, String> {
    let converted = import_value(item).map_err(|e| format!("element {index}: {e}"))?;
    let Value::Object(doc) = converted else {
        return Err(format!("element {index} is not a JSON object"));
    };
    match doc.get("_id") {
        None | Some(Value::String(_)) => Ok(doc),
        Some(other) => Err(format!(
            "element {index}: `_id` must be a string or {{\"$oid\": ...}}, not {other}"
        )),
    }
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
