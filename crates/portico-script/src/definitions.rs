//! What the application's modules defined while they loaded.

use std::collections::BTreeMap;

use portico_platform::{HookOp, HookWhen, HttpMethod};
use serde::Deserialize;
use serde::de::Error as _;
use serde_json::Value;

use crate::error::LoadError;

/// A method or publication defined by a script.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Definition {
    /// Its name.
    pub name: String,
    /// A custom url (`:0`, `:1`... segments are arguments).
    pub url: Option<String>,
    /// The HTTP method that calls it.
    #[serde(rename = "httpMethod")]
    pub http_method: Option<String>,
    /// Where it was defined (`server/main.ts:12:1`).
    pub place: String,
}

/// One HTTP method of a script route.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct EndpointDefinition {
    /// The endpoint's own `authRequired`, overriding the route's.
    #[serde(rename = "authRequired")]
    pub auth_required: Option<bool>,
    /// Roles the endpoint accepts besides the route's.
    #[serde(rename = "roleRequired", deserialize_with = "roles")]
    pub role_required: Vec<String>,
}

/// A route added with `api(path).addRoute(...)`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawRoute")]
#[non_exhaustive]
pub struct RouteDefinition {
    /// Its position in the program's route list (what [`crate::Scripts::call_route`] takes).
    pub index: usize,
    /// The API's base path (`api/v1`), as `[[api]]` declares it (api_path and version).
    pub api: String,
    /// The route's path under the API (`items/:id`).
    pub path: String,
    /// The route's `authRequired`.
    #[serde(rename = "authRequired")]
    pub auth_required: bool,
    /// The route's `roleRequired`.
    #[serde(rename = "roleRequired", deserialize_with = "roles")]
    pub role_required: Vec<String>,
    /// Where it was added.
    pub place: String,
    /// Its endpoints by HTTP method.
    pub methods: BTreeMap<HttpMethod, EndpointDefinition>,
}

/// A route as the modules describe it, its methods still words.
#[derive(Deserialize)]
struct RawRoute {
    index: usize,
    api: String,
    path: String,
    #[serde(rename = "authRequired")]
    auth_required: bool,
    #[serde(rename = "roleRequired", deserialize_with = "roles")]
    role_required: Vec<String>,
    place: String,
    methods: BTreeMap<String, EndpointDefinition>,
}

impl TryFrom<RawRoute> for RouteDefinition {
    type Error = String;

    /// The route with its methods parsed; an unknown one is refused, naming it and the route.
    fn try_from(raw: RawRoute) -> Result<RouteDefinition, String> {
        let mut methods = BTreeMap::new();
        for (name, endpoint) in raw.methods {
            // The keys `addRoute` takes, as a script writes them: lower case.
            let method = name
                .parse::<HttpMethod>()
                .ok()
                .filter(|_| name.bytes().all(|b| b.is_ascii_lowercase()));
            let Some(method) = method else {
                return Err(format!(
                    "route {:?} added at {}: unknown HTTP method {name:?} (get, post, put, patch, delete or options)",
                    raw.path, raw.place
                ));
            };
            methods.insert(method, endpoint);
        }
        Ok(RouteDefinition {
            index: raw.index,
            api: raw.api,
            path: raw.path,
            auth_required: raw.auth_required,
            role_required: raw.role_required,
            place: raw.place,
            methods,
        })
    }
}

/// An allow or deny function.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct RuleDefinition {
    /// The collection.
    pub collection: String,
    /// Its position among the collection's rules.
    pub index: usize,
    /// `allow` or `deny`.
    pub kind: String,
    /// The write it judges (`insert`, `update` or `remove` in the script).
    #[serde(deserialize_with = "write_op")]
    pub op: HookOp,
    /// Where it was given.
    pub place: String,
}

/// A write hook: `collection(name).before.insert(f)` and the like.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct HookDefinition {
    /// The collection.
    pub collection: String,
    /// Its position among the collection's hooks.
    pub index: usize,
    /// When it runs (`before` or `after` in the script).
    #[serde(deserialize_with = "hook_when")]
    pub when: HookWhen,
    /// The write it watches (`insert`, `update` or `remove` in the script).
    #[serde(deserialize_with = "write_op")]
    pub op: HookOp,
    /// Where it was given.
    pub place: String,
}

/// A job: `jobs.define(name, f, {retries, backoff, timeout_ms})`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct JobDefinition {
    /// Its name.
    pub name: String,
    /// How many times a failing run is tried again (the platform's default when absent).
    pub retries: Option<u32>,
    /// `exponential` or `fixed`.
    pub backoff: Option<String>,
    /// The longest one run may take, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The first wait between tries, in milliseconds.
    pub retry_delay_ms: Option<u64>,
    /// Where it was defined.
    pub place: String,
}

