//! The `files` host operations: a script reads, attaches and deletes the files of a document's
//! file fields through the platform's files service, as trusted server code (no rules), so an
//! attach takes the same steps as a client's upload (temporary key, metadata in the document,
//! final key) and the same limits (size, accepted types).
//!
//! Bytes cross into the engine as base64 inside the JSON answer, so a script reads a file whole:
//! at most [`READ_MAX`] bytes, which keeps a read well inside a runtime's heap (`memory_mb`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::TryStreamExt;
use portico_platform::files::{DownloadOptions, NewFile, files_of};
use portico_platform::{FileAccess, FileError, FileMeta, FileSlot, Files, MethodError, Platform};
use serde_json::{Value, json};

use crate::payload::{Answer, bad, text, to_json};

/// The largest file a script reads whole (8 MiB); a larger one is served by its download URL.
pub(crate) const READ_MAX: u64 = 8 * 1024 * 1024;

fn service(platform: &Platform) -> Result<&Files, MethodError> {
    platform.files().ok_or_else(|| {
        MethodError::new(
            "not-found",
            "This server keeps no files: declare file fields with `files = {...}` on a collection",
        )
        .with_status(404)
    })
}

fn metas(files: &[FileMeta]) -> Value {
    Value::Array(files.iter().map(FileMeta::to_json).collect())
}

/// Runs the files operation `op` (`files.list`, `files.meta`, `files.read`, `files.attach`,
/// `files.delete`) with `payload` `{collection, id, field, name?, ...}`.
pub(crate) async fn run(platform: &Platform, op: &str, payload: &Value) -> Answer {
    let files = service(platform)?;
    let collection = platform.collection(&text(payload, "collection")?);
    let id = text(payload, "id")?;
    let field = text(payload, "field")?;
    let slot = FileSlot::new(&collection, &id, &field);
    let server = FileAccess::Server;
    match op {
        "files.list" => {
            if files.field(collection.name(), &field).is_none() {
                return Err(FileError::NotFound(format!(
                    "{} has no file field named {field:?}",
                    collection.name()
                ))
                .into());
            }
            let doc = collection
                .get(&id)
                .await?
                .ok_or_else(|| FileError::NotFound("Item not found".into()))?;
            to_json(&metas(&files_of(&doc, &field)))
        }
        "files.meta" => {
            let meta = files.meta(slot, &text(payload, "name")?, &server).await?;
            to_json(&meta.to_json())
        }
        "files.read" => {
            let name = text(payload, "name")?;
            let meta = files.meta(slot, &name, &server).await?;
            if meta.size > READ_MAX {
                return Err(MethodError::new(
                    "too-large",
                    format!(
                        "{name} has {} bytes; a script reads files of at most {READ_MAX} bytes whole \
                         (link to its download URL instead)",
                        meta.size
                    ),
                )
                .with_status(413));
            }
            let found = files
                .download(slot, &name, &server, DownloadOptions::default())
                .await?;
            let chunks: Vec<bytes::Bytes> =
                found.body.try_collect().await.map_err(MethodError::from)?;
            let bytes = chunks.concat();
            let answer = if payload.get("text").and_then(Value::as_bool) == Some(true) {
                let text = String::from_utf8(bytes).map_err(|_| {
                    bad(format!("{name} is not UTF-8 text; read it with files.read"))
                })?;
                json!({ "text": text })
            } else {
                json!({ "base64": STANDARD.encode(bytes) })
            };
            to_json(&answer)
        }
        "files.attach" => {
            let name = text(payload, "name")?;
            let bytes = match (payload.get("text"), payload.get("base64")) {
                (Some(Value::String(text)), _) => text.clone().into_bytes(),
                (_, Some(Value::String(encoded))) => STANDARD
                    .decode(encoded)
                    .map_err(|e| bad(format!("the file's bytes are not base64: {e}")))?,
                _ => return Err(bad("give the file's content as a string or bytes")),
            };
            let declared = payload
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            let body = futures::stream::iter([Ok::<_, std::convert::Infallible>(
                bytes::Bytes::from(bytes),
            )]);
            let meta = files
                .upload(slot, NewFile::new(name, declared), &server, body)
                .await?;
            to_json(&meta.to_json())
        }
        "files.delete" => {
            let gone = files.delete(slot, &text(payload, "name")?, &server).await?;
            to_json(&gone.to_json())
        }
        other => Err(bad(format!("unknown host operation {other:?}"))),
    }
}
