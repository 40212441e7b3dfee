//! The route table: every endpoint the auto API answers, built from the platform's registries.
//!
//! The table is a snapshot. Methods, publications and collections defined after it was built are
//! picked up by [`crate::dispatch`], which rebuilds the table when a request finds no route and the
//! registries have changed since (see [`Registry`]).

use std::collections::HashMap;

use http::Method;
use portico_platform::{ArgsExtractor, MethodInfo, Platform, PublicationInfo};
use serde_json::{Map, Value, json};

use crate::url::{RequestPath, UrlMatch, UrlPattern};
use crate::{AutoConfig, Error, Result};

/// The name of the built-in route listing publication.
pub const API_ROUTES: &str = "api-routes";

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
    /// Served elsewhere (the login add-on); only listed.
    Listed,
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
            Target::Listed => "the login add-on".into(),
        }
    }
}

/// One endpoint: an HTTP method at a path pattern.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) method: Method,
    pub(crate) pattern: UrlPattern,
    pub(crate) target: Target,
    pub(crate) extractor: Option<ArgsExtractor>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("method", &self.method)
            .field("path", &self.pattern.path())
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
    Found(&'a Route, UrlMatch),
    /// The path exists, with these methods only.
    OtherMethods(Vec<Method>),
    /// No route has this path.
    NotFound,
}

/// A snapshot of every route.
///
/// Routes whose path is all literal (every method's and publication's default url) are found by
/// one hash lookup of the request path; only patterned ones (`:_id`, `:0`) are scanned. Among the
/// routes that match, the one earliest in the table wins.
#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    routes: Vec<Route>,
    registry: Registry,
    /// Indexes of all-literal routes by [`UrlPattern::static_key`], ascending.
    by_path: HashMap<String, Vec<usize>>,
    /// Indexes of the other routes, ascending.
    patterned: Vec<usize>,
}

/// Parses an `http_method` option ("get", "POST"...).
fn parse_http_method(owner: &str, name: Option<&str>, default: Method) -> Result<Method> {
    let Some(name) = name else {
        return Ok(default);
    };
    let upper = name.trim().to_ascii_uppercase();
    match Method::from_bytes(upper.as_bytes()) {
        Ok(m) if !upper.is_empty() && m != Method::CONNECT && m != Method::TRACE => Ok(m),
        _ => Err(Error::InvalidHttpMethod {
            owner: owner.to_owned(),
            method: name.to_owned(),
        }),
    }
}

fn parse_url(owner: &str, url: &str) -> Result<UrlPattern> {
    UrlPattern::parse(url).map_err(|reason| Error::InvalidUrl {
        owner: owner.to_owned(),
        url: url.to_owned(),
        reason,
    })
}

/// Collects routes, refusing a second route for the same method and path.
struct Builder {
    routes: Vec<Route>,
    errors: Vec<Error>,
}

impl Builder {
    fn add(
        &mut self,
        method: Method,
        pattern: UrlPattern,
        target: Target,
        extractor: Option<ArgsExtractor>,
    ) {
        if target != Target::Preflight {
            if let Some(existing) = self.routes.iter().find(|r| {
                r.method == method
                    && r.pattern.path() == pattern.path()
                    && r.target != Target::Preflight
            }) {
                self.errors.push(Error::DuplicateRoute {
                    method: method.to_string(),
                    path: pattern.path().to_owned(),
                    first: existing.target.owner(),
                    second: target.owner(),
                });
                return;
            }
        }
        self.routes.push(Route {
            method,
            pattern,
            target,
            extractor,
        });
    }

    /// A method-like endpoint: an OPTIONS route for cross-origin preflights, then the endpoint.
    fn add_with_preflight(
        &mut self,
        method: Method,
        pattern: UrlPattern,
        target: Target,
        extractor: Option<ArgsExtractor>,
    ) {
        self.add(Method::OPTIONS, pattern.clone(), Target::Preflight, None);
        self.add(method, pattern, target, extractor);
    }
}

