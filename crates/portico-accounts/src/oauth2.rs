//! `/auth/oauth2/...`: sign-in with the OAuth2 providers (GitHub, GitLab, Discord, ...), as
//! `/auth/oidc/...` does it for OpenID Connect ones: the state bound to the browser by the
//! cookie [`OAUTH2_COOKIE`] (path `/auth/oauth2/`), the browser sent on to
//! `{app_url}/oauth2?code=...` (or `?error=WORD`), and the one-time code traded at
//! `POST /auth/oauth2/exchange` (or `/auth/oidc/exchange`: the codes are the same kind).

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::Method;
use portico_edge::{Access, Door, RouteDoc};
use portico_platform::OidcCallback;
use serde_json::{Value, json};

use super::{AuthState, Reply, browser_state_named, oidc_error, redirect, state_cookie};

/// The cookie that binds an OAuth2 sign-in to the browser that started it.
pub(crate) const OAUTH2_COOKIE: &str = "portico_oauth2";
/// Its path.
const COOKIE_PATH: &str = "/auth/oauth2/";

pub(crate) async fn begin(
    State(state): State<AuthState>,
    Path(name): Path<String>,
    request: axum::extract::Request,
) -> Reply {
    let ip = state
        .proxies
        .client_ip_of(request.headers(), request.extensions());
    let start = state
        .platform
        .oauth2()
        .begin(&name, ip)
        .await
        .map_err(oidc_error)?;
    Ok(redirect(
        &start.url,
        state_cookie(&state, (OAUTH2_COOKIE, COOKIE_PATH), Some(&start.state)),
    ))
}

pub(crate) async fn callback(
    State(state): State<AuthState>,
    Path(name): Path<String>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: http::HeaderMap,
) -> Response {
    let mut callback = OidcCallback::default();
    callback.code = query.get("code").cloned();
    callback.state = query.get("state").cloned();
    callback.error = query.get("error").cloned();
    callback.browser_state = browser_state_named(&headers, OAUTH2_COOKIE);
    let finished = state.platform.oauth2().finish(&name, callback).await;
    let target = crate::landing(&state, "oauth2", &name, finished);
    redirect(
        &target,
        state_cookie(&state, (OAUTH2_COOKIE, COOKIE_PATH), None),
    )
}

/// The routes as data (`login_reply`: the schema of a login reply).
pub(crate) fn docs(login_reply: Value) -> Vec<RouteDoc> {
    let doc = |method: Method, path: &str, summary: &str| {
        RouteDoc::new(
            Door::Accounts,
            method,
            format!("/auth/{path}"),
            Access::Public,
        )
        .summary(summary)
    };
    vec![
        doc(
            Method::GET,
            "oauth2/:name",
            "sign in with an OAuth2 provider (GitHub, GitLab, Discord, ...): 302 to the provider",
        )
        .redirects(),
        doc(
            Method::GET,
            "oauth2/:name/callback",
            "the provider's way back: 302 to {app_url}/oauth2?code=... (or ?error=...)",
        )
        .query(["code", "state", "error"])
        .redirects(),
        doc(
            Method::POST,
            "oauth2/exchange",
            "trade the one-time code of a provider sign-in (60 s, single use) for a login token, \
             as oidc/exchange",
        )
        .request_body(json!({"type": "object", "properties": {
            "code": {"type": "string"}, "totp": {"type": "string"}
        }, "required": ["code"]}))
        .reply_body(login_reply),
    ]
}
