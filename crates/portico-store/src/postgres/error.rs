//! How PostgreSQL's and the pool's errors become the store's [`Error`].
//!
//! What matters to a caller is the kind: a server that cannot be reached (down, restarting,
//! refusing our credentials, or every connection busy past the wait timeout) is
//! [`Error::Unavailable`], a temporary condition a server answers with 503; anything else the
//! database reports is [`Error::Backend`], an internal failure. Errors with a meaning for
//! clients (a duplicate id or key, ...) are recognised where they happen.

use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;

use crate::Error;

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) if is_unavailable_code(db.code()) => {
                Error::Unavailable(format!("postgres: {}", db.message()))
            }
            Some(db) => {
                Error::Backend(format!("postgres: {} ({})", db.message(), db.code().code()))
            }
            // No answer from the server: the connection broke or could not be made.
            None => Error::Unavailable(format!("postgres: {}", describe(&e))),
        }
    }
}

impl From<PoolError> for Error {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Backend(e) => e.into(),
            PoolError::Timeout(kind) => Error::Unavailable(format!(
                "postgres: no connection within the pool's timeout ({kind:?})"
            )),
            PoolError::Closed => {
                Error::Closed("postgres: the store was closed (its server stopped)".into())
            }
            other => Error::Backend(format!("postgres pool: {other}")),
        }
    }
}

/// SQL states that mean "the database cannot serve us now", not "this statement is wrong":
/// connection exceptions (class 08), the server shutting down or starting up, too many
/// connections, and refused credentials.
/// True for an error PostgreSQL gave a transaction it chose to abort so that others could go
/// on (a deadlock, a serialization failure): nothing of it was written, and running it again
/// is the remedy. Reads the code [`From<tokio_postgres::Error>`] writes at the end of the
/// message.
pub(crate) fn is_retryable(e: &Error) -> bool {
    matches!(e, Error::Backend(m) if m.ends_with(&format!("({})", SqlState::T_R_DEADLOCK_DETECTED.code()))
        || m.ends_with(&format!("({})", SqlState::T_R_SERIALIZATION_FAILURE.code())))
}

fn is_unavailable_code(code: &SqlState) -> bool {
    code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::INVALID_PASSWORD,
            SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
            SqlState::INVALID_CATALOG_NAME,
        ]
        .contains(code)
}

/// The error with its causes (tokio-postgres puts "connection refused" in the source).
fn describe(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// True when `e` says a table is missing (a collection never written, or dropped meanwhile).
pub(crate) fn is_undefined_table(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNDEFINED_TABLE)
}

/// The table whose unique constraint `e` violated, when it is such a violation.
pub(crate) fn unique_violation_table(e: &tokio_postgres::Error) -> Option<&str> {
    let db = e.as_db_error()?;
    (db.code() == &SqlState::UNIQUE_VIOLATION).then(|| db.table().unwrap_or(""))
}

/// A stored document that is not a JSON object: the table was changed behind our back.
pub(crate) fn corrupt(collection: &str, id: &str, e: &serde_json::Error) -> Error {
    Error::Backend(format!(
        "postgres: stored document {id:?} of collection {collection:?} is not valid JSON: {e}"
    ))
}
