//! The crate's error type: problems found while setting the auto API up.
//!
//! Errors that happen while serving a request are not [`Error`]s: they become JSON replies
//! through [`crate::ApiError`].

/// Everything that can go wrong while configuring or building an auto API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A method's or publication's `url` option cannot be used as a route path.
    #[error("invalid url {url:?} for {owner}: {reason}")]
    InvalidUrl {
        /// What the url belongs to, such as `method "add"`.
        owner: String,
        /// The url as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A method's or publication's `args_extractor` was not made with
    /// [`crate::args_extractor`] (it belongs to another front door).
    #[error("the args_extractor of {owner} was not made with portico_auto::args_extractor")]
    ForeignArgsExtractor {
        /// What the option belongs to, such as `publication "todos"`.
        owner: String,
    },
    /// Two endpoints would answer the same HTTP method at the same path.
    #[error("route {method} {path} is defined twice: by {first} and by {second}")]
    DuplicateRoute {
        /// The HTTP method, upper case.
        method: String,
        /// The route path.
        path: String,
        /// The endpoint that was there first.
        first: String,
        /// The endpoint that tried to take the same route.
        second: String,
    },
    /// A response header given to [`crate::AutoApi::response_headers`] is not a valid header.
    #[error("invalid response header {name:?}: {reason}")]
    InvalidHeader {
        /// The header name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The platform refused something the auto API asked of it (such as defining the
    /// `api-routes` publication or method options).
    #[error(transparent)]
    Platform(#[from] portico_platform::Error),
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
