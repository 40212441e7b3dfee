//! [`Platform`]: the store, the declared collections, accounts, methods and publications.
//!
//! What runs on a platform holds a handle to it, so it lives here, below it:
//!
//! | part | file |
//! |---|---|
//! | methods: registration, [`Invocation`] | `method.rs` |
//! | publications: registration, [`Subscription`] | `publication.rs` |
//! | login and registration for both doors | `login/` |
//! | opening live streams on the platform | `live.rs` (the streams themselves: `crate::live`) |
//! | signed webhook deliveries of collections' writes | `webhooks.rs` |
//! | closing: registries emptied, the store closed | `close.rs` |

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock, PoisonError, RwLock, Weak};

use futures::FutureExt;
use portico_store::{Store, document_id};
use serde_json::{Map, Value};

mod aggregate;
mod close;
mod expand;
pub mod files;
mod live;
pub(crate) mod login;
pub(crate) mod method;
pub(crate) mod publication;
pub(crate) mod webhooks;

use crate::{
    Accounts, AccountsConfig, Collection, CollectionOptions, Cursor, Error, FieldView, Invocation,
    MethodError, MethodInfo, MethodOptions, MethodReply, PublicationInfo, PublicationOptions,
    Result, Subscription,
};
use method::MethodHandler;
use publication::PublicationHandler;

/// Settings of a [`Platform`].
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::{AccountsConfig, LiveConfig, PlatformConfig};
///
/// let config = PlatformConfig::default()
///     .accounts(AccountsConfig::default().password_min_length(12))
///     .live(LiveConfig::default().max_streams(100));
/// assert_eq!(config.accounts.password_min_length, 12);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PlatformConfig {
    /// Settings of the accounts service.
    pub accounts: AccountsConfig,
    /// Limits of live streams.
    pub live: crate::LiveConfig,
    /// Limits of channels and their sockets.
    pub channels: crate::ChannelsConfig,
}

impl PlatformConfig {
    /// Sets [`accounts`](PlatformConfig::accounts): settings of the accounts service.
    pub fn accounts(mut self, accounts: AccountsConfig) -> Self {
        self.accounts = accounts;
        self
    }

    /// Sets [`live`](PlatformConfig::live): limits of live streams.
    pub fn live(mut self, live: crate::LiveConfig) -> Self {
        self.live = live;
        self
    }
}

struct MethodEntry {
    options: MethodOptions,
    /// True when the options were given (by `set_method_options` or at definition).
    options_set: bool,
    handler: Option<MethodHandler>,
}

struct PublicationEntry {
    options: PublicationOptions,
    handler: PublicationHandler,
}

struct Inner {
    store: Arc<dyn Store>,
    accounts: Accounts,
    lifecycle: crate::Lifecycle,
    oidc: crate::Oidc,
    oauth2: crate::OAuth2,
    collections: RwLock<BTreeMap<String, Collection>>,
    methods: RwLock<BTreeMap<String, MethodEntry>>,
    publications: RwLock<BTreeMap<String, PublicationEntry>>,
    live: Arc<crate::live::Hub>,
    channels: crate::Channels,
    jobs: crate::jobs::Jobs,
    /// The receivers of [`Platform::set_webhooks`], once set.
    webhooks: OnceLock<Arc<webhooks::Deliveries>>,
    /// Shared with every collection, which asks it for its file fields on client writes.
    files: Arc<OnceLock<crate::platform::files::Files>>,
    /// Set by [`Platform::close`].
    closed: std::sync::atomic::AtomicBool,
}

