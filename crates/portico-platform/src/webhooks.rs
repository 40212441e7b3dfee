//! Webhooks: a collection's writes sent to another system as signed HTTP requests, following
//! the Standard Webhooks specification.
//!
//! Each [`Webhook`] names a receiver URL, optionally a collection and the writes to send
//! (`insert`, `update`, `remove`), and the signing secret. A write of that collection stores one
//! delivery job ([`DELIVERY_JOB`]) per webhook in its own store transaction (see
//! [`crate::WriteEvents`]), with the document as the collection's field rules show it to a caller
//! who is not logged in (an account as [`crate::public_user`] shows it: no password hash, no
//! tokens). [`Platform::send_webhook`] enqueues a delivery of any event to a configured URL.
//!
//! The job worker delivers: `POST` of `{"type", "timestamp", "data"}` with the headers
//! `webhook-id` (the same on every try, so a receiver can drop repeats), `webhook-timestamp`
//! (this try's, in seconds) and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of
//! `id.timestamp.body`). A 2xx answer delivers it; any other answer, or none within
//! [`crate::jobs::JobsConfig::webhook_timeout`] (15 s by default), is tried again with an
//! exponential backoff and jitter (from `webhook_retry`, 5 s by default, up to an hour apart)
//! for 24 hours, then the delivery is kept as failed with the last answer's status and first
//! bytes.
//! Deliveries of one document's events are made in the order of its writes.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::Document;
use serde_json::{Value, json};

use crate::jobs::{EnqueueOptions, JobOptions, JobRun, Jobs};
use crate::{Collection, Error, HookOp, Platform, Result, USERS, WriteEvents};

/// The job that delivers one webhook event.
pub const DELIVERY_JOB: &str = "portico:webhook";

/// How much of a refusing receiver's answer is kept with the delivery.
const EXCERPT_BYTES: usize = 512;

/// A webhook signing secret: `whsec_` and the base64 of the key, as Standard Webhooks writes
/// it (the prefix may be left out).
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

impl WebhookSecret {
    /// Reads a secret written as `whsec_<base64>` (or bare base64).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for text that is not base64 or a key under 16 bytes.
    pub fn parse(text: &str) -> Result<WebhookSecret> {
        let encoded = text.trim().strip_prefix("whsec_").unwrap_or(text.trim());
        let key = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| {
                Error::InvalidArgument(
                    "a webhook secret must be `whsec_` and the base64 of its key".into(),
                )
            })?;
        if key.len() < 16 {
            return Err(Error::InvalidArgument(format!(
                "a webhook secret's key must be at least 16 bytes, not {}",
                key.len()
            )));
        }
        Ok(WebhookSecret(key))
    }

    /// The `webhook-signature` header of a delivery: `v1,` and the base64 HMAC-SHA256 of
    /// `id.timestamp.body`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &str) -> String {
        use aws_lc_rs::hmac;
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        let tag = hmac::sign(&key, format!("{id}.{timestamp}.{body}").as_bytes());
        format!(
            "v1,{}",
            base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
        )
    }
}

/// One receiver of events (`[[webhooks]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Webhook {
    /// The receiver's URL (`http` or `https`).
    pub url: String,
    /// The collection whose writes are sent; `None` for a URL only scripts send to.
    pub collection: Option<String>,
    /// The writes sent.
    pub events: Vec<HookOp>,
    /// The signing secret.
    pub secret: WebhookSecret,
}

impl Webhook {
    /// A receiver at `url` signed with `secret`, sent every write of `collection` (when given).
    pub fn new(url: impl Into<String>, collection: Option<String>, secret: WebhookSecret) -> Self {
        Webhook {
            url: url.into(),
            collection,
            events: vec![HookOp::Insert, HookOp::Update, HookOp::Remove],
            secret,
        }
    }
}

