//! Endpoints, the options of routes and endpoints, and how they resolve.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::{Context, IntoReply, Reply, ResolvedOptions};

/// The type-erased action of an endpoint.
pub(crate) type Action = Arc<dyn Fn(Context) -> BoxFuture<'static, Reply> + Send + Sync>;

/// Wraps an async closure into an [`Action`].
pub(crate) fn action<F, Fut, R>(f: F) -> Action
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoReply + 'static,
{
    Arc::new(move |ctx| f(ctx).map(IntoReply::into_reply).boxed())
}

/// Role names: a single role (`"admin"`) or a list (`["admin", "editor"]`).
pub trait IntoRoles {
    /// The role names.
    fn into_roles(self) -> Vec<String>;
}

impl IntoRoles for &str {
    fn into_roles(self) -> Vec<String> {
        vec![self.to_owned()]
    }
}

impl IntoRoles for String {
    fn into_roles(self) -> Vec<String> {
        vec![self]
    }
}

impl IntoRoles for Vec<String> {
    fn into_roles(self) -> Vec<String> {
        self
    }
}

impl IntoRoles for Vec<&str> {
    fn into_roles(self) -> Vec<String> {
        self.into_iter().map(str::to_owned).collect()
    }
}

impl IntoRoles for &[&str] {
    fn into_roles(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}

impl<const N: usize> IntoRoles for [&str; N] {
    fn into_roles(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}

/// Options of a route (`add_route`'s second parameter, a collection's `route_options`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteOptions {
    /// When true, every endpoint of the route answers 401 to an unauthenticated caller.
    pub auth_required: bool,
    /// Roles accepted for every endpoint of the route (any one suffices). Implies `auth_required`.
    pub role_required: Vec<String>,
    /// `auth = "optional"`: an endpoint of the route that needs no login still authenticates a
    /// caller who sends credentials (a valid token: the caller is the user, as on a protected
    /// endpoint; an invalid one: 401), and lets a caller who sends none in anonymous. Off by
    /// default: a public endpoint reads no token, so what it answers never depends on one (and
    /// a stale token kept by a client cannot break a public page).
    pub auth_optional: bool,
}

impl RouteOptions {
    /// No authentication, no roles.
    pub fn new() -> Self {
        RouteOptions::default()
    }

    /// Sets `auth_required`.
    pub fn auth_required(mut self, yes: bool) -> Self {
        self.auth_required = yes;
        self
    }

    /// Sets the accepted roles (implies authentication).
    pub fn role_required(mut self, roles: impl IntoRoles) -> Self {
        self.role_required = roles.into_roles();
        self
    }

    /// Sets `auth_optional` (see [`RouteOptions::auth_optional`]).
    pub fn auth_optional(mut self, yes: bool) -> Self {
        self.auth_optional = yes;
        self
    }
}

/// An endpoint: an action plus its options. Build one with [`Endpoint::new`], or pass a closure
/// `|ctx: Context| async move { ... }` wherever an endpoint is expected.
#[derive(Clone, Default)]
pub struct Endpoint {
    pub(crate) action: Option<Action>,
    pub(crate) auth_required: Option<bool>,
    pub(crate) auth_optional: Option<bool>,
    pub(crate) role_required: Vec<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("action", &self.action.as_ref().map(|_| "fn"))
            .field("auth_required", &self.auth_required)
            .field("auth_optional", &self.auth_optional)
            .field("role_required", &self.role_required)
            .finish()
    }
}

impl Endpoint {
    /// An endpoint running `action`, with the route's options.
    pub fn new<F, Fut, R>(action_fn: F) -> Endpoint
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReply + 'static,
    {
        Endpoint {
            action: Some(action(action_fn)),
            ..Endpoint::default()
        }
    }

    /// Options only, no action: on a generated collection endpoint, keeps the default behaviour.
    pub fn options() -> Endpoint {
        Endpoint::default()
    }

    /// Sets (or replaces) the action.
    pub fn action<F, Fut, R>(mut self, action_fn: F) -> Endpoint
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReply + 'static,
    {
        self.action = Some(action(action_fn));
        self
    }

    /// Sets `auth_required`, overriding the route's value.
    pub fn auth_required(mut self, yes: bool) -> Endpoint {
        self.auth_required = Some(yes);
        self
    }

    /// Sets `auth_optional`, overriding the route's value (see [`RouteOptions::auth_optional`]).
    pub fn auth_optional(mut self, yes: bool) -> Endpoint {
        self.auth_optional = Some(yes);
        self
    }

    /// Roles accepted by this endpoint in addition to the route's (implies authentication).
    pub fn role_required(mut self, roles: impl IntoRoles) -> Endpoint {
        self.role_required = roles.into_roles();
        self
    }

