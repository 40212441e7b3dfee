//! Portico's admin page: the data, the accounts and the API of a server, in a browser.
//!
//! [`AdminPage`] gives one `axum::Router` serving a single page (HTML, CSS and JavaScript embedded
//! in the binary at build time: it works offline, with no CDN and no external fonts) and the JSON
//! API that page calls, both under one path prefix (`/_/` by default).
//!
//! ```no_run
//! use portico_admin::AdminPage;
//! use portico_platform::Platform;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let platform = Platform::open("sqlite:./app.db").await?;
//! let admin = AdminPage::new(platform.clone())
//!     .path("/_/")
//!     .role("admin")
//!     .router()?;
//! let app: axum::Router = axum::Router::new().merge(admin);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).await?;
//! # Ok(()) }
//! ```
//!
//! | view | what it does, through |
//! |---|---|
//! | log in | username or email + password (and a two-factor code when the account has them on), through the platform's [`LoginService`](portico_platform::LoginService) (same rate limits as the front doors); only holders of the admin role get in |
//! | collections | every collection with its count; a paged, sortable table with a `where` selector; open, create, replace and delete documents through the platform collection (schema, duplicate `_id` checks). Portico's own collections (`portico_*`: login tokens, the mail outbox, login failures...) are hidden unless "Show Portico's own collections" is ticked, and read-only when shown |
//! | files | a document's file fields: previews (thumbnails of images, a download otherwise), upload and delete, through the platform's files service |
//! | users | list and search accounts (never hashes or tokens) with whether each address is verified, add one, set roles, set a password, send a reset mail, log one out everywhere, remove one |
//! | API | every route of both front doors, from their own [`RouteDoc`](portico_edge::RouteDoc)s, and a link to `/openapi.json` |
//! | backups | the backups of the SQLite database ([`AdminPage::backups`]): list, take one now, download one |
//! | keys | API keys for servers and scripts: name, roles, made, expiry, last use (never the key); add one (the key is shown once), revoke one |
//! | jobs | schedules (next due time, last run), pending and failed jobs and webhook deliveries (the last error: a receiver's status and first bytes); retry a failed one, cancel one |
//!
//! ## The JSON API
//! Under `PATH/api/` (`/_/api/` by default); bodies and replies are JSON, errors
//! `{"error": message}` with their status (400 bad input, 404 unknown, 409 duplicate `_id`).
//!
//! | call | does |
//! |---|---|
//! | `POST login` `{user, password, totp?}` | `{token, user}`; 401 wrong credentials or a two-factor code needed or wrong, 429 too many, 403 without the role |
//! | `POST logout`, `GET me` | ends this session; the logged-in account |
//! | `GET collections?internal=` | `{collections: [{name, count, schema, timestamps, readOnly, internal, files}], internal}` (`files`: `{field: {types, max, thumbs}}`); Portico's own `portico_*` collections only with `internal=true`, then `readOnly`; the top-level `internal` counts them either way |
//! | `GET collections/{name}/documents?where=&sort=&skip=&limit=` | `{total, skip, limit, documents}` (`sort`: `-n,title`) |
//! | `POST collections/{name}/documents` | insert; `{_id}` with 201 |
//! | `GET`, `PUT`, `DELETE collections/{name}/documents/{id}` | read, replace (the whole document; file fields left out are kept, changed ones refused with 403), remove |
//! | `POST collections/{name}/documents/{id}/files/{field}?name=` | the raw body is a file: 201 with its metadata `{name, size, type, sha256, createdAt}` (413 over the size limit, 415 a type the field does not take) |
//! | `GET collections/{name}/documents/{id}/files/{field}/{file}?thumb=WxH` | the file, or a thumbnail of any size, as an attachment |
//! | `DELETE collections/{name}/documents/{id}/files/{field}/{file}` | removes the file; its metadata is the reply |
//! | `GET users?q=`, `POST users` `{username, email, password, roles}` | list/search; create |
//! | `PUT users/{id}/roles` `{roles}`, `PUT users/{id}/password` `{password}` | set exactly these roles; set a password |
//! | `POST users/{id}/logout`, `DELETE users/{id}` | end every session; remove the account |
//! | `POST users/{id}/password-reset` | mails a password-reset link to the account's first address: `{_id, email}`; 503 when the server sends no mail |
//! | `GET routes` | `{routes: [RouteDoc], openapi}` |
//! | `GET backups` | `{configured, dir, keep, running, backups: [{name, bytes, modifiedMs}]}`, newest first |
//! | `POST backups` | takes a backup now (see [`AdminPage::backups`]): 201 `{name, bytes, format, elapsedMs}`, 409 while one runs, 404 without backups |
//! | `GET backups/{name}` | downloads one (`Content-Disposition: attachment`) |
//! | `GET keys` | `{keys: [{name, roles, userId, createdAt, expires, lastUsed}]}` by name; never the key |
//! | `POST keys` | `{name, roles, expiresDays}` (roles: an array or a comma-separated text; `expiresDays` null or absent: no expiry): 201 `{name, key}`, the key shown this once; 409 for a name taken |
//! | `DELETE keys/{name}` | revokes it at the next request on every instance: 204, 404 for none |
//! | `GET jobs` | `{schedules, pending, failed, queued, failedCount, nowMs}`: at most 100 pending (by due time) and failed (newest first) |
//! | `POST jobs/{id}/retry` | puts a failed job back in the queue, due now; 404 for none |
//! | `DELETE jobs/{id}` | removes a pending or failed job; 404 for none |
//!
//! The `users` collection is read-only in the collections calls (accounts change through the
//! users calls) and never shows `services`, nor lets a filter or sort reach into it. Portico's
//! own collections (names beginning `portico_`) are read-only too: inserts, replacements,
//! removals and file changes there answer 403, as the server alone keeps them. An admin
//! cannot take the role from, or remove, their own account here.
//!
//! ## Security
//! Every call of the JSON API except the login needs the token of a user holding the admin role:
//! 401 without a valid token, 403 for anyone else. The page keeps its token in `sessionStorage`
//! and sends it in the `X-Auth-Token` header, never in a URL or a cookie, so another site cannot
//! make a browser act with it (no ambient credentials, so no CSRF). The page inserts document data
//! as text, never as HTML, and is served with a Content Security Policy that allows only its own
//! script and style.

#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod admin_error;
mod assets;
mod backups;
mod collections;
mod files;
mod guard;
mod jobs;
mod keys;
mod route_list;
mod router;
mod session;
mod state;
mod users;

pub use router::{
    AdminPage, DEFAULT_PATH, DEFAULT_ROLE, InvalidPath, OPENAPI_PATH, normalize_path,
};
