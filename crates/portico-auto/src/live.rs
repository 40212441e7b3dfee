//! A publication's url requested with `Accept: text/event-stream`: the publication followed
//! live as server-sent events (see [`portico_edge::event_stream`]) instead of answered once.
//! The stream runs as the caller, as the snapshot does, and ends when the caller's token is
//! logged out or expires.

use axum::body::Body;
use axum::response::Response;
use http::request::Parts;
use portico_edge::{AuthenticatedUser, PathMatch};
use portico_platform::{LiveCaller, TOKEN_PATH};

use crate::ApiError;
use crate::route::Route;
use crate::state::{Shared, request_args};

/// Who the stream runs as: the request's authenticated user (re-checked through its token), or
/// no one.
fn caller(parts: &Parts) -> LiveCaller {
    match parts.extensions.get::<AuthenticatedUser>() {
        Some(user) => match user.hashed_token() {
            Some(hashed) => LiveCaller::with_token(user.user_id(), TOKEN_PATH, hashed),
            None => LiveCaller::trusted(user.user_id()),
        },
        None => LiveCaller::anonymous(),
    }
}

/// Streams the publication `name`.
pub(crate) async fn publication(
    shared: &Shared,
    route: &Route,
    parts: Parts,
    body: Body,
    found: PathMatch,
    name: &str,
) -> Result<Response, ApiError> {
    let caller = caller(&parts);
    let args = request_args(shared, route, parts, body, found).await?;
    let platform = &shared.platform;
    let stream = platform.subscribe_live(name, caller, args).await?;
    Ok(portico_edge::event_stream(
        stream,
        platform.live_config().ping,
    ))
}
