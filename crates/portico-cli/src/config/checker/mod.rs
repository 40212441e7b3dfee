//! Checking a parsed file: raw structs in, [`Config`] out, every mistake collected with its place.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use toml::Spanned;

mod auto;
mod channels;
mod collection;
mod database;
mod field_rules;
mod indexes;
mod jobs;
mod metrics;
mod relations;
mod search;

use super::diagnostic::Source;
use super::raw::{OneOrMany, RawApi, RawConfig, RawLive, RawScripts, RawServer};
use super::{
    ApiConfig, Config, ConfigError, ConnectionLimits, RateLimit, SchemaFile, ScriptsConfig,
};

/// Turns raw structs into checked ones, collecting mistakes.
pub(super) struct Checker<'a> {
    source: Source<'a>,
    errors: &'a mut Vec<ConfigError>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(text: &'a str, errors: &'a mut Vec<ConfigError>) -> Self {
        Checker {
            source: Source::new(text),
            errors,
        }
    }

    fn error<T>(&mut self, spanned: &Spanned<T>, key: &str, message: impl Into<String>) {
        let err = self.source.error(spanned.span(), key, message);
        self.errors.push(err);
    }

    /// The number `value` holds when it is within `range` (inclusive), else `default` with the
    /// mistake noted; `default` when absent.
    pub(super) fn ranged(
        &mut self,
        value: Option<Spanned<u64>>,
        key: &str,
        range: (u64, u64),
        default: u64,
    ) -> u64 {
        match value {
            None => default,
            Some(v) if (range.0..=range.1).contains(v.get_ref()) => *v.get_ref(),
            Some(v) => {
                self.error(
                    &v,
                    key,
                    format!(
                        "{} is out of range; write {} to {}",
                        v.get_ref(),
                        range.0,
                        range.1
                    ),
                );
                default
            }
        }
    }

    /// The socket address `value` holds (`key` names it in the message, `example` shows the
    /// form), or `None` with the mistake noted.
    pub(super) fn address(
        &mut self,
        value: &Spanned<String>,
        key: &str,
        example: &str,
    ) -> Option<SocketAddr> {
        match value.get_ref().parse::<SocketAddr>() {
            Ok(addr) => Some(addr),
            Err(_) => {
                self.error(
                    value,
                    key,
                    format!(
                        "`{}` is not an address; write an IP and a port, as in \"{example}\"",
                        value.get_ref()
                    ),
                );
                None
            }
        }
    }

    fn line<T>(&self, spanned: &Spanned<T>) -> usize {
        self.source.position(spanned.span().start).0
    }

    pub(super) fn config(&mut self, mut raw: RawConfig) -> Config {
        let listen = raw
            .listen
            .take()
            .and_then(|listen| self.address(&listen, "listen", "127.0.0.1:3000"));
        let db = self.database(&mut raw);
        let trusted_proxies = self.trusted_proxies(raw.trusted_proxies.as_ref());
        let api_lines = self.source.header_lines("api");
        let apis: Vec<ApiConfig> = std::mem::take(&mut raw.api)
            .into_iter()
            .enumerate()
            .map(|(index, api)| self.api(api, api_lines.get(index).copied().unwrap_or(1)))
            .map(|api| ApiConfig {
                trusted_proxies: trusted_proxies.clone(),
                ..api
            })
            .collect();
        let auto = raw.auto.take().map(|auto| self.auto(auto));
        let admin = self.admin(raw.admin.take());
        let (accounts, email) = self.accounts(raw.accounts.take(), raw.email.take());
        let schemas = self.schemas(&apis, auto.as_ref());
        let (backups, log) = self.operations(raw.backups.take(), raw.log.take());
        let channel_limits = self.channel_limits(raw.live.as_ref());
        Config {
            channels: self.channel_rules(std::mem::take(&mut raw.channels)),
            channel_limits,
            jobs: self.jobs(raw.jobs.take()),
            cron: self.cron(std::mem::take(&mut raw.cron)),
            webhooks: self.webhooks(std::mem::take(&mut raw.webhooks)),
            limits: self.route_limits(std::mem::take(&mut raw.limits)),
            field_rules: self.merged_field_rules(&apis, auto.as_ref()),
            relations: self.merged_relations(&apis),
            search: self.merged_search(&apis),
            indexes: self.merged_indexes(&apis, auto.as_ref()),
            scripts: raw.scripts.take().map(|scripts| self.scripts(scripts)),
            schemas,
            schema_values: BTreeMap::new(),
            folder: None,
            live: raw
                .live
                .take()
                .map(|live| self.live(live))
                .unwrap_or_default(),
            listen,
            database: db.database,
            database_position: db.database_position,
            database_replicas: db.database_replicas,
            replica_max_lag: db.replica_max_lag,
            database_cache_bytes: db.database_cache_bytes,
            database_stamp_batch: db.database_stamp_batch,
            database_stamp_wait: db.database_stamp_wait,
            trusted_proxies,
            shutdown_grace: raw.shutdown_grace_seconds.map(Duration::from_secs),
            openapi: raw.openapi,
            metrics: self.metrics(raw.metrics.take()),
            apis,
            auto,
            admin,
            server: raw
                .server
                .take()
                .map(|s| self.server(s))
                .unwrap_or_default(),
            backups,
            log,
            files: self.files(raw.files.take()),
            accounts,
            email,
        }
    }

    /// `trusted_proxies`: addresses and networks whose forwarding headers are believed.
    fn trusted_proxies(
        &mut self,
        list: Option<&Spanned<Vec<String>>>,
    ) -> portico_edge::TrustedProxies {
        let Some(list) = list else {
            return portico_edge::TrustedProxies::none();
        };
        portico_edge::TrustedProxies::parse(list.get_ref()).unwrap_or_else(|message| {
            self.error(list, "trusted_proxies", message);
            portico_edge::TrustedProxies::none()
        })
    }

    /// `[admin]`, its mistakes noted.
    fn admin(&mut self, raw: Option<super::admin::RawAdmin>) -> super::AdminConfig {
        let (admin, mistakes) = raw.map(super::AdminConfig::check).unwrap_or_default();
        for (span, key, message) in mistakes {
            let err = self.source.error(span, key, message);
            self.errors.push(err);
        }
        admin
    }

    /// Every `[[limits]]`, their mistakes noted.
    fn route_limits(&mut self, raw: Vec<super::limits::RawRouteLimit>) -> Vec<super::RouteLimit> {
        let mut mistakes = Vec::new();
        let limits = raw
            .into_iter()
            .filter_map(|l| super::RouteLimit::check(l, &mut mistakes))
            .collect();
        for (span, key, message) in mistakes {
            let err = self.source.error(span, key, message);
            self.errors.push(err);
        }
        limits
    }

    /// `[accounts]` and `[email]`, their mistakes noted.
    fn accounts(
        &mut self,
        accounts: Option<super::accounts::RawAccounts>,
        email: Option<super::accounts::RawEmail>,
    ) -> (Option<super::AccountsSection>, Option<super::EmailConfig>) {
        let (accounts, mut mistakes) = match accounts.map(super::AccountsSection::check) {
            Some((section, mistakes)) => (Some(section), mistakes),
            None => (None, Vec::new()),
        };
        let email = email.map(|email| {
            let (email, more) = super::EmailConfig::check(email);
            mistakes.extend(more);
            email
        });
        for (span, key, message) in mistakes {
            let err = self.source.error(span, key, message);
            self.errors.push(err);
        }
        (accounts, email)
    }

    /// `[files]`, its mistakes noted.
    fn files(&mut self, raw: Option<super::files::RawFiles>) -> super::FilesSettings {
        let (files, mistakes) = super::files::check_settings(raw);
        for (span, key, message) in mistakes {
            let err = self.source.error(span, &key, message);
            self.errors.push(err);
        }
        files
    }

    /// The schema files of every collection (of the [[api]] tables and [auto]), one per
    /// collection: two different files for one collection are a mistake.
    fn schemas(&mut self, apis: &[ApiConfig], auto: Option<&super::AutoConfig>) -> Vec<SchemaFile> {
        let mut schemas: Vec<SchemaFile> = apis
            .iter()
            .flat_map(|api| &api.collections)
            .filter_map(|c| {
                c.schema.as_ref().map(|path| SchemaFile {
                    collection: c.name.clone(),
                    path: path.clone(),
                    line: c.line,
                })
            })
            .collect();
        if let Some(auto) = auto {
            schemas.extend(auto.schemas.iter().cloned());
        }
        schemas.sort_by(|a, b| a.collection.cmp(&b.collection));
        for pair in schemas.windows(2) {
            if pair[0].collection == pair[1].collection && pair[0].path != pair[1].path {
                self.errors.push(ConfigError {
                    line: pair[1].line,
                    column: 1,
                    key: "schema".into(),
                    message: format!(
                        "collection `{}` has two schema files: {} (line {}) and {}",
                        pair[0].collection, pair[0].path, pair[0].line, pair[1].path
                    ),
                });
            }
        }
        schemas.dedup_by(|a, b| a.collection == b.collection);
        schemas
    }

    /// `[backups]` and `[log]` (see `config/operations.rs`).
    fn operations(
        &mut self,
        backups: Option<super::operations::RawBackups>,
        log: Option<super::operations::RawLog>,
    ) -> (Option<super::BackupsConfig>, super::LogConfig) {
        let line = self.source.header_line("backups").unwrap_or(1);
        let (backups, mut mistakes) = match backups {
            Some(raw) => {
                let (config, mistakes) = super::BackupsConfig::check(raw, line);
                (Some(config), mistakes)
            }
            None => (None, Vec::new()),
        };
        let (log, log_mistakes) = log.map(super::LogConfig::check).unwrap_or_default();
        mistakes.extend(log_mistakes);
        for (span, key, message) in mistakes {
            let err = self.source.error(span, key, message);
            self.errors.push(err);
        }
        (backups, log)
    }

    fn server(&mut self, raw: RawServer) -> ConnectionLimits {
        let defaults = ConnectionLimits::default();
        let mut secs = |value: Option<Spanned<u64>>, key: &str, default: Duration| match value {
            None => default,
            Some(v) if (1..=3600).contains(v.get_ref()) => Duration::from_secs(*v.get_ref()),
            Some(v) => {
                self.error(
                    &v,
                    key,
                    format!("{} is out of range; write 1 to 3600 seconds", v.get_ref()),
                );
                default
            }
        };
        let header_timeout = secs(
            raw.header_timeout_secs,
            "server.header_timeout_secs",
            defaults.header_timeout,
        );
        let body_timeout = secs(
            raw.body_timeout_secs,
            "server.body_timeout_secs",
            defaults.body_timeout,
        );
        let keep_alive_timeout = secs(
            raw.keep_alive_timeout_secs,
            "server.keep_alive_timeout_secs",
            defaults.keep_alive_timeout,
        );
        let max_connections = match raw.max_connections {
            None => defaults.max_connections,
            Some(v) if (1..=1_000_000).contains(v.get_ref()) => {
                usize::try_from(*v.get_ref()).unwrap_or(defaults.max_connections)
            }
            Some(v) => {
                self.error(
                    &v,
                    "server.max_connections",
                    format!("{} is out of range; write 1 to 1000000", v.get_ref()),
                );
                defaults.max_connections
            }
        };
        let max_inflight_body = match raw.max_inflight_body_mb {
            None => defaults.max_inflight_body,
            Some(v) if (1..=1_048_576).contains(v.get_ref()) => v.get_ref() * 1024 * 1024,
            Some(v) => {
                self.error(
                    &v,
                    "server.max_inflight_body_mb",
                    format!("{} is out of range; write 1 to 1048576 (MiB)", v.get_ref()),
                );
                defaults.max_inflight_body
            }
        };
        ConnectionLimits {
            header_timeout,
            body_timeout,
            keep_alive_timeout,
            max_connections,
            max_inflight_body,
        }
    }

    /// `[live]`: each limit within its range.
    fn live(&mut self, raw: RawLive) -> portico_platform::LiveConfig {
        let defaults = portico_platform::LiveConfig::default();
        let mut number =
            |value: Option<Spanned<u64>>, key: &str, range: (u64, u64), default: u64| {
                self.ranged(value, key, range, default)
            };
        let as_usize = |n: u64, default: usize| usize::try_from(n).unwrap_or(default);
        let max_streams = number(
            raw.max_streams,
            "live.max_streams",
            (0, 1_000_000),
            defaults.max_streams as u64,
        );
        let buffer = number(
            raw.buffer,
            "live.buffer",
            (1, 65_536),
            defaults.buffer as u64,
        );
        let ping = number(
            raw.ping_secs,
            "live.ping_secs",
            (1, 3600),
            defaults.ping.as_secs(),
        );
        {
            let mut o = portico_platform::LiveConfig::default();
            o.max_streams = as_usize(max_streams, defaults.max_streams);
            o.buffer = as_usize(buffer, defaults.buffer);
            o.ping = Duration::from_secs(ping);
            o
        }
    }

    fn path_part(&mut self, value: &Spanned<String>, key: &str, allow_params: bool) -> String {
        let text = value.get_ref().trim_matches('/').to_owned();
        if let Err(message) = check_path(&text, allow_params) {
            self.error(value, key, message);
        }
        text
    }

    fn headers(
        &mut self,
        headers: Option<Spanned<BTreeMap<String, String>>>,
        key: &str,
    ) -> Vec<(String, String)> {
        let Some(headers) = headers else {
            return Vec::new();
        };
        for (name, value) in headers.get_ref() {
            if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                self.error(
                    &headers,
                    key,
                    format!("`{name}` is not a valid header name"),
                );
            } else if axum::http::HeaderValue::from_str(value).is_err() {
                self.error(
                    &headers,
                    key,
                    format!("the value of `{name}` is not a valid header value"),
                );
            }
        }
        headers.into_inner().into_iter().collect()
    }

    fn api(&mut self, raw: RawApi, line: usize) -> ApiConfig {
        let api_path = match &raw.api_path {
            Some(path) => {
                self.path_part(path, "api.api_path", false);
                path.get_ref().clone()
            }
            None => "api/".to_owned(),
        };
        let version = raw.version.as_ref().map(|v| {
            self.path_part(v, "api.version", false);
            v.get_ref().clone()
        });
        let enable_cors = raw.enable_cors.unwrap_or(true);
        let default_headers = self.headers(raw.default_headers, "api.default_headers");
        let login_rate_limit = raw.login_rate_limit.map(|limit| {
            let inner = limit.get_ref();
            if inner.attempts == 0 || inner.per_seconds == 0 {
                self.error(
                    &limit,
                    "api.login_rate_limit",
                    "`attempts` and `per_seconds` must both be at least 1",
                );
            }
            RateLimit {
                attempts: inner.attempts,
                per: Duration::from_secs(inner.per_seconds),
            }
        });
        let cors_origins = raw.cors_origins.map(|origins| {
            if !enable_cors {
                self.error(&origins, "api.cors_origins", "`cors_origins` needs `enable_cors = true`");
            }
            for origin in origins.get_ref() {
                if !is_origin(origin) {
                    self.error(
                        &origins,
                        "api.cors_origins",
                        format!("`{origin}` is not an origin; write it as in \"https://app.example.com\""),
                    );
                }
            }
            origins.into_inner()
        });
        let collections = raw
            .collection
            .into_iter()
            .map(|c| self.collection(c))
            .collect();
        ApiConfig {
            trusted_proxies: portico_edge::TrustedProxies::none(),
            api_path,
            version,
            use_default_auth: raw.use_default_auth.unwrap_or(false),
            pretty_json: raw.pretty_json.unwrap_or(false),
            enable_cors,
            default_headers,
            auth_failure_delay: raw.auth_failure_delay_ms.map(Duration::from_millis),
            login_rate_limit,
            cors_origins,
            batch_limit: raw
                .batch_limit
                .unwrap_or(portico_routes::DEFAULT_BATCH_LIMIT),
            collections,
            line,
        }
    }

    fn roles(&mut self, roles: Option<OneOrMany>, at: &Spanned<String>, key: &str) -> Vec<String> {
        let roles = roles.map(|r| r.0).unwrap_or_default();
        if roles.iter().any(|r| r.trim().is_empty()) {
            self.error(at, key, "a role name is empty");
        }
        roles
    }

    /// A schema file name: a relative path to a `.json` file.
    fn schema_path(&mut self, path: &Spanned<String>, key: &str) -> String {
        let text = path.get_ref();
        if text.trim().is_empty() || !text.ends_with(".json") {
            self.error(
                path,
                key,
                "write the path of a JSON Schema file, as in \"schemas/todos.json\"",
            );
        }
        text.clone()
    }

    fn scripts(&mut self, spanned: Spanned<RawScripts>) -> ScriptsConfig {
        let line = self.line(&spanned);
        let raw = spanned.into_inner();
        let main = raw.main.get_ref();
        let is_module = [".js", ".mjs", ".ts", ".mts"]
            .iter()
            .any(|ext| main.ends_with(ext));
        if !is_module || std::path::Path::new(main).is_absolute() {
            self.error(
                &raw.main,
                "scripts.main",
                "write the path of a .js or .ts file relative to the config file's folder, as in \"server/main.ts\"",
            );
        }
        let mut positive = |value: Option<Spanned<u64>>, key: &str, default: u64| match value {
            Some(v) if *v.get_ref() == 0 => {
                self.error(&v, key, "must be at least 1");
                default
            }
            Some(v) => v.into_inner(),
            None => default,
        };
        let timeout = positive(raw.timeout_ms, "scripts.timeout_ms", 5000);
        let memory_mb = positive(raw.memory_mb, "scripts.memory_mb", 64);
        let runtimes = raw
            .runtimes
            .map(|r| positive(Some(r), "scripts.runtimes", 1));
        let fetch_hosts = raw.fetch_hosts.map(Spanned::into_inner).unwrap_or_default();
        ScriptsConfig {
            main: std::path::PathBuf::from(raw.main.into_inner()),
            timeout: Duration::from_millis(timeout),
            memory_mb: usize::try_from(memory_mb).unwrap_or(usize::MAX),
            fetch_hosts,
            runtimes: runtimes.map(|r| usize::try_from(r).unwrap_or(1)),
            line,
        }
    }

    fn collection_names(&mut self, names: Vec<Spanned<String>>, key: &str) -> Vec<String> {
        names
            .into_iter()
            .map(|name| {
                if let Err(message) = check_collection_name(name.get_ref()) {
                    self.error(&name, key, message);
                }
                name.into_inner()
            })
            .collect()
    }
}

