//! The config file exactly as written: serde structs that mirror the TOML keys one to one.
//!
//! Every struct refuses unknown keys, so a misspelt key is a mistake reported with its line, never
//! silently ignored. Fields whose meaning is checked after parsing (paths, rule strings, ...) keep
//! their place in the file with [`Spanned`], so those mistakes name their line too.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub(crate) listen: Option<Spanned<String>>,
    pub(crate) database: Option<Spanned<String>>,
    pub(crate) database_replicas: Option<Spanned<Vec<String>>>,
    pub(crate) replica_max_lag_ms: Option<Spanned<u64>>,
    pub(crate) database_cache_mb: Option<Spanned<u64>>,
    pub(crate) database_stamp_batch: Option<Spanned<u64>>,
    pub(crate) database_stamp_wait_us: Option<Spanned<u64>>,
    pub(crate) shutdown_grace_seconds: Option<u64>,
    pub(crate) trusted_proxies: Option<Spanned<Vec<String>>>,
    pub(crate) openapi: Option<bool>,
    pub(crate) metrics: Option<RawMetrics>,
    #[serde(default)]
    pub(crate) api: Vec<RawApi>,
    pub(crate) auto: Option<RawAuto>,
    pub(crate) admin: Option<super::admin::RawAdmin>,
    pub(crate) server: Option<RawServer>,
    pub(crate) live: Option<RawLive>,
    #[serde(default)]
    pub(crate) channels: Vec<RawChannel>,
    pub(crate) jobs: Option<RawJobs>,
    #[serde(default)]
    pub(crate) cron: Vec<RawCron>,
    #[serde(default)]
    pub(crate) webhooks: Vec<RawWebhook>,
    #[serde(default)]
    pub(crate) limits: Vec<super::limits::RawRouteLimit>,
    pub(crate) scripts: Option<Spanned<RawScripts>>,
    pub(crate) backups: Option<super::operations::RawBackups>,
    pub(crate) log: Option<super::operations::RawLog>,
    pub(crate) files: Option<super::files::RawFiles>,
    pub(crate) accounts: Option<super::accounts::RawAccounts>,
    pub(crate) email: Option<super::accounts::RawEmail>,
}

/// `[scripts]`: application logic in JavaScript or TypeScript.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScripts {
    pub(crate) main: Spanned<String>,
    pub(crate) timeout_ms: Option<Spanned<u64>>,
    pub(crate) memory_mb: Option<Spanned<u64>>,
    pub(crate) fetch_hosts: Option<Spanned<Vec<String>>>,
    pub(crate) runtimes: Option<Spanned<u64>>,
}

/// `[live]`: limits of live streams (server-sent events).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLive {
    pub(crate) max_streams: Option<Spanned<u64>>,
    pub(crate) buffer: Option<Spanned<u64>>,
    pub(crate) ping_secs: Option<Spanned<u64>>,
    pub(crate) max_channels: Option<Spanned<u64>>,
    pub(crate) max_members: Option<Spanned<u64>>,
    pub(crate) max_message_bytes: Option<Spanned<u64>>,
    pub(crate) max_meta_bytes: Option<Spanned<u64>>,
    pub(crate) max_frame_bytes: Option<Spanned<u64>>,
    pub(crate) frames_per_second: Option<Spanned<u64>>,
    pub(crate) bytes_per_second: Option<Spanned<u64>>,
    pub(crate) socket_queue: Option<Spanned<u64>>,
    pub(crate) idle_timeout_secs: Option<Spanned<u64>>,
    pub(crate) heartbeat_ms: Option<Spanned<u64>>,
    pub(crate) presence_timeout_ms: Option<Spanned<u64>>,
}

/// `[[channels]]`: who may join, send to and track presence in the channels a pattern names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawChannel {
    pub(crate) pattern: Spanned<String>,
    pub(crate) join: Option<Spanned<String>>,
    pub(crate) send: Option<Spanned<String>>,
    pub(crate) track: Option<Spanned<String>>,
}

