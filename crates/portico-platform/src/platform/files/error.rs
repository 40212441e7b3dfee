//! [`FileError`]: why a file could not be stored, found or sent.

/// Why a file operation failed, with the HTTP status a door answers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// No such document, field, file or thumbnail size (404).
    #[error("{0}")]
    NotFound(String),
    /// The caller may not do this (403).
    #[error("Access denied")]
    AccessDenied,
    /// The file is larger than the limit, in bytes (413).
    #[error("The file is larger than the limit of {0} bytes")]
    TooLarge(u64),
    /// The file's content is of a type the field does not accept (415).
    #[error("Files of type {0} are not accepted here")]
    WrongType(String),
    /// A bad request: a bad name, a thumbnail size the field does not allow, a full field (400).
    #[error("{0}")]
    Invalid(String),
    /// A byte range outside the file, with the file's size (416).
    #[error("The range is outside the file")]
    RangeNotSatisfiable(u64),
    /// The client's body broke off before its end (400).
    #[error("The upload broke off: {0}")]
    Aborted(String),
    /// The document kept changing while the file's metadata was being committed (409).
    #[error("The document changed too often while the file was being attached; retry")]
    Conflict,
    /// The file store failed (500; the text is logged, not sent).
    #[error("file store: {0}")]
    Store(String),
    /// A platform error (its own status).
    #[error(transparent)]
    Platform(#[from] crate::Error),
}

impl FileError {
    /// The HTTP status a door answers.
    pub fn status(&self) -> u16 {
        match self {
            FileError::NotFound(_) => 404,
            FileError::AccessDenied => 403,
            FileError::TooLarge(_) => 413,
            FileError::WrongType(_) => 415,
            FileError::Invalid(_) | FileError::Aborted(_) => 400,
            FileError::RangeNotSatisfiable(_) => 416,
            FileError::Conflict => 409,
            FileError::Store(_) => 500,
            FileError::Platform(e) => e.status_code(),
        }
    }
}

impl From<object_store::Error> for FileError {
    fn from(e: object_store::Error) -> FileError {
        match e {
            object_store::Error::NotFound { .. } => {
                FileError::NotFound("The file is missing from the store".into())
            }
            other => FileError::Store(other.to_string()),
        }
    }
}

/// A file error as a method's error (a Rust method or a script calling the files service): its
/// status and a code naming its kind; a store failure is internal (logged, not sent).
impl From<FileError> for crate::MethodError {
    fn from(e: FileError) -> crate::MethodError {
        let code = match &e {
            FileError::Platform(_) | FileError::Store(_) => None,
            FileError::NotFound(_) => Some("not-found"),
            FileError::AccessDenied => Some("access-denied"),
            FileError::TooLarge(_) => Some("too-large"),
            FileError::WrongType(_) => Some("wrong-type"),
            FileError::RangeNotSatisfiable(_) => Some("range-not-satisfiable"),
            FileError::Conflict => Some("conflict"),
            FileError::Invalid(_) | FileError::Aborted(_) => Some("bad-request"),
        };
        match (e, code) {
            (FileError::Platform(p), _) => p.into(),
            (e, Some(code)) => crate::MethodError::new(code, e.to_string()).with_status(e.status()),
            (e, None) => crate::MethodError::internal(e),
        }
    }
}
