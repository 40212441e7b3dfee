//! The crate's error type: everything a `portico` command can fail with.

use std::path::PathBuf;

use crate::config::ConfigErrors;

/// Why a `portico` command failed. Its `Display` is the message printed to the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file has mistakes.
    #[error("{0}")]
    Config(ConfigErrors),
    /// The database could not be opened.
    #[error("cannot open database {url}: {message}")]
    Database {
        /// The store URL.
        url: String,
        /// Why, as the store says it.
        message: String,
    },
    /// The platform refused an operation (a user that exists, an unknown user, ...).
    #[error("{0}")]
    Platform(#[from] portico_platform::Error),
    /// The front doors could not be set up from the config.
    #[error("cannot set up the API: {0}")]
    Setup(String),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command argument is wrong (an unknown user, a bad address...).
    #[error("{0}")]
    Usage(String),
    /// An import file could not be read or has bad documents.
    #[error("import of {}: {message}", path.display())]
    Import {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The application's scripts (`[scripts]`) could not be loaded: the message names the
    /// file, line and column.
    #[error("{0}")]
    Script(String),
    /// A backup or a restore failed, or was refused (nothing was replaced then).
    #[error("{0}")]
    Backup(String),
    /// Serving failed after start.
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
