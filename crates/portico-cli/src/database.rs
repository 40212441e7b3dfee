//! Which store a command uses, and opening the platform on it with a clear message.

use std::path::{Path, PathBuf};

use portico_platform::Platform;

use crate::config::{Config, DEFAULT_CONFIG_FILE, DEFAULT_DATABASE, check_database_url};

/// The config file a command reads: `--config FILE` when given (it must exist), otherwise
/// `portico.toml` in the working directory when it exists, otherwise none.
pub fn config_path(flag: Option<&Path>) -> Option<PathBuf> {
    match flag {
        Some(path) => Some(path.to_owned()),
        None => {
            let default = Path::new(DEFAULT_CONFIG_FILE);
            default.is_file().then(|| default.to_owned())
        }
    }
}

/// Loads the config a command reads (see [`config_path`]); no file means an empty config.
///
/// # Errors
/// As [`Config::load`].
pub fn load_config(flag: Option<&Path>) -> crate::Result<(Option<PathBuf>, Config)> {
    match config_path(flag) {
        Some(path) => Config::load(&path).map(|config| (Some(path), config)),
        None => Ok((None, Config::default())),
    }
}

/// The store URL: `--database` first, then the config's `database`, then `sqlite:./portico.db`.
pub fn database_url(flag: Option<&str>, config: &Config) -> String {
    flag.map(str::to_owned)
        .or_else(|| config.database.clone())
        .unwrap_or_else(|| DEFAULT_DATABASE.to_owned())
}

/// Opens the platform on `url`.
///
/// # Errors
/// [`crate::Error::Database`] with the store's own words when the URL is malformed, the backend
/// is not in this build, or the database cannot be opened (a PostgreSQL server that cannot be
/// reached or refuses the credentials). The URL in the message has no password.
pub async fn open(url: &str) -> crate::Result<Platform> {
    check_database_url(url).map_err(|message| crate::Error::Database {
        url: portico_store::redact_url(url),
        message,
    })?;
    Platform::open(url)
        .await
        .map_err(|err| crate::Error::Database {
            url: portico_store::redact_url(url),
            message: err.to_string(),
        })
}
