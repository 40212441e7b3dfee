//! The log of writes made with a token an admin got to act as a user (see
//! `portico_platform::Accounts::impersonate`): one line per write request, naming both ids.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::Method;
use portico_platform::{Accounts, Platform};

/// `app` with every write request (not `GET`, `HEAD`, `OPTIONS`) made with an impersonation
/// token logged at info level: `user`, `impersonator`, method, path and status.
pub(crate) fn with_impersonation_log(app: axum::Router, platform: Platform) -> axum::Router {
    app.layer(axum::middleware::from_fn_with_state(platform, log_writes))
}

async fn log_writes(State(platform): State<Platform>, request: Request, next: Next) -> Response {
    let reads = [Method::GET, Method::HEAD, Method::OPTIONS];
    let Some(token) = portico_edge::request_token(request.headers())
        .filter(|_| !reads.contains(request.method()))
        .map(str::to_owned)
    else {
        return next.run(request).await;
    };
    let acting = match platform.accounts().user_by_token(&token).await {
        Ok(Some(user)) => {
            let hashed = portico_platform::hash_token(&token);
            Accounts::impersonator_of(&user, &hashed)
                .zip(portico_store::document_id(&user).map(str::to_owned))
        }
        // The door answers (and logs) a bad token or a store failure itself.
        _ => None,
    };
    let Some((impersonator, user)) = acting else {
        return next.run(request).await;
    };
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    tracing::info!(
        %user,
        %impersonator,
        %method,
        path,
        status = response.status().as_u16(),
        "write made by an admin acting as a user"
    );
    response
}
