//! The route table: every endpoint the auto API answers, built from the platform's registries.
//!
//! Paths are the edge's [`PathPattern`]s. The table keeps definition order, and among the routes
//! whose path matches a request the earliest wins: that is what lets a method, publication or
//! collection defined after startup never take a route away from one already served (see
//! [`RouteTable::build`]). The edge's [`portico_edge::PathTable`] orders by specificity instead
//! (a later literal path would win over an earlier `:param` one), so it is not used here.
//!
//! The table is a snapshot. Methods, publications and collections defined after it was built are
//! picked up by [`crate::dispatch`], which rebuilds the table when a request finds no route and the
//! registries have changed since (see [`Registry`]).

use http::Method;
use portico_edge::{PathMatch, PathPattern, RequestPath};
use portico_platform::{EndpointOptions, HttpMethod, MethodInfo, Platform, PublicationInfo};

use crate::args::AutoExtractor;
use crate::{AutoConfig, Error, Result};

/// The name of the built-in route listing publication.
pub const API_ROUTES: &str = "api-routes";

/// The most `:N` arguments one url may have (keeps argument vectors small and bounded).
const MAX_URL_ARGS: usize = 32;

/// What a route does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// Calls the method of this name.
    Method(String),
    /// Runs the publication of this name.
    Publication(String),
    /// The built-in route listing.
    ApiRoutes,
    /// Inserts the body into the collection.
    Insert(String),
    /// `$set`s the body on the document `:_id` of the collection.
    Update(String),
    /// Removes the document `:_id` of the collection.
    Remove(String),
    /// Answers a cross-origin preflight for a method url (empty 200 with the global headers).
    Preflight,
    /// Served elsewhere (the login add-on); only listed. The text says what it does.
    Listed(&'static str),
}

impl Target {
    /// True when a request to this target whose token authenticates no one is refused (see
    /// [`AutoConfig::auth_optional_collections`]).
    pub(crate) fn token_must_be_valid(&self, config: &AutoConfig) -> bool {
        match self {
            Target::Insert(name) | Target::Update(name) | Target::Remove(name) => {
                config.auth_optional_collections.contains(name)
            }
            Target::Publication(name) => config.auth_optional_publications.contains(name),
            _ => false,
        }
    }
}

impl Target {
    /// Who owns the route, for error messages.
    fn owner(&self) -> String {
        match self {
            Target::Method(name) => format!("method {name:?}"),
            Target::Publication(name) => format!("publication {name:?}"),
            Target::ApiRoutes => "the api-routes listing".into(),
            Target::Insert(name) | Target::Update(name) | Target::Remove(name) => {
                format!("collection {name:?}")
            }
            Target::Preflight => "an OPTIONS endpoint".into(),
            Target::Listed(_) => "the login add-on".into(),
        }
    }
}

/// One endpoint: an HTTP method at a path pattern.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) method: Method,
    pub(crate) pattern: PathPattern,
    /// How many `:N` arguments the pattern has.
    pub(crate) arg_count: usize,
    pub(crate) target: Target,
    pub(crate) extractor: Option<AutoExtractor>,
}

impl Route {
    /// The path as listed: a leading `/`, parameters as `:name`.
    pub(crate) fn path(&self) -> String {
        format!("/{}", self.pattern.display())
    }
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("method", &self.method)
            .field("path", &self.path())
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The names in the platform's registries a table was built from; a table is stale when they
/// differ from the platform's current ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Registry {
    methods: Vec<String>,
    publications: Vec<String>,
    collections: Vec<String>,
}

impl Registry {
    /// The platform's current registries.
    pub(crate) fn current(platform: &Platform) -> Registry {
        Registry {
            methods: platform.methods().into_iter().map(|m| m.name).collect(),
            publications: platform
                .publications()
                .into_iter()
                .map(|p| p.name)
                .collect(),
            collections: platform.collection_names(),
        }
    }
}

/// What looking a request up found.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    /// The route, with what the path captured.
    Found(&'a Route, PathMatch),
    /// The path exists, with these methods only.
    OtherMethods(Vec<Method>),
    /// No route has this path.
    NotFound,
}

/// A snapshot of every route, in table order (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    routes: Vec<Route>,
    registry: Registry,
}

/// The HTTP method of an `http_method` option, or the default.
fn http_method(option: Option<HttpMethod>, default: Method) -> Method {
    match option {
        None => default,
        Some(HttpMethod::Get) => Method::GET,
        Some(HttpMethod::Post) => Method::POST,
        Some(HttpMethod::Put) => Method::PUT,
        Some(HttpMethod::Patch) => Method::PATCH,
        Some(HttpMethod::Delete) => Method::DELETE,
        Some(HttpMethod::Options) => Method::OPTIONS,
    }
}