/// Checks a receiver URL: `http` or `https`, with a host, no credentials.
///
/// # Errors
/// [`Error::InvalidArgument`] saying what is wrong.
pub fn check_webhook_url(url: &str) -> Result<()> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| Error::InvalidArgument(format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::InvalidArgument(format!(
            "{url:?}: a webhook URL must start with http:// or https://"
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(Error::InvalidArgument(format!("{url:?} has no host")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Error::InvalidArgument(format!(
            "{url:?}: put no credentials in a webhook URL (receivers check the signature)"
        )));
    }
    Ok(())
}

/// The type of an event of a collection's write: `<collection>.inserted` and the like.
fn event_type(collection: &str, op: HookOp) -> String {
    let what = match op {
        HookOp::Insert => "inserted",
        HookOp::Update => "updated",
        HookOp::Remove => "removed",
    };
    format!("{collection}.{what}")
}

/// The configured receivers and the HTTP client that delivers to them.
pub(crate) struct Deliveries {
    hooks: Vec<Webhook>,
    /// How long a receiver has to answer one try.
    timeout: Duration,
    http: reqwest::Client,
}

/// The webhooks of one collection, as its event source.
struct CollectionEvents {
    jobs: Jobs,
    collection: Collection,
    hooks: Vec<Webhook>,
}

impl WriteEvents for CollectionEvents {
    fn watches(&self, op: HookOp) -> bool {
        self.hooks.iter().any(|h| h.events.contains(&op))
    }

    fn jobs(&self, op: HookOp, doc: Document) -> BoxFuture<'static, Result<Vec<Document>>> {
        let jobs = self.jobs.clone();
        let collection = self.collection.clone();
        let urls: Vec<String> = self
            .hooks
            .iter()
            .filter(|h| h.events.contains(&op))
            .map(|h| h.url.clone())
            .collect();
        async move {
            let id = doc.get("_id").cloned().unwrap_or(Value::Null);
            let data = if collection.name() == USERS {
                crate::public_user(&doc)
            } else {
                collection.field_view(None).await?.applied(doc)
            };
            let kind = event_type(collection.name(), op);
            let mut out = Vec::with_capacity(urls.len());
            for url in urls {
                let mut job = delivery(&jobs, &url, &kind, Value::Object(data.clone())).await?;
                // One document's events to one receiver are delivered in write order.
                let group = format!("{url} {} {id}", collection.name());
                crate::jobs::set_group(&mut job, &group);
                out.push(job);
            }
            Ok(out)
        }
        .boxed()
    }
}

/// The job document of a delivery of `{type, timestamp, data}` to `url`.
async fn delivery(jobs: &Jobs, url: &str, kind: &str, data: Value) -> Result<Document> {
    let args = json!({"url": url, "type": kind, "timestamp": crate::now_iso(), "data": data});
    jobs.prepare_job(DELIVERY_JOB, args, &EnqueueOptions::new())
        .await
}

impl Platform {
    /// Sends the writes of each webhook's collection to its receiver, and lets
    /// [`Platform::send_webhook`] send to its URL: defines the delivery job and the
    /// collections' event sources. Call once, at startup, after
    /// [`crate::jobs::Jobs::set_config`] (its `webhook_retry` paces the retries and its
    /// `webhook_timeout` bounds each try).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad URL; [`Error::Duplicate`] when called twice.
    pub fn set_webhooks(&self, hooks: Vec<Webhook>) -> Result<()> {
        for hook in &hooks {
            check_webhook_url(&hook.url)?;
        }
        let timeout = self.jobs().config().webhook_timeout;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Internal(format!("cannot make the webhook client: {e}")))?;
        let deliveries = Arc::new(Deliveries {
            hooks: hooks.clone(),
            timeout,
            http,
        });
        if self.webhooks_cell().set(Arc::clone(&deliveries)).is_err() {
            return Err(Error::Duplicate("the webhooks are set already".into()));
        }
        let options = JobOptions {
            retries: u32::MAX,
            retry_delay: self.jobs().config().webhook_retry,
            timeout: timeout + Duration::from_secs(5),
            max_age: Some(Duration::from_secs(24 * 3600)),
            ..JobOptions::default()
        };
        self.jobs()
            .define(DELIVERY_JOB, options, move |run, args| {
                let deliveries = Arc::clone(&deliveries);
                async move { deliver(&deliveries, &run, &args).await }
            })?;
        let mut by_collection: std::collections::BTreeMap<String, Vec<Webhook>> =
            std::collections::BTreeMap::new();
        for hook in hooks {
            if let Some(name) = hook.collection.clone() {
                by_collection.entry(name).or_default().push(hook);
            }
        }
        for (name, hooks) in by_collection {
            let collection = self.collection(&name);
            collection.set_events(Arc::new(CollectionEvents {
                jobs: self.jobs().clone(),
                collection: collection.clone(),
                hooks,
            }));
        }
        Ok(())
    }

    /// Enqueues a delivery of the event `{type: kind, data}` to `url`, which a [`Webhook`]
    /// must name (its secret signs it); returns the delivery's id (its `webhook-id` is `msg_`
    /// and the id). Inside a write's before hook, it is stored with the write.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a URL no webhook names; as
    /// [`crate::jobs::Jobs::enqueue`].
    pub async fn send_webhook(&self, url: &str, kind: &str, data: Value) -> Result<String> {
        self.send_webhook_for(None, url, kind, data).await
    }

    /// [`Platform::send_webhook`] from a script's host operation, for the write `write` whose
    /// before hook made the call (see [`crate::jobs::Jobs::enqueue_for`]).
    ///
    /// # Errors
    /// As [`Platform::send_webhook`].
    pub async fn send_webhook_for(
        &self,
        write: Option<u64>,
        url: &str,
        kind: &str,
        data: Value,
    ) -> Result<String> {
        let known = self
            .webhooks_cell()
            .get()
            .is_some_and(|d| d.hooks.iter().any(|h| h.url == url));
        if !known {
            return Err(Error::InvalidArgument(format!(
                "no [[webhooks]] entry has the url {url:?}: webhooks are sent only to configured receivers (their secret signs them)"
            )));
        }
        let args = json!({"url": url, "type": kind, "timestamp": crate::now_iso(), "data": data});
        self.jobs()
            .enqueue_for(write, DELIVERY_JOB, args, EnqueueOptions::new())
            .await
    }
}

