//! How SQLite's errors become the store's [`Error`].

use crate::Error;

/// Anything SQLite reports while running an operation is a backend failure: internal, logged by
/// the caller, never shown to a client. Errors with a meaning for clients (a duplicate id, ...)
/// are recognised where they happen and turned into their own variants there.
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Backend(format!("sqlite: {e}"))
    }
}

/// A stored document that is not a JSON object: the file was changed behind our back.
pub(crate) fn corrupt(collection: &str, id: &str, e: &serde_json::Error) -> Error {
    Error::Backend(format!(
        "sqlite: stored document {id:?} of collection {collection:?} is not valid JSON: {e}"
    ))
}

/// True when `e` is a violated uniqueness constraint (a primary key that exists already).
pub(crate) fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    )
}
