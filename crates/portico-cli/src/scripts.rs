//! `[scripts]`: the application's JavaScript or TypeScript, loaded into a pool of script
//! runtimes (`portico_script`), its methods, publications and rules registered on the platform
//! and its routes handed to the `[[api]]` they name (the routes door turns each into a route:
//! `portico_routes::scripts`).
//!
//! Built without the `scripts` feature, the script engine is not compiled in: [`Scripts`] is a
//! type with no values, and [`load`] refuses a config that has `[scripts]` ([`NOT_BUILT`]), so
//! `serve`, `check` and `routes` never ignore the application's scripts silently.

use portico_platform::Platform;
#[cfg(feature = "scripts")]
use portico_script::{Definitions, ScriptConfig};

use crate::config::Config;

/// The application's loaded scripts (`portico_script::Scripts`).
#[cfg(feature = "scripts")]
pub use portico_script::Scripts;

/// The application's scripts in a build without the `scripts` feature: a type with no values
/// (nothing can load scripts), so the code that hands scripts on compiles alike in both builds.
#[cfg(not(feature = "scripts"))]
#[derive(Debug, Clone)]
pub enum Scripts {}

/// What a build without the `scripts` feature says of a config with `[scripts]`.
pub const NOT_BUILT: &str = "this portico was built without scripts (the `scripts` feature); rebuild it with `cargo build --release -p portico-cli --features scripts` (on by default), or remove [scripts] from the config";

/// `[scripts]` in a build without the `scripts` feature: refused ([`NOT_BUILT`], with the
/// line of `[scripts]`), never ignored. `None` without `[scripts]`.
///
/// # Errors
/// [`crate::Error::Script`] when the config has `[scripts]`.
#[cfg(not(feature = "scripts"))]
#[allow(clippy::unused_async)] // the same signature as the loading twin of builds with scripts
pub async fn load(config: &Config, _platform: &Platform) -> crate::Result<Option<Scripts>> {
    match &config.scripts {
        Some(scripts) => Err(crate::Error::Script(format!(
            "[scripts] (line {}): {NOT_BUILT}",
            scripts.line
        ))),
        None => Ok(None),
    }
}

/// `serve --watch` in a build without the `scripts` feature: never called, as no [`Scripts`]
/// value exists.
#[cfg(not(feature = "scripts"))]
pub fn watch(scripts: Scripts) -> tokio::task::JoinHandle<()> {
    match scripts {}
}

/// The names of the jobs `scripts` define (`jobs.define`).
#[cfg(feature = "scripts")]
pub(crate) fn job_names(scripts: &Scripts) -> Vec<&str> {
    let jobs = &scripts.definitions().jobs;
    jobs.iter().map(|j| j.name.as_str()).collect()
}

/// The names of the jobs `scripts` define: none in a build without scripts.
#[cfg(not(feature = "scripts"))]
pub(crate) fn job_names(scripts: &Scripts) -> Vec<&str> {
    match *scripts {}
}

/// What `portico check` says of the scripts (`, scripts: 2 methods, ...`).
#[cfg(feature = "scripts")]
pub(crate) fn summary(scripts: &Scripts) -> String {
    let defs = scripts.definitions();
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        ", scripts: {}, {}, {}",
        count(defs.methods.len(), "method"),
        count(defs.publications.len(), "publication"),
        count(defs.routes.len(), "route")
    )
}

/// What `portico check` says of the scripts: never called in a build without scripts.
#[cfg(not(feature = "scripts"))]
pub(crate) fn summary(scripts: &Scripts) -> String {
    match *scripts {}
}

#[cfg(feature = "scripts")]
/// The `portico_script` settings of `[scripts]`.
fn script_config(config: &Config) -> Option<ScriptConfig> {
    let scripts = config.scripts.as_ref()?;
    let mut out = ScriptConfig::new(scripts.main.clone());
    out.timeout = scripts.timeout;
    out.memory_mb = scripts.memory_mb;
    out.fetch_hosts = scripts.fetch_hosts.clone();
    if let Some(runtimes) = scripts.runtimes {
        out.runtimes = runtimes;
    }
    Some(out)
}

