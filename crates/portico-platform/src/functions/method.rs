//! Methods: named async server functions, their options and their invocation context.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::run_caught;
use crate::{EndpointOptions, MethodError, Platform, Result};

/// Options of a method (the auto API's `url`, `httpMethod`, `getArgsFromRequest`): an
/// [`EndpointOptions`] whose defaults are `POST /methods/<name>` and the door's body rule.
pub type MethodOptions = EndpointOptions;

/// A defined method as the registry lists it.
#[derive(Debug, Clone)]
pub struct MethodInfo {
    /// The method's name.
    pub name: String,
    /// Its options (defaults when none were given).
    pub options: MethodOptions,
}

/// What a successful call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodReply {
    /// The method's return value.
    pub value: Value,
    /// The success status set with [`Invocation::set_http_status_code`], if any.
    pub status: Option<u16>,
}

/// The context of one method call: who calls, and the success status to answer with.
#[derive(Clone)]
pub struct Invocation {
    platform: Platform,
    user_id: Option<String>,
    status: Arc<AtomicU32>,
}

impl fmt::Debug for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Invocation")
            .field("user_id", &self.user_id)
            .field("status", &self.status())
            .finish()
    }
}

impl Invocation {
    pub(crate) fn new(platform: Platform, user_id: Option<String>) -> Invocation {
        Invocation {
            platform,
            user_id,
            status: Arc::new(AtomicU32::new(0)),
        }
    }

    /// The id of the calling user, `None` for an anonymous call.
    pub fn user_id(&self) -> Option<&str> {
        self.user_id.as_deref()
    }

    /// The platform the method runs on.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// Sets the HTTP status code of a successful reply (the spec's `setHttpStatusCode`).
    pub fn set_http_status_code(&self, status: u16) {
        self.status.store(u32::from(status), Ordering::Relaxed);
    }

    pub(crate) fn status(&self) -> Option<u16> {
        match self.status.load(Ordering::Relaxed) {
            0 => None,
            s => u16::try_from(s).ok(),
        }
    }
}

/// A stored method handler.
pub(crate) type MethodHandler = Arc<
    dyn Fn(Invocation, Vec<Value>) -> BoxFuture<'static, std::result::Result<Value, MethodError>>
        + Send
        + Sync,
>;

impl Platform {
    /// Defines the method `name` (with options set earlier by [`Platform::set_method_options`], or
    /// the defaults).
    ///
    /// # Errors
    /// [`crate::Error::Duplicate`] when a method of that name exists.
    pub fn method<F, Fut>(&self, name: &str, handler: F) -> Result<()>
    where
        F: Fn(Invocation, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Value, MethodError>> + Send + 'static,
    {
        self.method_registry().define(
            name,
            None,
            Arc::new(move |inv, args| handler(inv, args).boxed()),
        )
    }

    /// Defines the method `name` with `options`.
    ///
    /// # Errors
    /// [`crate::Error::Duplicate`] when a method of that name exists;
    /// [`crate::Error::MethodOptions`] when options were set already with
    /// [`Platform::set_method_options`] (options given twice).
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
        self.method_registry().define(
            name,
            Some(options),
            Arc::new(move |inv, args| handler(inv, args).boxed()),
        )
    }

    /// Sets the options of a method that is not defined yet (the spec's `setMethodOptions`).
    ///
    /// # Errors
    /// [`crate::Error::MethodOptions`] when the method is defined already, or when its options
    /// were set already.
    pub fn set_method_options(&self, name: &str, options: MethodOptions) -> Result<()> {
        self.method_registry().set_options(name, options)
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
        let handler = self.method_registry().handler(name).ok_or_else(|| {
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
        self.method_registry()
            .list()
            .into_iter()
            .map(|(name, options)| MethodInfo { name, options })
            .collect()
    }

    /// The method `name` with its options, when it is defined.
    pub fn method_info(&self, name: &str) -> Option<MethodInfo> {
        self.method_registry()
            .options(name)
            .map(|options| MethodInfo {
                name: name.to_string(),
                options,
            })
    }
}