/// A schedule: `cron(name, expression, f, {timezone})`; `f` is the job `cron:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct CronDefinition {
    /// Its name.
    pub name: String,
    /// The cron expression.
    pub expression: String,
    /// The IANA time zone it is read in (UTC when absent).
    pub timezone: Option<String>,
    /// Where it was defined.
    pub place: String,
}

/// Everything the modules defined.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Definitions {
    /// `methods({...})`.
    pub methods: Vec<Definition>,
    /// `publish(...)`.
    pub publications: Vec<Definition>,
    /// `api(...).addRoute(...)`.
    pub routes: Vec<RouteDefinition>,
    /// `collection(...).allow/deny(...)`.
    pub rules: Vec<RuleDefinition>,
    /// `collection(...).before/after.insert/update/remove(...)`.
    #[serde(default)]
    pub hooks: Vec<HookDefinition>,
    /// `jobs.define(...)`.
    #[serde(default)]
    pub jobs: Vec<JobDefinition>,
    /// `cron(...)`.
    #[serde(default)]
    pub crons: Vec<CronDefinition>,
    /// `channels({...})`, in order.
    #[serde(default)]
    pub channels: Vec<ChannelDefinition>,
}

/// The functions `channels({...})` gives for one name pattern.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ChannelDefinition {
    /// Its position among the definitions.
    pub index: usize,
    /// The name pattern (`room:*`).
    pub pattern: String,
    /// Whether it has a `join(name)` function.
    pub join: bool,
    /// Whether it has a `send(name, message)` function.
    pub send: bool,
    /// Where it was given.
    pub place: String,
}

fn write_op<'de, D: serde::Deserializer<'de>>(d: D) -> Result<HookOp, D::Error> {
    match String::deserialize(d)?.as_str() {
        "insert" => Ok(HookOp::Insert),
        "update" => Ok(HookOp::Update),
        "remove" => Ok(HookOp::Remove),
        other => Err(D::Error::custom(format!(
            "unknown write {other:?} (insert, update or remove)"
        ))),
    }
}

fn hook_when<'de, D: serde::Deserializer<'de>>(d: D) -> Result<HookWhen, D::Error> {
    match String::deserialize(d)?.as_str() {
        "before" => Ok(HookWhen::Before),
        "after" => Ok(HookWhen::After),
        other => Err(D::Error::custom(format!(
            "unknown hook time {other:?} (before or after)"
        ))),
    }
}

fn roles<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => vec![s],
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    })
}

impl Definitions {
    pub(crate) fn from_json(value: Value) -> Result<Definitions, LoadError> {
        serde_json::from_value(value)
            .map_err(|e| LoadError::Definition(format!("malformed definitions: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn route(methods: Value) -> Value {
        json!({
            "methods": [], "publications": [], "rules": [],
            "routes": [{
                "index": 0, "api": "api/v1", "path": "items/:id", "authRequired": false,
                "roleRequired": [], "place": "main.js:3:1", "methods": methods,
            }],
        })
    }

    #[test]
    fn route_methods_are_read_into_the_enum() {
        let endpoint = json!({"authRequired": true, "roleRequired": "editor"});
        let defs = Definitions::from_json(route(json!({"get": endpoint, "delete": {
            "authRequired": null, "roleRequired": []
        }})));
        let defs = match defs {
            Ok(defs) => defs,
            Err(e) => panic!("{e}"),
        };
        let methods: Vec<HttpMethod> = defs.routes[0].methods.keys().copied().collect();
        assert_eq!(methods, vec![HttpMethod::Get, HttpMethod::Delete]);
        assert_eq!(
            defs.routes[0].methods[&HttpMethod::Get].role_required,
            vec!["editor".to_owned()]
        );
        let upper = Definitions::from_json(route(json!({"GET": endpoint})));
        assert!(upper.is_err(), "a method is written in lower case");
    }

    #[test]
    fn an_unknown_route_method_is_a_load_error_naming_it_and_the_route() {
        let endpoint = json!({"authRequired": null, "roleRequired": []});
        let Err(e) = Definitions::from_json(route(json!({"trace": endpoint}))) else {
            panic!("a route with a TRACE endpoint was accepted");
        };
        let message = e.to_string();
        assert!(
            message.contains("unknown HTTP method \"trace\"")
                && message.contains("\"items/:id\"")
                && message.contains("main.js:3:1"),
            "{message}"
        );
    }
}
