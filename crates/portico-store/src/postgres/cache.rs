//! The read cache: stored documents (by id) and whole-collection pages with their totals, kept
//! in memory as their stored JSON text and served only while the collection's change stamp
//! (see `stamp.rs`) is the one they were read under.
//!
//! # Why it is sound across instances
//!
//! A cached read first reads the collection's stamp `s` with a statement that starts after
//! the read was asked for (shared by the callers waiting at that moment). An entry is served
//! only when it was filled under that same `s`; on a miss, the rows are read by a statement
//! that starts after the stamp read, and kept under `s`. Every write, on any instance, moves
//! the stamp in its own transaction, so:
//!
//! - a write that committed before the read was asked for is counted in `s`, and no entry
//!   filled under an earlier stamp is served;
//! - an entry filled under `s` was read after every write `s` counts, so it holds them all.
//!
//! A write committed on instance A before a request reaches instance B is therefore never
//! hidden on B. What an entry may hold beyond `s` (a write that committed between the stamp
//! read and the rows read) is a write concurrent with every request that reads `s`, which may
//! see it or not; the next request of anyone who saw it reads a newer stamp.
//!
//! A stamp that cannot be read (`None`: no stamp yet, or the database does not answer) means no
//! caching: the read goes to the database as without a cache.
//!
//! # What is cached, and what is not
//!
//! Raw stored text, below field rules and projections (applied by the caller on every read):
//! `get_stored`, `find_page` of a page of the whole collection in `_id` order, and `find_page`
//! of any page with its total (filtered or sorted too: its answer depends on the collection's
//! documents alone, which its stamp counts), with the related documents read along kept as
//! `get_stored` keeps them. Which read uses the cache is
//! decided in one place, the read path (`read.rs`). Reads that a read replica answers are
//! neither served from nor put in the cache (a replica's data is not counted by the primary's
//! stamp); the cache is used by reads that go to the primary, whose entries hold the newest
//! data (so a caller's own writes and live re-evaluations see at least what they would see
//! there).
//!
//! # Memory
//!
//! The entries' bytes (texts, keys and a fixed overhead per entry) are kept under a budget
//! ([`super::DEFAULT_CACHE_BYTES`] by default, `PostgresOptions::cache_bytes`); an entry larger
//! than a sixteenth of it (at most [`MAX_ENTRY`]) is not kept. When full, entries are evicted
//! in the order they were filled, except that one read since its last pass gets a second
//! chance. When a collection's stamp moves, its older entries are dropped at its next fill.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The largest entry kept, whatever the budget: a document (or page) of more is read each time.
pub(crate) const MAX_ENTRY: usize = 256 * 1024;

/// Bytes counted for an entry beside its texts and id: its map slot (with the map's spare
/// room), its shared value, its place in the eviction queue, the allocator's rounding.
const ENTRY_OVERHEAD: usize = 256;

/// What a read found, as kept.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// A document's stored text, or `None` when there is no such document.
    Doc(Option<String>),
    /// A page of stored texts, with the collection's total when it was read with it.
    Page(Vec<String>, Option<u64>),
}

impl Value {
    fn bytes(&self) -> usize {
        match self {
            Value::Doc(text) => text.as_ref().map_or(0, String::len),
            Value::Page(texts, _) => texts.iter().map(|t| t.len() + 24).sum(),
        }
    }
}

/// Which read of a collection an entry answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// `get_stored` of this id.
    Doc(String),
    /// A page (of the whole collection, or of a query's matches) with its total.
    Page(PageKey),
}

/// Which page of which query an entry holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PageKey {
    /// The query's selector, sort and projection written out (see [`PageKey::of`]); empty for
    /// a page of the whole collection in `_id` order.
    query: String,
    skip: u64,
    limit: Option<u64>,
}

impl PageKey {
    /// The key of `query`'s page. Two queries share a key only when they are the same query:
    /// the text is the `Debug` form of the selector, sort and projection, which writes out
    /// every field of every clause (strings quoted and escaped, numbers as given), so it
    /// differs whenever they do.
    pub(crate) fn of(query: &crate::Query) -> PageKey {
        let text = if query.is_plain_page() {
            String::new()
        } else {
            format!(
                "{:?}|{:?}|{:?}",
                query.selector, query.sort, query.projection
            )
        };
        PageKey {
            query: text,
            skip: query.skip,
            limit: query.limit,
        }
    }
}

impl Key {
    fn bytes(&self) -> usize {
        match self {
            Key::Doc(id) => id.len(),
            Key::Page(page) => page.query.len(),
        }
    }
}

struct Entry {
    value: Arc<Value>,
    bytes: usize,
    /// Read since the eviction queue last passed it.
    used: bool,
}

/// One collection's entries, all filled under `stamp`.
struct Shelf {
    /// The collection's name, shared by its items in the eviction queue.
    name: Arc<str>,
    stamp: u64,
    docs: HashMap<String, Entry>,
    pages: HashMap<PageKey, Entry>,
}