/// `[jobs]`: the job worker's pace and the queue's limits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJobs {
    pub(crate) concurrency: Option<Spanned<u64>>,
    pub(crate) lease_ms: Option<Spanned<u64>>,
    pub(crate) max_jobs: Option<Spanned<u64>>,
    pub(crate) max_args_kb: Option<Spanned<u64>>,
    pub(crate) poll_ms: Option<Spanned<u64>>,
    pub(crate) webhook_retry_ms: Option<Spanned<u64>>,
    pub(crate) webhook_timeout_ms: Option<Spanned<u64>>,
}

/// `[[cron]]`: a job enqueued at each due time of a cron expression.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCron {
    pub(crate) name: Spanned<String>,
    pub(crate) schedule: Spanned<String>,
    pub(crate) timezone: Option<Spanned<String>>,
    pub(crate) job: Spanned<String>,
}

/// `[[webhooks]]`: a receiver of signed events.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWebhook {
    pub(crate) url: Spanned<String>,
    pub(crate) collection: Option<Spanned<String>>,
    pub(crate) events: Option<Spanned<Vec<String>>>,
    pub(crate) secret_env: Spanned<String>,
}

/// `[server]`: connection limits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub(crate) header_timeout_secs: Option<Spanned<u64>>,
    pub(crate) body_timeout_secs: Option<Spanned<u64>>,
    pub(crate) keep_alive_timeout_secs: Option<Spanned<u64>>,
    pub(crate) max_connections: Option<Spanned<u64>>,
    pub(crate) max_inflight_body_mb: Option<Spanned<u64>>,
}

/// `[metrics]`: the Prometheus endpoint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetrics {
    pub(crate) enabled: Option<bool>,
    pub(crate) listen: Option<Spanned<String>>,
}

/// One `[[api]]` table: a route API object.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApi {
    pub(crate) api_path: Option<Spanned<String>>,
    pub(crate) version: Option<Spanned<String>>,
    pub(crate) use_default_auth: Option<bool>,
    pub(crate) pretty_json: Option<bool>,
    pub(crate) enable_cors: Option<bool>,
    pub(crate) default_headers: Option<Spanned<BTreeMap<String, String>>>,
    pub(crate) auth_failure_delay_ms: Option<u64>,
    pub(crate) login_rate_limit: Option<Spanned<RawRateLimit>>,
    pub(crate) cors_origins: Option<Spanned<Vec<String>>>,
    pub(crate) batch_limit: Option<usize>,
    #[serde(default)]
    pub(crate) collection: Vec<RawCollection>,
}

/// `login_rate_limit = { attempts = 5, per_seconds = 10 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRateLimit {
    pub(crate) attempts: u32,
    pub(crate) per_seconds: u64,
}

/// One `[[api.collection]]` table: a generated collection.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCollection {
    pub(crate) name: Spanned<String>,
    pub(crate) path: Option<Spanned<String>>,
    pub(crate) auth_required: Option<bool>,
    pub(crate) auth: Option<Spanned<String>>,
    pub(crate) role_required: Option<OneOrMany>,
    pub(crate) excluded_endpoints: Option<Spanned<OneOrMany>>,
    pub(crate) endpoints: Option<RawEndpoints>,
    pub(crate) owner_field: Option<Spanned<String>>,
    pub(crate) max_page_size: Option<Spanned<u64>>,
    pub(crate) admin_role: Option<Spanned<OneOrMany>>,
    pub(crate) self_only: Option<Spanned<bool>>,
    pub(crate) timestamps: Option<bool>,
    pub(crate) schema: Option<Spanned<String>>,
    pub(crate) field_rules: Option<Spanned<BTreeMap<String, OneOrMany>>>,
    pub(crate) relations: Option<Spanned<BTreeMap<String, String>>>,
    pub(crate) search: Option<Spanned<Vec<String>>>,
    pub(crate) indexes: Option<Spanned<Vec<toml::Value>>>,
    pub(crate) files: Option<Spanned<BTreeMap<String, super::files::RawFileField>>>,
}

