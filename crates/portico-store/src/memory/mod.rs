//! The in-memory backend: for tests and ephemeral data.
//!
//! All collections live in one map behind a [`RwLock`]: reads share it, each write holds it for
//! the whole operation, which makes every operation atomic (an update's read-modify-write cannot
//! interleave with another write). No operation awaits while holding the lock, so a plain
//! `std::sync::RwLock` is right; its critical sections are short and CPU-bound.
//!
//! `ensure_index` keeps a real equality index (value -> ids) per indexed path, maintained on
//! every write. The memory store backs tests that create many documents (login tokens are looked
//! up by an indexed path on every authenticated request), and an index keeps those lookups from
//! scanning the whole collection. As in every backend, the index only narrows the candidates:
//! [`Selector::matches`] decides each result.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

mod batch;

use async_trait::async_trait;
use serde_json::Value;

use crate::document::prepare_insert;
use crate::feed::{Change, ChangeKind};
use crate::index_key::{NULL_KEY, keys, unique_keys, value_key};
use crate::paging::{TopK, check_sorted_window};
use crate::value::split_path;
use crate::{
    Document, Error, Query, Result, Selector, Sort, Store, Update, UpdateOptions, UpdateResult,
};

/// A [`Store`] that keeps everything in memory; its data is gone when it is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> portico_store::Result<()> {
/// use portico_store::memory::MemoryStore;
/// use portico_store::{Selector, Store};
///
/// let store = MemoryStore::new();
/// let mut doc = portico_store::Document::new();
/// doc.insert("name".into(), "Ada".into());
/// let id = store.insert("people", doc).await?;
/// assert!(store.get("people", &id).await?.is_some());
/// assert_eq!(store.count("people", &Selector::all()).await?, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    collections: RwLock<HashMap<String, Collection>>,
    /// Told after each write, while the write lock is still held (so in commit order).
    feed: crate::ChangeFeed,
    /// Set by [`Store::close`]: every later call fails with [`Error::Closed`].
    closed: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct Collection {
    /// Documents by `_id`; the `BTreeMap` gives the natural order (by `_id`), as in SQLite.
    docs: BTreeMap<String, Document>,
    /// Equality indexes by dotted path.
    indexes: BTreeMap<String, Index>,
    /// Sorted indexes by name (their fields as written): listed, never read (a query here
    /// reads the documents, which is what an index must answer anyway).
    sorted: BTreeMap<String, crate::IndexSpec>,
}

/// An equality index on one path: index key -> ids of the documents holding that value there.
#[derive(Debug, Default)]
struct Index {
    entries: HashMap<String, BTreeSet<String>>,
    /// No two documents may share a key (other than `null`'s); checked before every write.
    unique: bool,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, HashMap<String, Collection>>> {
        self.refuse_when_closed()?;
        // A panic elsewhere while holding the lock cannot leave a half-written document: every
        // write builds its new documents before touching the map. So a poisoned lock is usable.
        Ok(self
            .collections
            .read()
            .unwrap_or_else(PoisonError::into_inner))
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, HashMap<String, Collection>>> {
        self.refuse_when_closed()?;
        Ok(self
            .collections
            .write()
            .unwrap_or_else(PoisonError::into_inner))
    }

    /// [`Error::Closed`] once the store was closed.
    fn refuse_when_closed(&self) -> Result<()> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed("the memory store was closed".into()));
        }
        Ok(())
    }
}

fn check_name(collection: &str) -> Result<()> {
    if collection.is_empty() {
        return Err(Error::InvalidName(
            "a collection name must not be empty".into(),
        ));
    }
    Ok(())
}

impl Index {
    fn add(&mut self, path: &str, id: &str, doc: &Document) {
        for key in keys(doc, path) {
            self.entries.entry(key).or_default().insert(id.to_string());
        }
    }

    fn remove(&mut self, path: &str, id: &str, doc: &Document) {
        for key in keys(doc, path) {
            if let Some(ids) = self.entries.get_mut(&key) {
                ids.remove(id);
                if ids.is_empty() {
                    self.entries.remove(&key);
                }
            }
        }
    }
}

