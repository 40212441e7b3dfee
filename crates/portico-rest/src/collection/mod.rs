//! Generated collection routes (`add_collection`): getAll, post, get, put, patch, delete.

mod client_body;
mod crud;
mod hooks;
mod list;
mod scope;
mod users;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use portico_platform::Collection;

use crate::path::Matcher;
use crate::{Api, Context, Endpoint, Endpoints, Error, Result, RouteOptions};

pub use hooks::{AfterEvent, AfterHook, BeforeHook, HookEvent};
pub use scope::AccessScope;

/// The name of a generated endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// `GET {api}<path>`: list.
    GetAll,
    /// `POST {api}<path>`: create (201).
    Post,
    /// `GET {api}<path>/:id`: read one.
    Get,
    /// `PUT {api}<path>/:id`: replace.
    Put,
    /// `PATCH {api}<path>/:id`: change some fields.
    Patch,
    /// `DELETE {api}<path>/:id`: remove.
    Delete,
}

impl Op {
    /// Every generated endpoint.
    pub const ALL: [Op; 6] = [
        Op::GetAll,
        Op::Post,
        Op::Get,
        Op::Put,
        Op::Patch,
        Op::Delete,
    ];

    /// The spec's name: `getAll`, `post`, `get`, `put`, `patch`, `delete`.
    pub fn name(self) -> &'static str {
        match self {
            Op::GetAll => "getAll",
            Op::Post => "post",
            Op::Get => "get",
            Op::Put => "put",
            Op::Patch => "patch",
            Op::Delete => "delete",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = Error;

    fn from_str(s: &str) -> Result<Op> {
        Op::ALL
            .into_iter()
            .find(|op| op.name() == s)
            .ok_or_else(|| {
                Error::InvalidOption(format!(
                    "unknown collection endpoint {s:?} (use getAll, post, get, put, patch or delete)"
                ))
            })
    }
}

/// How one generated endpoint is configured: `false` suppresses it; an [`Endpoint`] sets its
/// options, and its action (when given) replaces the default behaviour.
#[derive(Debug, Clone)]
pub enum CollectionEndpoint {
    /// Not generated.
    Disabled,
    /// Generated with these options (and this action, when set).
    Configured(Endpoint),
}

impl From<bool> for CollectionEndpoint {
    fn from(on: bool) -> Self {
        if on {
            CollectionEndpoint::Configured(Endpoint::options())
        } else {
            CollectionEndpoint::Disabled
        }
    }
}

impl From<Endpoint> for CollectionEndpoint {
    fn from(e: Endpoint) -> Self {
        CollectionEndpoint::Configured(e)
    }
}

/// Options of [`Api::add_collection`].
#[derive(Debug, Clone, Default)]
pub struct CollectionOptions {
    pub(crate) path: Option<String>,
    pub(crate) route_options: RouteOptions,
    pub(crate) excluded: Vec<Op>,
    pub(crate) endpoints: BTreeMap<Op, CollectionEndpoint>,
    pub(crate) scope: Option<AccessScope>,
    pub(crate) before: Option<BeforeHook>,
    pub(crate) after: Option<AfterHook>,
    pub(crate) max_page_size: Option<u64>,
    pub(crate) default_page_size: Option<u64>,
}

impl CollectionOptions {
    /// Every endpoint generated, at the collection's name, no authentication.
    pub fn new() -> Self {
        CollectionOptions::default()
    }

    /// Base path of the two routes (`<path>` and `<path>/:id`); the collection's name by default.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Options applied to every generated endpoint.
    pub fn route_options(mut self, options: RouteOptions) -> Self {
        self.route_options = options;
        self
    }

    /// Does not generate `op`.
    pub fn exclude(mut self, op: Op) -> Self {
        self.excluded.push(op);
        self
    }

    /// Does not generate the endpoints named (`"delete"`, `"getAll"`...).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for an unknown name.
    pub fn excluded_endpoints<'a>(
        mut self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self> {
        for name in names {
            self.excluded.push(name.parse()?);
        }
        Ok(self)
    }

    /// Configures `op`: `false` suppresses it, an [`Endpoint`] sets its options (and action).
    pub fn endpoint(mut self, op: Op, config: impl Into<CollectionEndpoint>) -> Self {
        self.endpoints.insert(op, config.into());
        self
    }

