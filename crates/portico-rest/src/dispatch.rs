//! Serving one request: route lookup, 404/405, body, authentication, roles, the action, reply.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use futures::FutureExt;
use http::header::{ACCESS_CONTROL_ALLOW_METHODS, ALLOW, CONTENT_LENGTH, CONTENT_TYPE, ORIGIN};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use portico_platform::Platform;
use serde_json::Map;

use crate::api::Route;
use crate::auth::{authenticate, forbidden};
use crate::body::{parse_body, parse_form};
use crate::cors::BaseHeaders;
use crate::path::RequestPath;
use crate::reply::Renderer;
use crate::{AuthOptions, Context, DelayRange, Endpoint, Reply, RouteOptions};

/// A snapshot of an [`crate::Api`], shared by the requests its router serves.
pub(crate) struct ApiInner {
    pub(crate) prefix: String,
    pub(crate) routes: Vec<Route>,
    pub(crate) platform: Platform,
    pub(crate) renderer: Renderer,
    pub(crate) base_headers: BaseHeaders,
    pub(crate) auth: AuthOptions,
    pub(crate) default_options: Option<Endpoint>,
    pub(crate) delay: DelayRange,
    pub(crate) body_limit: usize,
    pub(crate) trust_forwarded_for: bool,
}

fn not_found() -> Reply {
    Reply::error(404, "API endpoint does not exist")
}

impl ApiInner {
    /// Serves a request; never panics (a panicking endpoint becomes a 500).
    pub(crate) async fn handle(self: Arc<Self>, req: Request) -> Response {
        let this = self.clone();
        match AssertUnwindSafe(this.serve(req)).catch_unwind().await {
            Ok(response) => response,
            Err(_) => {
                tracing::error!("request handler panicked");
                self.renderer.render(
                    Reply::error(500, "Internal server error"),
                    self.base_headers.for_origin(None),
                )
            }
        }
    }

    async fn serve(&self, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let base = self.base_headers.for_origin(parts.headers.get(ORIGIN));
        let path = parts.uri.path();
        let relative = match path.strip_prefix(self.prefix.as_str()) {
            Some(rest) => rest,
            None if path == self.prefix.trim_end_matches('/') => "",
            None => return self.finish(not_found(), base).await,
        };
        let request_path = RequestPath::new(relative);
        let Some((route, params)) = self
            .routes
            .iter()
            .find_map(|r| r.matcher.matches(&request_path).map(|p| (r, p)))
        else {
            return self.finish(not_found(), base).await;
        };
        let endpoints = &route.endpoints;
        let endpoint = match parts.method {
            Method::GET | Method::HEAD => endpoints.get.as_ref(),
            Method::POST => endpoints.post.as_ref(),
            Method::PUT => endpoints.put.as_ref(),
            Method::PATCH => endpoints.patch.as_ref(),
            Method::DELETE => endpoints.delete.as_ref(),
            Method::OPTIONS => endpoints.options.as_ref().or(self.default_options.as_ref()),
            _ => None,
        };
        let Some(endpoint) = endpoint else {
            if parts.method == Method::OPTIONS && self.base_headers.cors() {
                return preflight(base, &route.allow);
            }
            let mut response = self.renderer.render(not_found().with_status(405), base);
            response.headers_mut().insert(ALLOW, route.allow.clone());
            return response;
        };

        if let Some(len) = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
        {
            if len > self.body_limit as u64 {
                return self.finish(too_large(), base).await;
            }
        }
        let bytes = match Limited::new(body, self.body_limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return self.finish(too_large(), base).await;
            }
            Err(e) => {
                tracing::debug!(error = %e, "could not read request body");
                return self
                    .finish(Reply::error(400, "Could not read the request body"), base)
                    .await;
            }
        };
        let body_params = match parse_body(&parts.headers, &bytes) {
            Ok(v) => v,
            Err(e) => return self.finish(Reply::error(400, e.0), base).await,
        };
        let query_params = match parts.uri.query() {
            Some(q) => match parse_form(q.as_bytes()) {
                Ok(m) => m,
                Err(e) => return self.finish(Reply::error(400, e.0), base).await,
            },
            None => Map::new(),
        };
        let client_addr = self.client_addr(&parts.headers, &parts.extensions);
        // OPTIONS endpoints do not inherit the route's auth and roles: browsers send preflight
        // requests without credentials. Their own options still apply.
        let options = if parts.method == Method::OPTIONS {
            endpoint.resolve(&RouteOptions::default())
        } else {
            endpoint.resolve(&route.options)
        };
        let mut ctx = Context {
            user: None,
            user_id: None,
            url_params: params.into_iter().collect(),
            query_params,
            body_params,
            body: bytes,
            request: parts,
            options,
            platform: self.platform.clone(),
            client_addr,
            hashed_token: None,
        };
        if ctx.options.auth_required {
            match authenticate(&ctx, &self.auth).await {
                Ok(caller) => {
                    if !ctx.options.role_required.is_empty()
                        && !portico_platform::user_has_any_role(
                            &caller.user,
                            &ctx.options.role_required,
                        )
                    {
                        return self.finish(forbidden(), base).await;
                    }
                    ctx.user = Some(caller.user);
                    ctx.user_id = Some(caller.user_id);
                    ctx.hashed_token = caller.hashed_token;
                }
                Err(reply) => return self.finish(reply, base).await,
            }
        }
        let Some(action) = endpoint.action.clone() else {
            return self
                .finish(Reply::internal("endpoint without action"), base)
                .await;
        };
        let reply = match AssertUnwindSafe(action(ctx)).catch_unwind().await {
            Ok(reply) => reply,
            Err(_) => Reply::internal("endpoint panicked"),
        };
        self.finish(reply, base).await
    }

    /// Renders a reply; 401 and 403 wait a random delay first, so failures cannot be timed.
    async fn finish(&self, reply: Reply, base: HeaderMap) -> Response {
        let response = self.renderer.render(reply, base);
        if matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            let delay = self.delay.pick();
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        }
        response
    }

    fn client_addr(
        &self,
        headers: &HeaderMap,
        extensions: &http::Extensions,
    ) -> Option<SocketAddr> {
        if self.trust_forwarded_for {
            let forwarded = headers
                .get("x-forwarded-for")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .and_then(|v| v.trim().parse::<std::net::IpAddr>().ok());
            if let Some(ip) = forwarded {
                return Some(SocketAddr::new(ip, 0));
            }
        }
        extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| *addr)
    }
}

fn too_large() -> Reply {
    Reply::error(413, "Request body too large")
}

/// The built-in OPTIONS reply when CORS is on and the route has no OPTIONS endpoint.
fn preflight(mut headers: HeaderMap, allow: &HeaderValue) -> Response {
    headers.remove(CONTENT_TYPE);
    headers.insert(ACCESS_CONTROL_ALLOW_METHODS, allow.clone());
    headers.insert(ALLOW, allow.clone());
    let mut response = Response::new(axum::body::Body::empty());
    *response.headers_mut() = headers;
    response
}