impl Collection {
    /// Checks that writing `changes` (id, new document; an id present already is replaced)
    /// keeps every unique index unique, before anything is written.
    fn check_unique<'a>(
        &self,
        collection: &str,
        changes: &[(&'a str, &'a Document)],
    ) -> Result<()> {
        let changing: HashSet<&str> = changes.iter().map(|(id, _)| *id).collect();
        for (path, index) in self.indexes.iter().filter(|(_, index)| index.unique) {
            let mut claimed: HashMap<String, &str> = HashMap::new();
            for &(id, doc) in changes {
                for key in unique_keys(doc, path) {
                    let held_elsewhere = index
                        .entries
                        .get(&key)
                        .is_some_and(|ids| ids.iter().any(|h| !changing.contains(h.as_str())));
                    let claimed_by_other = claimed.insert(key, id).is_some_and(|other| other != id);
                    if held_elsewhere || claimed_by_other {
                        return Err(Error::DuplicateKey {
                            collection: collection.to_string(),
                            path: path.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn index_add(&mut self, id: &str, doc: &Document) {
        for (path, index) in &mut self.indexes {
            index.add(path, id, doc);
        }
    }

    fn index_remove(&mut self, id: &str, doc: &Document) {
        for (path, index) in &mut self.indexes {
            index.remove(path, id, doc);
        }
    }

    /// The documents that may match `selector`, in `_id` order: one document when the selector
    /// pins `_id`, the smallest index bucket among its indexed equalities, or all documents.
    fn candidates<'a>(
        &'a self,
        selector: &Selector,
    ) -> Box<dyn Iterator<Item = (&'a String, &'a Document)> + 'a> {
        if let Some(id) = selector.id_equality() {
            return Box::new(self.docs.get_key_value(id).into_iter());
        }
        let mut best: Option<&'a BTreeSet<String>> = None;
        for (path, value) in selector.equalities() {
            let Some(index) = self.indexes.get(path) else {
                continue;
            };
            let Some(key) = value_key(value) else {
                continue;
            };
            let Some(ids) = index.entries.get(&key) else {
                return Box::new(std::iter::empty());
            };
            if best.is_none_or(|b| ids.len() < b.len()) {
                best = Some(ids);
            }
        }
        match best {
            Some(ids) => Box::new(ids.iter().filter_map(|id| self.docs.get_key_value(id))),
            None => Box::new(self.docs.iter()),
        }
    }

    fn matching<'a>(
        &'a self,
        selector: &'a Selector,
    ) -> impl Iterator<Item = (&'a String, &'a Document)> + 'a {
        self.candidates(selector)
            .filter(move |(_, doc)| selector.matches(doc))
    }

    fn insert(&mut self, collection: &str, id: String, doc: Document) -> Result<String> {
        if self.docs.contains_key(&id) {
            return Err(Error::DuplicateId {
                collection: collection.to_string(),
                id,
            });
        }
        self.check_unique(collection, &[(id.as_str(), &doc)])?;
        self.index_add(&id, &doc);
        self.docs.insert(id.clone(), doc);
        Ok(id)
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A document ranked by a sort (its sort keys looked up once), ties broken by the order it was
/// found in (so the result is the stable sort of the matches).
struct Ranked<'a> {
    doc: &'a Document,
    keys: Vec<&'a Value>,
    seq: usize,
    sort: &'a Sort,
}

impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.sort
            .compare_keys(&self.keys, &other.keys)
            .then(self.seq.cmp(&other.seq))
    }
}

impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked<'_> {}

/// The matches in `sort` order, then `skip`, then at most `limit`. With a limit, only
/// `skip + limit` documents are kept at a time (a max-heap whose top is the worst kept so far).
fn sorted_page<'a>(
    docs: impl Iterator<Item = &'a Document>,
    sort: &'a Sort,
    skip: usize,
    limit: Option<usize>,
) -> Vec<&'a Document> {
    let ranked = docs.enumerate().map(|(seq, doc)| Ranked {
        keys: sort.sort_keys(doc),
        doc,
        seq,
        sort,
    });
    let Some(limit) = limit else {
        let mut all: Vec<Ranked<'a>> = ranked.collect();
        all.sort_unstable();
        return all.into_iter().skip(skip).map(|r| r.doc).collect();
    };
    let keep = skip.saturating_add(limit);
    if keep == 0 {
        return Vec::new();
    }
    let mut top = TopK::new(keep);
    ranked.for_each(|r| top.push(r));
    top.into_sorted_vec()
        .into_iter()
        .skip(skip)
        .map(|r| r.doc)
        .collect()
}

