//! The page's files, embedded at build time, and the headers every admin reply carries.

use axum::Router;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::{HeaderValue, header};

use crate::state::AdminState;

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");

/// Only the page's own files may load or be fetched; no inline script or style, no frames.
/// Together with inserting data as text, this keeps a document's content from ever running.
/// Previews are images the page fetched with its token and shows from `blob:` URLs.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; \
     connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

fn file(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // Revalidate: a new binary serves new files at the same paths.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The page at `prefix/`, its script and style beside it, and `prefix` redirecting to `prefix/`
/// (the page's relative links need the slash).
pub(crate) fn router(prefix: &str) -> Router<AdminState> {
    let mut router = Router::new()
        .route(
            &format!("{prefix}/"),
            get(|| async { file("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            &format!("{prefix}/app.js"),
            get(|| async { file("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            &format!("{prefix}/app.css"),
            get(|| async { file("text/css; charset=utf-8", STYLE) }),
        );
    if !prefix.is_empty() {
        let target = format!("{prefix}/");
        router = router.route(
            prefix,
            get(move || async move { Redirect::permanent(&target) }),
        );
    }
    router
}

/// Headers on every admin reply: the content security policy, no sniffing, no framing, no
/// referrer.
pub(crate) async fn common_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// API replies hold accounts and documents: no cache keeps them.
pub(crate) async fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
