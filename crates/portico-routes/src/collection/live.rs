//! A generated collection's getAll url requested with `Accept: text/event-stream`: the same
//! list (its `where`, `sort`, `skip`, `limit` and `fields`, the collection's access scope, the
//! route's authentication) followed live as server-sent events (see
//! [`portico_edge::event_stream`]). The stream runs as the caller and ends when the caller's
//! token is logged out or expires. The collection's after hook does not see stream events.

use portico_platform::LiveCaller;
use portico_store::Query;

use super::CollectionState;
use crate::{Context, Reply};

/// Who the stream runs as: re-checked through the token the caller authenticated with, at
/// the token path the dispatcher left on the context.
fn caller(ctx: &Context) -> LiveCaller {
    match (&ctx.user_id, &ctx.hashed_token, &ctx.token_path) {
        (Some(user_id), Some(hashed), Some(path)) => {
            LiveCaller::with_token(user_id.clone(), path.clone(), hashed.clone())
        }
        (Some(user_id), _, _) => LiveCaller::trusted(user_id.clone()),
        (None, _, _) => LiveCaller::anonymous(),
    }
}

/// Streams `query` (the list `ctx` asks for, parsed and scoped by the snapshot's handler); the
/// reply is the stream, or the error a snapshot would get.
pub(crate) async fn get_all(state: &CollectionState, ctx: &Context, query: Query) -> Reply {
    let platform = &ctx.platform;
    match platform
        .live_query(state.collection.name(), query, caller(ctx))
        .await
    {
        Ok(stream) => Reply::stream(portico_edge::event_stream(
            stream,
            platform.live_config().ping,
        )),
        Err(e) => match e.status {
            Some(status) if status != 500 => Reply::error(status, e.reason.unwrap_or(e.error)),
            _ => Reply::internal(e.reason.unwrap_or(e.error)),
        },
    }
}
