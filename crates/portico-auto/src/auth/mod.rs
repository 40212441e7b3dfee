//! Authentication as two composable tower layers, like the spec's two middleware packages.
//!
//! - [`BearerTokenLayer`] (the token parser) finds the bearer token of a request — in the
//!   `Authorization: Bearer <token>` or `X-Auth-Token: <token>` header (the routes door's style),
//!   and in the `access_token` query parameter only when
//!   turned on — and stores it in the request extensions as a [`BearerToken`].
//! - [`TokenAuthLayer`] (the user authenticator) looks that token up with the platform's
//!   accounts (honouring token expiry) and stores the user as an [`AuthenticatedUser`].
//!
//! The auto API reads only [`AuthenticatedUser`]: a request without one runs with no user
//! (`user_id` null), which is also what happens without a token or with a bad or expired one.
//! Any other middleware that inserts an [`AuthenticatedUser`] works in their place.
//!
//! Layers run outside in, so the parser must wrap the authenticator: add
//! [`TokenAuthLayer`] first, then [`BearerTokenLayer`] (or use
//! [`crate::AutoApi::with_token_authentication`], which does it in that order).

mod bearer;
mod user;

pub use bearer::{BearerToken, BearerTokenLayer, BearerTokenService};
pub use portico_edge::AuthenticatedUser;
pub use user::{RefusedToken, TokenAuthLayer, TokenAuthService};
