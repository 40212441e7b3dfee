//! Who a live stream runs as, and the checks that end it when that caller's token is logged out
//! or expires.

use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::Accounts;

/// Who a live stream runs as: anonymous, or a user authenticated with a hashed token at a path
/// of the user record (re-checked whenever that user's record changes, and at the token's
/// expiry), or a user trusted without a token (never re-checked).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveCaller {
    pub(crate) user_id: Option<String>,
    pub(crate) token: Option<(String, String)>,
}

impl LiveCaller {
    /// An anonymous caller.
    pub fn anonymous() -> LiveCaller {
        LiveCaller::default()
    }

    /// The user `user_id`, authenticated by the hashed token `hashed` found at `path` of its
    /// record (the default path is [`crate::TOKEN_PATH`]). The stream ends when the record no
    /// longer holds the token there (logout) or the token expires.
    pub fn with_token(
        user_id: impl Into<String>,
        path: impl Into<String>,
        hashed: impl Into<String>,
    ) -> LiveCaller {
        LiveCaller {
            user_id: Some(user_id.into()),
            token: Some((path.into(), hashed.into())),
        }
    }

    /// The user `user_id`, trusted as is (a host's own authentication): nothing ends the stream
    /// but the client.
    pub fn trusted(user_id: impl Into<String>) -> LiveCaller {
        LiveCaller {
            user_id: Some(user_id.into()),
            token: None,
        }
    }

    /// The user id, `None` when anonymous.
    pub fn user_id(&self) -> Option<&str> {
        self.user_id.as_deref()
    }
}

/// One open stream's control: its caller, the token's expiry, and the switch that ends it.
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) caller: LiveCaller,
    expires: Mutex<Option<DateTime<Utc>>>,
    end: watch::Sender<Option<&'static str>>,
}

impl Control {
    pub(crate) fn new(caller: LiveCaller) -> Control {
        Control {
            caller,
            expires: Mutex::new(None),
            end: watch::channel(None).0,
        }
    }

    /// Ends the stream with `reason` (the first reason wins).
    pub(crate) fn end(&self, reason: &'static str) {
        self.end.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }

    pub(crate) fn ended(&self) -> Option<&'static str> {
        *self.end.borrow()
    }

    pub(crate) fn watch(&self) -> watch::Receiver<Option<&'static str>> {
        self.end.subscribe()
    }

    /// True when the token's expiry has passed.
    pub(crate) fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|at| at <= now)
    }

    /// Looks the caller's token up again: ends the stream when it no longer finds the caller,
    /// else notes the token's expiry. A trusted or anonymous caller is never ended.
    pub(crate) async fn recheck(&self, accounts: &Accounts) {
        let (Some(user_id), Some((path, hashed))) = (&self.caller.user_id, &self.caller.token)
        else {
            return;
        };
        match accounts.user_by_hashed_token(path, hashed).await {
            Ok(Some(user)) if portico_store::document_id(&user) == Some(user_id.as_str()) => {
                *self.expires.lock().unwrap_or_else(PoisonError::into_inner) =
                    accounts.token_expiry(&user, path, hashed);
            }
            Ok(_) => self.end("logged-out"),
            Err(e) => {
                // Fail closed: a stream whose caller cannot be checked does not go on.
                tracing::warn!(error = %e, "live stream: could not re-check the caller's token");
                self.end("error");
            }
        }
    }
}

/// A login followed while something runs as it (see [`crate::Platform::watch_login`]):
/// [`LoginWatch::ended`] resolves when its token is logged out or expires.
pub struct LoginWatch {
    pub(crate) control: std::sync::Arc<Control>,
    pub(crate) rx: watch::Receiver<Option<&'static str>>,
    pub(crate) _permit: tokio::sync::OwnedSemaphorePermit,
}

impl std::fmt::Debug for LoginWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginWatch")
            .field("caller", &self.control.caller)
            .finish_non_exhaustive()
    }
}

impl LoginWatch {
    /// Resolves with the reason (`logged-out`, `expired`, `error`) when the login ends; never
    /// for a caller without a token.
    pub async fn ended(&mut self) -> &'static str {
        loop {
            if let Some(reason) = *self.rx.borrow_and_update() {
                return reason;
            }
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}
