//! Logging in to the page, out of it, and who is logged in.

use axum::Json;
use axum::extract::{Extension, Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use portico_edge::AuthenticatedUser;
use portico_platform::{LoginError, public_user, user_has_any_role};
use serde_json::{Value, json};

use crate::admin_error::{AdminError, AdminResult, json_body};
use crate::state::AdminState;

/// A login body is a name and a password: a few hundred bytes.
const LOGIN_BODY_LIMIT: usize = 16 * 1024;

/// `POST api/login` with `{user, password}` (or any login form the front doors take): the
/// platform's login service, with its rate limits; then the role check. A user without the role
/// gets 403 and the token just issued is withdrawn at once.
pub(crate) async fn login(
    State(state): State<AdminState>,
    request: Request,
) -> AdminResult<Response> {
    let client = portico_edge::peer_ip(request.extensions());
    let body = axum::body::to_bytes(request.into_body(), LOGIN_BODY_LIMIT)
        .await
        .map_err(|_| {
            AdminError::new(StatusCode::PAYLOAD_TOO_LARGE, "The login body is too large")
        })?;
    let body = json_body(&body)?;
    let token = match state.login.login(Some(&body), client).await {
        Ok(token) => token,
        Err(LoginError::Failed) => {
            return Err(AdminError::new(
                StatusCode::UNAUTHORIZED,
                "Incorrect username, email or password",
            ));
        }
        Err(LoginError::TooManyAttempts(wait)) => {
            let seconds = wait.as_secs().max(1);
            let mut response = AdminError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!("Too many attempts; try again in {seconds} s"),
            )
            .into_response();
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return Ok(response);
        }
        Err(LoginError::Platform(err)) => return Err(err.into()),
        Err(e @ LoginError::EmailNotVerified) => {
            return Err(AdminError::new(StatusCode::FORBIDDEN, e.to_string()));
        }
        Err(e @ (LoginError::TotpRequired | LoginError::TotpInvalid)) => {
            return Err(AdminError::new(StatusCode::UNAUTHORIZED, e.to_string()));
        }
        Err(other) => return Err(AdminError::bad_request(other.to_string())),
    };
    let accounts = state.platform.accounts();
    let user = accounts
        .find_user_by_id(&token.user_id)
        .await?
        .unwrap_or_default();
    if !user_has_any_role(&user, std::slice::from_ref(&state.role)) {
        accounts.remove_token(&token.user_id, &token.token).await?;
        return Err(AdminError::new(
            StatusCode::FORBIDDEN,
            format!("This account does not hold the \"{}\" role.", state.role),
        ));
    }
    Ok(Json(json!({
        "token": token.token,
        "user": public_user(&user),
    }))
    .into_response())
}

/// `POST api/logout`: withdraws the token the request used.
pub(crate) async fn logout(
    State(state): State<AdminState>,
    Extension(user): Extension<AuthenticatedUser>,
) -> AdminResult<Json<Value>> {
    if let Some(hashed) = user.hashed_token() {
        state
            .platform
            .accounts()
            .remove_hashed_token(user.user_id(), hashed)
            .await?;
    }
    Ok(Json(json!({ "loggedOut": true })))
}

/// `GET api/me`: the logged-in admin.
pub(crate) async fn me(Extension(user): Extension<AuthenticatedUser>) -> Json<Value> {
    Json(json!({ "user": public_user(user.user()) }))
}
