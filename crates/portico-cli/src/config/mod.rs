//! The `portico.toml` config: parsed from the raw TOML structs into a checked [`Config`].
//!
//! Every mistake is reported with its line, column and key (see [`ConfigError`]); nothing that
//! does not check out is ever served.

mod accounts;
mod admin;
mod checker;
mod diagnostic;
mod files;
mod limits;
mod operations;
mod paths;
mod raw;
mod rule;
mod value;
mod warning;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use portico_routes::Op;
use serde_json::Value;

pub use accounts::{AccountsSection, EmailConfig, OAuth2Section, platform_accounts};
pub use admin::AdminConfig;
pub use checker::check_database_url;
pub use diagnostic::ConfigError;
pub use files::{DEFAULT_FILES_STORE, FilesSettings};
pub use limits::{LimitPer, RouteLimit};
pub use operations::{BackupsConfig, LogConfig, LogFormat};
pub use rule::Rule;
pub use warning::ConfigWarning;

use checker::Checker;
use raw::RawConfig;

/// The config file `serve`, `routes` and `check` read when no `--config` is given (if it exists).
pub const DEFAULT_CONFIG_FILE: &str = "portico.toml";
/// The address `serve` listens on when neither `--listen` nor `listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:3000";
/// The store every command uses when neither `--database` nor `database` says otherwise.
pub const DEFAULT_DATABASE: &str = "sqlite:./portico.db";

