//! `portico check`: validate a config file and summarise what it declares.

use std::path::Path;

use crate::config::{Config, ConfigError, ConfigErrors, check_database_url};
use crate::database::choose_database;
use crate::doors::Doors;

/// What `portico check` prints for a valid config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One paragraph on what the config serves (standard output).
    pub summary: String,
    /// One line per warning, `FILE:LINE: warning: ...` (standard error).
    pub warnings: Vec<String>,
}

/// The warnings of `config` (read from `path`), one line each, as `check` and `serve` print them.
pub fn warning_lines(path: &Path, config: &Config) -> Vec<String> {
    config
        .warnings()
        .iter()
        .map(|w| format!("{}:{}: warning: {}", path.display(), w.line, w.message))
        .collect()
}

/// Checks the config at `path` and the database `serve` would use (`database` as `--database`
/// gives it), and reports what the config serves and what it warns about.
///
/// # Errors
/// [`crate::Error::ReadConfig`], or [`crate::Error::Config`] listing every mistake with its line
/// and key; [`crate::Error::Database`] when the database (the default one, as the config names
/// none) could not be opened.
pub async fn check(path: &Path, database: Option<&str>) -> crate::Result<Report> {
    let config = Config::load(path)?;
    // What the doors refuse is a mistake in the file too, reported before the database.
    // The scripts are loaded as `serve` loads them (on a scratch store), so their syntax,
    // import and type errors, and collisions with the config, fail the check.
    let (doors, scripts) = Doors::build_scratch_with_scripts(&config, Some(path)).await?;
    // The mail templates are read as `serve` reads them: their files, languages, placeholders.
    if let Some(email) = &config.email {
        email
            .read_templates(config.folder.as_deref())
            .map_err(crate::Error::Setup)?;
    }
    // A [[cron]] names a job the scripts define.
    let defined: Vec<&str> = scripts
        .as_ref()
        .map(crate::scripts::job_names)
        .unwrap_or_default();
    let undefined: Vec<ConfigError> = config
        .cron
        .iter()
        .filter(|c| !defined.contains(&c.job.as_str()))
        .map(|c| ConfigError {
            line: c.line,
            column: 1,
            key: "cron.job".to_owned(),
            message: format!(
                "no script defines the job `{}` (jobs.define in [scripts])",
                c.job
            ),
        })
        .collect();
    if !undefined.is_empty() {
        return Err(crate::Error::Config(ConfigErrors {
            file: path.to_owned(),
            errors: undefined,
        }));
    }
    let choice = choose_database(database, Some(path), &config);
    let from_config = choice.source.starts_with("`database`");
    let url = choice.url.clone();
    let checked = check_database(&url).await;
    if let Err(message) = checked.as_ref() {
        let message = message.clone();
        return Err(match config.database_position {
            Some((line, column)) if from_config => crate::Error::Config(ConfigErrors {
                file: path.to_owned(),
                errors: vec![ConfigError {
                    line,
                    column,
                    key: "database".to_owned(),
                    message,
                }],
            }),
            _ => crate::Error::Database {
                url: portico_store::redact_url(&url),
                message,
            },
        });
    }
    let mut summary = summary(path, &config, &doors);
    if let Some(scripts) = &scripts {
        summary.push_str(&crate::scripts::summary(scripts));
    }
    summary.push_str(&sign_in_providers(&config));
    for (collection, specs) in &config.indexes {
        let names: Vec<String> = specs.iter().map(ToString::to_string).collect();
        summary.push_str(&format!("\nindexes of {collection}: {}", names.join("; ")));
    }
    // `[backups]` copies SQLite files: on another store `serve` would refuse to start.
    crate::backup::configured_set(&config, &choice)?;
    // Files on local disk are not seen by the other instances of a PostgreSQL database.
    if crate::files::wanted(&config)
        && let Some(message) = config.files.refusal(&url)
    {
        return Err(crate::Error::Setup(message));
    }
    let format = checked.map_or_else(|_| String::new(), |status| status.to_string());
    Ok(Report {
        summary: format!("{summary}\ndatabase: {choice}: {format}"),
        warnings: warning_lines(path, &config),
    })
}

