//! Serving one request: route lookup, 404/405, body, authentication, roles, the action, reply.

use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::response::Response;
use futures::FutureExt;
use http::header::{ACCESS_CONTROL_ALLOW_METHODS, ALLOW, CONTENT_TYPE, ORIGIN};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use portico_edge::{BodyError, ParsedBody, TrustedProxies, parse_body, parse_form, read_body};
use portico_platform::{LoginService, Platform};
use serde_json::{Map, Value};

use crate::auth::admit;
use crate::context::BodyState;
use crate::cors::BaseHeaders;
use crate::reply::Renderer;
use crate::route_table::{Params, Route, RouteTable};
use crate::{AuthOptions, Context, DelayRange, Endpoint, Reply, RouteOptions};

/// A snapshot of an [`crate::Api`], shared by the requests its router serves.
pub(crate) struct ApiInner {
    pub(crate) prefix: String,
    pub(crate) routes: RouteTable,
    pub(crate) logins: LoginService,
    pub(crate) platform: Platform,
    pub(crate) renderer: Renderer,
    pub(crate) base_headers: BaseHeaders,
    pub(crate) auth: AuthOptions,
    pub(crate) default_options: Option<Endpoint>,
    pub(crate) delay: DelayRange,
    pub(crate) body_limit: usize,
    pub(crate) trusted_proxies: TrustedProxies,
}

fn not_found() -> Reply {
    Reply::error(404, "API endpoint does not exist")
}

impl ApiInner {
    /// Serves a request. A panicking endpoint becomes a 500 here (with the route's headers);
    /// a panic anywhere else is caught by the router's `CatchPanicLayer`.
    pub(crate) async fn serve(&self, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let base = self.base_headers.for_origin(parts.headers.get(ORIGIN));
        let Some((route, params)) = self.routes.find(&self.prefix, parts.uri.path()) else {
            let mut response = self.finish(not_found(), base).await;
            response.extensions_mut().insert(portico_edge::NoRoute);
            return response;
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
        let reply = match self.context(parts, body, &route, endpoint, params).await {
            Ok(ctx) => match endpoint.action.clone() {
                Some(action) => match AssertUnwindSafe(action(ctx)).catch_unwind().await {
                    Ok(reply) => reply,
                    Err(_) => Reply::internal("endpoint panicked"),
                },
                None => Reply::internal("endpoint without action"),
            },
            Err(reply) => reply,
        };
        self.finish(reply, base).await
    }

    /// Reads the body and query, and authenticates the caller when the endpoint needs one.
    async fn context(
        &self,
        parts: http::request::Parts,
        body: axum::body::Body,
        route: &Route,
        endpoint: &Endpoint,
        params: Params,
    ) -> Result<Context, Reply> {
        let body_stream = crate::context::BodyStream::default();
        let bytes = if route.streamed {
            *body_stream
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(body);
            bytes::Bytes::new()
        } else {
            let limit = route.body_limit.unwrap_or(self.body_limit);
            read_body(&parts.headers, body, limit)
                .await
                .map_err(|e| body_error(&e))?
        };
        let parsed = if route.streamed {
            Ok(ParsedBody::Other)
        } else {
            parse_body(&parts.headers, &bytes)
        };
        let (body_params, body_state) = match parsed {
            Ok(ParsedBody::Json(value)) => (value, BodyState::Data),
            Ok(ParsedBody::Form(map)) => (Value::Object(map), BodyState::Data),
            // An endpoint that needs data refuses these itself; the raw bytes stay on the context.
            Ok(ParsedBody::Empty) => (Value::Object(Map::new()), BodyState::Empty),
            Ok(ParsedBody::Other) => (Value::Object(Map::new()), BodyState::Other),
            // Without a content type, a body that is not JSON is raw bytes for the endpoint.
            Err(BodyError::MalformedJson(_)) if !parts.headers.contains_key(CONTENT_TYPE) => {
                (Value::Object(Map::new()), BodyState::Other)
            }
            Err(e) => return Err(body_error(&e)),
        };
        let query_params = match parts.uri.query() {
            Some(q) => parse_form(q.as_bytes())
                .map_err(|e| Reply::error(400, format!("Malformed query string: {e}")))?,
            None => Map::new(),
        };
        let client_addr = self
            .trusted_proxies
            .client_ip_of(&parts.headers, &parts.extensions);
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
            token_path: None,
            logins: self.logins.clone(),
            body_state,
            body_stream,
        };
        if route.file_download && crate::auth::admit_file_token(&mut ctx).await? {
            return Ok(ctx);
        }
        admit(&mut ctx, &self.auth, &mut None).await?;
        Ok(ctx)
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
}

/// A body that could not be read or parsed, as a JSend error with the edge's status.
pub(crate) fn body_error(e: &BodyError) -> Reply {
    Reply::error(e.status().as_u16(), e.to_string())
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