impl Shelf {
    fn get_mut(&mut self, key: &Key) -> Option<&mut Entry> {
        match key {
            Key::Doc(id) => self.docs.get_mut(id.as_str()),
            Key::Page(page) => self.pages.get_mut(page),
        }
    }

    fn len(&self) -> usize {
        self.docs.len() + self.pages.len()
    }
}

#[derive(Default)]
struct Inner {
    shelves: HashMap<String, Shelf>,
    bytes: usize,
    entries: usize,
    /// Entries in fill order, with the stamp they were filled under (an item whose entry is
    /// gone, or was filled again under another stamp, is skipped).
    order: VecDeque<(Arc<str>, Key, u64)>,
}

impl Inner {
    /// Drops the entry `key` of `collection` filled under `stamp`, if it is still there.
    fn evict(&mut self, collection: &str, key: &Key, stamp: u64) -> bool {
        let Some(shelf) = self.shelves.get_mut(collection) else {
            return false;
        };
        if shelf.stamp != stamp {
            return false;
        }
        let removed = match key {
            Key::Doc(id) => shelf.docs.remove(id.as_str()),
            Key::Page(page) => shelf.pages.remove(page),
        };
        match removed {
            Some(entry) => {
                self.bytes -= entry.bytes;
                self.entries -= 1;
                if shelf.len() == 0 {
                    self.shelves.remove(collection);
                }
                true
            }
            None => false,
        }
    }

    /// Evicts until the entries fit in `budget`.
    fn shrink_to(&mut self, budget: usize) {
        while self.bytes > budget {
            let Some((collection, key, stamp)) = self.order.pop_front() else {
                return;
            };
            let second_chance = self
                .shelves
                .get_mut(&*collection)
                .filter(|shelf| shelf.stamp == stamp)
                .and_then(|shelf| shelf.get_mut(&key))
                .is_some_and(|entry| std::mem::take(&mut entry.used));
            if second_chance {
                self.order.push_back((collection, key, stamp));
            } else {
                self.evict(&collection, &key, stamp);
            }
        }
    }

    /// Drops the queue's items of entries that are gone, once they outnumber the live ones.
    fn compact(&mut self) {
        if self.order.len() <= 2 * self.entries + 1024 {
            return;
        }
        let shelves = &self.shelves;
        self.order.retain(|(collection, key, stamp)| {
            shelves
                .get(&**collection)
                .filter(|shelf| shelf.stamp == *stamp)
                .is_some_and(|shelf| match key {
                    Key::Doc(id) => shelf.docs.contains_key(id.as_str()),
                    Key::Page(page) => shelf.pages.contains_key(page),
                })
        });
    }
}

/// The cache's figures (see [`super::PostgresStore::cache_status`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStatus {
    /// The budget in bytes (0: no cache).
    pub budget: usize,
    /// Bytes the entries take, as counted against the budget.
    pub bytes: usize,
    /// Entries kept.
    pub entries: usize,
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads that went to the database under a stamp (their answer kept when it fits).
    pub misses: u64,
}

