//! Login tokens on requests, and the [`AuthenticatedUser`] extractor.
//!
//! A request carries its token in `X-Auth-Token: <token>` or `Authorization: Bearer <token>`
//! (both doors read both). Tokens in URLs leak into logs and browser histories, so a query
//! parameter is read only where a door is told to.

use axum::extract::{FromRef, FromRequestParts, OptionalFromRequestParts};
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderMap, StatusCode};
use portico_platform::Platform;
use portico_store::Document;

/// The login token of a request: `X-Auth-Token`, else `Authorization: Bearer` (scheme
/// case-insensitive, RFC 6750 token syntax), else `X-Api-Key` (an API key). Empty values are
/// no token.
///
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("authorization", "Bearer abc-123".parse()?);
/// assert_eq!(portico_edge::request_token(&headers), Some("abc-123"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn request_token(headers: &HeaderMap) -> Option<&str> {
    if let Some(token) = headers
        .get("x-auth-token")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        return Some(token);
    }
    if let Some(token) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
    {
        return Some(token);
    }
    // An API key may come in its own header.
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| is_b64token(t))
}

/// The token of an `Authorization` value `Bearer <token>`, when it has the RFC 6750 `b64token`
/// syntax.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start();
    is_b64token(token).then_some(token)
}

/// `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`
pub fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The user a request is authenticated as.
///
/// A front door that has authenticated a request leaves it in the request extensions. As an
/// axum extractor in a host's own handler it takes that, or else resolves the request's token
/// (see [`request_token`]) through the [`Platform`] in the router's state; with no valid token it
/// rejects with 401. Take `Option<AuthenticatedUser>` for routes open to anonymous callers.
///
/// ```
/// use axum::{Router, routing::get};
/// use portico_edge::AuthenticatedUser;
/// use portico_platform::Platform;
///
/// async fn me(user: AuthenticatedUser) -> String {
///     format!("hello {}", user.user_id())
/// }
/// async fn hello(user: Option<AuthenticatedUser>) -> &'static str {
///     if user.is_some() { "welcome back" } else { "hello, stranger" }
/// }
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let platform = Platform::open("memory:").await?;
/// let app: Router = Router::new()
///     .route("/me", get(me))
///     .route("/hello", get(hello))
///     .with_state(platform);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AuthenticatedUser {
    user_id: String,
    user: Document,
    hashed_token: Option<String>,
}

impl AuthenticatedUser {
    /// An authenticated user from its stored document; `None` without a string `_id`.
    pub fn from_document(user: Document) -> Option<Self> {
        let user_id = portico_store::document_id(&user)?.to_owned();
        Some(AuthenticatedUser {
            user_id,
            user,
            hashed_token: None,
        })
    }

    /// The same user, remembering the hashed token the request used (logout removes it).
    pub fn with_hashed_token(mut self, hashed_token: impl Into<String>) -> Self {
        self.hashed_token = Some(hashed_token.into());
        self
    }

    /// The user's id.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// The user's stored document.
    pub fn user(&self) -> &Document {
        &self.user
    }

    /// The hashed login token the request was authenticated with, when it used one.
    pub fn hashed_token(&self) -> Option<&str> {
        self.hashed_token.as_deref()
    }

    /// Resolves the token of a request through `platform` (expired and logged-out tokens find
    /// no user).
    ///
    /// # Errors
    /// The store's failure while looking the token up.
    pub async fn resolve(
        platform: &Platform,
        headers: &HeaderMap,
    ) -> Result<Option<AuthenticatedUser>, portico_platform::Error> {
        let Some(token) = request_token(headers) else {
            return Ok(None);
        };
        let user = platform.accounts().user_by_token(token).await?;
        Ok(user.and_then(AuthenticatedUser::from_document).map(|u| {
            let hashed = portico_platform::hash_token(token);
            u.with_hashed_token(hashed)
        }))
    }
}

/// Why [`AuthenticatedUser`] refused a request: 401 without a valid token, 500 when the store
/// failed (the cause is logged, not sent).
#[derive(Debug)]
pub enum AuthRejection {
    /// No token, or one that finds no user.
    Unauthorized,
    /// The token could not be looked up.
    Internal,
}

impl IntoResponse for AuthRejection {
    fn into_response(self) -> Response {
        let (status, error, reason) = match self {
            AuthRejection::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "You must be logged in to do this.",
            ),
            AuthRejection::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal-server-error",
                "Internal server error",
            ),
        };
        (
            status,
            axum::Json(serde_json::json!({"error": error, "reason": reason})),
        )
            .into_response()
    }
}

impl<S> OptionalFromRequestParts<S> for AuthenticatedUser
where
    Platform: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AuthRejection;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &S,
    ) -> Result<Option<Self>, Self::Rejection> {
        if let Some(user) = parts.extensions.get::<AuthenticatedUser>() {
            return Ok(Some(user.clone()));
        }
        let platform = Platform::from_ref(state);
        match AuthenticatedUser::resolve(&platform, &parts.headers).await {
            Ok(user) => {
                if let Some(user) = &user {
                    parts.extensions.insert(user.clone());
                }
                Ok(user)
            }
            Err(err) => {
                tracing_error(&err);
                Err(AuthRejection::Internal)
            }
        }
    }
}

impl<S> FromRequestParts<S> for AuthenticatedUser
where
    Platform: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AuthRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        <Self as OptionalFromRequestParts<S>>::from_request_parts(parts, state)
            .await?
            .ok_or(AuthRejection::Unauthorized)
    }
}

fn tracing_error(err: &portico_platform::Error) {
    tracing::error!(error = %err, "could not look a login token up");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_from_either_header() {
        let mut h = HeaderMap::new();
        assert_eq!(request_token(&h), None);
        h.insert("x-api-key", "pk_key".parse().unwrap());
        assert_eq!(request_token(&h), Some("pk_key"));
        h.insert("authorization", "bearer tok.en".parse().unwrap());
        assert_eq!(request_token(&h), Some("tok.en"));
        h.insert("x-auth-token", "other".parse().unwrap());
        assert_eq!(request_token(&h), Some("other"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer a b"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }
}