/// A checked config file.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `listen`: the address to serve on.
    pub listen: Option<SocketAddr>,
    /// `database`: the store URL. A relative `sqlite:` path is taken from the config file's
    /// folder once [`Config::load`] has read it (see [`Config::resolve_paths`]).
    pub database: Option<String>,
    /// The line and column of `database`, for messages about the database itself.
    pub database_position: Option<(usize, usize)>,
    /// `database_replicas`: URLs of PostgreSQL read replicas (hot standbys of `database`)
    /// that answer reads; none by default.
    pub database_replicas: Vec<String>,
    /// `replica_max_lag_ms`: a replica further behind than this is skipped (default
    /// 1000 ms).
    pub replica_max_lag: Option<Duration>,
    /// `database_cache_mb`: the PostgreSQL read cache's budget in bytes (default 16 MiB,
    /// `Some(0)`: no cache; ignored by the other backends).
    pub database_cache_bytes: Option<usize>,
    /// `database_stamp_batch`: on PostgreSQL, how many waiting callers start a round of
    /// change-stamp reads at once (default 8; 1: a round as soon as the last ends).
    pub database_stamp_batch: Option<usize>,
    /// `database_stamp_wait_us`: on PostgreSQL, the longest a caller of a busy instance waits
    /// for others before its stamp round starts (default 500 µs).
    pub database_stamp_wait: Option<Duration>,
    /// `shutdown_grace_seconds`: how long in-flight requests may run on after SIGINT/SIGTERM
    /// (default [`crate::serve::SHUTDOWN_GRACE`]).
    pub shutdown_grace: Option<Duration>,
    /// `trusted_proxies`: addresses and networks (`10.0.0.0/8`) whose `X-Forwarded-For` is
    /// believed when working out a client's address for login limits, on both front doors
    /// (none by default: the TCP peer is the client).
    pub trusted_proxies: portico_edge::TrustedProxies,
    /// `openapi`: `Some(false)` turns `GET /openapi.json` off (see [`Config::serves_openapi`]).
    pub openapi: Option<bool>,
    /// `[metrics]`, when present and not `enabled = false`.
    pub metrics: Option<MetricsConfig>,
    /// One per `[[api]]`, in file order.
    pub apis: Vec<ApiConfig>,
    /// `[auto]`, when present.
    pub auto: Option<AutoConfig>,
    /// `[admin]`: the admin page (served at `/_/` unless turned off).
    pub admin: AdminConfig,
    /// `[server]`: how long and how many connections `serve` keeps.
    pub server: ConnectionLimits,
    /// `[live]`: limits of live streams (`max_streams`, default 10,000; `buffer` events per
    /// subscriber, default 256; `ping_secs`, default 15).
    pub live: portico_platform::LiveConfig,
    /// Every `[[channels]]`, in file order: who may join, send to and track presence in the
    /// channels of the live socket (`GET /live`) whose names match each `pattern`.
    pub channels: Vec<portico_platform::ChannelRule>,
    /// The live socket's and channels' limits, also in `[live]` (`max_channels`,
    /// `max_members`, `max_message_bytes`, `max_meta_bytes`, `max_frame_bytes`,
    /// `frames_per_second`, `bytes_per_second`, `socket_queue`, `idle_timeout_secs`,
    /// `heartbeat_ms`, `presence_timeout_ms`; `ping_secs` is shared with the streams).
    pub channel_limits: portico_platform::ChannelsConfig,
    /// `[jobs]`: the job worker (`concurrency`, default 4; `lease_ms`, default 60,000;
    /// `poll_ms`, default 1,000; `webhook_retry_ms`, the first wait before a delivery is tried
    /// again, default 5,000; `webhook_timeout_ms`, how long a receiver has to answer, default
    /// 15,000) and the queue's limits (`max_jobs`, default 100,000;
    /// `max_args_kb`, default 64).
    pub jobs: portico_platform::jobs::JobsConfig,
    /// Every `[[cron]]`, in file order: a job enqueued at each due time of its schedule.
    pub cron: Vec<CronEntry>,
    /// Every `[[webhooks]]`, in file order.
    pub webhooks: Vec<WebhookEntry>,
    /// Every `[[limits]]`, in file order: request limits per route.
    pub limits: Vec<RouteLimit>,
    /// `[scripts]`, when present: application logic in JavaScript or TypeScript.
    pub scripts: Option<ScriptsConfig>,
    /// Every `schema = "..."` of a collection (`[[api.collection]]` and `[auto.schemas]`),
    /// sorted by collection.
    pub schemas: Vec<SchemaFile>,
    /// The JSON Schemas of [`Config::schemas`], read by [`Config::load`] from the config
    /// file's folder, by collection.
    pub schema_values: std::collections::BTreeMap<String, Value>,
    /// Field-level read rules by collection (`field_rules` of `[[api.collection]]` and
    /// `[auto.field_rules.<collection>]`).
    pub field_rules: std::collections::BTreeMap<String, portico_platform::FieldRules>,
    /// Relations by collection (`relations` of `[[api.collection]]`).
    pub relations: std::collections::BTreeMap<String, portico_platform::Relations>,
    /// Full-text search fields by collection (`search` of `[[api.collection]]`).
    pub search: std::collections::BTreeMap<String, Vec<String>>,
    /// Sorted indexes by collection (`indexes` of `[[api.collection]]` and
    /// `[auto.indexes]`), created at start when missing.
    pub indexes: std::collections::BTreeMap<String, Vec<portico_store::IndexSpec>>,
    /// The config file's folder (set by [`Config::load`]): scripts, schema files, mail
    /// templates, and the SQLite file, files store and backups directory the file writes are
    /// found relative to it.
    pub folder: Option<PathBuf>,
    /// `[backups]`, when present: scheduled and on-demand backups of a SQLite database.
    pub backups: Option<BackupsConfig>,
    /// `[log]`: the log's format.
    pub log: LogConfig,
    /// `[files]`: where files attached to documents are kept.
    pub files: FilesSettings,
    /// `[accounts]`, when present: the account lifecycle (served at `/auth/`).
    pub accounts: Option<AccountsSection>,
    /// `[email]`, when present: the SMTP server account mail goes through.
    pub email: Option<EmailConfig>,
}

/// One `[[cron]]`: the job `job` (defined by the scripts) enqueued at each due time of
/// `schedule`, read in `timezone`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CronEntry {
    /// `name`: the schedule's name (unique).
    pub name: String,
    /// `schedule` and `timezone`, checked.
    pub spec: portico_platform::jobs::CronSpec,
    /// `job`: the job enqueued.
    pub job: String,
    /// The line of its `name`.
    pub line: usize,
}