#[cfg(feature = "scripts")]
/// Loads `[scripts]` (when the config has it) on `platform`: the modules are read, checked and
/// run, their definitions checked against the config, and their methods, publications and
/// rules registered. `None` without `[scripts]`.
///
/// # Errors
/// [`crate::Error::Script`] naming the file, line and column of a syntax, import or
/// type-stripping error, a module that throws while loading, or a definition that collides
/// with the config (both places named).
pub async fn load(config: &Config, platform: &Platform) -> crate::Result<Option<Scripts>> {
    let Some(script_config) = script_config(config) else {
        return Ok(None);
    };
    let folder = config
        .folder
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let scripts = Scripts::load(&folder, script_config, platform.clone())
        .await
        .map_err(|e| crate::Error::Script(e.to_string()))?;
    let collisions = collisions(config, scripts.definitions());
    if !collisions.is_empty() {
        return Err(crate::Error::Script(collisions.join("\n")));
    }
    scripts
        .install(platform)
        .map_err(|e| crate::Error::Script(e.to_string()))?;
    Ok(Some(scripts))
}

#[cfg(feature = "scripts")]
/// How often `serve --watch` looks at the script files.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(300);

#[cfg(feature = "scripts")]
/// The modification times of `files`.
fn stamps(files: &[std::path::PathBuf]) -> Vec<Option<std::time::SystemTime>> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
        .collect()
}

#[cfg(feature = "scripts")]
/// `serve --watch`: a task that reloads `scripts` whenever one of their files changes. Calls in
/// flight finish on the old code; an edit that does not load is logged and the old code goes
/// on serving. Names added or removed by an edit need a restart (the doors are built once).
/// The task runs until aborted or the runtime ends.
pub fn watch(scripts: Scripts) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut files = scripts.files();
        files.sort();
        let mut seen = stamps(&files);
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let now = stamps(&files);
            if now == seen {
                continue;
            }
            seen = now;
            match scripts.reload().await {
                Ok(definitions) => {
                    tracing::info!("scripts reloaded: later calls run the new code");
                    if definitions != *scripts.definitions() {
                        tracing::warn!(
                            "the scripts now define other methods, publications, routes or rules than at startup; restart `portico serve` to serve the new names"
                        );
                    }
                    files = scripts.files();
                    files.sort();
                    seen = stamps(&files);
                }
                Err(e) => {
                    tracing::warn!("scripts not reloaded, the old code goes on serving: {e}");
                }
            }
        }
    })
}

#[cfg(feature = "scripts")]
/// Every definition of the scripts that the config defines too, or that names something the
/// config lacks, as messages naming both places. (A script route on a path the config serves
/// already is refused by the route registry, where the doors are built.)
pub fn collisions(config: &Config, definitions: &Definitions) -> Vec<String> {
    let mut out = Vec::new();
    let line = config.scripts.as_ref().map_or(1, |s| s.line);
    if let Some(auto) = &config.auto {
        for publication in &definitions.publications {
            if let Some(declared) = auto
                .publications
                .iter()
                .find(|p| p.name == publication.name)
            {
                out.push(format!(
                    "publication {:?} is defined twice: at {} and in the config's [[auto.publication]] (line {})",
                    publication.name, publication.place, declared.line
                ));
            }
        }
    } else if let Some(first) = definitions
        .methods
        .first()
        .or(definitions.publications.first())
    {
        out.push(format!(
            "{} ({}) defines methods or publications, which the auto API serves, but the config has no [auto] section (the [scripts] section is at line {line})",
            first.name, first.place
        ));
    }
    for route in &definitions.routes {
        let base = portico_routes::scripts::route_base(route);
        if !config.apis.iter().any(|a| a.base_path() == base) {
            out.push(format!(
                "api({:?}) at {}: the config has no [[api]] whose path is {base} (declare it with api_path and version)",
                route.api, route.place
            ));
        }
    }
    out
}