/// Parses a url option, with how many `:N` arguments it has.
fn parse_url(owner: &str, url: &str) -> Result<(PathPattern, usize)> {
    let invalid = |reason: String| Error::InvalidUrl {
        owner: owner.to_owned(),
        url: url.to_owned(),
        reason,
    };
    let pattern = PathPattern::parse(url).map_err(|e| invalid(e.reason))?;
    let count = pattern
        .numbered_params(MAX_URL_ARGS)
        .map_err(|e| invalid(e.reason))?;
    Ok((pattern, count))
}

/// Collects routes, refusing a second route for the same method and path.
struct Builder {
    routes: Vec<Route>,
    errors: Vec<Error>,
}

impl Builder {
    fn add(&mut self, method: Method, (pattern, arg_count): (PathPattern, usize), target: Target) {
        self.add_route(Route {
            method,
            pattern,
            arg_count,
            target,
            extractor: None,
        });
    }

    fn add_route(&mut self, route: Route) {
        if route.target != Target::Preflight
            && let Some(existing) = self.routes.iter().find(|r| {
                r.method == route.method
                    && r.pattern.key() == route.pattern.key()
                    && r.target != Target::Preflight
            })
        {
            self.errors.push(Error::DuplicateRoute {
                method: route.method.to_string(),
                path: route.path(),
                first: existing.target.owner(),
                second: route.target.owner(),
            });
            return;
        }
        self.routes.push(route);
    }

    /// A method-like endpoint: an OPTIONS route for cross-origin preflights, then the endpoint.
    fn add_with_preflight(&mut self, route: Route) {
        self.add_route(Route {
            method: Method::OPTIONS,
            target: Target::Preflight,
            extractor: None,
            ..route.clone()
        });
        self.add_route(route);
    }