/// One `[[webhooks]]`: the receiver `url`, the writes of `collection` it is sent (`events`),
/// and the environment variable holding its signing secret (read by `serve`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookEntry {
    /// `url`: checked to be http(s) with a host.
    pub url: String,
    /// `collection`: whose writes are sent; none for a receiver only scripts send to.
    pub collection: Option<String>,
    /// `events`: `insert`, `update`, `remove` (all three by default).
    pub events: Vec<portico_platform::HookOp>,
    /// `secret_env`: the environment variable holding the secret (`whsec_...`).
    pub secret_env: String,
    /// The line of its `url`.
    pub line: usize,
}

/// `[scripts]`: the main module and the limits of its runtimes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptsConfig {
    /// `main`: the main module (`.js` or `.ts`), relative to the config file's folder.
    pub main: PathBuf,
    /// `timeout_ms` (default 5000): the longest a single call may run.
    pub timeout: Duration,
    /// `memory_mb` (default 64): the heap limit of each script runtime.
    pub memory_mb: usize,
    /// `fetch_hosts` (default none): `host[:port]` a script's `fetch()` may reach.
    pub fetch_hosts: Vec<String>,
    /// `runtimes` (default: one per core): how many script runtimes run calls.
    pub runtimes: Option<usize>,
    /// The line of `[scripts]`, for messages.
    pub line: usize,
}

/// A collection's JSON Schema file (`schema = "schemas/todos.json"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFile {
    /// The collection.
    pub collection: String,
    /// The file, relative to the config file's folder, as written.
    pub path: String,
    /// The line of the `schema` key, for messages.
    pub line: usize,
}

/// `[server]`: the bounds `serve` puts on client connections, so that slow or idle clients
/// cannot hold the server's connections (or file descriptors) for as long as they like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `header_timeout_secs` (default 10): a request head (request line and headers) must
    /// arrive within this time, and a kept-alive connection must start its next request within
    /// it.
    pub header_timeout: Duration,
    /// `body_timeout_secs` (default 10): a request body may pause at most this long between two
    /// chunks; then the request fails and its connection closes.
    pub body_timeout: Duration,
    /// `keep_alive_timeout_secs` (default 5): a connection that moves no bytes for this long is
    /// closed (after its request in flight, if any).
    pub keep_alive_timeout: Duration,
    /// `max_connections` (default 10,000): connections open at once. At the cap, the oldest
    /// connection that has not sent a whole request head is closed for a new one; keep it below
    /// the process's open-file limit (`ulimit -n`).
    pub max_connections: usize,
    /// `max_inflight_body_mb` (default 256), in bytes here: the memory request bodies may hold
    /// at once across the server, each counted as eight times its length. A request whose body
    /// would pass it waits briefly, then gets 503 with `Retry-After`.
    pub max_inflight_body: u64,
}

impl ConnectionLimits {
    /// The default `header_timeout_secs`.
    pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default `body_timeout_secs`.
    pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default `keep_alive_timeout_secs`.
    pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);
    /// The default `max_connections`.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
    /// The default `max_inflight_body_mb`, in bytes: 256 MiB.
    pub const DEFAULT_MAX_INFLIGHT_BODY: u64 = 256 * 1024 * 1024;
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Self::DEFAULT_HEADER_TIMEOUT,
            body_timeout: Self::DEFAULT_BODY_TIMEOUT,
            keep_alive_timeout: Self::DEFAULT_KEEP_ALIVE_TIMEOUT,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_inflight_body: Self::DEFAULT_MAX_INFLIGHT_BODY,
        }
    }
}

/// `[metrics]`: Prometheus metrics at `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `listen`: a separate address for `/metrics`; `None` serves it beside the APIs.
    pub listen: Option<SocketAddr>,
}

impl Config {
    /// True unless `openapi = false`: `GET /openapi.json` answers the server's OpenAPI document.
    pub fn serves_openapi(&self) -> bool {
        self.openapi.unwrap_or(true)
    }
}

