//! The token cache: who holds a login token, remembered between requests, never past a write.
//!
//! Resolving a token reads the users collection (an index probe, the user's document decoded,
//! the selector checked) on every authenticated request. The answer only changes when the users
//! collection is written (a logout, a removal, a new role...) or when the token expires. So an
//! answer is kept with:
//!
//! - the store's [`Store::change_stamp`] of the users collection, read *before* the lookup: any
//!   write that commits after it changes the stamp, so an entry is used only while nothing has
//!   been written since its lookup began (in this process or, for SQLite, any other; on
//!   PostgreSQL, by any instance on the database: the stamp is read from the database, by a
//!   read that started after the request did, shared by the requests waiting at that moment);
//! - the token's expiry, checked against the clock on every use.
//!
//! A backend without a stamp (the memory backend; PostgreSQL while it cannot read its stamps)
//! answers `None`, and then nothing is cached: every request reads the store.
//!
//! Keys are the hashed tokens (never the tokens themselves), with the token path. The cache is
//! bounded: when full it is emptied, which costs one lookup per live token.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use portico_store::{Document, Store};

/// Most entries kept; beyond it the cache starts over.
const CAPACITY: usize = 4096;

/// One resolved token.
struct Entry {
    /// The token path the token was found at.
    path: String,
    /// The users collection's change stamp read before the lookup.
    stamp: u64,
    /// The user holding the token.
    user: Document,
    /// When the token stops being valid; `None` for a custom token path without expiry.
    expires: Option<DateTime<Utc>>,
}

/// Resolved tokens by hashed token.
#[derive(Default)]
pub(crate) struct TokenCache {
    entries: Mutex<HashMap<String, Entry>>,
}

/// What the cache knows of a token.
pub(crate) enum Cached {
    /// The user holding it, nothing written since the lookup and not expired.
    Hit(Document),
    /// Not known: look it up, and keep the answer with this stamp (read before the lookup;
    /// `None`: do not keep it).
    Miss(Option<u64>),
}

impl TokenCache {
    /// The cached user for `hashed` at `path` if the entry is still good (nothing written since
    /// its lookup: the store's current stamp equals the entry's; and not expired now), else the
    /// stamp just read, to keep with the answer about to be looked up. One stamp read per call.
    pub(crate) async fn get(
        &self,
        store: &dyn Store,
        users: &str,
        path: &str,
        hashed: &str,
    ) -> Cached {
        let Some(current) = store.change_stamp(users).await else {
            return Cached::Miss(None);
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = entries.get(hashed) else {
            return Cached::Miss(Some(current));
        };
        let live = entry.path == path
            && entry.stamp == current
            && entry.expires.is_none_or(|at| Utc::now() < at);
        if !live {
            entries.remove(hashed);
            return Cached::Miss(Some(current));
        }
        Cached::Hit(entry.user.clone())
    }

    /// Keeps `user` as the holder of `hashed` at `path`, looked up after `stamp` was read.
    pub(crate) fn put(
        &self,
        stamp: u64,
        path: &str,
        hashed: &str,
        user: &Document,
        expires: Option<DateTime<Utc>>,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(
            hashed.to_owned(),
            Entry {
                path: path.to_owned(),
                stamp,
                user: user.clone(),
                expires,
            },
        );
    }
}
