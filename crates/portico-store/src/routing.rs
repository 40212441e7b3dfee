//! Who is reading: the scope a server sets around each request, so that a store with read
//! replicas (see `postgres::PostgresOptions::replicas`) can send reads to a replica while every
//! caller still reads its own writes.
//!
//! A store routes a read to a replica only inside a [`Reader`] scope that allows it, and only
//! when that replica has replayed every write made in that scope or by the same caller key
//! before. Code outside any scope (background work, tasks spawned without the scope) reads from
//! the primary, and so does code inside [`on_primary`] (the reads a write makes before and
//! after itself, such as write hooks). Stores without replicas ignore all of this.
//!
//! ```
//! use portico_store::routing::{Reader, on_primary};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // A request of the caller whose login token is "abc": its reads may go to a replica.
//! let answer = Reader::caller(Some("abc")).scope(async {
//!     // ... reads and writes through a store ...
//!     on_primary(async { /* reads here always go to the primary */ }).await;
//!     42
//! }).await;
//! assert_eq!(answer, 42);
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

tokio::task_local! {
    static READER: Reader;
}

/// The reading context of a request (see the module docs). Cloning shares the scope's record
/// of its writes.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    /// Who the caller is across requests (a login token, or the client's address).
    key: Option<Arc<str>>,
    /// The highest write position reached by writes made in this scope.
    written: Arc<AtomicU64>,
    /// Every read goes to the primary.
    primary: bool,
    /// Reads also see every change the store's change feed has told (live re-evaluations).
    follows_feed: bool,
}

impl Reader {
    /// The scope of one request of the caller `key` (`None`: a caller known only for the
    /// length of the scope). Its reads may go to a replica that has replayed every write of
    /// the caller.
    pub fn caller(key: Option<&str>) -> Reader {
        Reader {
            key: key.map(Arc::from),
            written: Arc::default(),
            primary: false,
            follows_feed: false,
        }
    }

    /// The scope of work that follows the store's change feed (live queries re-evaluated on
    /// each change): its reads see at least every change the feed has told so far, on top of
    /// what the running scope's caller (if any) wrote.
    pub fn following() -> Reader {
        Reader {
            follows_feed: true,
            ..current().unwrap_or_default()
        }
    }

    /// True when reads must see every change the feed has told (see [`Reader::following`]).
    pub fn follows_feed(&self) -> bool {
        self.follows_feed
    }

    /// Runs `fut` in this scope.
    pub async fn scope<F: Future>(self, fut: F) -> F::Output {
        READER.scope(self, fut).await
    }

    /// The caller key.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// True when every read of the scope goes to the primary.
    pub fn primary_only(&self) -> bool {
        self.primary
    }

    /// The highest write position recorded in this scope (0: none).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Records a write that reached `position` (kept if higher than the one recorded).
    pub fn record_write(&self, position: u64) {
        self.written.fetch_max(position, Ordering::AcqRel);
    }
}

/// The scope the running task reads in, when it runs in one.
pub fn current() -> Option<Reader> {
    READER.try_with(Clone::clone).ok()
}

/// Runs `fut` with every read going to the primary, keeping the caller (writes inside still
/// count as the caller's). For the reads that belong to a write: a read-modify-write, write
/// hooks, re-reads of what was just written.
pub async fn on_primary<F: Future>(fut: F) -> F::Output {
    let reader = match current() {
        Some(reader) => Reader {
            primary: true,
            ..reader
        },
        None => Reader {
            primary: true,
            ..Reader::default()
        },
    };
    READER.scope(reader, fut).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scopes_nest_and_share_their_writes() {
        assert!(current().is_none());
        Reader::caller(Some("t"))
            .scope(async {
                let outer = current().expect("in a scope");
                assert_eq!(outer.key(), Some("t"));
                assert!(!outer.primary_only());
                on_primary(async {
                    let inner = current().expect("in a scope");
                    assert!(inner.primary_only());
                    assert_eq!(inner.key(), Some("t"));
                    inner.record_write(7);
                })
                .await;
                assert_eq!(outer.written(), 7);
                outer.record_write(3);
                assert_eq!(outer.written(), 7);
            })
            .await;
        on_primary(async { assert!(current().is_some_and(|r| r.primary_only())) }).await;
        let following = Reader::caller(Some("u"))
            .scope(async { Reader::following() })
            .await;
        assert!(following.follows_feed());
        assert_eq!(following.key(), Some("u"));
    }
}