/// One `[[api]]`: a route API object.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// `api_path`, as written (default `api/`).
    pub api_path: String,
    /// The file's top-level `trusted_proxies`, which every API's login limits use.
    pub trusted_proxies: portico_edge::TrustedProxies,
    /// `version`.
    pub version: Option<String>,
    /// `use_default_auth` (default false): adds `login` and `logout`.
    pub use_default_auth: bool,
    /// `pretty_json` (default false).
    pub pretty_json: bool,
    /// `enable_cors` (default true).
    pub enable_cors: bool,
    /// `default_headers`, sorted by name.
    pub default_headers: Vec<(String, String)>,
    /// `auth_failure_delay_ms`; `None` keeps the front door's random delay.
    pub auth_failure_delay: Option<Duration>,
    /// `login_rate_limit`; `None` keeps the front door's default.
    pub login_rate_limit: Option<RateLimit>,
    /// `cors_origins`: an allow-list replacing `*`.
    pub cors_origins: Option<Vec<String>>,
    /// `batch_limit`: the most sub-requests `POST {api}batch` takes (default
    /// [`portico_routes::DEFAULT_BATCH_LIMIT`]); 0 serves no batch route.
    pub batch_limit: usize,
    /// One per `[[api.collection]]`, in file order.
    pub collections: Vec<CollectionConfig>,
    /// The line of this `[[api]]` header, for messages.
    pub line: usize,
}

impl ApiConfig {
    /// The URL prefix of every route of this API: `/api/` or `/api/v1/` (always ends with `/`).
    pub fn base_path(&self) -> String {
        let mut base = String::from("/");
        for part in [Some(self.api_path.as_str()), self.version.as_deref()]
            .into_iter()
            .flatten()
        {
            let part = part.trim_matches('/');
            if !part.is_empty() {
                base.push_str(part);
                base.push('/');
            }
        }
        base
    }
}

/// `login_rate_limit = { attempts, per_seconds }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Failed logins allowed per identity within `per`.
    pub attempts: u32,
    /// The window.
    pub per: Duration,
}

/// Who may call one generated endpoint (`endpoints = { getAll = { ... } }`): its overrides of
/// the collection's auth and roles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointAuth {
    /// `auth_required`: overrides the collection's.
    pub auth_required: Option<bool>,
    /// `auth = "optional"`: overrides the collection's (see [`CollectionConfig::auth_optional`]).
    pub auth_optional: Option<bool>,
    /// `role_required`: accepted in addition to the collection's roles.
    pub role_required: Vec<String>,
}

/// One `[[api.collection]]`.
#[derive(Debug, Clone)]
pub struct CollectionConfig {
    /// `name`: the collection.
    pub name: String,
    /// `path` (default: the name), without surrounding slashes.
    pub path: String,
    /// `auth_required`: every endpoint needs a logged-in caller. When neither this nor
    /// `role_required` is written, reads are public and writes need a logged-in caller (the write
    /// endpoints then carry `auth_required = Some(true)` in [`CollectionConfig::endpoints`]).
    pub auth_required: bool,
    /// `auth = "optional"`: an endpoint that needs no login still authenticates a caller who
    /// sends a token (401 for an invalid one); one who sends none is anonymous. Default off: a
    /// public endpoint reads no token.
    pub auth_optional: bool,
    /// `role_required` (implies auth).
    pub role_required: Vec<String>,
    /// The endpoints generated (all six minus `excluded_endpoints` and those set to `false`),
    /// with their options, in spec order.
    pub endpoints: Vec<(Op, EndpointAuth)>,
    /// `owner_field`: callers see and change only documents whose field holds their id.
    pub owner_field: Option<String>,
    /// `max_page_size`.
    pub max_page_size: Option<u64>,
    /// `admin_role` (the `users` collection only): callers holding any of these roles may change
    /// and remove every account; everyone else only their own.
    pub admin_role: Vec<String>,
    /// `timestamps` (default true): documents get `createdAt` and `updatedAt`.
    pub timestamps: bool,
    /// `self_only = true` or `owner_field = "_id"` (the `users` collection only): callers see
    /// and change only their own account (holders of `admin_role` every account).
    pub self_only: bool,
    /// `schema`: a JSON Schema file every write must satisfy.
    pub schema: Option<String>,
    /// `field_rules = { salary = "role:hr" }`: who sees which fields.
    pub field_rules: portico_platform::FieldRules,
    /// `relations = { author = "users" }`: fields holding ids of another collection's documents,
    /// which `?expand=` reads.
    pub relations: portico_platform::Relations,
    /// True when nothing says who reads (no auth key on the collection, nor on `get` or
    /// `getAll`): reads are public then, except in `users`, whose reads need a login (and
    /// `check` says that every logged-in caller sees every account).
    pub reads_unstated: bool,
    /// `search = ["title", "body"]`: the fields `?search=` looks in (full-text).
    pub search: Vec<String>,
    /// `indexes = ["city", "-createdAt", ["ownerId", "-createdAt"]]`: sorted indexes.
    pub indexes: Vec<portico_store::IndexSpec>,
    /// `files`: the collection's file fields, by name.
    pub files: std::collections::BTreeMap<String, portico_platform::FileField>,
    /// The line of `name`, for messages.
    pub line: usize,
}

