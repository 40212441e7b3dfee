//! The request a task is serving, so that a log line written deep inside a call (a script's
//! failure, an internal error of a method) names the request it belongs to.
//!
//! The server runs each request inside [`scope`] with the request's id (the one its
//! `X-Request-Id` reply header carries); [`current`] reads it back anywhere in that request's
//! task, and the error lines of [`error_in_request!`](crate::error_in_request) carry it as
//! `request_id`. A task-local, not a tracing span: a request costs one short string and no
//! span registered, entered and formatted on every poll (see the server's request log for what
//! a span per request cost). Outside a request (start-up, a background task) there is none.

use std::future::Future;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// Runs `future` as the request `id`: [`current`] answers `id` inside it.
pub async fn scope<F: Future>(id: String, future: F) -> F::Output {
    REQUEST_ID.scope(id, future).await
}

/// The id of the request this task is serving, if it is serving one.
pub fn current() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// Logs an `error` event, with the current request's `request_id` field when there is one
/// (the same field name as the request log line's).
#[macro_export]
macro_rules! error_in_request {
    (target: $target:expr, $($rest:tt)+) => {
        match $crate::request_scope::current() {
            Some(request_id) => ::tracing::error!(target: $target, request_id = %request_id, $($rest)+),
            None => ::tracing::error!(target: $target, $($rest)+),
        }
    };
    ($($rest:tt)+) => {
        match $crate::request_scope::current() {
            Some(request_id) => ::tracing::error!(request_id = %request_id, $($rest)+),
            None => ::tracing::error!($($rest)+),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_id_is_seen_inside_its_scope_only() {
        assert_eq!(current(), None);
        let inside = scope("r1".to_owned(), async {
            tokio::task::yield_now().await;
            current()
        })
        .await;
        assert_eq!(inside.as_deref(), Some("r1"));
        assert_eq!(current(), None);
    }
}