    /// The route of a method or publication from its options.
    fn endpoint(
        &mut self,
        owner: String,
        options: &EndpointOptions,
        (default_url, default_method): (String, Method),
        target: Target,
    ) -> Option<Route> {
        let url = options.url.clone().unwrap_or(default_url);
        let extractor = match &options.args_extractor {
            None => None,
            Some(stored) => match stored.downcast_ref::<AutoExtractor>() {
                Some(found) => Some(found.clone()),
                None => {
                    self.errors.push(Error::ForeignArgsExtractor { owner });
                    return None;
                }
            },
        };
        match parse_url(&owner, &url) {
            Ok((pattern, arg_count)) => Some(Route {
                method: http_method(options.http_method, default_method),
                pattern,
                arg_count,
                target,
                extractor,
            }),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    fn method(&mut self, info: &MethodInfo) {
        let defaults = (format!("methods/{}", info.name), Method::POST);
        let owner = format!("method {:?}", info.name);
        let target = Target::Method(info.name.clone());
        if let Some(route) = self.endpoint(owner, &info.options, defaults, target) {
            self.add_with_preflight(route);
        }
    }

    fn publication(&mut self, info: &PublicationInfo) {
        let defaults = (format!("publications/{}", info.name), Method::GET);
        let owner = format!("publication {:?}", info.name);
        let target = Target::Publication(info.name.clone());
        if let Some(route) = self.endpoint(owner, &info.options, defaults, target) {
            self.add_route(route);
        }
    }

    fn collection(&mut self, name: &str) {
        let owner = format!("collection {name:?}");
        // Collection names are arbitrary strings; keep each one a single literal path segment.
        let segment: String = percent_encoding::utf8_percent_encode(name, SEGMENT).to_string();
        let (Ok(base), Ok(item)) = (
            parse_url(&owner, &segment),
            parse_url(&owner, &format!("{segment}/:_id")),
        ) else {
            self.errors.push(Error::InvalidUrl {
                owner,
                url: name.to_owned(),
                reason: "not usable as a path segment".into(),
            });
            return;
        };
        let name = name.to_owned();
        self.add(Method::OPTIONS, base.clone(), Target::Preflight);
        self.add(Method::POST, base, Target::Insert(name.clone()));
        // One preflight for the item path, which answers both PATCH and DELETE.
        self.add(Method::OPTIONS, item.clone(), Target::Preflight);
        self.add(Method::PATCH, item.clone(), Target::Update(name.clone()));
        self.add(Method::DELETE, item, Target::Remove(name));
    }
}

impl RouteTable {
    /// Every route whose path matches, in table order, with what it captured.
    fn matching(&self, path: &str) -> Vec<(&Route, PathMatch)> {
        let Some(path) = RequestPath::parse(path) else {
            return Vec::new();
        };
        self.routes
            .iter()
            .filter_map(|route| route.pattern.matches(&path).map(|m| (route, m)))
            .collect()
    }

    /// Builds the table from the platform's registries and the configuration. `listed` are
    /// routes served elsewhere (the login add-on) that the listing shows.
    ///
    /// `previous` is the registry of the table being replaced (`None` at setup). Endpoints it
    /// already had are added first, so a definition made later can never take a route away
    /// from one that was being served: on a clash the newcomer is the one refused.
    ///
    /// Returns the table with every route that could be built, and the errors of those that could
    /// not (bad url options, duplicate routes); the caller decides whether errors are fatal (at
    /// setup) or logged (for late definitions).
    pub(crate) fn build(
        platform: &Platform,
        config: &AutoConfig,
        listed: &[(Method, &'static str, &'static str)],
        previous: Option<&Registry>,
    ) -> (RouteTable, Vec<Error>) {
        // At setup every endpoint counts as known, so the table keeps the natural order.
        let known = |names: fn(&Registry) -> &Vec<String>, name: &String| {
            previous.is_none_or(|r| names(r).contains(name))
        };
        let registry = Registry::current(platform);
        let mut b = Builder {
            routes: Vec::new(),
            errors: Vec::new(),
        };
        let methods = platform.methods();
        let publications = platform.publications();
        let collections = config.collections_with_endpoints(&registry.collections);

        for first in [true, false] {
            for info in methods
                .iter()
                .filter(|m| known(|r| &r.methods, &m.name) == first)
            {
                b.method(info);
            }
            for info in publications
                .iter()
                .filter(|p| known(|r| &r.publications, &p.name) == first)
            {
                b.publication(info);
            }
            if first {
                b.built_ins(&publications, listed);
            }
            for name in collections
                .iter()
                .filter(|c| known(|r| &r.collections, c) == first)
            {
                b.collection(name);
            }
        }
        let table = RouteTable {
            routes: b.routes,
            registry,
        };
        (table, b.errors)
    }

    /// Every route, in table order.
    pub(crate) fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The registries this table was built from.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// True when the platform's registries still hold what this table was built from.
    pub(crate) fn is_current(&self, platform: &Platform) -> bool {
        self.registry == Registry::current(platform)
    }

    /// Finds the route for `method` at `path` (HEAD is answered by GET routes). The first route
    /// that matches wins, except that a generated preflight gives way to an endpoint the host
    /// defined with `http_method: options` itself.
    pub(crate) fn lookup(&self, method: &Method, path: &str) -> Lookup<'_> {
        let wanted = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        let mut others: Vec<Method> = Vec::new();
        let mut preflight = None;
        for (route, found) in self.matching(path) {
            if matches!(route.target, Target::Listed(_)) {
                continue;
            }
            if route.method == *wanted {
                if route.target != Target::Preflight {
                    return Lookup::Found(route, found);
                }
                preflight.get_or_insert((route, found));
                continue;
            }
            if !others.contains(&route.method) {
                others.push(route.method.clone());
            }
        }
        if let Some((route, found)) = preflight {
            Lookup::Found(route, found)
        } else if others.is_empty() {
            Lookup::NotFound
        } else {
            Lookup::OtherMethods(others)
        }
    }

    /// The distinct methods of the routes whose pattern matches `path`, in table order.
    pub(crate) fn methods_at(&self, path: &str) -> Vec<Method> {
        let mut methods: Vec<Method> = Vec::new();
        for (route, _) in self.matching(path) {
            if !methods.contains(&route.method) {
                methods.push(route.method.clone());
            }
        }
        methods
    }
}

impl Builder {
    /// The built-in listing (unless the host published its own `api-routes`) and the routes
    /// served elsewhere that the listing shows.
    fn built_ins(
        &mut self,
        publications: &[PublicationInfo],
        listed: &[(Method, &'static str, &'static str)],
    ) {
        if !publications.iter().any(|p| p.name == API_ROUTES)
            && let Ok(path) = parse_url("api-routes", &format!("publications/{API_ROUTES}"))
        {
            self.add(Method::GET, path, Target::ApiRoutes);
        }
        for (method, path, what) in listed {
            if let Ok(pattern) = parse_url("the login add-on", path) {
                self.add(Method::OPTIONS, pattern.clone(), Target::Preflight);
                self.add(method.clone(), pattern, Target::Listed(what));
            }
        }
    }
}

/// Characters escaped when a collection name becomes a path segment.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'/')
    .add(b'?')
    .add(b'#')
    .add(b'%')
    .add(b'"')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}');

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn route(method: Method, path: &str, target: Target) -> Route {
        let (pattern, arg_count) = parse_url("test", path).unwrap();
        Route {
            method,
            pattern,
            arg_count,
            target,
            extractor: None,
        }
    }

    pub(crate) fn table(routes: &[(Method, &str, Target)]) -> RouteTable {
        let mut b = Builder {
            routes: Vec::new(),
            errors: Vec::new(),
        };
        for (method, path, target) in routes {
            let r = route(method.clone(), path, target.clone());
            if *target == Target::Preflight {
                b.add_route(r);
            } else {
                b.add_with_preflight(r);
            }
        }
        assert!(b.errors.is_empty());
        RouteTable {
            routes: b.routes,
            registry: Registry::default(),
        }
    }

    #[test]
    fn http_methods_map_to_their_http_names() {
        assert_eq!(
            http_method(Some(HttpMethod::Get), Method::POST),
            Method::GET
        );
        assert_eq!(
            http_method(Some(HttpMethod::Patch), Method::POST),
            Method::PATCH
        );
        assert_eq!(http_method(None, Method::POST), Method::POST);
    }

    #[test]
    fn lookup_finds_route_or_lists_other_methods() {
        let t = table(&[(Method::POST, "methods/add", Target::Method("add".into()))]);
        assert!(matches!(
            t.lookup(&Method::POST, "/methods/add"),
            Lookup::Found(r, _) if r.target == Target::Method("add".into())
        ));
        assert!(matches!(
            t.lookup(&Method::GET, "/methods/add"),
            Lookup::OtherMethods(m) if m == vec![Method::OPTIONS, Method::POST]
        ));
        assert!(matches!(
            t.lookup(&Method::GET, "/nothing"),
            Lookup::NotFound
        ));
    }

    #[test]
    fn table_order_decides_between_literal_and_patterned_routes() {
        let t = table(&[
            (Method::POST, "a/:0", Target::Method("patterned".into())),
            (Method::POST, "a/b", Target::Method("literal".into())),
        ]);
        assert!(matches!(
            t.lookup(&Method::POST, "/a/b"),
            Lookup::Found(r, m) if r.target == Target::Method("patterned".into()) && m.numbered(r.arg_count) == ["b"]
        ));
        let t = table(&[
            (Method::POST, "a/b", Target::Method("literal".into())),
            (Method::POST, "a/:0", Target::Method("patterned".into())),
        ]);
        assert!(matches!(
            t.lookup(&Method::POST, "/a/b"),
            Lookup::Found(r, _) if r.target == Target::Method("literal".into())
        ));
        assert!(matches!(
            t.lookup(&Method::POST, "/a/c"),
            Lookup::Found(r, _) if r.target == Target::Method("patterned".into())
        ));
        assert_eq!(t.methods_at("/a/b"), vec![Method::OPTIONS, Method::POST]);
        assert!(matches!(
            t.lookup(&Method::POST, "/a/%FF"),
            Lookup::NotFound
        ));
    }

    #[test]
    fn a_host_options_endpoint_beats_the_generated_preflight() {
        let t = table(&[
            (Method::POST, "x", Target::Method("post-x".into())),
            (Method::OPTIONS, "x", Target::Method("options-x".into())),
        ]);
        assert!(matches!(
            t.lookup(&Method::OPTIONS, "/x"),
            Lookup::Found(r, _) if r.target == Target::Method("options-x".into())
        ));
        let t = table(&[(Method::POST, "y", Target::Method("post-y".into()))]);
        assert!(matches!(
            t.lookup(&Method::OPTIONS, "/y"),
            Lookup::Found(r, _) if r.target == Target::Preflight
        ));
    }

    #[test]
    fn duplicate_routes_are_reported_with_both_owners() {
        let mut b = Builder {
            routes: Vec::new(),
            errors: Vec::new(),
        };
        b.add_with_preflight(route(Method::POST, "x", Target::Method("a".into())));
        b.add_with_preflight(route(Method::POST, "x", Target::Method("b".into())));
        assert_eq!(b.errors.len(), 1);
        let message = b.errors[0].to_string();
        assert!(
            message.contains("\"a\"") && message.contains("\"b\""),
            "{message}"
        );
    }

    #[test]
    fn bad_urls_are_refused() {
        for bad in [
            "a//b",
            "a/:",
            "a/:1",
            "a/:0/:0",
            "a?b",
            "a/:99999999999999999999999",
        ] {
            assert!(parse_url("m", bad).is_err(), "{bad}");
        }
        assert_eq!(parse_url("m", "lists/:1/items/:0").unwrap().1, 2);
    }
}