impl CollectionConfig {
    /// The options of `endpoint` when it is generated.
    pub fn endpoint(&self, endpoint: Op) -> Option<&EndpointAuth> {
        self.endpoints
            .iter()
            .find(|(e, _)| *e == endpoint)
            .map(|(_, o)| o)
    }

    /// True for the generated `users` collection (accounts: only `_id` and `profile` shown).
    pub fn is_users(&self) -> bool {
        self.name == portico_platform::USERS
    }

    /// The write endpoints anonymous callers may call, in spec order.
    pub fn anonymous_writes(&self) -> Vec<Op> {
        let route_auth = self.auth_required || self.owner_field.is_some() || self.self_only;
        self.endpoints
            .iter()
            .filter(|(endpoint, options)| {
                let write = !matches!(endpoint, Op::Get | Op::GetAll);
                // The users collection refuses anonymous changes to accounts whatever the keys say.
                let guarded = self.is_users() && endpoint.on_item();
                write
                    && !guarded
                    && !options.auth_required.unwrap_or(route_auth)
                    && self.role_required.is_empty()
                    && options.role_required.is_empty()
            })
            .map(|(endpoint, _)| *endpoint)
            .collect()
    }

    /// The read endpoints (get, getAll) anonymous callers may call, in spec order.
    pub fn anonymous_reads(&self) -> Vec<Op> {
        let route_auth = self.auth_required || self.owner_field.is_some() || self.self_only;
        self.endpoints
            .iter()
            .filter(|(endpoint, options)| {
                matches!(endpoint, Op::Get | Op::GetAll)
                    && !options.auth_required.unwrap_or(route_auth)
                    && self.role_required.is_empty()
                    && options.role_required.is_empty()
            })
            .map(|(endpoint, _)| *endpoint)
            .collect()
    }

    /// The endpoints not generated, for front doors that take an exclusion list.
    pub fn excluded(&self) -> Vec<Op> {
        Op::ALL
            .into_iter()
            .filter(|e| self.endpoint(*e).is_none())
            .collect()
    }
}

/// `[auto]`: the auto API.
#[derive(Debug, Clone, Default)]
pub struct AutoConfig {
    /// `collections`: collections with write endpoints; `None` means every declared collection.
    pub collections: Option<Vec<String>>,
    /// `object_id_collections`: collections whose new ids are 24-hex object ids.
    pub object_id_collections: Vec<String>,
    /// `no_timestamps`: collections whose documents get no `createdAt`/`updatedAt`.
    pub no_timestamps: Vec<String>,
    /// `response_headers`, sorted by name.
    pub response_headers: Vec<(String, String)>,
    /// `allow_register` (default true): serve `/users/register`.
    pub allow_register: bool,
    /// `auth_failure_delay_ms`; `None` keeps the server's random 500-1000 ms before every 401
    /// and 403 of the auto API (as the routes door's own key does there).
    pub auth_failure_delay: Option<Duration>,
    /// `[auto.rules.<collection>]`, sorted by collection.
    pub rules: Vec<CollectionRules>,
    /// `[[auto.publication]]`, in file order.
    pub publications: Vec<PublicationConfig>,
    /// `[auto.schemas]`: JSON Schema files by collection.
    pub schemas: Vec<SchemaFile>,
    /// `[auto.field_rules.<collection>]`: who sees which fields, by collection.
    pub field_rules: Vec<(String, portico_platform::FieldRules)>,
    /// `[auto.indexes]`: sorted indexes by collection.
    pub indexes: Vec<(String, Vec<portico_store::IndexSpec>)>,
    /// The line of the `[auto]` header, for messages.
    pub line: usize,
}

