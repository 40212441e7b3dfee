//! [`Shared`]: what every request of the auto API router shares (the platform, the config, the
//! body limit and the current route table), and finding a request's route in that table,
//! rebuilding it first when the platform's registries changed since it was built; and the
//! arguments of a call, read from a request under the shared body limit.
//!
//! A request for a route that exists costs one read lock and a scan of the table; only misses
//! look at the registries.

use std::sync::{Arc, PoisonError, RwLock};

use axum::body::Body;
use http::Method;
use http::request::Parts;
use portico_edge::{PathMatch, parse_body, parse_form, read_body};
use portico_platform::{Collection, IdKind, Platform};
use serde_json::Value;

use crate::args::{ArgsRequest, default_args};
use crate::route::{Lookup, Route, RouteTable};
use crate::{ApiError, AutoConfig};

/// What every request handler shares.
pub(crate) struct Shared {
    pub(crate) platform: Platform,
    pub(crate) config: AutoConfig,
    pub(crate) body_limit: usize,
    /// Routes served by other routers (the login add-on), listed by `api-routes`.
    pub(crate) listed: Vec<(Method, &'static str, &'static str)>,
    table: RwLock<Arc<RouteTable>>,
}

/// A lookup that owns what it found, so the table lock is not held across awaits.
pub(crate) enum Resolved {
    Found(Route, PathMatch),
    OtherMethods(Vec<Method>),
    NotFound,
}

impl Shared {
    pub(crate) fn new(
        platform: Platform,
        config: AutoConfig,
        body_limit: usize,
        listed: Vec<(Method, &'static str, &'static str)>,
        table: RouteTable,
    ) -> Shared {
        Shared {
            platform,
            config,
            body_limit,
            listed,
            table: RwLock::new(Arc::new(table)),
        }
    }

    fn table(&self) -> Arc<RouteTable> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The current table, rebuilt first when the platform's registries changed.
    pub(crate) fn refresh(&self) -> Arc<RouteTable> {
        let current = self.table();
        if current.is_current(&self.platform) {
            return current;
        }
        let (table, errors) = RouteTable::build(
            &self.platform,
            &self.config,
            &self.listed,
            Some(current.registry()),
        );
        for error in errors {
            // Setup-time errors were fatal in `AutoApi::router`; a definition made later can only
            // be reported here.
            tracing::error!(%error, "auto API: an endpoint defined after startup was skipped");
        }
        let table = Arc::new(table);
        *self.table.write().unwrap_or_else(PoisonError::into_inner) = table.clone();
        table
    }

    fn resolve_in(table: &RouteTable, method: &Method, path: &str) -> Resolved {
        match table.lookup(method, path) {
            Lookup::Found(route, found) => Resolved::Found(route.clone(), found),
            Lookup::OtherMethods(methods) => Resolved::OtherMethods(methods),
            Lookup::NotFound => Resolved::NotFound,
        }
    }

    /// Whether ids of `collection` are object ids: listed in `object_id_collections`, or
    /// declared on the platform with [`IdKind::ObjectId`].
    pub(crate) fn uses_object_ids(&self, collection: &Collection) -> bool {
        collection.id_kind() == IdKind::ObjectId
            || self.config.is_object_id_collection(collection.name())
    }

    pub(crate) fn resolve(&self, method: &Method, path: &str) -> Resolved {
        let resolved = Self::resolve_in(&self.table(), method, path);
        if let Resolved::Found(..) = resolved {
            return resolved;
        }
        Self::resolve_in(&self.refresh(), method, path)
    }
}

/// The positional arguments of a method or publication call: its `args_extractor`, or the
/// default rule of [`crate::args`].
pub(crate) async fn request_args(
    shared: &Shared,
    route: &Route,
    parts: Parts,
    body: Body,
    found: PathMatch,
) -> Result<Vec<Value>, ApiError> {
    let url_args = found.numbered(route.arg_count);
    let raw_body = read_body(&parts.headers, body, shared.body_limit).await?;
    let parsed = parse_body(&parts.headers, &raw_body)?;
    let Some(extractor) = &route.extractor else {
        return default_args(&url_args, parsed);
    };
    let query = parse_form(parts.uri.query().unwrap_or_default().as_bytes())
        .map_err(|e| ApiError::bad_request("invalid-query", e.to_string()))?;
    let request = ArgsRequest {
        method: parts.method,
        uri: parts.uri,
        headers: parts.headers,
        params: found.params,
        url_args,
        query,
        body: parsed,
        raw_body,
    };
    (extractor.0)(request).await.map_err(ApiError::from)
}