    /// Resolves this endpoint's options against its route's.
    pub(crate) fn resolve(&self, route: &RouteOptions) -> ResolvedOptions {
        let mut roles = route.role_required.clone();
        for role in &self.role_required {
            if !roles.contains(role) {
                roles.push(role.clone());
            }
        }
        // An endpoint's authRequired overrides the route's; roles always need a user, so any
        // role (the route's or the endpoint's) implies authentication.
        let auth_required = self.auth_required.unwrap_or(route.auth_required) || !roles.is_empty();
        ResolvedOptions {
            auth_required,
            auth_optional: !auth_required && self.auth_optional.unwrap_or(route.auth_optional),
            role_required: roles,
        }
    }
}

/// Anything usable as an endpoint: an [`Endpoint`] or an async closure taking a [`Context`].
/// (`M` only tells the two kinds apart.)
pub trait IntoEndpoint<M> {
    /// Converts into an [`Endpoint`].
    fn into_endpoint(self) -> Endpoint;
}

impl IntoEndpoint<()> for Endpoint {
    fn into_endpoint(self) -> Endpoint {
        self
    }
}

impl<F, Fut, R> IntoEndpoint<(Fut, R)> for F
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoReply + 'static,
{
    fn into_endpoint(self) -> Endpoint {
        Endpoint::new(self)
    }
}

/// The endpoints of a route, one per HTTP method (at least one is needed).
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    pub(crate) get: Option<Endpoint>,
    pub(crate) post: Option<Endpoint>,
    pub(crate) put: Option<Endpoint>,
    pub(crate) patch: Option<Endpoint>,
    pub(crate) delete: Option<Endpoint>,
    pub(crate) options: Option<Endpoint>,
}

impl Endpoints {
    /// No endpoint yet.
    pub fn new() -> Self {
        Endpoints::default()
    }

    /// The GET endpoint (also answers HEAD).
    pub fn get<M>(mut self, endpoint: impl IntoEndpoint<M>) -> Self {
        self.get = Some(endpoint.into_endpoint());
        self
    }

    /// The POST endpoint.
    pub fn post<M>(mut self, endpoint: impl IntoEndpoint<M>) -> Self {
        self.post = Some(endpoint.into_endpoint());
        self
    }

    /// The PUT endpoint.
    pub fn put<M>(mut self, endpoint: impl IntoEndpoint<M>) -> Self {
        self.put = Some(endpoint.into_endpoint());
        self
    }

    /// The PATCH endpoint.
    pub fn patch<M>(mut self, endpoint: impl IntoEndpoint<M>) -> Self {
        self.patch = Some(endpoint.into_endpoint());
        self
    }

    /// The DELETE endpoint.
    pub fn delete<M>(mut self, endpoint: impl IntoEndpoint<M>) -> Self {
        self.delete = Some(endpoint.into_endpoint());
        self
    }

    /// The OPTIONS endpoint.
    pub fn options<M>(mut self, endpoint: impl IntoEndpoint<M>) -> Self {
        self.options = Some(endpoint.into_endpoint());
        self
    }

    /// (method name, endpoint) for every endpoint present, in a fixed order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'static str, &Endpoint)> {
        [
            ("GET", &self.get),
            ("POST", &self.post),
            ("PUT", &self.put),
            ("PATCH", &self.patch),
            ("DELETE", &self.delete),
            ("OPTIONS", &self.options),
        ]
        .into_iter()
        .filter_map(|(m, e)| e.as_ref().map(|e| (m, e)))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_implies_auth() {
        let e = Endpoint::options().role_required("admin");
        let r = e.resolve(&RouteOptions::default());
        assert!(r.auth_required);
        assert_eq!(r.role_required, vec!["admin".to_string()]);
    }

    #[test]
    fn endpoint_auth_overrides_route() {
        let route = RouteOptions::new().auth_required(true);
        assert!(
            !Endpoint::options()
                .auth_required(false)
                .resolve(&route)
                .auth_required
        );
        assert!(Endpoint::options().resolve(&route).auth_required);
        let open = RouteOptions::new();
        assert!(
            Endpoint::options()
                .auth_required(true)
                .resolve(&open)
                .auth_required
        );
    }

    #[test]
    fn endpoint_roles_add_to_route_roles() {
        let route = RouteOptions::new().role_required(["admin", "editor"]);
        let r = Endpoint::options().role_required("author").resolve(&route);
        assert_eq!(r.role_required, vec!["admin", "editor", "author"]);
        assert!(r.auth_required);
        // Roles on the route still need a user even when the endpoint says no auth.
        assert!(
            Endpoint::options()
                .auth_required(false)
                .resolve(&route)
                .auth_required
        );
    }
}