/// The allow rules of one collection; a write is allowed when any of its rules allows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectionRules {
    /// The collection.
    pub collection: String,
    /// `insert`.
    pub insert: Vec<Rule>,
    /// `update`.
    pub update: Vec<Rule>,
    /// `remove`.
    pub remove: Vec<Rule>,
    /// `read`: who may read the collection's documents where a publication's reply expands a
    /// relation into them (`?expand=`); none: never expanded on the auto API.
    pub read: Vec<Rule>,
    /// `auth = "optional"`: a write whose login token finds no user is refused with 401 instead
    /// of running anonymous.
    pub auth_optional: bool,
    /// The line of `[auto.rules.<collection>]`, for messages.
    pub line: usize,
}

/// One `[[auto.publication]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PublicationConfig {
    /// `name`.
    pub name: String,
    /// `collection`.
    pub collection: String,
    /// `selector` as JSON (default `{}`).
    pub selector: Value,
    /// `sort` as JSON.
    pub sort: Option<Value>,
    /// `fields` (a projection) as JSON.
    pub fields: Option<Value>,
    /// `url` (default `publications/<name>`).
    pub url: Option<String>,
    /// `http_method`, lower-case (default `get`).
    pub http_method: Option<String>,
    /// `auth_required` (default false): anonymous callers get nothing.
    pub auth_required: bool,
    /// `auth = "optional"`: a call whose login token finds no user is refused with 401 instead
    /// of running anonymous.
    pub auth_optional: bool,
    /// `owner_field`: the caller gets only documents whose field holds their id (anonymous
    /// callers get nothing).
    pub owner_field: Option<String>,
    /// The line of `name`, for messages.
    pub line: usize,
}

/// The selector value a publication's selector may hold to mean "the caller's id".
pub const USER_ID_PLACEHOLDER: &str = "$userId";

impl PublicationConfig {
    /// True when what it returns depends on the caller: `owner_field`, or a `"$userId"` value in
    /// the selector.
    pub fn is_caller_scoped(&self) -> bool {
        fn holds_placeholder(value: &Value) -> bool {
            match value {
                Value::String(s) => s == USER_ID_PLACEHOLDER,
                Value::Array(items) => items.iter().any(holds_placeholder),
                Value::Object(map) => map.values().any(holds_placeholder),
                _ => false,
            }
        }
        self.owner_field.is_some() || holds_placeholder(&self.selector)
    }

    /// The URL path it is served at, with a leading slash.
    pub fn path(&self) -> String {
        match &self.url {
            Some(url) => format!("/{}", url.trim_matches('/')),
            None => format!("/publications/{}", self.name),
        }
    }
}

/// Every mistake found in one config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    /// The file, as given.
    pub file: PathBuf,
    /// The mistakes, in line order.
    pub errors: Vec<ConfigError>,
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.errors.len();
        write!(
            f,
            "{}: {count} mistake{}",
            self.file.display(),
            if count == 1 { "" } else { "s" }
        )?;
        for error in &self.errors {
            write!(f, "\n  {}: {error}", self.file.display())?;
        }
        Ok(())
    }
}

