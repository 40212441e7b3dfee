//! Methods: named async server functions, their options and their invocation context.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::{EndpointOptions, MethodError, Platform};

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
    dyn Fn(Invocation, Vec<Value>) -> BoxFuture<'static, Result<Value, MethodError>> + Send + Sync,
>;
