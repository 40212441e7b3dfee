//! `[scripts]`: the application's JavaScript or TypeScript, loaded into a pool of script
//! runtimes (`portico_script`), its methods, publications and rules registered on the platform
//! and its routes handed to the `[[api]]` they name.

use std::collections::BTreeMap;

use portico_platform::{Platform, public_user};
use portico_rest::{Api, Context, Endpoint, Endpoints, Reply, RouteOptions};
use portico_script::{CallError, Definitions, RouteDefinition, ScriptConfig, Scripts};
use serde_json::{Map, Value, json};

use crate::config::Config;

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

/// How often `serve --watch` looks at the script files.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(300);

/// The modification times of `files`.
fn stamps(files: &[std::path::PathBuf]) -> Vec<Option<std::time::SystemTime>> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
        .collect()
}

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
        let base = route_base(route);
        if !config.apis.iter().any(|a| a.base_path() == base) {
            out.push(format!(
                "api({:?}) at {}: the config has no [[api]] whose path is {base} (declare it with api_path and version)",
                route.api, route.place
            ));
        }
    }
    out
}

/// The base path (`/api/v1/`) of the `[[api]]` a script route names.
pub fn route_base(route: &RouteDefinition) -> String {
    let base = format!("/{}/", route.api.trim_matches('/'));
    if base == "//" { "/".to_owned() } else { base }
}

/// Adds one of the scripts' routes to `api` (the `[[api]]` [`route_base`] names).
///
/// # Errors
/// [`crate::Error::Setup`] when the door refuses the route (a bad path, a duplicate).
pub fn add_route(api: &mut Api, scripts: &Scripts, route: &RouteDefinition) -> crate::Result<()> {
    let options = RouteOptions::new()
        .auth_required(route.auth_required)
        .role_required(route.role_required.clone());
    let mut endpoints = Endpoints::new();
    for (method, definition) in &route.methods {
        let endpoint = endpoint(scripts, route, method);
        let mut endpoint = endpoint.role_required(definition.role_required.clone());
        if let Some(auth) = definition.auth_required {
            endpoint = endpoint.auth_required(auth);
        }
        endpoints = match method.as_str() {
            "get" => endpoints.get(endpoint),
            "post" => endpoints.post(endpoint),
            "put" => endpoints.put(endpoint),
            "patch" => endpoints.patch(endpoint),
            "delete" => endpoints.delete(endpoint),
            "options" => endpoints.options(endpoint),
            other => {
                return Err(crate::Error::Setup(format!(
                    "route added at {}: unknown HTTP method {other:?} (get, post, put, patch, delete or options)",
                    route.place
                )));
            }
        };
    }
    api.add_route(route.path.as_str(), options, endpoints)
        .map_err(|e| crate::Error::Setup(format!("route added at {}: {e}", route.place)))
}

/// The endpoint context a script sees as `this`.
fn context(ctx: &Context) -> Value {
    let headers: Map<String, Value> = ctx
        .request
        .headers
        .iter()
        .filter_map(|(name, value)| {
            value
                .to_str()
                .ok()
                .map(|v| (name.as_str().to_owned(), Value::String(v.to_owned())))
        })
        .collect();
    let url_params: BTreeMap<&str, &str> = ctx
        .url_params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    json!({
        "urlParams": url_params,
        "queryParams": ctx.query_params,
        "bodyParams": ctx.body_params,
        "userId": ctx.user_id,
        "user": ctx.user.as_ref().map(public_user),
        "request": {
            "method": ctx.request.method.as_str(),
            "url": ctx.request.uri.to_string(),
            "headers": headers,
        },
    })
}

fn endpoint(scripts: &Scripts, route: &RouteDefinition, method: &str) -> Endpoint {
    let scripts = scripts.clone();
    let index = route.index;
    let method = method.to_owned();
    let place = route.place.clone();
    Endpoint::new(move |ctx: Context| {
        let scripts = scripts.clone();
        let method = method.clone();
        let place = place.clone();
        async move {
            match scripts.call_route(index, &method, context(&ctx)).await {
                Ok(outcome) => reply(outcome.value),
                Err(e) => error_reply(e, &place),
            }
        }
    })
}

/// The routes door's reply for what an endpoint answered: its value (the spec's reply forms),
/// or the response it wrote itself.
fn reply(answer: Value) -> Reply {
    if let Some(done) = answer.get("done") {
        let status = done
            .get("statusCode")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok())
            .and_then(|s| http::StatusCode::from_u16(s).ok())
            .unwrap_or(http::StatusCode::OK);
        let mut response = axum::response::Response::new(axum::body::Body::from(
            done.get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ));
        *response.status_mut() = status;
        if let Some(Value::Object(headers)) = done.get("headers") {
            for (name, value) in headers {
                let value = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                if let (Ok(name), Ok(value)) = (
                    http::HeaderName::from_bytes(name.as_bytes()),
                    http::HeaderValue::from_str(&value),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
        }
        return Reply::raw(response);
    }
    if answer.get("undefined").and_then(Value::as_bool) == Some(true) {
        return portico_rest::IntoReply::into_reply(());
    }
    portico_rest::IntoReply::into_reply(answer.get("value").cloned().unwrap_or(Value::Null))
}

fn error_reply(error: CallError, place: &str) -> Reply {
    match error {
        CallError::Portico {
            error,
            reason,
            details,
            status,
        } => {
            let mut body = json!({
                "status": "error",
                "message": reason.clone().unwrap_or_else(|| error.clone()),
                "error": error,
            });
            if let Some(details) = details {
                body["details"] = details;
            }
            Reply::new(body).with_status(status.unwrap_or(400))
        }
        other => Reply::internal(format!("route endpoint at {place}: {other}")),
    }
}
