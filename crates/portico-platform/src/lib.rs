//! Portico's host-program model: the platform both HTTP front doors stand on.
//!
//! A [`Platform`] holds a document store, named [`Collection`]s with allow/deny [`Rules`] for
//! client writes, the [`Accounts`] service (users, passwords, login tokens, roles) and the
//! registries of methods (named async server functions) and publications (named queries).
//! A Rust program can use it directly:
//!
//! ```
//! use portico_platform::{Document, MethodError, NewUser, Password, Platform, Rules, UserSelector};
//! use serde_json::{json, Value};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let platform = Platform::open("memory:").await?;
//!
//! // Accounts.
//! let accounts = platform.accounts();
//! let ada = accounts
//!     .create_user(NewUser {
//!         username: Some("ada".into()),
//!         password: Some(Password::Plain("correct horse".into())),
//!         ..NewUser::default()
//!     })
//!     .await?;
//! let login = accounts
//!     .login(&UserSelector::Username("ADA".into()), &Password::Plain("correct horse".into()))
//!     .await?;
//! assert_eq!(login.user_id, ada);
//!
//! // A collection whose client writes are checked by rules.
//! let notes = platform.collection("notes");
//! notes.allow(Rules::new().insert(|user_id, doc| async move {
//!     user_id.is_some() && doc.get("owner").and_then(Value::as_str) == user_id.as_deref()
//! }));
//! let doc: Document = serde_json::from_value(json!({"owner": ada, "text": "hello"}))?;
//! notes.client_insert(Some(&ada), doc.clone()).await?;
//! assert!(notes.client_insert(None, doc).await.is_err());
//!
//! // A method.
//! platform.method("whoami", |inv, _args| async move {
//!     Ok::<Value, MethodError>(json!(inv.user_id()))
//! })?;
//! let reply = platform.call("whoami", Some(ada.clone()), vec![]).await?;
//! assert_eq!(reply.value, json!(ada));
//! # Ok(())
//! # }
//! ```
//!
//! | Part | What it gives |
//! |---|---|
//! | [`Platform`] | store URL (`memory:`, `sqlite:PATH`, `postgres://...`), collections, registries |
//! | [`Collection`] | server writes (no rules, schema checked), `client_*` writes (rules applied) |
//! | [`Accounts`] | users in the layout existing apps use, argon2id/bcrypt, hashed login tokens |
//! | [`Platform::method`], [`Platform::call`] | named async server functions, [`MethodError`] |
//! | [`Platform::publish`], [`Platform::subscribe`] | named queries returning [`Cursor`]s |
//! | [`Platform::subscribe_live`], [`Platform::live_query`] | publications and queries followed live: [`LiveStream`] of [`LiveEvent`]s |
//! | [`Platform::channels`] | [`Channels`]: messages between clients and presence, never stored, across instances |
//! | [`RateLimiter`] | failure limits for login routes, kept in the store (shared by instances) |
//! | [`backups::Backups`] | a SQLite database's backups in a directory or an S3-compatible bucket: take, list, download |
//! | [`jobs`] | durable jobs: defined handlers, enqueued work kept in the store, a worker with leases and retries |
//! | [`Webhook`], [`Platform::set_webhooks`] | signed webhook deliveries (Standard Webhooks) of a collection's writes, as durable jobs |
//! | [`request_scope`] | the id of the request a task serves, which internal-error lines carry as `request_id` |

mod accounts;
mod background;
#[cfg(feature = "sqlite")]
pub mod backups;
pub mod channels;
mod collection;
mod cursor;
mod endpoint;
mod error;
mod field_rules;
pub mod files;
mod functions;
pub mod jobs;
mod live;
mod locks;
mod method_error;
mod platform;
mod rate_limit;
mod relations;
pub mod request_scope;
mod rules;
mod schema;
mod time;
mod timestamps;
mod webhooks;

