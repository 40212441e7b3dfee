//! [`SmtpTransport`]: the outbox's mail sent over SMTP (lettre).

use std::time::Duration;

use futures::future::BoxFuture;
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Body, Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::{Mail, MailTransport};
use crate::{Error, Result};

/// How long one SMTP conversation may take (well within the outbox's lease).
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends mail through an SMTP server named by a URL: `smtp://host:port` (STARTTLS when the server
/// offers it; `?tls=required` insists on it), `smtps://host:port` (TLS from the start), with
/// `user:password@` when the server wants a login.
#[derive(Clone)]
pub struct SmtpTransport {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl std::fmt::Debug for SmtpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: not shown.
        f.debug_struct("SmtpTransport")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl SmtpTransport {
    /// A transport to the server at `url`, sending as `from` (`Name <address>` or an address).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a URL or a sender that cannot be used.
    pub fn new(url: &str, from: &str) -> Result<SmtpTransport> {
        let from: Mailbox = from
            .parse()
            .map_err(|e| Error::InvalidArgument(format!("email.from {from:?}: {e}")))?;
        let url = opportunistic(url);
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(&url)
            .map_err(|e| Error::InvalidArgument(format!("email.smtp_url: {e}")))?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        Ok(SmtpTransport { transport, from })
    }
}

/// `smtp://` without a `tls` parameter uses STARTTLS when the server offers it.
fn opportunistic(url: &str) -> String {
    let plain = url.starts_with("smtp://");
    let has_tls = url
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|p| p.starts_with("tls=")));
    match (plain, has_tls, url.contains('?')) {
        (true, false, true) => format!("{url}&tls=opportunistic"),
        (true, false, false) => format!("{url}?tls=opportunistic"),
        _ => url.to_owned(),
    }
}

/// A body sent as it is (7bit) when it can be, so a link in it stays whole for anyone reading
/// the raw mail; otherwise (non-ASCII text, very long lines) the encoding lettre picks.
fn readable(text: &str) -> Body {
    Body::new_with_encoding(text.to_owned(), ContentTransferEncoding::SevenBit)
        .unwrap_or_else(|_| Body::new(text.to_owned()))
}

impl MailTransport for SmtpTransport {
    fn send<'a>(&'a self, mail: &'a Mail) -> BoxFuture<'a, std::result::Result<(), String>> {
        Box::pin(async move {
            let to: Mailbox = mail
                .to
                .parse()
                .map_err(|e| format!("recipient {:?}: {e}", mail.to))?;
            let builder = Message::builder()
                .from(self.from.clone())
                .to(to)
                .subject(mail.subject.clone());
            let text = SinglePart::builder()
                .header(ContentType::TEXT_PLAIN)
                .body(readable(&mail.text));
            let message = match &mail.html {
                Some(html) => builder.multipart(
                    MultiPart::alternative().singlepart(text).singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_HTML)
                            .body(readable(html)),
                    ),
                ),
                None => builder.singlepart(text),
            }
            .map_err(|e| e.to_string())?;
            self.transport
                .send(message)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_smtp_urls_use_starttls_when_offered() {
        assert_eq!(
            opportunistic("smtp://h:25"),
            "smtp://h:25?tls=opportunistic"
        );
        assert_eq!(
            opportunistic("smtp://h:25?x=1"),
            "smtp://h:25?x=1&tls=opportunistic"
        );
        assert_eq!(
            opportunistic("smtp://h:25?tls=required"),
            "smtp://h:25?tls=required"
        );
        assert_eq!(opportunistic("smtps://h"), "smtps://h");
        assert!(SmtpTransport::new("smtp://127.0.0.1:1025", "Ex <no-reply@example.com>").is_ok());
        assert!(SmtpTransport::new("smtp://127.0.0.1:1025", "not an address").is_err());
        assert!(SmtpTransport::new("ftp://x", "a@b.org").is_err());
    }
}