/// Whether `serve` could open the store at `url`, and its stored format: it is opened the same
/// way. A SQLite file that does not exist yet is created for the test and removed again (with
/// its journal and lock files), so `check` leaves nothing behind; one that exists must be a
/// SQLite database. The stored format is read first: a database in an older format is not
/// opened (opening migrates it; `check` changes nothing), one in a newer format is an error.
///
/// # Errors
/// What is wrong, in words.
pub async fn check_database(url: &str) -> Result<portico_store::FormatStatus, String> {
    use portico_store::FormatStatus;
    check_database_url(url)?;
    let status = match portico_store::stored_format(url).await {
        Ok(stored) => FormatStatus::of(stored),
        Err(portico_store::Error::Unavailable(reason)) => {
            return Err(unavailable(&reason));
        }
        Err(e) => return Err(e.to_string()),
    };
    match status {
        FormatStatus::Newer(_) => return Err(status.to_string()),
        FormatStatus::Older(_) => return Ok(status),
        FormatStatus::Empty | FormatStatus::Current => {}
    }
    let mut created = None;
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = Path::new(path);
        if path.exists() {
            let mut header = [0u8; 16];
            let read = std::fs::File::open(path)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut header))
                .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
            if read != 0 && header != *b"SQLite format 3\0" {
                return Err(format!(
                    "{}: the file is not a SQLite database",
                    path.display()
                ));
            }
        } else {
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                return Err(format!(
                    "{}: the directory {} does not exist",
                    path.display(),
                    dir.display()
                ));
            }
            created = Some(path.to_owned());
        }
    }
    let opened = match portico_store::open(url).await {
        Ok(store) => {
            drop(store);
            Ok(())
        }
        Err(portico_store::Error::Unavailable(reason)) => Err(unavailable(&reason)),
        Err(e) => Err(e.to_string()),
    };
    if let Some(path) = created {
        // Let the store's connections close before their files go.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        for suffix in [
            "",
            "-wal",
            "-shm",
            "-journal",
            portico_store::sqlite::LOCK_SUFFIX,
        ] {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            let _ = std::fs::remove_file(name);
        }
    }
    opened.map(|()| status)
}

/// The message for a database server that cannot be reached or refuses the credentials.
fn unavailable(reason: &str) -> String {
    format!(
        "the database cannot be used: {reason} (is the server running, and are the host, \
         port, user, password and database name in the URL right?)"
    )
}

/// The summary `check` prints for a valid config whose doors are `doors`.
pub fn summary(path: &Path, config: &Config, doors: &Doors) -> String {
    let collections: usize = config.apis.iter().map(|a| a.collections.len()).sum();
    let routes = doors.routes.len();
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

/// One line per `[[accounts.oidc]]` and `[[accounts.oauth2]]` provider, with the addresses
/// its preset resolved to.
fn sign_in_providers(config: &Config) -> String {
    let Some(accounts) = &config.accounts else {
        return String::new();
    };
    let preset = |p: &Option<String>| {
        p.as_ref()
            .map_or(String::new(), |p| format!(", preset {p}"))
    };
    let mut lines = String::new();
    for p in &accounts.oidc {
        lines.push_str(&format!(
            "\nsign-in /auth/oidc/{} (OpenID Connect{}): issuer {}, scopes {}",
            p.name,
            preset(&p.preset),
            p.issuer,
            p.scopes.join(" ")
        ));
    }
    for p in &accounts.oauth2 {
        let endpoints: Vec<String> = p
            .provider
            .endpoints()
            .iter()
            .map(|(key, url)| format!("{key} {url}"))
            .collect();
        lines.push_str(&format!(
            "\nsign-in /auth/oauth2/{} (OAuth2{}): {}, scopes {}",
            p.name,
            preset(&p.preset),
            endpoints.join(", "),
            p.provider.scopes.join(" ")
        ));
    }
    lines
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