pub use accounts::login::{ACCOUNT_FACTOR, Limit, LoginError, LoginLimits, LoginService};
pub use accounts::{
    ACCOUNT_TOKENS, API_KEYS, Accounts, AccountsConfig, ApiKeyInfo, EMAIL_CODES, EmailCodeError,
    EmailCodeProof, GuestUpgrade, IDENTITIES, Lifecycle, LoginToken, MAIL_NAMES, Mail, MailLimits,
    MailSender, MailTemplate, MailTemplates, MailTransport, NewUser, OAUTH2_LOGINS, OAuth2,
    OAuth2Preset, OAuth2Profile, OAuth2Provider, OIDC_LOGINS, OUTBOX, Oidc, OidcCallback,
    OidcError, OidcProvider, OidcStart, PASSKEY_CEREMONIES, PASSKEYS, PasskeyBegin, PasskeyConfig,
    PasskeyError, PasskeyInfo, Password, SenderOptions, SmtpTransport, TOKEN_PATH, TotpRefusal,
    TotpSetup, USERS, UserSelector, acceptable_provider_url, has_verified_email, hash_token,
    import_value, is_guest, is_mail_language, is_service_account, mail_placeholders,
    password_digest, preferred_languages, public_user, totp_code, totp_enabled,
    unknown_placeholders, user_has_any_role,
};
pub use channels::{
    ChannelAccess, ChannelError, ChannelGuard, ChannelRule, Channels, ChannelsConfig, Connection,
    Peer,
};
pub use collection::{
    Collection, CollectionOptions, HookOp, HookWhen, IfMatch, PROTECTED_ACCOUNT_FIELDS,
    WriteEvents, WriteHooks, hook_refusal,
};
pub use cursor::Cursor;
pub use endpoint::{ArgsExtractor, EndpointOptions, HttpMethod, UnknownHttpMethod};
pub use error::{Error, Result};
pub use field_rules::{FieldRules, FieldView, ReadRule};
pub use files::{FileAccess, FileError, FileField, FileMeta, FileSlot, Files, FilesConfig};
pub use functions::{
    Invocation, MethodInfo, MethodOptions, MethodReply, PublicationInfo, PublicationOptions,
    Subscription,
};
pub use live::{LiveCaller, LiveConfig, LiveEvent, LiveStream, LoginWatch, SentEvent};
pub use method_error::{MethodError, arg};
pub use platform::PlatformConfig;
pub use rate_limit::{LOGIN_FAILURES, RateLimiter};
pub use relations::{
    EXPAND_KEY, Expand, MAX_EXPAND_DEPTH, MAX_EXPAND_IDS, MAX_EXPAND_PATHS, ReadAccess, Relations,
};
pub use rules::{InsertRule, RemoveRule, Rules, UpdateRule};
pub use time::now_iso;
pub use timestamps::{CREATED_AT, UPDATED_AT};
pub use webhooks::{DELIVERY_JOB, Webhook, WebhookSecret, check_webhook_url};

pub use portico_store::{
    Aggregate, Document, IdKind, Page, PageRead, Query, RelatedField, RelatedRead, Selector,
    Stored, Update, UpdateOptions, UpdateResult,
};

// The platform's parts are grouped by what they are, each an `impl Platform` beside its own
// concept: opening it, its settings, the collections registry and the accessors in `platform/`;
// methods and publications in `functions/`; expanding relations in `relations/`; live streams
// in `live/`; login in `accounts/login/`; files in `files/`; webhooks in `webhooks.rs`. The
// handle is declared here, at the root they all stand below, so that each names it without
// importing a sibling module that imports it back (its state, `platform::Inner`, holds theirs).

/// The host-program model: a store, named collections with rules, accounts, and the method and
/// publication registries. Cheap to clone (an `Arc` inside); clones share everything.
#[derive(Clone)]
pub struct Platform {
    inner: std::sync::Arc<platform::Inner>,
}

/// A [`Platform`] that background tasks hold without keeping it alive.
pub(crate) struct WeakPlatform(std::sync::Weak<platform::Inner>);

impl WeakPlatform {
    /// The platform, while some handle to it is alive.
    pub(crate) fn upgrade(&self) -> Option<Platform> {
        self.0.upgrade().map(|inner| Platform { inner })
    }
}
