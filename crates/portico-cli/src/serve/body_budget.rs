//! The budget for request bodies in flight across the server (`[server] max_inflight_body_mb`).
//!
//! Each request with a body reserves memory from one server-wide budget before its body is
//! read, and keeps it until its reply has been sent: [`COST_FACTOR`] times the body's length,
//! what a write holds at its peak (the body read, parsed and stored; see the CLI README,
//! "Memory") with room for the allocator's slack. A body with a `Content-Length` reserves it
//! all at once: when the budget cannot give it within [`WAIT`], the request gets 503 with
//! `Retry-After` and its body is never read. A body without a length (chunked) reserves as its chunks come, and fails with
//! [`portico_edge::BodyBudgetExceeded`] (503 at the door) when the budget runs out. So
//! however many clients send large bodies at once, the server holds at most the budget for
//! them. A body larger than the whole budget may still go through alone.
//!
//! `/metrics` shows the bytes reserved now ([`INFLIGHT_BYTES`]) and the requests refused
//! ([`REFUSED`]).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::Config;

/// Memory reserved for bodies in flight now, in bytes (a gauge).
pub const INFLIGHT_BYTES: &str = "portico_inflight_body_bytes";
/// Requests refused with 503 because the budget for bodies in flight was used up (a counter).
pub const REFUSED: &str = "portico_body_budget_refused_total";

/// How much memory a body is counted for, as a multiple of its length: a write holds about
/// 3.3 times a string-heavy body at its peak, and the allocator keeps some of what was freed
/// while other requests run (8 clients sending 10-30 MiB bodies at once took a debug build to
/// 375 MiB with a factor of 4 and the default budget).
pub const COST_FACTOR: u64 = 8;
/// How long a request waits for room in the budget before its 503.
pub const WAIT: Duration = Duration::from_secs(1);
/// The `Retry-After` of that 503, in seconds.
const RETRY_AFTER_SECS: u32 = 1;
/// The budget is kept in units of this many bytes (a semaphore's permits are a `u32`).
const UNIT: u64 = 1024;

/// The server-wide budget.
struct Budget {
    permits: Arc<Semaphore>,
    /// The whole budget, in units.
    units: u32,
    /// Requests not counted.
    exempt: Unbudgeted,
}

impl Budget {
    /// The units a body of `len` bytes reserves: never more than the whole budget, so a body
    /// larger than it can still go through alone.
    fn units_for(&self, len: u64) -> u32 {
        let units = len.saturating_mul(COST_FACTOR).div_ceil(UNIT);
        u32::try_from(units).unwrap_or(u32::MAX).min(self.units)
    }
}

/// Memory reserved for one request; given back (and the gauge lowered) when dropped.
#[derive(Default)]
struct Reserved {
    permit: Option<OwnedSemaphorePermit>,
    /// Set when a body without a length ran out of budget.
    refused: bool,
}

impl Reserved {
    /// Gives back everything held.
    fn release(&mut self) {
        if let Some(permit) = self.permit.take() {
            metrics::gauge!(INFLIGHT_BYTES).decrement(units_to_bytes(permit.num_permits()));
        }
    }

    fn add(&mut self, permit: OwnedSemaphorePermit) {
        metrics::gauge!(INFLIGHT_BYTES).increment(units_to_bytes(permit.num_permits()));
        match &mut self.permit {
            Some(held) => held.merge(permit),
            None => self.permit = Some(permit),
        }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.release();
    }
}

#[allow(clippy::cast_precision_loss)] // a gauge; budgets are far below 2^52 bytes
fn units_to_bytes(units: usize) -> f64 {
    (units as u64).saturating_mul(UNIT) as f64
}

/// Requests the budget does not count: streamed file uploads, which hold a few parts of their
/// body at a time whatever its length (method and path).
pub type Unbudgeted = Arc<dyn Fn(&http::Method, &str) -> bool + Send + Sync>;

/// The server-wide memory budget of `bytes` (none when 0): the bodies in flight reserve from
/// it ([`with_body_budget`]), and so do the files service's image decodes
/// ([`portico_platform::Files::share_memory_budget`]).
#[derive(Clone)]
pub struct MemoryBudget {
    permits: Arc<Semaphore>,
    units: u32,
}

impl MemoryBudget {
    /// A budget of `bytes`; `None` for 0 (no budget).
    pub fn new(bytes: u64) -> Option<MemoryBudget> {
        if bytes == 0 {
            return None;
        }
        let units = u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX);
        Some(MemoryBudget {
            permits: Arc::new(Semaphore::new(units as usize)),
            units,
        })
    }

    /// Gives `files` this budget for its thumbnails' decodes.
    pub fn share_with(&self, files: &portico_platform::Files) {
        files.share_memory_budget(self.permits.clone(), UNIT, self.units);
    }
}

/// Wraps `app` in `budget` for the bodies in flight (none without a budget); requests `exempt`
/// names are not counted.
pub fn with_body_budget(app: Router, budget: Option<&MemoryBudget>, exempt: Unbudgeted) -> Router {
    let Some(budget) = budget else {
        return app;
    };
    // Shown in /metrics from the start, not only after the first body.
    metrics::gauge!(INFLIGHT_BYTES).set(0.0);
    metrics::counter!(REFUSED).absolute(0);
    let budget = Arc::new(Budget {
        permits: budget.permits.clone(),
        units: budget.units,
        exempt,
    });
    app.layer(axum::middleware::from_fn_with_state(budget, admit))
}

