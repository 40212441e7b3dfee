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
    /// An image with more pixels than `[files] max_pixels` (413): width, height, the limit.
    #[error("The image is {0} x {1} pixels, more than the limit of {2} pixels")]
    TooManyPixels(u32, u32, u64),
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
    /// The file store cannot be reached now: an S3-compatible store that refuses connections,
    /// times out or answers with a server error (503 with `Retry-After`, as an unreachable
    /// database; the text is logged, not sent).
    #[error("file store unavailable: {0}")]
    Unavailable(String),
    /// The server's memory budget has no room for this work now (a thumbnail's decode; 503
    /// with `Retry-After`).
    #[error("{0}")]
    Busy(String),
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
            FileError::TooLarge(_) | FileError::TooManyPixels(..) => 413,
            FileError::WrongType(_) => 415,
            FileError::Invalid(_) | FileError::Aborted(_) => 400,
            FileError::RangeNotSatisfiable(_) => 416,
            FileError::Conflict => 409,
            FileError::Store(_) => 500,
            FileError::Unavailable(_) | FileError::Busy(_) => 503,
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
            other if unreachable(&other) => FileError::Unavailable(other.to_string()),
            other => FileError::Store(other.to_string()),
        }
    }
}

/// True when `e` says a remote store cannot be reached now: the connection failed, broke off or
/// timed out, or the store answered a server error (5xx, or 429 slow down) after the client's
/// retries. A local directory's errors (a full disk, a permission) are not: those need an
/// operator, not a retry.
fn unreachable(e: &object_store::Error) -> bool {
    let object_store::Error::Generic { store, source } = e else {
        return false;
    };
    if *store == "LocalFileSystem" {
        return false;
    }
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(source.as_ref());
    while let Some(err) = next {
        if let Some(http) = err.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as Kind;
            if matches!(
                http.kind(),
                Kind::Connect | Kind::Request | Kind::Timeout | Kind::Interrupted
            ) {
                return true;
            }
        }
        if let Some(status) = server_status(&err.to_string())
            && (status >= 500 || status == 429)
        {
            return true;
        }
        next = err.source();
    }
    false
}

/// The HTTP status of a store's error reply, as its text says it (`... non-2xx status code:
/// 503 Service Unavailable ...`; the retry error that carries it is not public).
fn server_status(text: &str) -> Option<u16> {
    let (_, rest) = text.split_once("status code: ")?;
    rest.get(..3)?.parse().ok()
}

/// A file error as a method's error (a Rust method or a script calling the files service): its
/// status and a code naming its kind; a store failure is internal (logged, not sent).
impl From<FileError> for crate::MethodError {
    fn from(e: FileError) -> crate::MethodError {
        let code = match &e {
            FileError::Platform(_) | FileError::Store(_) => None,
            FileError::Unavailable(_) | FileError::Busy(_) => Some("service-unavailable"),
            FileError::NotFound(_) => Some("not-found"),
            FileError::AccessDenied => Some("access-denied"),
            FileError::TooLarge(_) | FileError::TooManyPixels(..) => Some("too-large"),
            FileError::WrongType(_) => Some("wrong-type"),
            FileError::RangeNotSatisfiable(_) => Some("range-not-satisfiable"),
            FileError::Conflict => Some("conflict"),
            FileError::Invalid(_) | FileError::Aborted(_) => Some("bad-request"),
        };
        match (e, code) {
            (FileError::Platform(p), _) => p.into(),
            (FileError::Unavailable(e), _) => {
                tracing::warn!(error = %e, "file store unavailable");
                crate::MethodError::new(
                    "service-unavailable",
                    "The file store is unavailable; try again shortly",
                )
                .with_status(503)
            }
            (e, Some(code)) => crate::MethodError::new(code, e.to_string()).with_status(e.status()),
            (e, None) => crate::MethodError::internal(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_of_a_remote_store_are_unavailable_and_local_ones_are_not() {
        let remote = |text: &str| object_store::Error::Generic {
            store: "S3",
            source: text.into(),
        };
        for down in [
            "Error performing GET http://s3/x in 2s, after 10 retries - Server returned non-2xx status code: 503 Service Unavailable: ",
            "Error performing PUT http://s3/x - Server returned non-2xx status code: 500 Internal Server Error: <Error/>",
        ] {
            assert_eq!(FileError::from(remote(down)).status(), 503, "{down}");
        }
        assert_eq!(
            FileError::from(remote(
                "Server returned non-2xx status code: 400 Bad Request"
            ))
            .status(),
            500
        );
        let local = object_store::Error::Generic {
            store: "LocalFileSystem",
            source: "status code: 503".into(),
        };
        assert_eq!(FileError::from(local).status(), 500);
        assert_eq!(server_status("x status code: 429 Too Many"), Some(429));
        assert_eq!(server_status("no status"), None);
    }
}
