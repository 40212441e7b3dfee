//! Checking a parsed file: raw structs in, [`Config`] out, every mistake collected with its place.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use portico_rest::Op;
use serde_json::Value;
use toml::Spanned;

mod metrics;

use super::diagnostic::Source;
use super::raw::{
    OneOrMany, RawApi, RawAuto, RawCollection, RawConfig, RawEndpoint, RawLive, RawPublication,
    RawScripts, RawServer,
};
use super::{
    ApiConfig, AutoConfig, CollectionConfig, CollectionRules, Config, ConfigError,
    ConnectionLimits, EndpointOptions, PublicationConfig, RateLimit, Rule, SchemaFile,
    ScriptsConfig, value,
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

    pub(super) fn config(&mut self, raw: RawConfig) -> Config {
        let listen = raw
            .listen
            .and_then(|listen| self.address(&listen, "listen", "127.0.0.1:3000"));
        let database_position = raw
            .database
            .as_ref()
            .map(|db| self.source.position(db.span().start));
        let database = raw
            .database
            .and_then(|db| match check_database_url(db.get_ref()) {
                Ok(()) => Some(db.into_inner()),
                Err(message) => {
                    self.error(&db, "database", message);
                    None
                }
            });
        let api_lines = self.source.header_lines("api");
        let apis: Vec<ApiConfig> = raw
            .api
            .into_iter()
            .enumerate()
            .map(|(index, api)| self.api(api, api_lines.get(index).copied().unwrap_or(1)))
            .collect();
        let auto = raw.auto.map(|auto| self.auto(auto));
        let (admin, mistakes) = raw.admin.map(super::AdminConfig::check).unwrap_or_default();
        for (span, key, message) in mistakes {
            let err = self.source.error(span, key, message);
            self.errors.push(err);
        }
        let trusted_proxies = match &raw.trusted_proxies {
            Some(list) => match portico_edge::TrustedProxies::parse(list.get_ref()) {
                Ok(proxies) => proxies,
                Err(message) => {
                    self.error(list, "trusted_proxies", message);
                    portico_edge::TrustedProxies::none()
                }
            },
            None => portico_edge::TrustedProxies::none(),
        };
        let apis: Vec<ApiConfig> = apis
            .into_iter()
            .map(|api: ApiConfig| ApiConfig {
                trusted_proxies: trusted_proxies.clone(),
                ..api
            })
            .collect();
        let server = raw
            .server
            .map(|server| self.server(server))
            .unwrap_or_default();
        let metrics = self.metrics(raw.metrics);
        let live = raw.live.map(|live| self.live(live)).unwrap_or_default();
        let scripts = raw.scripts.map(|scripts| self.scripts(scripts));
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
        if let Some(auto) = &auto {
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
        let (backups, log) = self.operations(raw.backups, raw.log);
        Config {
            scripts,
            schemas,
            schema_values: BTreeMap::new(),
            folder: None,
            live,
            listen,
            database,
            database_position,
            trusted_proxies,
            shutdown_grace: raw.shutdown_grace_seconds.map(Duration::from_secs),
            openapi: raw.openapi,
            metrics,
            apis,
            auto,
            admin,
            server,
            backups,
            log,
        }
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
            |value: Option<Spanned<u64>>, key: &str, range: (u64, u64), default: u64| match value {
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
        portico_platform::LiveConfig {
            max_streams: as_usize(max_streams, defaults.max_streams),
            buffer: as_usize(buffer, defaults.buffer),
            ping: Duration::from_secs(ping),
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
            batch_limit: raw.batch_limit.unwrap_or(portico_rest::DEFAULT_BATCH_LIMIT),
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

    fn collection(&mut self, raw: RawCollection) -> CollectionConfig {
        let key = "api.collection";
        if let Err(message) = check_collection_name(raw.name.get_ref()) {
            self.error(&raw.name, &format!("{key}.name"), message);
        }
        let path = match &raw.path {
            Some(path) => self.path_part(path, &format!("{key}.path"), true),
            None => raw.name.get_ref().clone(),
        };
        let role_required = self.roles(
            raw.role_required,
            &raw.name,
            &format!("{key}.role_required"),
        );
        let mut excluded = BTreeSet::new();
        if let Some(list) = &raw.excluded_endpoints {
            for name in &list.get_ref().0 {
                match name.parse::<Op>().ok() {
                    Some(endpoint) => {
                        excluded.insert(endpoint);
                    }
                    None => self.error(
                        list,
                        &format!("{key}.excluded_endpoints"),
                        format!("`{name}` is not an endpoint; expected getAll, post, get, put, patch or delete"),
                    ),
                }
            }
        }
        let raw_endpoints = raw.endpoints.unwrap_or_default();
        let settings = [
            (Op::GetAll, raw_endpoints.get_all),
            (Op::Post, raw_endpoints.post),
            (Op::Get, raw_endpoints.get),
            (Op::Put, raw_endpoints.put),
            (Op::Patch, raw_endpoints.patch),
            (Op::Delete, raw_endpoints.delete),
        ];
        let mut endpoints = Vec::new();
        for (endpoint, setting) in settings {
            let options = match setting {
                Some(RawEndpoint::Enabled(false)) => continue,
                None | Some(RawEndpoint::Enabled(true)) => EndpointOptions::default(),
                Some(RawEndpoint::Options(options)) => EndpointOptions {
                    auth_required: options.auth_required,
                    role_required: self.roles(
                        options.role_required,
                        &raw.name,
                        &format!("{key}.endpoints.{}.role_required", endpoint.name()),
                    ),
                },
            };
            if !excluded.contains(&endpoint) {
                endpoints.push((endpoint, options));
            }
        }
        // Safe by default: with no auth key on the collection, reads stay public and every write
        // endpoint that says nothing itself needs a logged-in caller. `auth_required = false`
        // written out keeps writes open (and `portico check` warns).
        if raw.name.get_ref() == portico_platform::USERS {
            // Changing or removing an account needs to know who asks (see `serve::rest`), so
            // these endpoints always identify the caller, whatever `auth_required` says.
            for (endpoint, options) in &mut endpoints {
                if endpoint.on_item() && *endpoint != Op::Get {
                    options.auth_required = Some(true);
                }
            }
        }
        if raw.auth_required.is_none() && role_required.is_empty() {
            for (endpoint, options) in &mut endpoints {
                let write = !matches!(endpoint, Op::Get | Op::GetAll);
                if write && options.auth_required.is_none() && options.role_required.is_empty() {
                    options.auth_required = Some(true);
                }
            }
        }
        if endpoints.is_empty() {
            self.error(
                &raw.name,
                &format!("{key}.name"),
                "every endpoint of this collection is excluded",
            );
        }
        let is_users = raw.name.get_ref() == portico_platform::USERS;
        let mut self_only = false;
        let owner_field = raw.owner_field.and_then(|field| {
            if is_users && field.get_ref() == "_id" {
                // On accounts, "owned by the caller" means "is the caller".
                self_only = true;
                return None;
            }
            if let Err(message) = check_field_name(field.get_ref()) {
                self.error(&field, &format!("{key}.owner_field"), message);
            }
            Some(field.into_inner())
        });
        if let Some(flag) = &raw.self_only {
            if !is_users {
                self.error(
                    flag,
                    &format!("{key}.self_only"),
                    "`self_only` applies to the `users` collection only; use `owner_field` for others",
                );
            }
            self_only |= *flag.get_ref();
        }
        if self_only {
            // "Own account only" needs to know the caller on every endpoint, as an owner scope
            // does; written here so the route table shows it.
            for (_, options) in &mut endpoints {
                options.auth_required = Some(true);
            }
        }
        let admin_role = match raw.admin_role {
            Some(roles) => {
                if !is_users {
                    self.error(
                        &roles,
                        &format!("{key}.admin_role"),
                        "`admin_role` applies to the `users` collection only; use `role_required` for others",
                    );
                }
                let roles = roles.into_inner().0;
                if roles.iter().any(|r| r.trim().is_empty()) {
                    self.error(
                        &raw.name,
                        &format!("{key}.admin_role"),
                        "a role name is empty",
                    );
                }
                roles
            }
            None => Vec::new(),
        };
        let max_page_size = raw.max_page_size.map(|size| {
            if *size.get_ref() == 0 {
                self.error(&size, &format!("{key}.max_page_size"), "must be at least 1");
            }
            size.into_inner()
        });
        CollectionConfig {
            line: self.line(&raw.name),
            name: raw.name.into_inner(),
            path,
            auth_required: raw.auth_required.unwrap_or(false),
            role_required,
            endpoints,
            owner_field,
            max_page_size,
            admin_role,
            self_only,
            timestamps: raw.timestamps.unwrap_or(true),
            schema: raw
                .schema
                .map(|schema| self.schema_path(&schema, &format!("{key}.schema"))),
        }
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

    fn auto(&mut self, raw: RawAuto) -> AutoConfig {
        let collections = raw
            .collections
            .map(|c| self.collection_names(c.into_inner(), "auto.collections"));
        let object_id_collections =
            self.collection_names(raw.object_id_collections, "auto.object_id_collections");
        let no_timestamps = self.collection_names(raw.no_timestamps, "auto.no_timestamps");
        let response_headers = self.headers(raw.response_headers, "auto.response_headers");
        let mut rules = Vec::new();
        for (collection, spanned) in raw.rules {
            let key = format!("auto.rules.{collection}");
            if let Err(message) = check_collection_name(&collection) {
                self.error(&spanned, &key, message);
            }
            if let Some(list) = &collections {
                if !list.contains(&collection) {
                    self.error(
                        &spanned,
                        &key,
                        format!(
                            "rules for `{collection}`, but `{collection}` is not in `auto.collections`, so it has no write endpoints"
                        ),
                    );
                }
            }
            let line = self.line(&spanned);
            let raw_rules = spanned.into_inner();
            let mut parse = |rule: Option<Spanned<OneOrMany>>, op: &str| -> Vec<Rule> {
                let Some(rule) = rule else {
                    return Vec::new();
                };
                let mut parsed = Vec::new();
                for text in &rule.get_ref().0 {
                    match text.parse::<Rule>() {
                        Ok(r) => parsed.push(r),
                        Err(message) => self.error(&rule, &format!("{key}.{op}"), message),
                    }
                }
                parsed
            };
            let insert_span = raw_rules.insert.as_ref().map(|r| r.span());
            let insert = parse(raw_rules.insert, "insert");
            let update = parse(raw_rules.update, "update");
            let remove = parse(raw_rules.remove, "remove");
            if collection == portico_platform::USERS
                && insert.iter().any(|rule| *rule != Rule::Nobody)
            {
                // A client insert into `users` would make an account without a hashed password
                // (and choose its fields); sign-up goes through `/users/register` instead.
                if let Some(span) = insert_span {
                    let err = self.source.error(
                        span,
                        &format!("{key}.insert"),
                        "clients may not insert into `users`: accounts are created by `/users/register` (`allow_register`) or `portico users add`",
                    );
                    self.errors.push(err);
                }
            }
            rules.push(CollectionRules {
                collection,
                insert,
                update,
                remove,
                line,
            });
        }
        let mut schemas = Vec::new();
        for (collection, path) in raw.schemas {
            let key = format!("auto.schemas.{collection}");
            if let Err(message) = check_collection_name(&collection) {
                self.error(&path, &key, message);
            }
            let line = self.line(&path);
            schemas.push(SchemaFile {
                collection,
                path: self.schema_path(&path, &key),
                line,
            });
        }
        let mut names = BTreeSet::new();
        let publications = raw
            .publication
            .into_iter()
            .filter_map(|p| {
                let name = p.name.get_ref().clone();
                let duplicate = !names.insert(name.clone());
                if duplicate {
                    self.error(
                        &p.name,
                        "auto.publication.name",
                        format!("a publication named `{name}` is declared twice"),
                    );
                }
                self.publication(p)
            })
            .collect();
        AutoConfig {
            collections,
            object_id_collections,
            no_timestamps,
            response_headers,
            allow_register: raw.allow_register.unwrap_or(true),
            rules,
            publications,
            schemas,
            line: self.source.header_line("auto").unwrap_or(1),
        }
    }

    fn publication(&mut self, raw: RawPublication) -> Option<PublicationConfig> {
        let key = "auto.publication";
        let name = raw.name.get_ref();
        if name.trim().is_empty() || name.contains('/') || name == "api-routes" {
            self.error(
                &raw.name,
                &format!("{key}.name"),
                format!("`{name}` cannot name a publication (empty, a `/`, or the reserved `api-routes`)"),
            );
        }
        if let Err(message) = check_collection_name(raw.collection.get_ref()) {
            self.error(&raw.collection, &format!("{key}.collection"), message);
        }
        let mut json = |table: Option<Spanned<toml::Table>>, field: &str| -> Option<Value> {
            let table = table?;
            let json = value::table_to_json(table.get_ref());
            let parsed = match field {
                "selector" => portico_store::Selector::parse(&json).map(|_| ()),
                "sort" => portico_store::Sort::parse(&json).map(|_| ()),
                _ => portico_store::Projection::parse(&json).map(|_| ()),
            };
            if let Err(err) = parsed {
                self.error(&table, &format!("{key}.{field}"), err.to_string());
            }
            Some(json)
        };
        let selector =
            json(raw.selector, "selector").unwrap_or_else(|| Value::Object(Default::default()));
        let sort = json(raw.sort, "sort");
        let fields = json(raw.fields, "fields");
        let url = raw.url.map(|url| {
            let text = url.get_ref().trim_matches('/');
            if let Err(message) = check_path(text, true) {
                self.error(&url, &format!("{key}.url"), message);
            }
            text.to_owned()
        });
        let http_method = raw.http_method.map(|m| {
            let lower = m.get_ref().to_ascii_lowercase();
            if !["get", "post", "put", "patch", "delete"].contains(&lower.as_str()) {
                self.error(
                    &m,
                    &format!("{key}.http_method"),
                    format!(
                        "`{}` is not one of get, post, put, patch, delete",
                        m.get_ref()
                    ),
                );
            }
            lower
        });
        let owner_field = raw.owner_field.map(|field| {
            if let Err(message) = check_field_name(field.get_ref()) {
                self.error(&field, &format!("{key}.owner_field"), message);
            }
            field.into_inner()
        });
        Some(PublicationConfig {
            owner_field,
            line: self.line(&raw.name),
            name: raw.name.into_inner(),
            collection: raw.collection.into_inner(),
            selector,
            sort,
            fields,
            url,
            http_method,
            auth_required: raw.auth_required.unwrap_or(false),
        })
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
