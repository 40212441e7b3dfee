//! Portico's HTTP edge: what both front doors (`portico-routes` and `portico-auto`) do the same way
//! with a request before either shapes a reply.
//!
//! It sits beside the platform and below the doors, and knows nothing of either door's reply
//! format: each door turns the edge's errors into its own body.
//!
//! | concern | here |
//! |---|---|
//! | reading a body under a size limit; parsing JSON and bracketed forms by content type | [`read_body`], [`parse_body`], [`parse_form`] |
//! | path patterns (`:name`, `:N`, regular expressions) and a table that finds a route | [`PathPattern`], [`PathTable`] |
//! | the client address, believing `X-Forwarded-For` only from trusted proxies | [`TrustedProxies`] |
//! | login tokens on requests, and an extractor for host handlers | [`request_token`], [`AuthenticatedUser`] |
//! | error statuses: one mapping, `portico_platform::Error::status_code` (store errors by their kind) | — |
//! | conditional headers: `If-Match` as the platform's `IfMatch`, `If-None-Match` | [`if_match`], [`none_match_holds`] |
//! | live streams as server-sent events (`Accept: text/event-stream`) | [`wants_event_stream`], [`event_stream`] |
//! | the live socket at `GET /live`: channels, presence, publications over one WebSocket | [`socket`] |
//! | route descriptions, read by every listing | [`RouteDoc`] |
//! | an OpenAPI 3.1 document from route descriptions, and a router serving it | [`openapi::document`], [`openapi::router`] |
//!
//! ```
//! use portico_edge::{ParsedBody, PathPattern, RequestPath, parse_body};
//!
//! let pattern = PathPattern::parse("articles/:id")?;
//! let path = RequestPath::parse("/articles/42").ok_or("not UTF-8")?;
//! assert_eq!(pattern.matches(&path).and_then(|m| m.param("id").map(str::to_owned)), Some("42".into()));
//!
//! let mut headers = http::HeaderMap::new();
//! headers.insert("content-type", "application/x-www-form-urlencoded".parse()?);
//! let body = parse_body(&headers, b"title=Hello&tags[]=a")?;
//! assert_eq!(body, ParsedBody::Form(serde_json::json!({"title": "Hello", "tags": ["a"]}).as_object().cloned().ok_or("object")?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod auth;
mod body;
mod client;
mod conditional;
mod form;
mod live;
pub mod openapi;
mod path;
mod route;
pub mod socket;

pub use auth::{AuthRejection, AuthenticatedUser, bearer_token, is_b64token, request_token};
pub use body::{
    BodyBudgetExceeded, BodyError, DEFAULT_BODY_LIMIT, ParsedBody, declared_length, parse_body,
    read_body,
};
pub use client::{TrustedProxies, peer_ip};
pub use conditional::{InvalidIfMatch, entity_tags, if_match, none_match_holds};
pub use form::{FormError, parse_form};
pub use live::{event_stream, wants_event_stream};
pub use path::{
    DuplicatePath, PathError, PathMatch, PathPattern, PathTable, RequestPath, RoutePath,
};
pub use route::{Access, Door, NoRoute, RouteDoc};