/// Stored texts by collection and read, each valid under one change stamp.
pub(crate) struct Cache {
    budget: usize,
    max_entry: usize,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Cache {
    /// A cache of at most `budget` bytes (0: none).
    pub(crate) fn new(budget: usize) -> Cache {
        Cache {
            budget,
            max_entry: (budget / 16).min(MAX_ENTRY),
            inner: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// True when the cache may keep anything.
    pub(crate) fn enabled(&self) -> bool {
        self.max_entry > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry `key` of `collection` when it was filled under `stamp`; counts a hit or a miss.
    pub(crate) fn get(&self, collection: &str, key: &Key, stamp: u64) -> Option<Arc<Value>> {
        let found = {
            let mut inner = self.lock();
            inner
                .shelves
                .get_mut(collection)
                .filter(|shelf| shelf.stamp == stamp)
                .and_then(|shelf| shelf.get_mut(key))
                .map(|entry| {
                    entry.used = true;
                    Arc::clone(&entry.value)
                })
        };
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `value`, read by a statement that started after `stamp` was read, as the entry
    /// `key` of `collection`: unless it is too large, or the collection already has entries
    /// of a newer stamp (then `value` may be older than they are). Entries of an older stamp
    /// are dropped first.
    pub(crate) fn put(&self, collection: &str, key: Key, stamp: u64, value: Value) {
        let bytes = value.bytes() + key.bytes() + collection.len() + ENTRY_OVERHEAD;
        if bytes > self.max_entry {
            return;
        }
        let mut guard = self.lock();
        let inner = &mut *guard;
        let shelf = match inner.shelves.get_mut(collection) {
            Some(shelf) => shelf,
            None => inner
                .shelves
                .entry(collection.to_owned())
                .or_insert_with(|| Shelf {
                    name: Arc::from(collection),
                    stamp,
                    docs: HashMap::new(),
                    pages: HashMap::new(),
                }),
        };
        if stamp < shelf.stamp {
            return;
        }
        if stamp > shelf.stamp {
            let freed: usize = shelf
                .docs
                .values()
                .chain(shelf.pages.values())
                .map(|e| e.bytes)
                .sum();
            inner.bytes -= freed;
            inner.entries -= shelf.len();
            shelf.docs.clear();
            shelf.pages.clear();
            shelf.stamp = stamp;
        }
        let entry = Entry {
            value: Arc::new(value),
            bytes,
            used: false,
        };
        let old = match &key {
            Key::Doc(id) => shelf.docs.insert(id.clone(), entry),
            Key::Page(page) => shelf.pages.insert(page.clone(), entry),
        };
        match old {
            Some(old) => inner.bytes -= old.bytes,
            None => inner.entries += 1,
        }
        inner.bytes += bytes;
        let name = Arc::clone(&shelf.name);
        inner.order.push_back((name, key, stamp));
        inner.shrink_to(self.budget);
        inner.compact();
    }

    /// The cache's figures now.
    pub(crate) fn status(&self) -> CacheStatus {
        let inner = self.lock();
        CacheStatus {
            budget: self.budget,
            bytes: inner.bytes,
            entries: inner.entries,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of a first page of 20 of a whole collection.
    fn first_page() -> Key {
        Key::Page(PageKey::of(&crate::Query {
            limit: Some(20),
            ..crate::Query::default()
        }))
    }

    fn doc(n: usize) -> Value {
        Value::Doc(Some(format!(
            "{{\"_id\":\"{n}\",\"pad\":\"{}\"}}",
            "x".repeat(100)
        )))
    }

    #[test]
    fn an_entry_is_served_only_under_its_stamp() {
        let cache = Cache::new(1 << 20);
        let key = Key::Doc("a".into());
        cache.put("c", key.clone(), 5, doc(1));
        assert_eq!(cache.get("c", &key, 5).as_deref(), Some(&doc(1)));
        assert_eq!(cache.get("c", &key, 6), None, "a newer stamp misses");
        assert_eq!(cache.get("c", &key, 4), None, "an older stamp misses");
        assert_eq!(cache.get("d", &key, 5), None, "per collection");
        // A fill under an older stamp than the shelf's is refused; a newer one drops the rest.
        cache.put("c", Key::Doc("b".into()), 4, doc(2));
        assert_eq!(cache.get("c", &Key::Doc("b".into()), 4), None);
        cache.put("c", first_page(), 6, Value::Page(vec![], Some(0)));
        assert_eq!(cache.get("c", &key, 5), None);
        let status = cache.status();
        assert_eq!(status.entries, 1);
        assert_eq!((status.hits, status.misses), (1, 5));
        assert_eq!(
            cache.get("c", &first_page(), 6).as_deref(),
            Some(&Value::Page(vec![], Some(0)))
        );
    }

    #[test]
    fn memory_stays_under_the_budget_and_large_entries_are_not_kept() {
        let budget = 64 * 1024;
        let cache = Cache::new(budget);
        for n in 0..10_000 {
            cache.put("c", Key::Doc(n.to_string()), 1, doc(n));
            let status = cache.status();
            assert!(status.bytes <= budget, "{status:?}");
        }
        let status = cache.status();
        assert!(status.entries > 100 && status.entries < 1_000, "{status:?}");
        assert!(cache.inner.lock().expect("lock").order.len() <= 2 * status.entries + 1024);
        // The newest entries are kept, the oldest gone.
        assert!(cache.get("c", &Key::Doc("9999".into()), 1).is_some());
        assert!(cache.get("c", &Key::Doc("0".into()), 1).is_none());
        // Over a sixteenth of the budget: not kept.
        let big = Value::Doc(Some("x".repeat(budget / 16)));
        cache.put("c", Key::Doc("big".into()), 1, big);
        assert!(cache.get("c", &Key::Doc("big".into()), 1).is_none());
        // A stamp move frees the collection's bytes at its next fill.
        cache.put("c", Key::Doc("new".into()), 2, doc(0));
        assert_eq!(cache.status().entries, 1);
        // No budget, no cache.
        let none = Cache::new(0);
        assert!(!none.enabled());
        none.put("c", Key::Doc("a".into()), 1, doc(1));
        assert_eq!(none.status().entries, 0);
    }

    #[test]
    fn a_read_entry_outlives_unread_ones() {
        let key = |n: usize| Key::Doc(format!("{n:02}"));
        let per_entry = doc(10).bytes() + 2 + 1 + ENTRY_OVERHEAD;
        let cache = Cache::new(per_entry * 20 + per_entry / 2);
        for n in 10..30 {
            cache.put("c", key(n), 1, doc(n));
        }
        assert_eq!(cache.status().entries, 20);
        assert!(cache.get("c", &key(10), 1).is_some());
        for n in 30..35 {
            cache.put("c", key(n), 1, doc(n));
        }
        assert_eq!(cache.status().entries, 20);
        assert!(cache.get("c", &key(10), 1).is_some(), "read: kept");
        assert!(cache.get("c", &key(11), 1).is_none(), "unread: evicted");
    }
}
