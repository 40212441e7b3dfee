//! `portico check`: validate a config file and summarise what it declares.

use std::path::Path;

use crate::config::Config;
use crate::routes::route_table;

/// Checks the config at `path` and returns a one-paragraph summary of what it serves.
///
/// # Errors
/// [`crate::Error::ReadConfig`], or [`crate::Error::Config`] listing every mistake with its line
/// and key.
pub fn check(path: &Path) -> crate::Result<String> {
    let config = Config::load(path)?;
    Ok(summary(path, &config))
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