impl Config {
    /// The collections the auto API serves writes for: `[auto] collections`, or every
    /// collection the config names anywhere when it has none.
    pub fn auto_write_collections(&self, auto: &AutoConfig) -> Vec<String> {
        match &auto.collections {
            Some(list) => list.clone(),
            None => {
                let mut all: Vec<String> = self
                    .apis
                    .iter()
                    .flat_map(|a| a.collections.iter().map(|c| c.name.clone()))
                    .chain(auto.rules.iter().map(|r| r.collection.clone()))
                    .chain(auto.publications.iter().map(|p| p.collection.clone()))
                    .chain(auto.object_id_collections.iter().cloned())
                    .collect();
                all.sort();
                all.dedup();
                all
            }
        }
    }

    /// Every collection the config names (route APIs, auto API writes, rules, publications,
    /// object-id collections), sorted, without duplicates.
    pub fn collection_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .apis
            .iter()
            .flat_map(|api| api.collections.iter().map(|c| c.name.clone()))
            .collect();
        if let Some(auto) = &self.auto {
            names.extend(auto.collections.iter().flatten().cloned());
            names.extend(auto.object_id_collections.iter().cloned());
            names.extend(auto.rules.iter().map(|r| r.collection.clone()));
            names.extend(auto.publications.iter().map(|p| p.collection.clone()));
        }
        names.extend(self.schemas.iter().map(|s| s.collection.clone()));
        names.extend(self.field_rules.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// Whether documents of `collection` get `createdAt` and `updatedAt`: yes unless a
    /// `[[api.collection]]` says `timestamps = false` or `[auto] no_timestamps` lists it.
    pub fn timestamps(&self, collection: &str) -> bool {
        let api_off = self
            .apis
            .iter()
            .flat_map(|api| &api.collections)
            .any(|c| c.name == collection && !c.timestamps);
        let auto_off = self
            .auto
            .as_ref()
            .is_some_and(|auto| auto.no_timestamps.iter().any(|n| n == collection));
        !(api_off || auto_off)
    }

    /// Reads the JSON Schema files the config names (`schema = "..."`), relative to the folder
    /// of the config file at `path`, into [`Config::schema_values`], and remembers that folder
    /// in [`Config::folder`].
    ///
    /// # Errors
    /// Every schema that cannot be read or is not a JSON object, each naming its line.
    pub fn read_schema_files(&mut self, path: &Path) -> Result<(), ConfigErrors> {
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let mut errors = Vec::new();
        for schema in &self.schemas {
            let file = folder.join(&schema.path);
            let mistake = |message: String| ConfigError {
                line: schema.line,
                column: 1,
                key: "schema".into(),
                message,
            };
            match std::fs::read_to_string(&file) {
                Ok(text) => match serde_json::from_str::<Value>(&text) {
                    Ok(value @ Value::Object(_)) => {
                        self.schema_values.insert(schema.collection.clone(), value);
                    }
                    Ok(_) => errors.push(mistake(format!(
                        "{}: a JSON Schema must be a JSON object",
                        schema.path
                    ))),
                    Err(e) => errors.push(mistake(format!("{}: not JSON: {e}", schema.path))),
                },
                Err(e) => errors.push(mistake(format!("cannot read {}: {e}", file.display()))),
            }
        }
        if !errors.is_empty() {
            return Err(ConfigErrors {
                file: path.to_owned(),
                errors,
            });
        }
        self.folder = Some(folder);
        Ok(())
    }

    /// Checks the text of a config file: its syntax, keys, types and values. It builds nothing:
    /// what the front doors refuse (two routes on one path, two `[[api]]` on one base path...) is
    /// found by building them, with [`crate::doors::Doors::build`].
    ///
    /// # Errors
    /// Every mistake, in line order.
    pub fn parse(text: &str) -> Result<Config, Vec<ConfigError>> {
        let (raw, mut errors) = diagnostic::parse_all::<RawConfig>(text);
        let config = raw.map(|raw| Checker::new(text, &mut errors).config(raw));
        errors.sort_by_key(|e| (e.line, e.column));
        errors.dedup();
        match config {
            Some(config) if errors.is_empty() => Ok(config),
            _ => Err(errors),
        }
    }
}

#[cfg(test)]
mod tests;