/// The 503 of a request the budget had no room for.
fn busy() -> Response {
    metrics::counter!(REFUSED).increment(1);
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(serde_json::json!({
            "status": "error",
            "message": "The server is busy reading other requests' bodies; retry shortly"
        })),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

async fn admit(State(budget): State<Arc<Budget>>, request: Request, next: Next) -> Response {
    let hint = request.body().size_hint();
    if hint.exact() == Some(0) || (budget.exempt)(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let reserved = Arc::new(Mutex::new(Reserved::default()));
    let request = match hint.exact() {
        Some(len) => {
            let units = budget.units_for(len);
            let acquire = budget.permits.clone().acquire_many_owned(units);
            match tokio::time::timeout(WAIT, acquire).await {
                Ok(Ok(permit)) => lock(&reserved).add(permit),
                // Timed out, or the budget closed (never: it lives as long as the router).
                Ok(Err(_)) | Err(_) => return busy(),
            }
            request
        }
        None => request.map(|body| {
            Body::new(Reserving {
                inner: body,
                charge: Some(budget.clone()),
                reserved: reserved.clone(),
            })
        }),
    };
    let mut response = next.run(request).await;
    if lock(&reserved).refused {
        // A body without a length that the budget stopped: say when to retry.
        metrics::counter!(REFUSED).increment(1);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    }
    // The reply holds the reservation until it has been sent: what the body cost (its parsed
    // form, the reply made from it) lives until then.
    response.map(|body| {
        Body::new(Reserving {
            inner: body,
            charge: None,
            reserved,
        })
    })
}

fn lock(reserved: &Mutex<Reserved>) -> std::sync::MutexGuard<'_, Reserved> {
    reserved.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A body that holds its request's reservation until it is dropped: the reply's body, and
/// the request's own when it has no length, which then also reserves its cost as its chunks
/// come (`charge`).
struct Reserving {
    inner: Body,
    charge: Option<Arc<Budget>>,
    reserved: Arc<Mutex<Reserved>>,
}

impl HttpBody for Reserving {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let (Some(budget), Poll::Ready(Some(Ok(frame)))) = (&self.charge, &polled) else {
            return polled;
        };
        let units = frame
            .data_ref()
            .map_or(0, |data| budget.units_for(data.len() as u64));
        if units == 0 {
            return polled;
        }
        match budget.permits.clone().try_acquire_many_owned(units) {
            Ok(permit) => lock(&self.reserved).add(permit),
            Err(_) => {
                // Give back what this body held: it will not be read further.
                let mut reserved = lock(&self.reserved);
                reserved.release();
                reserved.refused = true;
                drop(reserved);
                return Poll::Ready(Some(Err(axum::Error::new(
                    portico_edge::BodyBudgetExceeded,
                ))));
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The upload paths of the config (`POST {api}{collection}/:id/files/:field`, and the admin
/// page's `POST {admin}/api/collections/:name/documents/:id/files/:field`): a streamed upload
/// holds a few parts of its body at a time, whatever its length, so the budget for bodies in
/// flight does not count it.
pub fn upload_matcher(config: &Config) -> Unbudgeted {
    let admin = (config.admin.enabled && crate::files::wanted(config))
        .then(|| portico_admin::normalize_path(&config.admin.path).ok())
        .flatten()
        .map(|prefix| format!("{prefix}/api/collections/"));
    let prefixes: Vec<String> = config
        .apis
        .iter()
        .flat_map(|api| {
            api.collections
                .iter()
                .filter(|c| !c.files.is_empty())
                .map(move |c| {
                    let path = c.path.trim_matches('/');
                    if path.is_empty() {
                        api.base_path()
                    } else {
                        format!("{}{path}/", api.base_path())
                    }
                })
        })
        .collect();
    Arc::new(move |method: &http::Method, path: &str| {
        let segments = |rest: &str| -> Vec<String> {
            rest.trim_end_matches('/')
                .split('/')
                .map(str::to_owned)
                .collect()
        };
        *method == http::Method::POST
            && (prefixes.iter().any(|prefix| {
                path.strip_prefix(prefix.as_str()).is_some_and(|rest| {
                    let parts = segments(rest);
                    parts.len() == 3 && parts[1] == "files" && !parts[0].is_empty()
                })
            }) || admin.as_deref().is_some_and(|prefix| {
                // {name}/documents/{id}/files/{field}
                path.strip_prefix(prefix).is_some_and(|rest| {
                    let parts = segments(rest);
                    parts.len() == 5 && parts[1] == "documents" && parts[3] == "files"
                })
            }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_of_both_doors_and_the_admin_page_are_not_counted() {
        let config = Config::parse(
            "[[api]]\napi_path = \"api/\"\n[[api.collection]]\nname = \"posts\"\nfiles = { cover = {} }\n",
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let exempt = upload_matcher(&config);
        let post = http::Method::POST;
        assert!(exempt(&post, "/api/posts/p1/files/cover"));
        assert!(exempt(
            &post,
            "/_/api/collections/posts/documents/p1/files/cover"
        ));
        assert!(!exempt(&http::Method::PUT, "/api/posts/p1/files/cover"));
        assert!(!exempt(&post, "/api/posts/p1"));
        assert!(!exempt(&post, "/_/api/collections/posts/documents"));
        assert!(!exempt(&post, "/_/api/users/u1/files/x"));
    }
}
