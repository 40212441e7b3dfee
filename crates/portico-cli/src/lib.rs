//! The `portico` server: a zero-code REST server from a TOML file, on embedded SQLite.
//!
//! The `portico` binary is glue: it parses its arguments and calls the functions of this crate,
//! which read and check the config ([`config`]), build the front doors it declares once
//! ([`doors`]), serve them ([`serve`]), manage users ([`users`]), import JSON exports
//! ([`import`]) and list routes ([`routes`]).
//!
//! What `portico serve` serves is built by one function, [`serve::Served::build`]: the front
//! doors, the admin page, every layer around a request and the background work (mail, jobs,
//! schedules, backups, sweeps). The binary binds an address and calls [`serve::Served::serve`];
//! a program or a test can do the same in process. When `serve` returns the platform is closed
//! and the database released (see [`serve::Served::shut_down`]): the program may open it again.
//!
//! ```
//! use portico_cli::config::Config;
//!
//! let config = Config::parse(r#"
//! [[api]]
//! use_default_auth = true
//! [[api.collection]]
//! name = "articles"
//! role_required = ["editor"]
//! "#).map_err(|errors| format!("{errors:?}"))?;
//! let routes = portico_cli::routes::route_table(&config)?;
//! assert!(routes.iter().any(|r| r.method == "POST" && r.path == "/api/login"));
//! # Ok::<(), String>(())
//! ```
//!
//! | command | does |
//! |---|---|
//! | `portico serve [--config FILE] [--listen ADDR] [--database URL]` | serves the config |
//! | `portico users add\|list\|password\|logout\|remove\|roles add\|roles remove` | manages accounts |
//! | `portico import --collection NAME FILE` | imports a JSON array export |
//! | `portico routes [--config FILE]` | prints every route |
//! | `portico check [--config FILE]` | validates the config (and loads `[scripts]`), says the database's stored format |
//! | `portico types [--client\|--python] [--config FILE]` | prints the TypeScript declarations of the scripts' `"portico"` module, or the app's types for the TypeScript or Python client ([`types`]) |
//! | `portico backup [--out FILE]`, `portico restore FILE` | an online copy of a SQLite database; putting one back ([`backup`]) |
//!
//! ## Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `memory`, `sqlite`, `postgres` (`full`: all three) | yes | the store backends `--database` may name |
//! | `scripts` | yes | `[scripts]`: the application's JavaScript or TypeScript on an embedded engine (`portico_script`), its routes in the routes door (`portico_routes::scripts`), `portico types`' declarations of the `"portico"` module |
//! | `jemalloc` | yes | jemalloc as the process's allocator |
//! | `mimalloc` | no | mimalloc as the allocator (when `jemalloc` is off) |
//!
//! Without `scripts` the script engine is not compiled in (the README's "Build a slim binary"
//! gives the sizes), and `serve`, `check`, `routes`, `openapi` and `types` refuse a config with
//! `[scripts]` ([`scripts::NOT_BUILT`]) rather than serve it without its scripts.

pub mod backup;
pub mod check;
pub mod config;
pub mod database;
pub mod doors;
mod error;
pub mod files;
pub mod import;
pub mod indexes;
pub mod keys;
pub mod openapi;
pub mod routes;
pub mod scripts;
pub mod serve;
pub mod types;
pub mod users;

pub use error::{Error, Result};
