//! [`Platform`]: opening it on a store, its settings, the declared collections and the
//! accessors of the services it holds.
//!
//! What a platform offers beyond that is grouped by what it is, each part an `impl Platform`
//! beside its own concept:
//!
//! | part | file |
//! |---|---|
//! | methods and publications: registration, calls, [`crate::Invocation`], [`crate::Subscription`] | `functions/` |
//! | expanding related documents | `relations/expand.rs` |
//! | aggregates and search over what a publication publishes | `collection/aggregate.rs` |
//! | opening live streams | `live/open.rs` |
//! | login and registration for both doors | `accounts/login/` |
//! | files attached to documents | `files/` |
//! | signed webhook deliveries of collections' writes | `webhooks.rs` |
//! | closing: registries emptied, the store closed | `platform/close.rs` |
//!
//! The [`Platform`] handle itself is declared at the crate root, which all of these stand
//! below; its state is `Inner` here.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

use portico_store::Store;

use crate::functions::{MethodHandler, PublicationHandler, Registry};
use crate::locks::{read, write};
use crate::{
    Accounts, AccountsConfig, Collection, CollectionOptions, Error, FieldView, MethodError,
    Platform, Result, WeakPlatform,
};

mod close;

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

/// What a [`Platform`] holds: the store, the declared collections, the registries and the
/// services.
pub(crate) struct Inner {
    store: Arc<dyn Store>,
    accounts: Accounts,
    lifecycle: crate::Lifecycle,
    oidc: crate::Oidc,
    oauth2: crate::OAuth2,
    collections: RwLock<BTreeMap<String, Collection>>,
    methods: Registry<MethodHandler>,
    publications: Registry<PublicationHandler>,
    live: Arc<crate::live::Hub>,
    channels: crate::Channels,
    jobs: crate::jobs::Jobs,
    /// The receivers of [`Platform::set_webhooks`], once set.
    webhooks: OnceLock<Arc<crate::webhooks::Deliveries>>,
    /// Shared with every collection, which asks it for its file fields on client writes.
    files: Arc<OnceLock<crate::files::Files>>,
    /// Set by [`Platform::close`].
    closed: std::sync::atomic::AtomicBool,
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
                methods: Registry::new("method"),
                publications: Registry::new("publication"),
                files: Arc::new(OnceLock::new()),
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// Where the files service is kept (see [`Platform::set_files`]).
    pub(crate) fn files_cell(&self) -> &OnceLock<crate::files::Files> {
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
    pub(crate) fn webhooks_cell(&self) -> &OnceLock<Arc<crate::webhooks::Deliveries>> {
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

    /// The defined methods (see `crate::functions`).
    pub(crate) fn method_registry(&self) -> &Registry<MethodHandler> {
        &self.inner.methods
    }

    /// The defined publications (see `crate::functions`).
    pub(crate) fn publication_registry(&self) -> &Registry<PublicationHandler> {
        &self.inner.publications
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
}
