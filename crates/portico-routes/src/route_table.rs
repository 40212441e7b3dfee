//! [`RouteTable`]: the routes of an [`crate::Api`], shared by the API and every router it made
//! (so routes added after [`crate::Api::router`] are served too), and what each route holds.
//!
//! The `Api` builder (`api.rs`) adds routes; the dispatcher (`dispatch.rs`) and batches find
//! them here, by the one rule of [`RouteTable::find`].

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use futures::future::BoxFuture;
use http::HeaderValue;
use portico_edge::{PathPattern, PathTable, RequestPath, RoutePath};
use portico_store::{BatchOp, BatchOutcome, Document};
use serde_json::Value;

use crate::endpoint_doc::EndpointDoc;
use crate::{Context, Endpoints, Error, Op, Reply, Result, RouteOptions};

/// Parameters a path captured, in path order.
pub(crate) type Params = Vec<(String, String)>;

/// The route table an [`crate::Api`] and every router it made share.
#[derive(Clone, Default)]
pub(crate) struct RouteTable(Arc<RwLock<PathTable<Arc<Route>>>>);

impl RouteTable {
    /// The routes, read-locked, in match order.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, PathTable<Arc<Route>>> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// True when a route exists at `pattern`'s path.
    pub(crate) fn has(&self, pattern: &PathPattern) -> bool {
        self.read().iter().any(|(p, _)| p.key() == pattern.key())
    }

    /// Adds `route` at `pattern`.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a route exists at that path.
    pub(crate) fn insert(&self, pattern: PathPattern, route: Route) -> Result<()> {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pattern, Arc::new(route))
            .map_err(|e| Error::DuplicatePath(e.0))
    }

    /// The route a request path names, with the parameters it captured: `path` is the full
    /// path, under `prefix` (the API's base path; the base path without its trailing slash
    /// names the route at the root of the API).
    pub(crate) fn find(&self, prefix: &str, path: &str) -> Option<(Arc<Route>, Params)> {
        let relative = match path.strip_prefix(prefix) {
            Some(rest) => rest,
            None if path == prefix.trim_end_matches('/') => "",
            None => return None,
        };
        self.find_relative(relative)
    }

    /// The route a path relative to the API's base path names.
    pub(crate) fn find_relative(&self, relative: &str) -> Option<(Arc<Route>, Params)> {
        let path = RequestPath::parse(relative)?;
        self.read()
            .find(&path)
            .map(|(_, route, found)| (route.clone(), found.params))
    }
}

/// One route: a compiled path, its options and endpoints.
pub(crate) struct Route {
    pub(crate) options: RouteOptions,
    pub(crate) endpoints: Endpoints,
    /// The `Allow` header value: the route's methods.
    pub(crate) allow: HeaderValue,
    /// A body limit of the route's own, below the API's.
    pub(crate) body_limit: Option<usize>,
    /// Descriptions of generated endpoints, by method name.
    pub(crate) docs: Vec<(&'static str, EndpointDoc)>,
    /// The generated collection behind the route, for batches.
    pub(crate) generated: Option<Generated>,
    /// The body is not read before the action: it streams it ([`Context::take_body_stream`]).
    pub(crate) streamed: bool,
    /// A file download: a short-lived download token (`?token=`) stands for the caller.
    pub(crate) file_download: bool,
}

/// What a route built by the API itself (login, generated collections) adds to a hand-made one.
#[derive(Default)]
pub(crate) struct RouteExtras {
    /// A body limit below the API's.
    pub(crate) body_limit: Option<usize>,
    /// Descriptions by method name.
    pub(crate) docs: Vec<(&'static str, EndpointDoc)>,
    /// The generated collection behind the route, for batches.
    pub(crate) generated: Option<Generated>,
    /// The body is not read before the action: it streams it.
    pub(crate) streamed: bool,
    /// A file download: a short-lived download token (`?token=`) stands for the caller.
    pub(crate) file_download: bool,
}

/// The generated collection behind a route, and which of its operations run the generated
/// action (those a batch may include).
#[derive(Clone)]
pub(crate) struct Generated {
    pub(crate) target: Arc<dyn BatchTarget>,
    pub(crate) ops: Vec<Op>,
}

/// What a batch needs of a generated collection: implemented by the collection's routes, so
/// the route table knows the interface and not the collection.
pub(crate) trait BatchTarget: Send + Sync {
    /// Refuses a collection whose writes a batch cannot reproduce faithfully.
    ///
    /// # Errors
    /// 400 naming why.
    fn batchable(&self) -> std::result::Result<(), Reply>;

    /// The write of one checked sub-request (`ctx` holds its caller, options and url
    /// parameters), made as the single request would make it.
    fn write<'a>(
        &'a self,
        ctx: &'a Context,
        op: Op,
        id: Option<&'a str>,
        body: Option<Document>,
    ) -> BoxFuture<'a, std::result::Result<BatchOp, Reply>>;

    /// What the caller of `ctx` may see of the collection's documents (its field rules).
    fn view<'a>(
        &'a self,
        ctx: &'a Context,
    ) -> BoxFuture<'a, std::result::Result<portico_platform::FieldView, Reply>>;

    /// One sub-request's reply: the status and body its single request would answer, shown
    /// through the caller's `view`.
    fn show(&self, outcome: BatchOutcome, view: &portico_platform::FieldView) -> Value;
}

/// Compiles a route path, with the crate's error.
pub(crate) fn compile(path: &RoutePath) -> Result<PathPattern> {
    PathPattern::compile(path).map_err(|e| Error::InvalidPath {
        path: e.path,
        reason: e.reason,
    })
}
