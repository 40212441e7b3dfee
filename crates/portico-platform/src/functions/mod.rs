//! The app's functions: methods (named async server functions) and publications (named
//! queries), kept in one kind of registry and run with a panic caught.
//!
//! | part | file |
//! |---|---|
//! | the registry both are kept in: options, handler, one definition a name | `registry.rs` |
//! | methods: definition, [`crate::Platform::call`], [`Invocation`] | `method.rs` |
//! | publications: definition, [`crate::Platform::subscribe`], [`Subscription`] | `publication.rs` |

mod method;
mod publication;
mod registry;

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

use crate::MethodError;

pub use method::{Invocation, MethodInfo, MethodOptions, MethodReply};
pub use publication::{PublicationInfo, PublicationOptions, Subscription};

pub(crate) use method::MethodHandler;
pub(crate) use publication::{HandCalls, PublicationHandler, view_of};
pub(crate) use registry::Registry;

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