#[async_trait]
impl Store for MemoryStore {
    async fn insert(&self, collection: &str, doc: Document) -> Result<String> {
        check_name(collection)?;
        let (id, doc) = prepare_insert(doc)?;
        let mut all = self.write()?;
        let id = all
            .entry(collection.to_string())
            .or_default()
            .insert(collection, id, doc)?;
        self.feed.publish(Change::documents(
            collection,
            vec![id.clone()],
            ChangeKind::Insert,
        ));
        Ok(id)
    }

    async fn insert_many(&self, collection: &str, docs: Vec<Document>) -> Result<Vec<String>> {
        check_name(collection)?;
        let prepared = docs
            .into_iter()
            .map(prepare_insert)
            .collect::<Result<Vec<_>>>()?;
        let mut all = self.write()?;
        // Check every id against the collection and the batch before writing any document.
        let mut seen = HashSet::with_capacity(prepared.len());
        for (id, _) in &prepared {
            let exists = all
                .get(collection)
                .is_some_and(|existing| existing.docs.contains_key(id));
            if exists || !seen.insert(id.as_str()) {
                return Err(Error::DuplicateId {
                    collection: collection.to_string(),
                    id: id.clone(),
                });
            }
        }
        let target = all.entry(collection.to_string()).or_default();
        let batch: Vec<(&str, &Document)> = prepared
            .iter()
            .map(|(id, doc)| (id.as_str(), doc))
            .collect();
        target.check_unique(collection, &batch)?;
        let mut ids = Vec::with_capacity(prepared.len());
        for (id, doc) in prepared {
            ids.push(target.insert(collection, id, doc)?);
        }
        self.feed.publish(Change::documents(
            collection,
            ids.clone(),
            ChangeKind::Insert,
        ));
        Ok(ids)
    }

    async fn find(&self, collection: &str, query: &Query) -> Result<Vec<Document>> {
        check_sorted_window(query)?;
        let all = self.read()?;
        let Some(coll) = all.get(collection) else {
            return Ok(Vec::new());
        };
        let skip = to_usize(query.skip);
        let limit = query.limit.map_or(usize::MAX, to_usize);
        let matches = coll.matching(&query.selector).map(|(_, doc)| doc);
        let docs: Vec<&Document> = match &query.sort {
            None => matches.skip(skip).take(limit).collect(),
            Some(sort) => sorted_page(matches, sort, skip, query.limit.map(to_usize)),
        };
        Ok(match &query.projection {
            Some(p) => docs.into_iter().map(|d| p.apply(d)).collect(),
            None => docs.into_iter().cloned().collect(),
        })
    }