/// `endpoints = { getAll = {...}, put = false }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEndpoints {
    #[serde(rename = "getAll")]
    pub(crate) get_all: Option<RawEndpoint>,
    pub(crate) post: Option<RawEndpoint>,
    pub(crate) get: Option<RawEndpoint>,
    pub(crate) put: Option<RawEndpoint>,
    pub(crate) patch: Option<RawEndpoint>,
    pub(crate) delete: Option<RawEndpoint>,
}

/// One endpoint's setting: `false` (not generated), `true` (generated as usual) or its options.
#[derive(Debug)]
pub(crate) enum RawEndpoint {
    /// `true` or `false`.
    Enabled(bool),
    /// `{ auth_required = ..., role_required = ... }`.
    Options(RawEndpointOptions),
}

/// The options of one generated endpoint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEndpointOptions {
    pub(crate) auth_required: Option<bool>,
    pub(crate) auth: Option<Spanned<String>>,
    pub(crate) role_required: Option<OneOrMany>,
}

impl<'de> Deserialize<'de> for RawEndpoint {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Written by hand instead of `#[serde(untagged)]`: an untagged enum replaces the inner
        // error ("unknown field `auth_requried`") with "did not match any variant".
        struct EndpointVisitor;
        impl<'de> Visitor<'de> for EndpointVisitor {
            type Value = RawEndpoint;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`false`, `true` or a table of endpoint options")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawEndpoint, E> {
                Ok(RawEndpoint::Enabled(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawEndpoint, A::Error> {
                RawEndpointOptions::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawEndpoint::Options)
            }
        }
        deserializer.deserialize_any(EndpointVisitor)
    }
}

/// A string or an array of strings (`role_required = "editor"` or `["editor", "admin"]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OneOrMany(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrManyVisitor;
        impl<'de> Visitor<'de> for OneOrManyVisitor {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    items.push(item);
                }
                Ok(OneOrMany(items))
            }
        }
        deserializer.deserialize_any(OneOrManyVisitor)
    }
}

/// The `[auto]` table: the auto API.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuto {
    pub(crate) collections: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub(crate) object_id_collections: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) no_timestamps: Vec<Spanned<String>>,
    pub(crate) response_headers: Option<Spanned<BTreeMap<String, String>>>,
    pub(crate) allow_register: Option<bool>,
    pub(crate) auth_failure_delay_ms: Option<u64>,
    #[serde(default)]
    pub(crate) rules: BTreeMap<String, Spanned<RawRules>>,
    #[serde(default)]
    pub(crate) publication: Vec<RawPublication>,
    #[serde(default)]
    pub(crate) schemas: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub(crate) field_rules: BTreeMap<String, Spanned<BTreeMap<String, OneOrMany>>>,
    #[serde(default)]
    pub(crate) indexes: BTreeMap<String, Spanned<Vec<toml::Value>>>,
}

/// `[auto.rules.<collection>]`: the allow rules of one collection.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRules {
    pub(crate) insert: Option<Spanned<OneOrMany>>,
    pub(crate) update: Option<Spanned<OneOrMany>>,
    pub(crate) remove: Option<Spanned<OneOrMany>>,
    pub(crate) read: Option<Spanned<OneOrMany>>,
    pub(crate) auth: Option<Spanned<String>>,
}

/// One `[[auto.publication]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPublication {
    pub(crate) name: Spanned<String>,
    pub(crate) collection: Spanned<String>,
    pub(crate) selector: Option<Spanned<toml::Table>>,
    pub(crate) sort: Option<Spanned<toml::Table>>,
    pub(crate) fields: Option<Spanned<toml::Table>>,
    pub(crate) url: Option<Spanned<String>>,
    pub(crate) http_method: Option<Spanned<String>>,
    pub(crate) auth_required: Option<bool>,
    pub(crate) auth: Option<Spanned<String>>,
    pub(crate) owner_field: Option<Spanned<String>>,
}