/// Checks the form of a store URL (opening it is the store's business).
pub fn check_database_url(url: &str) -> Result<(), String> {
    if url == "memory:" {
        return Ok(());
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        return if path.trim().is_empty() {
            Err("`sqlite:` needs a file path, as in \"sqlite:./portico.db\"".to_owned())
        } else {
            Ok(())
        };
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(());
    }
    Err(format!(
        "`{url}` is not a store URL; expected \"memory:\", \"sqlite:PATH\" or \"postgres://...\""
    ))
}

fn check_collection_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 120
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !name.starts_with(['.', '-']);
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` cannot name a collection; use letters, digits, `_`, `-` and `.`"
        ))
    }
}

fn check_field_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.starts_with('$')
        || name == "_id"
        || name.split('.').any(str::is_empty)
    {
        Err(format!(
            "`{name}` cannot be an owner field (empty, `$`-prefixed or `_id`)"
        ))
    } else {
        Ok(())
    }
}

/// A URL path (without surrounding slashes): segments of URL-safe characters, and `:name`
/// parameters when `allow_params`.
fn check_path(path: &str, allow_params: bool) -> Result<(), String> {
    for segment in path.split('/') {
        if segment.is_empty() && !path.is_empty() {
            return Err(format!("`{path}` has an empty segment (`//`)"));
        }
        if let Some(param) = segment.strip_prefix(':') {
            if !allow_params {
                return Err(format!("`{path}` cannot hold a `:` parameter here"));
            }
            if param.is_empty() || !param.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "`{segment}` in `{path}` is not a valid parameter name"
                ));
            }
            continue;
        }
        if let Some(bad) = segment
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "-._~!$&'()+,;=@".contains(*c)))
        {
            return Err(format!(
                "`{path}` holds `{bad}`, which a URL path segment cannot hold"
            ));
        }
    }
    Ok(())
}

fn is_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !rest.contains('/')
        && axum::http::HeaderValue::from_str(origin).is_ok()
}
