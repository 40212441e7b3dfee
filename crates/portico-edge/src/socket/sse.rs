//! `GET /live` as server-sent events, for clients without a WebSocket: one subscription per
//! request, named in the query as a socket's `subscribe` frame names it.
//!
//! - `GET /live?list=<a list URL of the doors>`: the list followed as the socket follows it
//!   (through the doors, with the request's token), its events streamed as the door streams them;
//! - `GET /live?publication=<name>&args=<a JSON array>`: the publication followed with its args
//!   as the request's user (or no one).
//!
//! Either way the request carries `Accept: text/event-stream`, and the answer is the same
//! `added`, `changed`, `removed`, `ready` and `end` events (and `: ping` comments) as the doors'
//! own live streams, without the socket frames' `sub`. A refusal is a JSON `{status, reason}`
//! with the HTTP status of the door or the publication (400 for a bad query).

use axum::Router;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use portico_platform::{LiveCaller, Platform, TOKEN_PATH};
use serde_json::{Value, json};

use crate::AuthenticatedUser;

/// The longest `args` of a publication, in bytes of JSON.
const MAX_ARGS: usize = 16 * 1024;

/// A JSON `{status, reason}` answer with `code`.
pub(super) fn refusal(code: StatusCode, status: &str, reason: &str) -> Response {
    (
        code,
        axum::Json(json!({"status": status, "reason": reason})),
    )
        .into_response()
}

/// What the query asks to follow.
enum Target {
    List(String),
    Publication(String, Vec<Value>),
}

/// The target of `query` (`list`, or `publication` with `args`), or why a query that names
/// none, both, or bad args is refused (a `400`).
fn target(query: Option<&str>) -> Result<Target, &'static str> {
    let (mut list, mut publication, mut args) = (None, None, None);
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "list" => list = Some(value.into_owned()),
            "publication" => publication = Some(value.into_owned()),
            "args" => args = Some(value.into_owned()),
            _ => {}
        }
    }
    match (list, publication) {
        (Some(list), None) if args.is_none() => Ok(Target::List(list)),
        (None, Some(name)) if !name.is_empty() => {
            let args = match args {
                None => Vec::new(),
                Some(text) if text.len() <= MAX_ARGS => match serde_json::from_str(&text) {
                    Ok(Value::Array(args)) => args,
                    _ => return Err("`args` is a JSON array, such as [\"room:1\", 20]"),
                },
                Some(_) => return Err("`args` is too long"),
            };
            Ok(Target::Publication(name, args))
        }
        (None, None) => Err(
            "GET /live as server-sent events names what to follow: ?list=<a list URL> or ?publication=<name>&args=<a JSON array>",
        ),
        _ => Err("Name one of `list` or `publication` (with `args` only for a publication)"),
    }
}

/// Answers `GET /live` with `Accept: text/event-stream` (see the module docs).
pub(super) async fn answer(
    platform: &Platform,
    lists: Option<&Router>,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Response {
    let target = match target(query) {
        Ok(target) => target,
        Err(reason) => return refusal(StatusCode::BAD_REQUEST, "bad-request", reason),
    };
    match target {
        Target::List(url) => {
            let Some(app) = lists else {
                return refusal(
                    StatusCode::NOT_FOUND,
                    "not-found",
                    "Lists are not served here",
                );
            };
            match super::lists::request(app, &url, crate::request_token(headers)).await {
                Ok(response) => response,
                Err(refused) => {
                    let status = if refused.code == "bad-frame" {
                        "bad-request"
                    } else {
                        "refused"
                    };
                    refusal(refused.status, status, &refused.reason)
                }
            }
        }
        Target::Publication(name, args) => {
            let caller = match AuthenticatedUser::resolve(platform, headers).await {
                Ok(Some(user)) => LiveCaller::with_token(
                    user.user_id(),
                    TOKEN_PATH,
                    user.hashed_token().unwrap_or_default(),
                ),
                Ok(None) => LiveCaller::anonymous(),
                Err(e) => {
                    tracing::error!(error = %e, "live: could not look a login token up");
                    return refusal(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "internal-error",
                        "Internal server error",
                    );
                }
            };
            match platform.subscribe_live(&name, caller, args).await {
                Ok(stream) => crate::event_stream(stream, platform.live_config().ping),
                Err(e) => refusal(
                    StatusCode::from_u16(e.status.unwrap_or(500))
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    &e.error,
                    e.reason
                        .as_deref()
                        .unwrap_or("The publication cannot be followed"),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(query: &str) -> bool {
        target(Some(query)).is_err()
    }

    #[test]
    fn the_query_names_one_target() {
        assert!(
            matches!(target(Some("list=%2Fapi%2Fnotes%3Fsort%3D-n")), Ok(Target::List(u)) if u == "/api/notes?sort=-n")
        );
        assert!(
            matches!(target(Some("publication=p&args=%5B1%2C%22a%22%5D")), Ok(Target::Publication(n, a)) if n == "p" && a == vec![json!(1), json!("a")])
        );
        assert!(
            matches!(target(Some("publication=p")), Ok(Target::Publication(_, a)) if a.is_empty())
        );
        for bad in [
            "",
            "x=1",
            "list=%2Fa&publication=p",
            "publication=p&args=%7B%7D",
            "publication=p&args=nope",
            "list=%2Fa&args=%5B%5D",
            "publication=",
        ] {
            assert!(refused(bad), "{bad}");
        }
    }
}