impl Builder {
    fn method(&mut self, info: &MethodInfo) {
        let owner = format!("method {:?}", info.name);
        let url = info
            .options
            .url
            .clone()
            .unwrap_or_else(|| format!("methods/{}", info.name));
        match (
            parse_url(&owner, &url),
            parse_http_method(&owner, info.options.http_method.as_deref(), Method::POST),
        ) {
            (Ok(pattern), Ok(method)) => self.add_with_preflight(
                method,
                pattern,
                Target::Method(info.name.clone()),
                info.options.args_extractor.clone(),
            ),
            (Err(e), _) | (_, Err(e)) => self.errors.push(e),
        }
    }

    fn publication(&mut self, info: &PublicationInfo) {
        let owner = format!("publication {:?}", info.name);
        let url = info
            .options
            .url
            .clone()
            .unwrap_or_else(|| format!("publications/{}", info.name));
        match (
            parse_url(&owner, &url),
            parse_http_method(&owner, info.options.http_method.as_deref(), Method::GET),
        ) {
            (Ok(pattern), Ok(method)) => self.add(
                method,
                pattern,
                Target::Publication(info.name.clone()),
                info.options.args_extractor.clone(),
            ),
            (Err(e), _) | (_, Err(e)) => self.errors.push(e),
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
        self.add_with_preflight(Method::POST, base, Target::Insert(name.to_owned()), None);
        self.add_with_preflight(
            Method::PATCH,
            item.clone(),
            Target::Update(name.to_owned()),
            None,
        );
        self.add_with_preflight(Method::DELETE, item, Target::Remove(name.to_owned()), None);
    }
}

impl RouteTable {
    fn new(routes: Vec<Route>, registry: Registry) -> RouteTable {
        let mut by_path: HashMap<String, Vec<usize>> = HashMap::new();
        let mut patterned = Vec::new();
        for (index, route) in routes.iter().enumerate() {
            match route.pattern.static_key() {
                Some(key) => by_path.entry(key).or_default().push(index),
                None => patterned.push(index),
            }
        }
        RouteTable {
            routes,
            registry,
            by_path,
            patterned,
        }
    }

