//! The admin check in front of every API call but the login.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use portico_edge::AuthenticatedUser;
use portico_platform::user_has_any_role;

use crate::admin_error::AdminError;
use crate::state::AdminState;

/// Lets a request through only with the token of a user holding the admin role: 401 without a
/// valid token, 403 for any other user. The user is left in the request's extensions.
pub(crate) async fn require_admin(
    State(state): State<AdminState>,
    mut request: Request,
    next: Next,
) -> Response {
    let user = match AuthenticatedUser::resolve(&state.platform, request.headers()).await {
        Ok(Some(user)) => user,
        Ok(None) => {
            return AdminError::new(
                StatusCode::UNAUTHORIZED,
                "You must be logged in to do this.",
            )
            .into_response();
        }
        Err(err) => return AdminError::from(err).into_response(),
    };
    // An API key never reaches the admin page, whatever its roles; nor does a token an admin
    // got to act as a user.
    if portico_platform::is_service_account(user.user()) {
        return AdminError::new(StatusCode::FORBIDDEN, "API keys cannot use the admin page.")
            .into_response();
    }
    if user
        .hashed_token()
        .and_then(|h| portico_platform::Accounts::impersonator_of(user.user(), h))
        .is_some()
    {
        return AdminError::new(
            StatusCode::FORBIDDEN,
            "A token acting as a user cannot use the admin page.",
        )
        .into_response();
    }
    if !user_has_any_role(user.user(), std::slice::from_ref(&state.role)) {
        return AdminError::new(
            StatusCode::FORBIDDEN,
            format!("This needs the \"{}\" role.", state.role),
        )
        .into_response();
    }
    request.extensions_mut().insert(user);
    next.run(request).await
}

/// An API path the page does not have (reached only by admins).
pub(crate) async fn no_such_call() -> AdminError {
    AdminError::not_found("No such admin API call")
}
