//! The token-based user authenticator.

use std::task::{Context, Poll};

use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::Request;
use portico_edge::AuthenticatedUser;
use portico_platform::{Platform, hash_token};
use tower::{Layer, Service};

use crate::ApiError;
use crate::auth::BearerToken;

/// A layer that turns a [`BearerToken`] into an [`AuthenticatedUser`] with
/// `platform.accounts().user_by_token`, which honours token expiry.
///
/// No token, an unknown token or an expired one: the request goes on with no user; so does a
/// request whose `X-User-Id` header names another user than its token's (the routes door
/// answers that with 401). A failure of
/// the store while looking the token up is answered with a 500 JSON error, so a broken database
/// never silently turns callers into anonymous ones.
#[derive(Debug, Clone)]
pub struct TokenAuthLayer {
    platform: Platform,
}

impl TokenAuthLayer {
    /// An authenticator looking tokens up in `platform`'s accounts.
    pub fn new(platform: Platform) -> Self {
        TokenAuthLayer { platform }
    }
}

impl<S> Layer<S> for TokenAuthLayer {
    type Service = TokenAuthService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TokenAuthService {
            inner,
            platform: self.platform.clone(),
        }
    }
}

/// The service [`TokenAuthLayer`] wraps around an inner service.
#[derive(Debug, Clone)]
pub struct TokenAuthService<S> {
    inner: S,
    platform: Platform,
}

impl<S, B> Service<Request<B>> for TokenAuthService<S>
where
    S: Service<Request<B>, Response = Response> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        // The clone that was polled ready is the one to call; keep a fresh clone for next time.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let platform = self.platform.clone();
        Box::pin(async move {
            let token = req.extensions().get::<BearerToken>().cloned();
            let already = req.extensions().get::<AuthenticatedUser>().is_some();
            if let (Some(token), false) = (token, already) {
                match platform.accounts().user_by_token(token.as_str()).await {
                    Ok(Some(user)) => {
                        if let Some(user) = AuthenticatedUser::from_document(user)
                            && claimed_user(&req).is_none_or(|id| id == user.user_id())
                        {
                            let user = user.with_hashed_token(hash_token(token.as_str()));
                            req.extensions_mut().insert(user);
                        } else {
                            req.extensions_mut().insert(RefusedToken);
                        }
                    }
                    Ok(None) => {
                        req.extensions_mut().insert(RefusedToken);
                    }
                    // 503 while the database is unreachable, else 500.
                    Err(err) => return Ok(ApiError::from(err).into_response()),
                }
            }
            inner.call(req).await
        })
    }
}

/// Left in the request extensions by [`TokenAuthLayer`] when the request carried a login token
/// that authenticates no one: the request runs anonymous, unless its route refuses such a
/// request (`auth = "optional"`, see [`crate::AutoConfig::auth_optional_collections`]).
#[derive(Debug, Clone, Copy)]
pub struct RefusedToken;

/// The user a request says it is (`X-User-Id`, sent with `X-Auth-Token` by routes-door clients).
fn claimed_user<B>(req: &Request<B>) -> Option<&str> {
    req.headers()
        .get("x-user-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| !id.is_empty())
}