    /// Every route whose path matches, in table order, with what it captured.
    fn matching(&self, path: &str) -> Vec<(&Route, UrlMatch)> {
        let Some(path) = RequestPath::parse(path) else {
            return Vec::new();
        };
        let mut found: Vec<(usize, UrlMatch)> = Vec::new();
        if let Some(indexes) = path.static_key().and_then(|key| self.by_path.get(&key)) {
            found.extend(indexes.iter().map(|i| (*i, UrlMatch::default())));
        }
        for &index in &self.patterned {
            if let Some(m) = self.routes[index].pattern.matches_segments(&path) {
                found.push((index, m));
            }
        }
        found.sort_by_key(|(index, _)| *index);
        found
            .into_iter()
            .map(|(index, m)| (&self.routes[index], m))
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
    /// not (bad url or http method options, duplicate routes); the caller decides whether errors
    /// are fatal (at setup) or logged (for late definitions).
    pub(crate) fn build(
        platform: &Platform,
        config: &AutoConfig,
        listed: &[(Method, String)],
        previous: Option<&Registry>,
    ) -> (RouteTable, Vec<Error>) {
        // At setup every endpoint counts as known, so the table keeps the natural order.
        let known_method = |name: &String| previous.is_none_or(|r| r.methods.contains(name));
        let known_publication =
            |name: &String| previous.is_none_or(|r| r.publications.contains(name));
        let known_collection =
            |name: &String| previous.is_none_or(|r| r.collections.contains(name));
        let registry = Registry::current(platform);
        let mut b = Builder {
            routes: Vec::new(),
            errors: Vec::new(),
        };
        let methods = platform.methods();
        let publications = platform.publications();
        let collections = config.collections_with_endpoints(&registry.collections);

        for known in [true, false] {
            for info in methods.iter().filter(|m| known_method(&m.name) == known) {
                b.method(info);
            }
            for info in publications
                .iter()
                .filter(|p| known_publication(&p.name) == known)
            {
                b.publication(info);
            }
            if known {
                // A publication the host named `api-routes` takes precedence over the built-in.
                if !publications.iter().any(|p| p.name == API_ROUTES) {
                    if let Ok(pattern) = UrlPattern::parse(&format!("publications/{API_ROUTES}")) {
                        b.add(Method::GET, pattern, Target::ApiRoutes, None);
                    }
                }
                for (method, path) in listed {
                    if let Ok(pattern) = UrlPattern::parse(path) {
                        b.add_with_preflight(method.clone(), pattern, Target::Listed, None);
                    }
                }
            }
            for name in collections.iter().filter(|c| known_collection(c) == known) {
                b.collection(name);
            }
        }

        (RouteTable::new(b.routes, registry), b.errors)
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
    /// defined with `http_method: "options"` itself.
    pub(crate) fn lookup(&self, method: &Method, path: &str) -> Lookup<'_> {
        let wanted = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        let mut others: Vec<Method> = Vec::new();
        let mut preflight = None;
        for (route, found) in self.matching(path) {
            if route.target == Target::Listed {
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

    /// The `api-routes` listing in the 1.x shape: one entry per path, in the order paths first
    /// appear, with every method at that path in order (`options` repeats when several
    /// method-like endpoints share a path, as the spec allows).
    pub(crate) fn listing(&self) -> Value {
        let mut entries: Vec<(String, Vec<Value>)> = Vec::new();
        for route in &self.routes {
            let path = route.pattern.path();
            let method = Value::String(route.method.as_str().to_ascii_lowercase());
            match entries.iter_mut().find(|(p, _)| p == path) {
                Some((_, methods)) => methods.push(method),
                None => entries.push((path.to_owned(), vec![method])),
            }
        }
        let list = entries
            .into_iter()
            .map(|(path, methods)| json!({"_id": path, "methods": methods, "path": path}))
            .collect();
        let mut body = Map::new();
        body.insert(API_ROUTES.into(), Value::Array(list));
        Value::Object(body)
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
mod tests {
    use super::*;

    #[test]
    fn http_method_names_are_normalised() {
        assert_eq!(
            parse_http_method("m", Some("get"), Method::POST).unwrap(),
            Method::GET
        );
        assert_eq!(
            parse_http_method("m", Some("Patch"), Method::POST).unwrap(),
            Method::PATCH
        );
        assert_eq!(
            parse_http_method("m", None, Method::POST).unwrap(),
            Method::POST
        );
        assert!(parse_http_method("m", Some("no such"), Method::POST).is_err());
        assert!(parse_http_method("m", Some(""), Method::POST).is_err());
    }

    fn table(routes: &[(Method, &str, Target)]) -> RouteTable {
        let mut b = Builder {
            routes: Vec::new(),
            errors: Vec::new(),
        };
        for (method, path, target) in routes {
            let pattern = UrlPattern::parse(path).unwrap();
            if *target == Target::Preflight {
                b.add(method.clone(), pattern, target.clone(), None);
            } else {
                b.add_with_preflight(method.clone(), pattern, target.clone(), None);
            }
        }
        assert!(b.errors.is_empty());
        RouteTable::new(b.routes, Registry::default())
    }

    #[test]
    fn listing_groups_by_path_and_repeats_options() {
        let t = table(&[
            (Method::POST, "methods/add", Target::Method("add".into())),
            (Method::PATCH, "todos/:_id", Target::Update("todos".into())),
            (Method::DELETE, "todos/:_id", Target::Remove("todos".into())),
        ]);
        assert_eq!(
            t.listing(),
            json!({"api-routes": [
                {"_id": "/methods/add", "methods": ["options", "post"], "path": "/methods/add"},
                {"_id": "/todos/:_id", "methods": ["options", "patch", "options", "delete"],
                 "path": "/todos/:_id"}
            ]})
        );
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
            Lookup::Found(r, m) if r.target == Target::Method("patterned".into()) && m.url_args == ["b"]
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
        let p = UrlPattern::parse("x").unwrap();
        b.add_with_preflight(Method::POST, p.clone(), Target::Method("a".into()), None);
        b.add_with_preflight(Method::POST, p, Target::Method("b".into()), None);
        assert_eq!(b.errors.len(), 1);
        let message = b.errors[0].to_string();
        assert!(
            message.contains("\"a\"") && message.contains("\"b\""),
            "{message}"
        );
    }
}
