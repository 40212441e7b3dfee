//! `portico check`: validate a config file and summarise what it declares.

use std::path::Path;

use crate::config::{Config, ConfigError, ConfigErrors, check_database_url};
use crate::database::database_url;
use crate::routes::route_table;

/// Checks the config at `path` and returns a one-paragraph summary of what it serves.
///
/// # Errors
/// [`crate::Error::ReadConfig`], or [`crate::Error::Config`] listing every mistake with its line
/// and key; [`crate::Error::Database`] when the database (the default one, as the config names
/// none) could not be opened.
pub async fn check(path: &Path) -> crate::Result<String> {
    let config = Config::load(path)?;
    let url = database_url(None, &config);
    if let Err(message) = check_database(&url).await {
        return Err(match config.database_position {
            Some((line, column)) => crate::Error::Config(ConfigErrors {
                file: path.to_owned(),
                errors: vec![ConfigError {
                    line,
                    column,
                    key: "database".to_owned(),
                    message,
                }],
            }),
            None => crate::Error::Database {
                url: portico_store::redact_url(&url),
                message,
            },
        });
    }
    Ok(summary(path, &config))
}

/// Whether the store at `url` could be opened, without creating or changing anything: for
/// `sqlite:PATH`, the file is a SQLite database or absent in a directory that exists; other
/// backends are asked to open.
///
/// # Errors
/// What is wrong, in words.
pub async fn check_database(url: &str) -> Result<(), String> {
    check_database_url(url)?;
    if url == "memory:" {
        return Ok(());
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = Path::new(path);
        if path.exists() {
            let mut header = [0u8; 16];
            let read = std::fs::File::open(path)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut header))
                .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
            if read == 0 || header == *b"SQLite format 3\0" {
                return Ok(());
            }
            return Err(format!(
                "{}: the file is not a SQLite database",
                path.display()
            ));
        }
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        return if dir.is_dir() {
            Ok(())
        } else {
            Err(format!(
                "{}: the directory {} does not exist",
                path.display(),
                dir.display()
            ))
        };
    }
    match portico_store::open(url).await {
        Ok(_) => Ok(()),
        Err(portico_store::Error::Unavailable(reason)) => Err(format!(
            "the database cannot be used: {reason} (is the server running, and are the host, \
             port, user, password and database name in the URL right?)"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The summary `check` prints for a valid config.
pub fn summary(path: &Path, config: &Config) -> String {
    let collections: usize = config.apis.iter().map(|a| a.collections.len()).sum();
    let routes = route_table(config).len();
    let auto = match &config.auto {
        Some(auto) => format!(
            "the auto API ({} publication{}, rules for {} collection{})",
            auto.publications.len(),
            plural(auto.publications.len()),
            auto.rules.len(),
            plural(auto.rules.len())
        ),
        None => "no auto API".to_owned(),
    };
    format!(
        "ok: {} is valid: {} route API{}, {collections} collection{}, {auto}, {routes} route{}",
        path.display(),
        config.apis.len(),
        plural(config.apis.len()),
        plural(collections),
        plural(routes)
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
