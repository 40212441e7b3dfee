//! The outbox: mail leaves the request path through the store.
//!
//! A request writes one document to [`OUTBOX`] and returns; a sender task ([`MailSender`]) reads
//! due documents, claims each with a lease, sends it and removes it. The claim is a conditional
//! update (`{_id, lease: <the lease it read>}` -> a lease in the future): the store applies it
//! atomically (on PostgreSQL the row is locked and the condition checked again on the latest
//! version), so of several instances polling one database exactly one claims a mail. A failed
//! send gives the lease back and sets the next attempt after an exponential backoff; a crash
//! leaves the document in place, and its lease runs out, so a restart loses nothing.
//!
//! Request documents (`kind` other than `mail`) hold only what the client sent. The sender
//! resolves them (finds the account, issues the token, renders the mail) and stores the
//! rendered mail in their place before sending, so a request for an address without an account
//! costs the same write as one for an existing account, and its reply says nothing.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use portico_store::{Document, Query, Selector, Sort, Store, Update, UpdateOptions};
use serde_json::{Value, json};

use super::Lifecycle;
use crate::Result;

/// The collection of mail waiting to be sent.
pub const OUTBOX: &str = "portico_outbox";

/// One mail to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// The recipient's address.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The plain-text body.
    pub text: String,
    /// The HTML body, when there is one.
    pub html: Option<String>,
}

/// Sends mail (SMTP in `portico serve`; see [`super::SmtpTransport`]).
pub trait MailTransport: Send + Sync + 'static {
    /// Sends one mail.
    ///
    /// # Errors
    /// Why it could not be sent (logged; the mail is tried again later).
    fn send<'a>(&'a self, mail: &'a Mail) -> BoxFuture<'a, std::result::Result<(), String>>;
}

/// How the sender polls and retries.
///
/// Built with its setters, one a field:
///
/// ```
/// use std::time::Duration;
/// use portico_platform::SenderOptions;
///
/// let options = SenderOptions::default().retry_max(Duration::from_secs(60));
/// assert_eq!(options.retry_max, Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SenderOptions {
    /// How often the outbox is read when no local request wakes the sender (mail queued by
    /// other instances, retries that fell due). Default 2 s.
    pub poll: Duration,
    /// The first retry's delay; each further one doubles it. Default 2 s.
    pub retry_first: Duration,
    /// The longest delay between two attempts. Default 10 minutes.
    pub retry_max: Duration,
    /// How long a claimed mail stays with its sender before another may take it (longer than a
    /// send can take). Default 2 minutes.
    pub lease: Duration,
}

impl SenderOptions {
    /// Sets [`poll`](SenderOptions::poll): how often the outbox is read when no local request wakes
    /// the sender (mail queued by other instances, retries that fell due).
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Sets [`retry_first`](SenderOptions::retry_first): the first retry's delay.
    pub fn retry_first(mut self, retry_first: Duration) -> Self {
        self.retry_first = retry_first;
        self
    }

    /// Sets [`retry_max`](SenderOptions::retry_max): the longest delay between two attempts.
    pub fn retry_max(mut self, retry_max: Duration) -> Self {
        self.retry_max = retry_max;
        self
    }

    /// Sets [`lease`](SenderOptions::lease): how long a claimed mail stays with its sender before
    /// another may take it (longer than a send can take).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
}

impl Default for SenderOptions {
    fn default() -> Self {
        SenderOptions {
            poll: Duration::from_secs(2),
            retry_first: Duration::from_secs(2),
            retry_max: Duration::from_secs(600),
            lease: Duration::from_secs(120),
        }
    }
}

impl SenderOptions {
    /// The defaults with the longest delay between attempts set to `retry_max`.
    pub fn with_retry_max(retry_max: Duration) -> Self {
        SenderOptions {
            retry_max,
            ..SenderOptions::default()
        }
    }

    fn backoff(&self, attempts: u32) -> Duration {
        let factor = 1u32.checked_shl(attempts.min(20)).unwrap_or(u32::MAX);
        self.retry_first
            .checked_mul(factor)
            .unwrap_or(self.retry_max)
            .min(self.retry_max)
    }
}

pub(crate) use crate::time::{millis, now_ms};

/// Writes a request (or a ready mail) to the outbox, due now.
pub(crate) async fn enqueue(store: &dyn Store, mut doc: Document) -> Result<()> {
    doc.insert("created".into(), json!(now_ms()));
    doc.insert("due".into(), json!(now_ms()));
    doc.insert("lease".into(), json!(0));
    doc.insert("attempts".into(), json!(0));
    store.insert(OUTBOX, doc).await?;
    Ok(())
}

/// Creates the index the sender's reads use.
pub(crate) async fn prepare(store: &dyn Store) -> Result<()> {
    store.ensure_index(OUTBOX, "due").await?;
    Ok(())
}

/// The running sender task. [`MailSender::stop`] lets a send under way finish first; dropping
/// the handle stops the task at once (a mail it had claimed waits for its lease to run out).
#[derive(Debug)]
pub struct MailSender {
    task: crate::background::StoppableTask,
}

