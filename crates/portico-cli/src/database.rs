//! Which config file and store a command uses: reading the config, choosing the store and
//! opening the platform on it, each with a clear message.

use std::path::{Path, PathBuf};

use portico_platform::Platform;

use crate::config::{
    Config, ConfigErrors, DEFAULT_CONFIG_FILE, DEFAULT_DATABASE, check_database_url,
};

impl Config {
    /// Reads and checks the config file at `path` (see [`Config::parse`]), reads its schema
    /// files, and takes the relative paths it writes (`database = "sqlite:PATH"`, `[files]
    /// store`, `[backups] dir`) from its folder, as scripts and schemas are (see
    /// [`Config::resolve_paths`]).
    ///
    /// # Errors
    /// [`crate::Error::ReadConfig`] when the file cannot be read, [`crate::Error::Config`] with
    /// every mistake otherwise.
    pub fn load(path: &Path) -> crate::Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|source| crate::Error::ReadConfig {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Config::parse(&text).map_err(|errors| {
            crate::Error::Config(ConfigErrors {
                file: path.to_owned(),
                errors,
            })
        })?;
        config
            .read_schema_files(path)
            .map_err(crate::Error::Config)?;
        let folder = config.folder.clone().unwrap_or_else(|| PathBuf::from("."));
        config.resolve_paths(&text, &folder);
        Ok(config)
    }
}

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

/// The environment variable that names the store when `--database` does not.
pub const DATABASE_ENV: &str = "PORTICO_DATABASE";

/// The store a command uses, and where that choice came from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseChoice {
    /// The store URL.
    pub url: String,
    /// Where it came from: `--database`, `PORTICO_DATABASE`, `database in FILE`, or `the default`.
    pub source: String,
}

/// Shows the URL with any password hidden, and where it came from.
impl std::fmt::Display for DatabaseChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (from {})",
            portico_store::redact_url(&self.url),
            self.source
        )
    }
}

/// The store URL: `--database` first, then `PORTICO_DATABASE` (when set and not empty), then the
/// config's `database` (read from `config_file`), then `sqlite:./portico.db`.
pub fn choose_database(
    flag: Option<&str>,
    config_file: Option<&Path>,
    config: &Config,
) -> DatabaseChoice {
    let env = std::env::var(DATABASE_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let (url, source) = if let Some(flag) = flag {
        (flag.to_owned(), "--database".to_owned())
    } else if let Some(env) = env {
        (env, DATABASE_ENV.to_owned())
    } else if let Some(database) = &config.database {
        let file = config_file.map_or_else(
            || DEFAULT_CONFIG_FILE.to_owned(),
            |p| p.display().to_string(),
        );
        (database.clone(), format!("`database` in {file}"))
    } else {
        (DEFAULT_DATABASE.to_owned(), "the default".to_owned())
    };
    DatabaseChoice { url, source }
}

/// The store URL (see [`choose_database`]).
pub fn database_url(flag: Option<&str>, config: &Config) -> String {
    choose_database(flag, None, config).url
}

/// What a command does to the store, so that it can refuse a store where that makes no sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only (`users list`).
    Reads,
    /// Writes, and may create the database (`users add`, `import`).
    Creates,
    /// Changes what is there (`users password`, `roles`, `logout`, `remove`).
    Changes,
}

/// Refuses a store on which a command's effect would vanish or find nothing: `memory:` for
/// every write (the process ends with the store), and a SQLite file that does not exist for
/// commands that read or change existing accounts (it would only be created empty).
///
/// # Errors
/// [`crate::Error::Usage`] saying why, and what to give instead.
pub fn check_lasting(choice: &DatabaseChoice, effect: Effect) -> crate::Result<()> {
    if choice.url == "memory:" && effect != Effect::Reads {
        return Err(crate::Error::Usage(format!(
            "database {choice}: a memory store ends with this command, so the change would be lost; give a lasting one, as in --database sqlite:./portico.db"
        )));
    }
    if let Some(path) = choice.url.strip_prefix("sqlite:")
        && effect != Effect::Creates
        && !Path::new(path).exists()
    {
        return Err(crate::Error::Usage(format!(
            "database {choice}: {path} does not exist; give the database your server uses with --database or --config"
        )));
    }
    Ok(())
}

/// Opens the platform on `url`.
///
/// # Errors
/// [`crate::Error::Database`] with the store's own words when the URL is malformed, the backend
/// is not in this build, or the database cannot be opened (a PostgreSQL server that cannot be
/// reached or refuses the credentials). The URL in the message has no password.
pub async fn open(url: &str) -> crate::Result<Platform> {
    open_with(url, portico_platform::PlatformConfig::default()).await
}

/// Opens the platform on `url` with `config` (the live stream limits of `serve`).
///
/// # Errors
/// As [`open`].
pub async fn open_with(
    url: &str,
    config: portico_platform::PlatformConfig,
) -> crate::Result<Platform> {
    check_database_url(url).map_err(|message| crate::Error::Database {
        url: portico_store::redact_url(url),
        message,
    })?;
    Platform::open_with(url, config)
        .await
        .map_err(|err| crate::Error::Database {
            url: portico_store::redact_url(url),
            message: err.to_string(),
        })
}
