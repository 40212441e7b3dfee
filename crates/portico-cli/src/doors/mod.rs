//! The front doors a config declares, built once: one routes API (`portico_routes::Api`) per
//! `[[api]]` and the auto API (`portico_auto::AutoApi`) of `[auto]`, with every route they serve
//! as data ([`portico_edge::RouteDoc`]).
//!
//! [`Doors::build`] is the one place a config becomes front doors. `serve` builds them on its
//! platform and serves their routers; `portico routes`, `portico check` and `portico openapi`
//! read what they serve; the admin page lists their routes. So no listing can drift from what
//! is served. Every declaration, and every part of the server beside the doors
//! ([`server_paths`]), claims its paths in one [`registry::Registry`] first, so one that
//! overlaps another (two routes on one path, a route on a path the server answers itself) is
//! refused once, naming both sides and the config line.

pub(crate) mod auto;
pub mod registry;
pub(crate) mod rest;
pub mod server_paths;

use std::path::Path;

use axum::Router;
use portico_edge::RouteDoc;
use portico_platform::Platform;

use crate::config::{Config, ConfigError, ConfigErrors};
use registry::{Clash, Owner, Reach, Registry};

/// The front doors of one config, built on one platform.
pub struct Doors {
    /// One router per `[[api]]`, in file order.
    pub apis: Vec<Router>,
    /// The auto API's router, when `[auto]` is present (it answers every path the routes APIs
    /// do not).
    pub auto: Option<Router>,
    /// What the doors serve: every `[[api]]`'s routes in file order, then the auto API's.
    pub routes: Vec<RouteDoc>,
}

impl std::fmt::Debug for Doors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doors")
            .field("apis", &self.apis.len())
            .field("auto", &self.auto.is_some())
            .field("routes", &self.routes.len())
            .finish()
    }
}

impl Doors {
    /// Declares the config's collections on `platform` and builds every door on it.
    ///
    /// # Errors
    /// Every declaration the doors refused, each with the config line and key that made it: a
    /// path the [`registry::Registry`] finds claimed already (two routes on one path, two
    /// `[[api]]` on one base path, the auto API under a routes API's base path, a route on a
    /// path the server answers itself), both sides named; a collection declared with other
    /// options.
    pub fn build(config: &Config, platform: &Platform) -> Result<Doors, Vec<ConfigError>> {
        Doors::build_with(config, platform, None)
    }

    /// [`Doors::build`] with the routes of the application's scripts (loaded by
    /// [`crate::scripts::load`] on `platform`, which holds their methods and publications
    /// already) handed to the `[[api]]` they name.
    ///
    /// # Errors
    /// As [`Doors::build`].
    pub fn build_with(
        config: &Config,
        platform: &Platform,
        scripts: Option<&crate::scripts::Scripts>,
    ) -> Result<Doors, Vec<ConfigError>> {
        if let Err(e) = declare_collections(config, platform) {
            return Err(vec![ConfigError::at_line(
                1,
                "api.collection",
                e.to_string(),
            )]);
        }
        // The server's own parts claim their paths first, then the auto API its area (every
        // path no [[api]] answers), then each [[api]] its area and routes, then the auto API its
        // routes: a refusal is reported at the line of the later, more specific declaration.
        let mut registry = Registry::new();
        let mut refusals = server_paths::register(config, &mut registry);
        let auto_owner = config.auto.as_ref().map(|auto| {
            let line = auto.line;
            registry.owner(Owner::new(
                format!("the auto API ([auto] at line {line})"),
                line,
                "auto",
            ))
        });
        if let Some(owner) = auto_owner {
            let claimed = registry.door(Reach::Area("/".to_owned()), "/", owner);
            refusals.extend(claimed.err().map(Clash::refusal));
        }
        let mut doors = Doors {
            apis: Vec::new(),
            auto: None,
            routes: Vec::new(),
        };
        let script_line = config.scripts.as_ref().map_or(1, |s| s.line);
        for api in &config.apis {
            let scripts = scripts.map(|s| (s, script_line));
            match rest::build_each(api, platform, scripts, &mut registry) {
                Ok(rest) => {
                    doors.routes.extend(rest.describe());
                    doors.apis.push(rest.router());
                }
                Err(refused) => refusals.push(refused),
            }
        }
        if let (Some(auto), Some(owner)) = (&config.auto, auto_owner) {
            match auto::build(config, auto, platform) {
                Ok((router, routes)) => {
                    let clash = routes.iter().find_map(|doc| {
                        let path = Reach::Route(doc.path.clone());
                        registry.door(path, "/", owner).err()
                    });
                    refusals.extend(clash.map(Clash::refusal));
                    doors.routes.extend(routes);
                    doors.auto = Some(router);
                }
                Err(message) => refusals.push(ConfigError::at_line(auto.line, "auto", message)),
            }
        }
        if refusals.is_empty() {
            Ok(doors)
        } else {
            Err(refusals)
        }
    }