impl MailSender {
    pub(crate) fn start(
        lifecycle: Lifecycle,
        transport: Arc<dyn MailTransport>,
        options: SenderOptions,
    ) -> MailSender {
        let task = crate::background::StoppableTask::spawn(|mut stop| async move {
            let owner = portico_store::new_id();
            let asked = stop.clone();
            let stopped = move || *asked.borrow();
            while !stopped() {
                // Listen before reading, so a request queued during the read wakes the next one.
                let woken = lifecycle.inner.wake.notified();
                match send_due(&lifecycle, transport.as_ref(), &options, &owner, &stopped).await {
                    Ok(n) if n > 0 => continue,
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot read the mail outbox"),
                }
                tokio::select! {
                    () = woken => {}
                    () = tokio::time::sleep(options.poll) => {}
                    _ = stop.changed() => {}
                }
            }
        });
        MailSender { task }
    }

    /// Stops the sender: it claims no further mail, and a send under way finishes (and records
    /// its outcome, so another sender can take the mail at once) within `grace`; past it the
    /// task is stopped where it is.
    pub async fn stop(self, grace: Duration) {
        self.task.stop(grace).await;
    }
}

/// Sends the due mail once: claims, resolves, sends. Returns how many documents it handled.
async fn send_due(
    lifecycle: &Lifecycle,
    transport: &dyn MailTransport,
    options: &SenderOptions,
    owner: &str,
    stopped: &(dyn Fn() -> bool + Sync),
) -> Result<usize> {
    let store = lifecycle.store();
    let now = now_ms();
    let mut query = Query::new(Selector::parse(
        &json!({"due": {"$lte": now}, "lease": {"$lte": now}}),
    )?);
    query.sort = Some(Sort::by("due", true)?);
    query.limit = Some(20);
    let due = store.find(OUTBOX, &query).await?;
    let mut handled = 0;
    for doc in due {
        if stopped() {
            break;
        }
        let Some(id) = doc.get("_id").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        let lease = doc.get("lease").cloned().unwrap_or(json!(0));
        let claim = Selector::parse(&json!({"_id": id, "lease": lease}))?;
        let until = now_ms().saturating_add(millis(options.lease));
        let take = Update::parse(&json!({"$set": {"lease": until, "owner": owner}}))?;
        let claimed = store
            .update(OUTBOX, &claim, &take, UpdateOptions::default())
            .await?;
        if claimed.modified == 0 {
            continue; // another sender has it
        }
        handled += 1;
        if let Err(e) = send_one(lifecycle, transport, options, &id, doc).await {
            tracing::warn!(error = %e, mail = %id, "mail outbox");
        }
    }
    Ok(handled)
}

async fn send_one(
    lifecycle: &Lifecycle,
    transport: &dyn MailTransport,
    options: &SenderOptions,
    id: &str,
    doc: Document,
) -> Result<()> {
    let store = lifecycle.store();
    let mail = match mail_of(&doc) {
        Some(mail) => mail,
        None => match lifecycle.resolve(&doc).await? {
            None => {
                // Nothing to send (no such account, say): done.
                store.remove(OUTBOX, &Selector::by_id(id)).await?;
                return Ok(());
            }
            Some(mail) => {
                let rendered = Update::parse(&json!({"$set": {
                    "kind": "mail", "to": mail.to, "subject": mail.subject,
                    "text": mail.text, "html": mail.html,
                }}))?;
                store
                    .update(
                        OUTBOX,
                        &Selector::by_id(id),
                        &rendered,
                        UpdateOptions::default(),
                    )
                    .await?;
                mail
            }
        },
    };
    match transport.send(&mail).await {
        Ok(()) => {
            store.remove(OUTBOX, &Selector::by_id(id)).await?;
            tracing::info!(mail = %id, "mail sent");
        }
        Err(reason) => {
            let attempts = doc
                .get("attempts")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .saturating_add(1);
            let wait = options.backoff(u32::try_from(attempts - 1).unwrap_or(u32::MAX));
            tracing::warn!(mail = %id, attempts, error = %reason, retry_in_ms = millis(wait), "could not send a mail");
            let retry = Update::parse(&json!({"$set": {
                "attempts": attempts,
                "due": now_ms().saturating_add(millis(wait)),
                "lease": 0,
                "lastError": reason,
            }}))?;
            store
                .update(
                    OUTBOX,
                    &Selector::by_id(id),
                    &retry,
                    UpdateOptions::default(),
                )
                .await?;
        }
    }
    Ok(())
}

/// The rendered mail of an outbox document of kind `mail`.
fn mail_of(doc: &Document) -> Option<Mail> {
    if doc.get("kind").and_then(Value::as_str) != Some("mail") {
        return None;
    }
    let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(Mail {
        to: text("to")?,
        subject: text("subject").unwrap_or_default(),
        text: text("text").unwrap_or_default(),
        html: text("html"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let o = SenderOptions {
            retry_first: Duration::from_secs(1),
            retry_max: Duration::from_secs(5),
            ..SenderOptions::default()
        };
        let waits: Vec<u64> = (0..5).map(|a| o.backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(o.backoff(u32::MAX).as_secs(), 5);
    }
}