    /// Restricts every generated endpoint to the documents the scope selects for the caller,
    /// and stamps its fields on created documents.
    pub fn scope(mut self, scope: AccessScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Runs before every default action (validate, reshape the body, or refuse).
    pub fn before(mut self, hook: BeforeHook) -> Self {
        self.before = Some(hook);
        self
    }

    /// Runs after every default action, on the reply's `data`.
    pub fn after(mut self, hook: AfterHook) -> Self {
        self.after = Some(hook);
        self
    }

    /// Page size of getAll without `limit` (the API's by default).
    pub fn default_page_size(mut self, size: u64) -> Self {
        self.default_page_size = Some(size);
        self
    }

    /// Largest getAll `limit` (the API's by default).
    pub fn max_page_size(mut self, size: u64) -> Self {
        self.max_page_size = Some(size);
        self
    }
}

/// What the default actions of one generated collection share.
pub(crate) struct CollectionState {
    pub(crate) collection: Collection,
    pub(crate) users: bool,
    pub(crate) scope: Option<AccessScope>,
    pub(crate) before: Option<BeforeHook>,
    pub(crate) after: Option<AfterHook>,
    pub(crate) default_page_size: u64,
    pub(crate) max_page_size: u64,
}

impl Api {
    /// Generates the routes `<path>` (getAll, post) and `<path>/:id` (get, put, patch, delete)
    /// for `collection`. The collection named `users` is special: get and getAll expose only
    /// `_id` and `profile`, post creates an account (password hashed), put sets `profile`.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a route exists at either path, [`Error::InvalidPath`] for a
    /// bad path.
    pub fn add_collection(
        &mut self,
        collection: Collection,
        options: CollectionOptions,
    ) -> Result<()> {
        let base = options
            .path
            .clone()
            .unwrap_or_else(|| collection.name().to_owned());
        let base = base.trim_matches('/').to_owned();
        let mut route_options = options.route_options.clone();
        if options
            .scope
            .as_ref()
            .is_some_and(AccessScope::requires_user)
        {
            route_options.auth_required = true;
        }
        let state = Arc::new(CollectionState {
            users: collection.name() == "users",
            collection,
            scope: options.scope.clone(),
            before: options.before.clone(),
            after: options.after.clone(),
            default_page_size: options
                .default_page_size
                .unwrap_or(self.options.default_page_size),
            max_page_size: options.max_page_size.unwrap_or(self.options.max_page_size),
        });
        let mut list = Endpoints::new();
        let mut item = Endpoints::new();
        for op in Op::ALL {
            if options.excluded.contains(&op) {
                continue;
            }
            let mut endpoint = match options.endpoints.get(&op) {
                Some(CollectionEndpoint::Disabled) => continue,
                Some(CollectionEndpoint::Configured(e)) => e.clone(),
                None => Endpoint::options(),
            };
            if endpoint.action.is_none() {
                let state = state.clone();
                endpoint = endpoint.action(move |ctx: Context| {
                    let state = state.clone();
                    async move { crud::run(&state, op, ctx).await }
                });
            }
            let slot = match op {
                Op::GetAll => &mut list.get,
                Op::Post => &mut list.post,
                Op::Get => &mut item.get,
                Op::Put => &mut item.put,
                Op::Patch => &mut item.patch,
                Op::Delete => &mut item.delete,
            };
            *slot = Some(endpoint);
        }
        let list_matcher = Matcher::compile(&base.as_str().into())?;
        let item_path = if base.is_empty() {
            ":id".to_owned()
        } else {
            format!("{base}/:id")
        };
        let item_matcher = Matcher::compile(&item_path.into())?;
        // Check both before adding either, so a failed call leaves the API unchanged.
        for m in [&list_matcher, &item_matcher] {
            if self.routes.iter().any(|r| r.matcher.key() == m.key()) {
                return Err(Error::DuplicatePath(m.display().to_owned()));
            }
        }
        if !list.is_empty() {
            self.insert_route(list_matcher, route_options.clone(), list)?;
        }
        if !item.is_empty() {
            self.insert_route(item_matcher, route_options, item)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(op.name().parse::<Op>().unwrap(), op);
        }
        assert!("list".parse::<Op>().is_err());
    }

    #[test]
    fn excluded_names_are_checked() {
        assert!(
            CollectionOptions::new()
                .excluded_endpoints(["delete", "put"])
                .is_ok()
        );
        assert!(
            CollectionOptions::new()
                .excluded_endpoints(["remove"])
                .is_err()
        );
    }
}
