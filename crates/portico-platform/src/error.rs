//! The platform's error type, and how it reaches a method's caller.

use crate::MethodError;

/// Everything that can go wrong in the platform.
///
/// Client errors ([`Error::is_client_error`]) carry a message that may be shown to the client that
/// caused them; the others are internal and should be logged, not sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed, or refused the input (see [`portico_store::Error::is_client_error`]).
    #[error(transparent)]
    Store(#[from] portico_store::Error),
    /// A client write was refused by the collection's allow/deny rules.
    #[error("Access denied")]
    AccessDenied,
    /// A client write would set a field only the server may write (`roles` or `services` of an
    /// account); names the field.
    #[error("The field {0} of an account cannot be written by a client")]
    ProtectedField(String),
    /// A query filters, sorts, groups or aggregates on a field the caller may not see (its
    /// answer would reveal the field); names the path.
    #[error("The field {0} cannot be used in a query: it is hidden from this caller")]
    HiddenField(String),
    /// A client write sets or removes a field the caller may not see; names the field.
    #[error("The field {0} cannot be written by this caller")]
    FieldDenied(String),
    /// A client write sets, changes or removes a file field's metadata, which only the files
    /// service writes (an upload or a delete of a file); names the field.
    #[error("The field {0} holds files: it changes only by uploading or deleting a file")]
    FileField(String),
    /// A document does not satisfy the collection's JSON Schema; one message per failure.
    #[error("Validation failed: {}", .0.join("; "))]
    Validation(Vec<String>),
    /// A new user or a password is not acceptable (empty password, malformed email, ...).
    #[error("{0}")]
    InvalidUser(String),
    /// The username or email is taken (also when it differs only in case).
    #[error("{0}")]
    UserExists(String),
    /// A login failed. Every cause (unknown user, wrong password, no password) gives this same error.
    #[error("Incorrect credentials")]
    LoginFailed,
    /// No user has the given id.
    #[error("User not found")]
    UserNotFound,
    /// A method or publication of this name is defined already (a setup error).
    #[error("duplicate definition: {0}")]
    Duplicate(String),
    /// A client asked for something whose name is taken (an API key's name): 409.
    #[error("{0}")]
    Conflict(String),
    /// Method or publication options set after definition, or twice (a setup error).
    #[error("method options: {0}")]
    MethodOptions(String),
    /// A conditional write (`If-Match`) found the document changed since the client read it, or
    /// gone.
    #[error("The document changed since it was read (If-Match)")]
    PreconditionFailed,
    /// An argument is not acceptable (a bad `$date`, a malformed schema, a bad collection name...).
    #[error("{0}")]
    InvalidArgument(String),
    /// Something failed inside the platform (a panicked hashing task, ...).
    #[error("internal error: {0}")]
    Internal(String),
    /// A mailed or one-time token is unknown, used, expired or of another kind.
    #[error("The link is invalid or has expired")]
    InvalidToken,
    /// A write hook refused the write (see [`crate::WriteHooks`]): its error, shown to the
    /// client as a method's error is (an internal one says nothing).
    #[error("{0}")]
    Hook(Box<MethodError>),
    /// An enqueue found the most jobs the queue may hold stored already (`[jobs] max_jobs`,
    /// which it names).
    #[error("The job queue is full ({0} jobs stored, the most max_jobs allows); try again later")]
    TooManyJobs(u64),
    /// Too many requests from this client or for this address; try again after the duration.
    #[error("Too many requests; try again later")]
    TooManyRequests(std::time::Duration),
}

impl Error {
    /// True when the error was caused by the caller's input and its message may be shown to a client.
    pub fn is_client_error(&self) -> bool {
        match self {
            Error::Store(e) => e.is_client_error(),
            Error::AccessDenied
            | Error::ProtectedField(_)
            | Error::HiddenField(_)
            | Error::FieldDenied(_)
            | Error::FileField(_)
            | Error::Validation(_)
            | Error::InvalidUser(_)
            | Error::UserExists(_)
            | Error::Conflict(_)
            | Error::LoginFailed
            | Error::UserNotFound
            | Error::PreconditionFailed
            | Error::InvalidArgument(_)
            | Error::InvalidToken
            | Error::TooManyRequests(_)
            | Error::TooManyJobs(_) => true,
            Error::Hook(e) => !e.internal && e.status.is_none_or(|s| s < 500),
            Error::Duplicate(_) | Error::MethodOptions(_) | Error::Internal(_) => false,
        }
    }

    /// True when the store's database cannot be reached right now
    /// ([`portico_store::Error::Unavailable`]): a temporary condition, answered with 503.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Store(e) if e.is_unavailable())
    }

    /// The HTTP status a front door answers with. This is the one mapping of errors to
    /// statuses both doors use: 400 for bad input, 401 for a failed login, 403 for access
    /// denied, 404 for an unknown user, 412 for a failed `If-Match`, 409 for a duplicate `_id` or unique key or a name taken, 413 for a
    /// document over the store's size limit, 503 while the database is unavailable, 500 for
    /// everything else internal.
    pub fn status_code(&self) -> u16 {
        match self {
            Error::Store(e) => match e.kind() {
                portico_store::ErrorKind::Invalid => 400,
                portico_store::ErrorKind::Conflict => 409,
                portico_store::ErrorKind::TooLarge => 413,
                portico_store::ErrorKind::Unavailable => 503,
                _ => 500,
            },
            Error::AccessDenied
            | Error::ProtectedField(_)
            | Error::FieldDenied(_)
            | Error::FileField(_) => 403,
            Error::LoginFailed => 401,
            Error::UserNotFound => 404,
            Error::PreconditionFailed => 412,
            Error::Conflict(_) => 409,
            Error::TooManyRequests(_) => 429,
            Error::TooManyJobs(_) => 503,
            Error::Hook(e) => e.status.unwrap_or(400),
            e if e.is_client_error() => 400,
            _ => 500,
        }
    }
}