/// The host-program model: a store, named collections with rules, accounts, and the method and
/// publication registries. Cheap to clone (an `Arc` inside); clones share everything.
#[derive(Clone)]
pub struct Platform {
    inner: Arc<Inner>,
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Platform")
            .field("collections", &self.collection_names())
            .field(
                "methods",
                &self
                    .methods()
                    .iter()
                    .map(|m| m.name.clone())
                    .collect::<Vec<_>>(),
            )
            .field(
                "publications",
                &self
                    .publications()
                    .iter()
                    .map(|p| p.name.clone())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

impl Platform {
    /// Opens the store a URL names (`memory:`, `sqlite:PATH`) with default settings.
    ///
    /// # Errors
    /// The store's error for a bad URL or a file that cannot be opened.
    pub async fn open(url: &str) -> Result<Platform> {
        Platform::open_with(url, PlatformConfig::default()).await
    }

    /// Opens the store a URL names with `config`.
    ///
    /// # Errors
    /// As [`Platform::open`].
    pub async fn open_with(url: &str, config: PlatformConfig) -> Result<Platform> {
        let store = portico_store::open(url).await?;
        Platform::with_store_config(store, config).await
    }

    /// A platform over an existing store, with default settings.
    ///
    /// # Errors
    /// Store failures while creating the accounts' indexes.
    pub async fn with_store(store: Arc<dyn Store>) -> Result<Platform> {
        Platform::with_store_config(store, PlatformConfig::default()).await
    }

    /// A platform over an existing store with `config`. Ensures the index on the login-token path
    /// (and on `username` and `emails.address`) of the `users` collection.
    ///
    /// # Errors
    /// Store failures while creating the indexes.
    pub async fn with_store_config(
        store: Arc<dyn Store>,
        config: PlatformConfig,
    ) -> Result<Platform> {
        let accounts = Accounts::new(store.clone(), config.accounts);
        accounts.prepare().await?;
        let lifecycle = crate::Lifecycle::new(accounts.clone(), store.clone());
        lifecycle.prepare().await?;
        let oidc = crate::Oidc::new(accounts.clone(), store.clone());
        oidc.prepare().await?;
        let oauth2 = crate::OAuth2::new(accounts.clone(), store.clone());
        oauth2.prepare().await?;
        let jobs = crate::jobs::Jobs::new(store.clone());
        jobs.prepare().await?;
        let live = Arc::new(crate::live::Hub::new(
            store.clone(),
            accounts.clone(),
            config.live,
        ));
        let channels = crate::Channels::new(store.bus(), config.channels);
        Ok(Platform {
            inner: Arc::new(Inner {
                live,
                channels,
                jobs,
                webhooks: OnceLock::new(),
                store,
                accounts,
                lifecycle,
                oidc,
                oauth2,
                collections: RwLock::new(BTreeMap::new()),
                methods: RwLock::new(BTreeMap::new()),
                publications: RwLock::new(BTreeMap::new()),
                files: Arc::new(OnceLock::new()),
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// Where the files service is kept (see [`Platform::set_files`]).
    pub(crate) fn files_cell(&self) -> &OnceLock<crate::platform::files::Files> {
        &self.inner.files
    }

    /// What tells a collection its file fields (see `collection::ServerFields`).
    fn server_fields(&self) -> Arc<dyn crate::collection::ServerFields> {
        self.inner.files.clone()
    }

    /// A handle that does not keep the platform alive (for background tasks).
    pub(crate) fn downgrade(&self) -> WeakPlatform {
        WeakPlatform(Arc::downgrade(&self.inner))
    }

    /// The underlying store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The login service with `limits`: credential forms, lookup order and limits on failures
    /// and sign-ups, as both front doors use it. The failure counts are kept in the store, so
    /// services of one platform, and servers sharing one database, count together.
    pub fn login_service(&self, limits: crate::LoginLimits) -> crate::LoginService {
        crate::LoginService::new(self.clone(), limits)
    }

    /// Starts the guest sweep: every tenth of `guest_ttl` (at least a second, at most an hour),
    /// guests unused for `guest_ttl` are removed with their owned documents (see
    /// [`Accounts::sweep_guests`]). Every instance on one database may run one. It stops when
    /// the platform is dropped.
    pub fn start_guest_sweeper(&self) {
        let weak = self.downgrade();
        let every = crate::accounts::guest_touch_every(self.accounts().config().guest_ttl);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(platform) = weak.upgrade() else {
                    return;
                };
                match platform.accounts().sweep_guests().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(removed = n, "unused guests removed"),
                    Err(e) => tracing::warn!(error = %e, "sweeping guests failed"),
                }
            }
        });
    }

    /// The accounts service.
    pub fn accounts(&self) -> &Accounts {
        &self.inner.accounts
    }

    /// The durable jobs: definitions, the queue in the store, the worker (see [`crate::jobs`]).
    pub fn jobs(&self) -> &crate::jobs::Jobs {
        &self.inner.jobs
    }

    /// Where the webhooks are kept (see [`Platform::set_webhooks`]).
    pub(crate) fn webhooks_cell(&self) -> &OnceLock<Arc<webhooks::Deliveries>> {
        &self.inner.webhooks
    }

    /// The account lifecycle: verification, password reset and email change by mail.
    pub fn lifecycle(&self) -> &crate::Lifecycle {
        &self.inner.lifecycle
    }

    /// Sign-in with the OpenID Connect providers of [`crate::AccountsConfig::oidc`].
    pub fn oidc(&self) -> &crate::Oidc {
        &self.inner.oidc
    }

    /// Sign-in with the OAuth2 providers of [`crate::AccountsConfig::oauth2`].
    pub fn oauth2(&self) -> &crate::OAuth2 {
        &self.inner.oauth2
    }

    /// The live queries (see [`Platform::subscribe_live`]).
    pub(crate) fn live_hub(&self) -> &Arc<crate::live::Hub> {
        &self.inner.live
    }

    /// The channels: messages between clients and presence (see [`crate::channels`]).
    pub fn channels(&self) -> &crate::Channels {
        &self.inner.channels
    }

    /// The limits of live streams.
    pub fn live_config(&self) -> &crate::LiveConfig {
        self.inner.live.config()
    }

    /// How many live streams are open now.
    pub fn open_live_streams(&self) -> usize {
        self.inner.live.open_streams()
    }

    /// How many distinct live queries are evaluated now (identical queries of many streams
    /// share one).
    pub fn open_live_queries(&self) -> usize {
        self.inner.live.open_queries()
    }

    /// The handler of the publication `name`.
    pub(crate) fn publication_handler(&self, name: &str) -> Option<PublicationHandler> {
        read(&self.inner.publications)
            .get(name)
            .map(|e| e.handler.clone())
    }

    /// The handler of the publication `name`, or `publication-not-found` (404).
    pub(crate) fn found_publication(&self, name: &str) -> Result<PublicationHandler, MethodError> {
        self.publication_handler(name).ok_or_else(|| {
            MethodError::new(
                "publication-not-found",
                format!("Publication '{name}' not found"),
            )
            .with_status(404)
        })
    }

    // ----- collections -----

    /// The collection `name`, declared with default options when it was not declared yet.
    pub fn collection(&self, name: &str) -> Collection {
        if let Some(c) = self.get_collection(name) {
            return c;
        }
        write(&self.inner.collections)
            .entry(name.to_string())
            .or_insert_with(|| {
                Collection::unchecked(self.inner.store.clone(), name, self.server_fields())
            })
            .clone()
    }

    /// Declares the collection `name` with `options` (an id kind, a JSON Schema). Declaring it
    /// again with the same options returns the same collection.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when it is declared already with other options (also implicitly by
    /// [`Platform::collection`]); [`Error::InvalidArgument`] for a bad name or a malformed schema.
    pub fn define_collection(&self, name: &str, options: CollectionOptions) -> Result<Collection> {
        let mut collections = write(&self.inner.collections);
        if let Some(existing) = collections.get(name) {
            if *existing.options() == options {
                return Ok(existing.clone());
            }
            return Err(Error::Duplicate(format!(
                "collection {name:?} is declared already with other options"
            )));
        }
        let collection = Collection::new(
            self.inner.store.clone(),
            name,
            options,
            self.server_fields(),
        )?;
        collections.insert(name.to_string(), collection.clone());
        Ok(collection)
    }

    /// Makes the full-text index of every declared collection with search fields (see
    /// [`crate::CollectionOptions::search`]); an index over other fields is rebuilt. Call at
    /// startup, after declaring the collections: the database keeps the index in step with
    /// every write from then on.
    ///
    /// # Errors
    /// Store failures; [`Error::Store`] for unusable field names.
    pub async fn ensure_search_indexes(&self) -> Result<()> {
        let searched: Vec<Collection> = read(&self.inner.collections)
            .values()
            .filter(|c| !c.options().search.is_empty())
            .cloned()
            .collect();
        for collection in searched {
            self.inner
                .store
                .ensure_search(collection.name(), &collection.options().search)
                .await?;
        }
        Ok(())
    }

    /// Makes every sorted index the declared collections' options name (see
    /// [`crate::CollectionOptions::indexes`]) when missing. Call at startup, after declaring
    /// the collections; an index no option names is kept (dropping one is an explicit act:
    /// [`portico_store::Store::drop_sorted_index`]).
    ///
    /// # Errors
    /// As [`Collection::ensure_index`].
    pub async fn ensure_indexes(&self) -> Result<()> {
        let indexed: Vec<Collection> = read(&self.inner.collections)
            .values()
            .filter(|c| !c.options().indexes.is_empty())
            .cloned()
            .collect();
        for collection in indexed {
            for spec in &collection.options().indexes {
                collection.ensure_index(spec).await?;
            }
        }
        Ok(())
    }

    /// The collection `name` when it was declared.
    pub fn get_collection(&self, name: &str) -> Option<Collection> {
        read(&self.inner.collections).get(name).cloned()
    }

    /// The names of the declared collections, sorted.
    pub fn collection_names(&self) -> Vec<String> {
        read(&self.inner.collections).keys().cloned().collect()
    }

    // ----- methods -----

    /// Defines the method `name` (with options set earlier by [`Platform::set_method_options`], or
    /// the defaults).
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a method of that name exists.
    pub fn method<F, Fut>(&self, name: &str, handler: F) -> Result<()>
    where
        F: Fn(Invocation, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Value, MethodError>> + Send + 'static,
    {
        self.define_method(
            name,
            None,
            Arc::new(move |inv, args| handler(inv, args).boxed()),
        )
    }

    /// Defines the method `name` with `options`.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a method of that name exists; [`Error::MethodOptions`] when
    /// options were set already with [`Platform::set_method_options`] (options given twice).
    pub fn method_with_options<F, Fut>(
        &self,
        name: &str,
        options: MethodOptions,
        handler: F,
    ) -> Result<()>
    where
        F: Fn(Invocation, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Value, MethodError>> + Send + 'static,
    {
        self.define_method(
            name,
            Some(options),
            Arc::new(move |inv, args| handler(inv, args).boxed()),
        )
    }

    fn define_method(
        &self,
        name: &str,
        options: Option<MethodOptions>,
        handler: MethodHandler,
    ) -> Result<()> {
        let mut methods = write(&self.inner.methods);
        match methods.get_mut(name) {
            Some(entry) if entry.handler.is_some() => Err(Error::Duplicate(format!(
                "method {name:?} is defined already"
            ))),
            Some(entry) => {
                if options.is_some() {
                    return Err(Error::MethodOptions(format!(
                        "options of method {name:?} were set already with set_method_options; \
                         define it without options"
                    )));
                }
                entry.handler = Some(handler);
                Ok(())
            }
            None => {
                methods.insert(
                    name.to_string(),
                    MethodEntry {
                        options_set: options.is_some(),
                        options: options.unwrap_or_default(),
                        handler: Some(handler),
                    },
                );
                Ok(())
            }
        }
    }

    /// Sets the options of a method that is not defined yet (the spec's `setMethodOptions`).
    ///
    /// # Errors
    /// [`Error::MethodOptions`] when the method is defined already, or when its options were set
    /// already.
    pub fn set_method_options(&self, name: &str, options: MethodOptions) -> Result<()> {
        let mut methods = write(&self.inner.methods);
        match methods.get(name) {
            Some(entry) if entry.handler.is_some() => Err(Error::MethodOptions(format!(
                "method {name:?} is defined already; set its options before defining it"
            ))),
            Some(entry) if entry.options_set => Err(Error::MethodOptions(format!(
                "options of method {name:?} were set already"
            ))),
            _ => {
                methods.insert(
                    name.to_string(),
                    MethodEntry {
                        options,
                        options_set: true,
                        handler: None,
                    },
                );
                Ok(())
            }
        }
    }

    /// Calls the method `name` as `user_id` (`None`: anonymous) with positional `args`.
    ///
    /// A handler that panics gives an internal error; the platform keeps running.
    ///
    /// # Errors
    /// The method's own [`MethodError`]; `method-not-found` (status 404) for an unknown name.
    pub async fn call(
        &self,
        name: &str,
        user_id: Option<String>,
        args: Vec<Value>,
    ) -> std::result::Result<MethodReply, MethodError> {
        self.refuse_when_closed()?;
        let handler = read(&self.inner.methods)
            .get(name)
            .and_then(|e| e.handler.clone())
            .ok_or_else(|| {
                MethodError::new("method-not-found", format!("Method '{name}' not found"))
                    .with_status(404)
            })?;
        let invocation = Invocation::new(self.clone(), user_id);
        let value = run_caught("method", name, || handler(invocation.clone(), args)).await?;
        Ok(MethodReply {
            value,
            status: invocation.status(),
        })
    }

    /// The defined methods with their options, sorted by name.
    pub fn methods(&self) -> Vec<MethodInfo> {
        read(&self.inner.methods)
            .iter()
            .filter(|(_, e)| e.handler.is_some())
            .map(|(name, e)| MethodInfo {
                name: name.clone(),
                options: e.options.clone(),
            })
            .collect()
    }

    /// The method `name` with its options, when it is defined.
    pub fn method_info(&self, name: &str) -> Option<MethodInfo> {
        read(&self.inner.methods)
            .get(name)
            .filter(|e| e.handler.is_some())
            .map(|e| MethodInfo {
                name: name.to_string(),
                options: e.options.clone(),
            })
    }

    // ----- publications -----

    /// Defines the publication `name` with default options.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a publication of that name exists.
    pub fn publish<F, Fut>(&self, name: &str, handler: F) -> Result<()>
    where
        F: Fn(Subscription, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Vec<Cursor>, MethodError>> + Send + 'static,
    {
        self.publish_with_options(name, PublicationOptions::default(), handler)
    }

    /// Defines the publication `name` with `options`.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a publication of that name exists.
    pub fn publish_with_options<F, Fut>(
        &self,
        name: &str,
        options: PublicationOptions,
        handler: F,
    ) -> Result<()>
    where
        F: Fn(Subscription, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Vec<Cursor>, MethodError>> + Send + 'static,
    {
        let mut publications = write(&self.inner.publications);
        if publications.contains_key(name) {
            return Err(Error::Duplicate(format!(
                "publication {name:?} is defined already"
            )));
        }
        let handler: PublicationHandler = Arc::new(move |sub, args| handler(sub, args).boxed());
        publications.insert(name.to_string(), PublicationEntry { options, handler });
        Ok(())
    }

    /// Runs the publication `name` for `user_id` with `args` and returns
    /// `{ "<collection>": [documents...] }`: the documents of every returned cursor and of every
    /// `added` call, merged by `_id`. Every collection a cursor or `added` touched is present.
    ///
    /// # Errors
    /// The publication's own [`MethodError`]; `publication-not-found` (status 404) for an unknown
    /// name; an internal error when a cursor's query fails.
    pub async fn subscribe(
        &self,
        name: &str,
        user_id: Option<String>,
        args: Vec<Value>,
    ) -> std::result::Result<Map<String, Value>, MethodError> {
        self.refuse_when_closed()?;
        let handler = self.found_publication(name)?;
        let views = self.field_views(user_id.as_deref()).await?;
        let subscription = Subscription::new(self.clone(), user_id).with_views(views.clone());
        let cursors =
            run_caught("publication", name, || handler(subscription.clone(), args)).await?;
        let mut published = subscription.take();
        for mut cursor in cursors {
            published.touch(&cursor.collection);
            cursor.view = view_of(&views, &cursor.collection);
            let docs = self
                .inner
                .store
                .find(&cursor.collection, &cursor.store_query())
                .await
                .map_err(|e| MethodError::from(Error::from(e)))?;
            for doc in docs {
                let mut doc = cursor.shape(doc);
                let Some(id) = document_id(&doc).map(str::to_string) else {
                    continue;
                };
                doc.shift_remove("_id");
                published.merge(&cursor.collection, &id, doc);
            }
        }
        Ok(published.into_result())
    }

    /// What `user_id` may see of each declared collection that has field rules (see
    /// [`Collection::field_view`]).
    pub(crate) async fn field_views(
        &self,
        user_id: Option<&str>,
    ) -> std::result::Result<Arc<Vec<(String, FieldView)>>, MethodError> {
        let ruled: Vec<Collection> = read(&self.inner.collections)
            .values()
            .filter(|c| c.has_field_rules())
            .cloned()
            .collect();
        // The caller's roles are read once for every ruled collection.
        let roles = if ruled.iter().any(Collection::field_rules_need_roles) {
            crate::collection::caller_roles(self.inner.store.as_ref(), user_id)
                .await
                .map_err(MethodError::from)?
        } else {
            Vec::new()
        };
        let views = ruled
            .iter()
            .map(|c| (c.name().to_owned(), c.field_view_with(user_id, &roles)))
            .collect();
        Ok(Arc::new(views))
    }

    /// The defined publications with their options, sorted by name.
    pub fn publications(&self) -> Vec<PublicationInfo> {
        read(&self.inner.publications)
            .iter()
            .map(|(name, e)| PublicationInfo {
                name: name.clone(),
                options: e.options.clone(),
            })
            .collect()
    }

    /// The publication `name` with its options, when it is defined.
    pub fn publication_info(&self, name: &str) -> Option<PublicationInfo> {
        read(&self.inner.publications)
            .get(name)
            .map(|e| PublicationInfo {
                name: name.to_string(),
                options: e.options.clone(),
            })
    }
}

/// The view of `collection` among `views` (everything shown when it has no field rules).
pub(crate) fn view_of(views: &[(String, FieldView)], collection: &str) -> FieldView {
    views
        .iter()
        .find(|(name, _)| name == collection)
        .map_or_else(FieldView::all, |(_, view)| view.clone())
}

/// A [`Platform`] that background tasks hold without keeping it alive.
pub(crate) struct WeakPlatform(Weak<Inner>);

impl WeakPlatform {
    /// The platform, while some handle to it is alive.
    pub(crate) fn upgrade(&self) -> Option<Platform> {
        self.0.upgrade().map(|inner| Platform { inner })
    }
}

/// Runs a method's or publication's handler (`kind` and `name` say which): a panic in it, also
/// while the handler makes its future, is an internal error naming it, never a crash.
pub(crate) async fn run_caught<T, F, Fut>(
    kind: &str,
    name: &str,
    handler: F,
) -> std::result::Result<T, MethodError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<T, MethodError>>,
{
    AssertUnwindSafe(async move { handler().await })
        .catch_unwind()
        .await
        .map_err(|_| MethodError::internal(format!("{kind} {name:?} panicked")))?
}