    async fn find_one(&self, collection: &str, selector: &Selector) -> Result<Option<Document>> {
        let all = self.read()?;
        Ok(all
            .get(collection)
            .and_then(|coll| coll.matching(selector).next())
            .map(|(_, doc)| doc.clone()))
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Document>> {
        let all = self.read()?;
        Ok(all
            .get(collection)
            .and_then(|coll| coll.docs.get(id))
            .cloned())
    }

    async fn count(&self, collection: &str, selector: &Selector) -> Result<u64> {
        let all = self.read()?;
        Ok(all.get(collection).map_or(0, |coll| {
            if selector.is_all() {
                coll.docs.len() as u64
            } else {
                coll.matching(selector).count() as u64
            }
        }))
    }

    async fn update(
        &self,
        collection: &str,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        check_name(collection)?;
        let mut all = self.write()?;
        // Build every new document first: when the update fails on any of them, nothing changes.
        let mut changes: Vec<(String, Document)> = Vec::new();
        let mut result = UpdateResult::default();
        if let Some(coll) = all.get(collection) {
            let take = if options.multi { usize::MAX } else { 1 };
            for (id, doc) in coll.matching(selector).take(take) {
                result.matched += 1;
                let mut new = doc.clone();
                update.apply(&mut new)?;
                if crate::document_id(&new) != Some(id.as_str()) {
                    return Err(Error::InvalidModifier(format!(
                        "the update would change the _id of document {id:?}"
                    )));
                }
                if new != *doc {
                    crate::check_size(&new)?;
                    changes.push((id.clone(), new));
                }
            }
        }
        if result.matched == 0 && options.upsert {
            let (id, doc) = prepare_insert(update.upsert_document(selector)?)?;
            let coll = all.entry(collection.to_string()).or_default();
            result.upserted_id = Some(coll.insert(collection, id, doc)?);
            self.feed
                .publish(Change::of_update(collection, selector, &result));
            return Ok(result);
        }
        if let Some(coll) = all.get_mut(collection) {
            let batch: Vec<(&str, &Document)> =
                changes.iter().map(|(id, doc)| (id.as_str(), doc)).collect();
            coll.check_unique(collection, &batch)?;
            result.modified = changes.len() as u64;
            if !changes.is_empty() {
                let ids = changes.iter().map(|(id, _)| id.clone()).collect();
                self.feed
                    .publish(Change::documents(collection, ids, ChangeKind::Update));
            }
            for (id, new) in changes {
                // Old keys out before new keys in: a key both versions hold must stay.
                if let Some(old) = coll.docs.remove(&id) {
                    coll.index_remove(&id, &old);
                }
                coll.index_add(&id, &new);
                coll.docs.insert(id, new);
            }
        }
        Ok(result)
    }

    async fn remove(&self, collection: &str, selector: &Selector) -> Result<u64> {
        let mut all = self.write()?;
        let Some(coll) = all.get_mut(collection) else {
            return Ok(0);
        };
        let ids: Vec<String> = coll.matching(selector).map(|(id, _)| id.clone()).collect();
        for id in &ids {
            if let Some(old) = coll.docs.remove(id) {
                coll.index_remove(id, &old);
            }
        }
        let removed = ids.len() as u64;
        if removed > 0 {
            self.feed
                .publish(Change::documents(collection, ids, ChangeKind::Remove));
        }
        Ok(removed)
    }

    async fn ensure_index(&self, collection: &str, path: &str) -> Result<()> {
        check_name(collection)?;
        split_path(path).map_err(|e| Error::InvalidName(format!("index path: {e}")))?;
        let mut all = self.write()?;
        let coll = all.entry(collection.to_string()).or_default();
        // `_id` is the map's key already.
        if path == "_id" || coll.indexes.contains_key(path) {
            return Ok(());
        }
        let mut index = Index::default();
        for (id, doc) in &coll.docs {
            index.add(path, id, doc);
        }
        coll.indexes.insert(path.to_string(), index);
        Ok(())
    }

    async fn ensure_unique_index(&self, collection: &str, path: &str) -> Result<()> {
        check_name(collection)?;
        split_path(path).map_err(|e| Error::InvalidName(format!("index path: {e}")))?;
        let mut all = self.write()?;
        let coll = all.entry(collection.to_string()).or_default();
        if path == "_id" {
            return Ok(());
        }
        let existed = coll.indexes.remove(path);
        let had_index = existed.is_some();
        let index = existed.unwrap_or_else(|| {
            let mut index = Index::default();
            for (id, doc) in &coll.docs {
                index.add(path, id, doc);
            }
            index
        });
        let shared = index
            .entries
            .iter()
            .any(|(key, ids)| key != NULL_KEY && ids.len() > 1);
        let unique = index.unique || !shared;
        // When it cannot be made unique, nothing changes: a plain index stays as it was.
        if unique || had_index {
            coll.indexes
                .insert(path.to_string(), Index { unique, ..index });
        }
        if unique {
            Ok(())
        } else {
            Err(Error::DuplicateKey {
                collection: collection.to_string(),
                path: path.to_string(),
            })
        }
    }

    async fn insert_stored(
        &self,
        collection: &str,
        doc: Document,
    ) -> Result<(String, crate::Stored)> {
        crate::fallback::insert_stored(self, collection, doc).await
    }

    async fn insert_stream(
        &self,
        collection: &str,
        batches: crate::DocumentBatches,
    ) -> Result<u64> {
        crate::fallback::insert_stream(self, collection, batches).await
    }

    async fn find_page(&self, collection: &str, read: &crate::PageRead) -> Result<crate::Page> {
        crate::fallback::find_page(self, collection, read).await
    }

    async fn get_stored(&self, collection: &str, id: &str) -> Result<Option<crate::Stored>> {
        crate::fallback::get_stored(self, collection, id).await
    }

    async fn aggregate(&self, collection: &str, spec: &crate::Aggregate) -> Result<Vec<Document>> {
        crate::fallback::aggregate(self, collection, spec).await
    }

    async fn ensure_search(&self, _collection: &str, fields: &[String]) -> Result<()> {
        crate::fallback::ensure_search(fields)
    }

    async fn search(
        &self,
        collection: &str,
        search: &crate::Search,
    ) -> Result<(Vec<Document>, u64)> {
        crate::fallback::search(self, collection, search).await
    }

    async fn update_owned(
        &self,
        collection: &str,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        crate::fallback::update_owned(self, collection, selector, update, options).await
    }

    async fn change_stamp(&self, _collection: &str) -> Option<u64> {
        // Nothing read from memory is worth caching, and no stamp is kept.
        None
    }

    async fn ensure_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<()> {
        check_name(collection)?;
        if spec.unique
            && let Some(field) = spec.fields.first()
        {
            self.ensure_unique_index(collection, &field.path).await?;
        }
        let mut all = self.write()?;
        let coll = all.entry(collection.to_string()).or_default();
        let parts = spec.split_paths();
        if coll
            .docs
            .values()
            .any(|doc| crate::order_key::entries(doc, &parts).is_none())
        {
            return Err(Error::InvalidDocument(format!(
                "a document holds too many values for the index {spec} (at most {} entries)",
                crate::MAX_INDEX_ENTRIES
            )));
        }
        let key: Vec<String> = spec.fields.iter().map(crate::IndexField::name).collect();
        let entry = coll
            .sorted
            .entry(key.join(","))
            .or_insert_with(|| spec.clone());
        entry.unique |= spec.unique;
        Ok(())
    }

    async fn sorted_indexes(&self, collection: &str) -> Result<Vec<crate::IndexSpec>> {
        Ok(self
            .read()?
            .get(collection)
            .map(|c| c.sorted.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn drop_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<bool> {
        Ok(self
            .write()?
            .get_mut(collection)
            .is_some_and(|c| c.sorted.remove(&spec.fields_name()).is_some()))
    }

    async fn drop_collection(&self, collection: &str) -> Result<()> {
        self.write()?.remove(collection);
        self.feed.publish(Change::Resync {
            collection: Some(collection.into()),
        });
        Ok(())
    }

    async fn batch(
        &self,
        ops: Vec<crate::BatchOp>,
    ) -> std::result::Result<Vec<crate::BatchOutcome>, crate::BatchError> {
        let targets = crate::feed::batch_targets(&ops);
        let outcomes = self.apply_batch(ops)?;
        for change in crate::feed::batch_changes(targets, &outcomes) {
            self.feed.publish(change);
        }
        Ok(outcomes)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        Some(self.feed.subscribe())
    }

    fn bus(&self) -> Option<std::sync::Arc<dyn crate::Bus>> {
        // One process sees this data: nothing travels between instances.
        None
    }

    async fn close(&self) {
        // Nothing is held outside this process's memory; the data goes with the last handle.
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
    }

    async fn list_collections(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self.read()?.keys().cloned().collect();
        names.sort();
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    #[test]
    fn sorted_pages_are_stable_windows() {
        let docs: Vec<Document> = (0..20)
            .map(|i| doc(json!({"_id": format!("{i:02}"), "k": i % 4})))
            .collect();
        let sort = Sort::parse_list("-k").unwrap_or_default();
        let mut expected: Vec<&Document> = docs.iter().collect();
        expected.sort_by(|a, b| sort.compare(a, b));
        for (skip, limit) in [(0, 3), (2, 5), (18, 5), (0, 0), (25, 1), (0, 20)] {
            let got = sorted_page(docs.iter(), &sort, skip, Some(limit));
            let want: Vec<&Document> = expected.iter().copied().skip(skip).take(limit).collect();
            assert_eq!(got, want, "skip {skip} limit {limit}");
        }
        let want: Vec<&Document> = expected.iter().copied().skip(3).collect();
        assert_eq!(sorted_page(docs.iter(), &sort, 3, None), want);
    }

    #[test]
    fn index_keys_cover_arrays_and_equal_numbers() {
        let d = doc(json!({"a": [{"b": 1}, {"b": [2.0, "x"]}], "c": {"d": true}}));
        let found = keys(&d, "a.b");
        assert!(found.contains(&value_key(&json!(1.0)).unwrap_or_default()));
        assert!(found.contains(&value_key(&json!(2)).unwrap_or_default()));
        assert!(found.contains("sx"));
        assert_eq!(keys(&d, "c.d").len(), 1);
    }
}