impl From<Error> for MethodError {
    /// Client errors keep their message (status 400, 401 for a failed login, 403 for access
    /// denied, 404 for an unknown user); an unreachable database is 503 `service-unavailable`
    /// (its details are logged, not sent); other internal errors become
    /// [`MethodError::internal`].
    fn from(e: Error) -> MethodError {
        if let Error::Hook(e) = e {
            return *e;
        }
        if e.is_unavailable() {
            tracing::warn!(error = %e, "database unavailable");
            return MethodError::new(
                "service-unavailable",
                "The database is unavailable; try again shortly",
            )
            .with_status(503);
        }
        if !e.is_client_error() {
            return MethodError::internal(e);
        }
        let status = e.status_code();
        match e {
            Error::AccessDenied => {
                MethodError::new("access-denied", "Access denied").with_status(status)
            }
            Error::ProtectedField(_) | Error::FileField(_) => {
                MethodError::new("access-denied", e.to_string()).with_status(status)
            }
            Error::LoginFailed => {
                MethodError::new("unauthorized", "Incorrect credentials").with_status(status)
            }
            Error::UserNotFound => {
                MethodError::new("user-not-found", "User not found").with_status(status)
            }
            Error::Validation(failures) => {
                let details = serde_json::Value::Array(
                    failures
                        .iter()
                        .cloned()
                        .map(serde_json::Value::String)
                        .collect(),
                );
                MethodError::new("validation-error", Error::Validation(failures).to_string())
                    .with_status(status)
                    .with_details(details)
            }
            Error::PreconditionFailed => {
                MethodError::new("precondition-failed", e.to_string()).with_status(status)
            }
            Error::TooManyJobs(_) => {
                MethodError::new("too-many-jobs", e.to_string()).with_status(status)
            }
            Error::InvalidUser(msg) => MethodError::new("invalid-user", msg).with_status(status),
            Error::UserExists(msg) => MethodError::new("user-exists", msg).with_status(status),
            Error::Conflict(msg) => MethodError::new("conflict", msg).with_status(status),
            Error::InvalidArgument(msg) => {
                MethodError::new("invalid-argument", msg).with_status(status)
            }
            other => MethodError::new("bad-request", other.to_string()).with_status(status),
        }
    }
}

/// `Result` with the platform's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_errors_convert_with_status() {
        let e = MethodError::from(Error::AccessDenied);
        assert_eq!((e.error.as_str(), e.status), ("access-denied", Some(403)));
        let e = MethodError::from(Error::Validation(vec!["/a: bad".into()]));
        assert_eq!(e.details.as_deref(), Some(&serde_json::json!(["/a: bad"])));
        assert_eq!(e.status, Some(400));
        let e = MethodError::from(Error::UserExists("Username already exists.".into()));
        assert_eq!(e.reason.as_deref(), Some("Username already exists."));
        let e = MethodError::from(Error::Internal("secret detail".into()));
        assert!(e.internal);
        assert_eq!(e.reason.as_deref(), Some("Internal server error"));
    }

    #[test]
    fn a_hook_refusal_is_the_hook_error_itself() {
        let refusal = MethodError::new("locked", "This note is locked").with_status(409);
        let e = Error::Hook(Box::new(refusal.clone()));
        assert!(e.is_client_error());
        assert_eq!(e.status_code(), 409);
        assert_eq!(MethodError::from(e), refusal);
        let internal = Error::Hook(Box::new(MethodError::internal("hook broke")));
        assert!(!internal.is_client_error());
        assert_eq!(internal.status_code(), 500);
    }

    #[test]
    fn status_codes_follow_the_kind_of_error() {
        assert_eq!(Error::AccessDenied.status_code(), 403);
        assert_eq!(Error::ProtectedField("roles".into()).status_code(), 403);
        assert_eq!(Error::FileField("cover".into()).status_code(), 403);
        assert_eq!(Error::LoginFailed.status_code(), 401);
        assert_eq!(Error::UserNotFound.status_code(), 404);
        assert_eq!(Error::PreconditionFailed.status_code(), 412);
        assert_eq!(Error::Validation(vec!["x".into()]).status_code(), 400);
        assert_eq!(Error::UserExists("taken".into()).status_code(), 400);
        assert_eq!(Error::Internal("boom".into()).status_code(), 500);
        assert!(!Error::Internal("boom".into()).is_client_error());
        let store = Error::from(portico_store::Error::InvalidSelector("bad".into()));
        assert!(store.is_client_error());
        assert_eq!(store.status_code(), 400);
        let duplicate = Error::from(portico_store::Error::DuplicateId {
            collection: "c".into(),
            id: "x".into(),
        });
        assert_eq!(duplicate.status_code(), 409);
        let large = Error::from(portico_store::Error::DocumentTooLarge { size: 2, limit: 1 });
        assert_eq!(large.status_code(), 413);
        let long_id = Error::from(portico_store::Error::IdTooLong { len: 2, limit: 1 });
        assert_eq!(long_id.status_code(), 400);
        let backend = Error::from(portico_store::Error::Backend("disk".into()));
        assert_eq!(backend.status_code(), 500);
        let down = Error::from(portico_store::Error::Unavailable("refused".into()));
        assert_eq!(down.status_code(), 503);
        assert!(down.is_unavailable() && !down.is_client_error());
    }

    #[test]
    fn validation_message_lists_every_failure() {
        let e = Error::Validation(vec!["/a: bad".into(), "/b: worse".into()]);
        assert_eq!(e.to_string(), "Validation failed: /a: bad; /b: worse");
    }
}