    /// [`Doors::build_with`] on a platform over an empty in-memory store, with the config's
    /// scripts loaded on it: what the config and its scripts serve, without a database. Also
    /// returns the scripts, `None` without `[scripts]`.
    ///
    /// # Errors
    /// [`crate::Error::Script`] when the scripts do not load (file, line and column named);
    /// what the doors refuse, as [`refused`] says it for `file`.
    pub async fn build_scratch_with_scripts(
        config: &Config,
        file: Option<&Path>,
    ) -> crate::Result<(Doors, Option<crate::scripts::Scripts>)> {
        let platform = Platform::open("memory:").await?;
        declare_collections(config, &platform)?;
        let scripts = crate::scripts::load(config, &platform).await?;
        let doors = Doors::build_with(config, &platform, scripts.as_ref())
            .map_err(|errors| refused(file, errors))?;
        Ok((doors, scripts))
    }

    /// [`Doors::build`] on a platform over an empty in-memory store: what the config serves,
    /// without a database (a config file's routes do not depend on the data).
    ///
    /// # Errors
    /// As [`Doors::build`].
    pub fn build_scratch(config: &Config) -> Result<Doors, Vec<ConfigError>> {
        // The memory store's futures need no runtime (no I/O, no timers), so this runs the same
        // inside or outside one.
        let platform = futures::executor::block_on(Platform::open("memory:"))
            .map_err(|e| vec![ConfigError::at_line(1, "database", e.to_string())])?;
        Doors::build(config, &platform)
    }
}

/// The error of a command whose config the doors refused: the config's mistakes in `file` when
/// there is one, otherwise (a config made by the server itself) a setup error listing them.
pub fn refused(file: Option<&Path>, errors: Vec<ConfigError>) -> crate::Error {
    match file {
        Some(file) => crate::Error::Config(ConfigErrors {
            file: file.to_owned(),
            errors,
        }),
        None => crate::Error::Setup(lines(&errors)),
    }
}

/// Refusals as text, one `line N: message` a line.
pub(crate) fn lines(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(|r| format!("line {}: {}", r.line, r.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Declares every collection the config names with its options (object ids, timestamps) before
/// anything asks for one by name: a plain `platform.collection(name)` first would fix the
/// defaults, and declaring other options afterwards is refused by the platform. The accounts'
/// `users` collection keeps its own layout (it has `createdAt` already).
///
/// # Errors
/// [`crate::Error::Platform`] when a collection is declared already with other options.
pub fn declare_collections(config: &Config, platform: &Platform) -> crate::Result<()> {
    crate::files::declare(config, platform)?;
    for name in config.collection_names() {
        if name == portico_platform::USERS {
            continue;
        }
        let object_id = config
            .auto
            .as_ref()
            .is_some_and(|auto| auto.object_id_collections.contains(&name));
        let mut options = portico_platform::CollectionOptions::default();
        options.id_kind = if object_id {
            portico_platform::IdKind::ObjectId
        } else {
            portico_platform::IdKind::Random
        };
        options.timestamps = config.timestamps(&name);
        options.schema = config.schema_values.get(&name).cloned();
        options.field_rules = config.field_rules.get(&name).cloned().unwrap_or_default();
        options.relations = config.relations.get(&name).cloned().unwrap_or_default();
        options.search = config.search.get(&name).cloned().unwrap_or_default();
        platform.define_collection(&name, options)?;
    }
    Ok(())
}
