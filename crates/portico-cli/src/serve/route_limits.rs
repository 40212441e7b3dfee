//! `[[limits]]` at work: every request to a limited path counts against its limit, in the
//! database (a [`RateLimiter`] per limit, keyed by the limit's path and the client address or
//! the account), so all instances on one database share the counts; past a limit the reply is
//! 429 with `Retry-After`, before the request reaches its door.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use portico_edge::{AuthenticatedUser, TrustedProxies};
use portico_platform::{Platform, RateLimiter};

use crate::config::{LimitPer, RouteLimit};

#[derive(Clone)]
struct Limits {
    platform: Platform,
    proxies: TrustedProxies,
    limits: Arc<Vec<(RouteLimit, RateLimiter)>>,
}

/// `app` with the `limits` enforced (unchanged without any).
pub(crate) fn with_route_limits(
    app: axum::Router,
    limits: &[RouteLimit],
    platform: Platform,
    proxies: TrustedProxies,
) -> axum::Router {
    if limits.is_empty() {
        return app;
    }
    let limits = limits
        .iter()
        .map(|l| (l.clone(), RateLimiter::new(l.requests, l.window)))
        .collect();
    let state = Limits {
        platform,
        proxies,
        limits: Arc::new(limits),
    };
    app.layer(axum::middleware::from_fn_with_state(state, enforce))
}

async fn enforce(State(state): State<Limits>, request: Request, next: Next) -> Response {
    let (method, path) = (request.method().as_str(), request.uri().path());
    let matching: Vec<&(RouteLimit, RateLimiter)> = state
        .limits
        .iter()
        .filter(|(limit, _)| limit.applies(method, path))
        .collect();
    if matching.is_empty() {
        return next.run(request).await;
    }
    let ip = state
        .proxies
        .client_ip_of(request.headers(), request.extensions());
    let address = ip.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
    let mut account = None;
    if matching.iter().any(|(l, _)| l.per == LimitPer::Account) {
        // A token that finds no one (or a store failure) counts for the address.
        if let Ok(Some(user)) = AuthenticatedUser::resolve(&state.platform, request.headers()).await
        {
            account = Some(user.user_id().to_owned());
        }
    }
    let store = state.platform.store().as_ref();
    for (limit, limiter) in matching {
        let who = match (&limit.per, &account) {
            (LimitPer::Account, Some(id)) => format!("account:{id}"),
            _ => format!("address:{address}"),
        };
        let key = format!("route-limit:{}:{who}", limit.path);
        if let Err(wait) = limiter.check(store, &key).await {
            return too_many(wait);
        }
        limiter.record_failure(store, &key).await;
    }
    next.run(request).await
}

fn too_many(wait: std::time::Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(serde_json::json!({
            "error": "too-many-requests",
            "reason": "Too many requests; try again later",
        })),
    )
        .into_response();
    if let Ok(value) = secs.max(1).to_string().parse() {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}
