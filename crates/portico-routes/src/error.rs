//! The crate's error type: everything that can go wrong while setting an API up.
//!
//! Errors that happen while serving a request never surface as [`Error`]: they become JSend
//! replies (see [`crate::Reply`]), logged when they are internal.

/// What can go wrong while configuring an [`crate::Api`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A route already exists at this path on this API (hand-made, generated, login or logout).
    #[error(
        "a route already exists at path {0:?} on this API; use another path or another version"
    )]
    DuplicatePath(String),
    /// A route path that cannot be used (an empty parameter name, a bad regular expression...).
    #[error("invalid route path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `add_route` was called without any endpoint.
    #[error(
        "route {0:?} has no endpoint: give at least one of get, post, put, patch, delete, options"
    )]
    NoEndpoints(String),
    /// An endpoint object on a hand-made route has no action.
    #[error("the {method} endpoint of route {path:?} has no action: hand-made routes need one")]
    MissingAction {
        /// The route's path.
        path: String,
        /// The HTTP method of the endpoint.
        method: String,
    },
    /// An option value that cannot be used (an unknown endpoint name, a bad header...).
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// The platform failed (for example while preparing an index).
    #[error(transparent)]
    Platform(#[from] portico_platform::Error),
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
