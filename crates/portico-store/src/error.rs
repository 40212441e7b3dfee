//! The store's error type.

/// Everything that can go wrong in the store.
///
/// Errors caused by a client's input ([`Error::InvalidSelector`], [`Error::InvalidModifier`],
/// [`Error::InvalidSort`], [`Error::InvalidProjection`], [`Error::InvalidDocument`],
/// [`Error::DocumentTooLarge`], [`Error::IdTooLong`], [`Error::DuplicateId`], [`Error::DuplicateKey`]) carry a message that may be shown to that client; the others are
/// internal and should be logged, not sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A selector could not be parsed (unknown operator, wrong operand type, bad regex...).
    #[error("invalid selector: {0}")]
    InvalidSelector(String),
    /// A modifier or replacement could not be parsed or applied (`$inc` on a string, changing `_id`...).
    #[error("invalid modifier: {0}")]
    InvalidModifier(String),
    /// A sort specification could not be parsed.
    #[error("invalid sort: {0}")]
    InvalidSort(String),
    /// A field projection could not be parsed (mixing inclusion and exclusion, ...).
    #[error("invalid projection: {0}")]
    InvalidProjection(String),
    /// A document is not acceptable (not an object, `_id` not a string, ...).
    #[error("invalid document: {0}")]
    InvalidDocument(String),
    /// A document's JSON text would be over [`crate::MAX_DOCUMENT_BYTES`] (after an insert,
    /// upsert, update or replacement). Nothing was written. An HTTP server answers 413.
    #[error("document too large: {size} bytes, the limit is {limit}")]
    DocumentTooLarge {
        /// The size the document would have, in bytes of JSON text.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// An insert (or upsert) gave an `_id` longer than [`crate::MAX_ID_BYTES`]. Nothing was
    /// written. An HTTP server answers 400.
    #[error("_id too long: {len} bytes, the limit is {limit}")]
    IdTooLong {
        /// The id's length in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// An insert (or upsert) used an `_id` that already exists in the collection.
    #[error("duplicate id {id:?} in collection {collection:?}")]
    DuplicateId {
        /// The collection written to.
        collection: String,
        /// The id that already exists.
        id: String,
    },
    /// A write would give two documents the same value at a path with a unique index
    /// ([`crate::Store::ensure_unique_index`]); nothing was written.
    ///
    /// Distinct from [`Error::DuplicateId`]: the `_id` is always unique, while this names a
    /// uniqueness the program asked for on another path (a username, an email address), so a
    /// caller can tell "this record exists" from "this value is taken".
    #[error("duplicate value at {path:?} in collection {collection:?}")]
    DuplicateKey {
        /// The collection written to.
        collection: String,
        /// The uniquely indexed path whose value is taken.
        path: String,
    },
    /// The database cannot be reached right now (the server is down or restarting, the network
    /// is cut, every connection stays busy past the wait timeout, or the server refused the
    /// credentials). The operation did not happen, or for a write whose acknowledgement was lost,
    /// may or may not have happened. The store recovers by itself when the database is back, so
    /// a server answers "503 Service Unavailable" and the client may retry.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A collection or index name that the backend cannot accept.
    #[error("invalid name: {0}")]
    InvalidName(String),
    /// A store URL that does not name a known or enabled backend, or that is malformed.
    #[error("invalid store url {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The backend failed to open (a bad path, a file that is not a database, ...).
    #[error("cannot open store: {0}")]
    Open(String),
    /// The backend failed while running an operation.
    #[error("backend error: {0}")]
    Backend(String),
    /// The store was closed ([`crate::Store::close`], as a server's shutdown does): its
    /// connections and its hold on the database are released, and every later operation on it
    /// fails with this. Nothing happened. A server answers "503 Service Unavailable"; open the
    /// database again for a new store.
    #[error("the store is closed: {0}")]
    Closed(String),
}

/// What kind of failure an [`Error`] is: the front doors choose a status code by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The caller's input is not acceptable (a bad selector, modifier, document...).
    Invalid,
    /// The write conflicts with what is stored (a duplicate `_id`).
    Conflict,
    /// A document is larger than the store accepts.
    TooLarge,
    /// The database cannot be reached right now; the operation may succeed later.
    Unavailable,
    /// Something failed inside the store; the message is for logs, not clients.
    Internal,
}

impl Error {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidSelector(_)
            | Error::InvalidModifier(_)
            | Error::InvalidSort(_)
            | Error::InvalidProjection(_)
            | Error::InvalidDocument(_)
            | Error::IdTooLong { .. } => ErrorKind::Invalid,
            Error::DocumentTooLarge { .. } => ErrorKind::TooLarge,
            Error::DuplicateId { .. } | Error::DuplicateKey { .. } => ErrorKind::Conflict,
            Error::Unavailable(_) | Error::Closed(_) => ErrorKind::Unavailable,
            Error::InvalidName(_)
            | Error::InvalidUrl { .. }
            | Error::Open(_)
            | Error::Backend(_) => ErrorKind::Internal,
        }
    }

    /// True when the error was caused by the caller's input and its message may be shown to a client.
    pub fn is_client_error(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Invalid | ErrorKind::Conflict | ErrorKind::TooLarge
        )
    }

    /// True when the database could not be reached ([`Error::Unavailable`]), or the store was
    /// closed ([`Error::Closed`]): for a "503 Service Unavailable" reply.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable(_) | Error::Closed(_))
    }
}

/// `Result` with the store's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
