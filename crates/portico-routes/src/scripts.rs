//! Routes written in the application's scripts (feature `scripts`): a route a script added with
//! `api(path).addRoute(...)` ([`portico_script::RouteDefinition`]) becomes a route of the
//! [`Api`] whose base path it names, each of its endpoints a call into the scripts.
//!
//! The adapter lives beside the door it serves: `portico_script` knows nothing of this crate
//! (it depends on the platform and the store only), so this crate can depend on it without a
//! cycle, and a build without scripts leaves both this module and the script engine out.

use std::collections::BTreeMap;

use portico_platform::{HttpMethod, public_user};
use portico_script::{CallError, RouteDefinition, Scripts};
use serde_json::{Map, Value, json};

use crate::{Api, Context, Endpoint, Endpoints, IntoReply, Reply, RouteOptions};

/// The base path (`/api/v1/`) of the API a script route names (`api("api/v1")`), as
/// [`Api::base_path`] spells it.
pub fn route_base(route: &RouteDefinition) -> String {
    let base = format!("/{}/", route.api.trim_matches('/'));
    if base == "//" { "/".to_owned() } else { base }
}

/// Adds the script route `route` of `scripts` to `api` (the API whose base path is
/// [`route_base`]): its `authRequired` and `roleRequired`, and one endpoint per method, each
/// calling [`Scripts::call_route`] with the endpoint context a script sees as `this`.
///
/// # Errors
/// What [`Api::add_route`] refuses (a bad path, a path taken already).
pub fn add_route(api: &mut Api, scripts: &Scripts, route: &RouteDefinition) -> crate::Result<()> {
    let options = RouteOptions::new()
        .auth_required(route.auth_required)
        .role_required(route.role_required.clone());
    let mut endpoints = Endpoints::new();
    for (&method, definition) in &route.methods {
        let mut endpoint =
            endpoint(scripts, route, method).role_required(definition.role_required.clone());
        if let Some(auth) = definition.auth_required {
            endpoint = endpoint.auth_required(auth);
        }
        endpoints = match method {
            HttpMethod::Get => endpoints.get(endpoint),
            HttpMethod::Post => endpoints.post(endpoint),
            HttpMethod::Put => endpoints.put(endpoint),
            HttpMethod::Patch => endpoints.patch(endpoint),
            HttpMethod::Delete => endpoints.delete(endpoint),
            HttpMethod::Options => endpoints.options(endpoint),
        };
    }
    api.add_route(route.path.as_str(), options, endpoints)
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

/// The endpoint for `method` of `route`: a call into `scripts`.
fn endpoint(scripts: &Scripts, route: &RouteDefinition, method: HttpMethod) -> Endpoint {
    let scripts = scripts.clone();
    let index = route.index;
    let place = route.place.clone();
    Endpoint::new(move |ctx: Context| {
        let scripts = scripts.clone();
        let place = place.clone();
        async move {
            match scripts.call_route(index, method, context(&ctx)).await {
                Ok(outcome) => reply(outcome.value),
                Err(e) => error_reply(e, &place),
            }
        }
    })
}

/// The reply for what an endpoint answered: its value (the spec's reply forms), or the
/// response it wrote itself.
fn reply(answer: Value) -> Reply {
    if let Some(done) = answer.get("done") {
        return written(done);
    }
    if answer.get("undefined").and_then(Value::as_bool) == Some(true) {
        return ().into_reply();
    }
    answer
        .get("value")
        .cloned()
        .unwrap_or(Value::Null)
        .into_reply()
}

/// The response an endpoint wrote itself (`{statusCode, headers, body}`); a header that is not
/// a valid name or value is left out.
fn written(done: &Value) -> Reply {
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
    Reply::raw(response)
}

/// The reply for a call that failed: a `PorticoError` the script threw is the client's error
/// (its status, 400 by default); anything else is an internal error naming the route's place.
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