/// One try of a delivery.
async fn deliver(
    deliveries: &Deliveries,
    run: &JobRun,
    args: &Value,
) -> std::result::Result<(), String> {
    let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
    let Some(hook) = deliveries.hooks.iter().find(|h| h.url == url) else {
        return Err(format!("no webhook is configured for {url:?} (any more)"));
    };
    let body = json!({
        "type": args.get("type").cloned().unwrap_or(Value::Null),
        "timestamp": args.get("timestamp").cloned().unwrap_or(Value::Null),
        "data": args.get("data").cloned().unwrap_or(Value::Null),
    })
    .to_string();
    let id = format!("msg_{}", run.id);
    let timestamp = chrono::Utc::now().timestamp();
    let signature = hook.secret.sign(&id, timestamp, &body);
    let sent = deliveries
        .http
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    let mut response = match sent {
        Ok(response) => response,
        Err(e) if e.is_timeout() => {
            return Err(format!(
                "no answer within {} ms",
                deliveries.timeout.as_millis()
            ));
        }
        Err(e) => return Err(format!("cannot reach the receiver: {e}")),
    };
    let status = response.status();
    if status.is_success() {
        tracing::info!(webhook_id = %id, url, status = status.as_u16(), attempt = run.attempt, "webhook delivered");
        return Ok(());
    }
    // Only the first bytes of a refusal are read and kept, however long it is.
    let mut excerpt = Vec::new();
    while excerpt.len() < EXCERPT_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => excerpt.extend_from_slice(&chunk),
            _ => break,
        }
    }
    excerpt.truncate(EXCERPT_BYTES);
    Err(format!(
        "the receiver answered {}: {}",
        status.as_u16(),
        String::from_utf8_lossy(&excerpt)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_as_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification's reference libraries.
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert!(WebhookSecret::parse("whsec_!!").is_err());
        assert!(WebhookSecret::parse("whsec_c2hvcnQ=").is_err());
    }

    #[test]
    fn urls_are_checked() {
        assert!(check_webhook_url("https://hooks.example.com/in").is_ok());
        for bad in ["ftp://x/y", "not a url", "https://user:pw@x.example/"] {
            assert!(check_webhook_url(bad).is_err(), "{bad}");
        }
    }
}
