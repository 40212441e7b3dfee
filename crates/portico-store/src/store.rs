//! The [`Store`] trait every backend implements, and the option types of its operations.

use async_trait::async_trait;

use crate::{
    BatchError, BatchOp, BatchOutcome, Change, Document, Projection, Result, Selector, Sort,
    Stored, Update, UpdateResult,
};

/// What `find` returns and in what order: a selector plus sort, skip, limit and projection.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Which documents match. The default matches every document.
    pub selector: Selector,
    /// Order of the results; `None` means the backend's natural order (by `_id` for SQLite).
    pub sort: Option<Sort>,
    /// How many matching documents to skip.
    pub skip: u64,
    /// How many documents to return at most; `None` means all of them.
    pub limit: Option<u64>,
    /// Which fields to return; `None` returns whole documents.
    pub projection: Option<Projection>,
}

impl Query {
    /// True for a page of a whole collection in `_id` order (no filter, sort or projection):
    /// what a backend can answer from stored text ([`Store::find_page`]).
    pub(crate) fn is_plain_page(&self) -> bool {
        self.selector.is_all() && self.sort.is_none() && self.projection.is_none()
    }

    /// A query matching `selector`, with no sort, skip, limit or projection.
    pub fn new(selector: Selector) -> Self {
        Query {
            selector,
            ..Query::default()
        }
    }
}

/// A relation followed while a list page is read ([`Store::find_page`]): the
/// page's documents hold in `field` the id, or an array of ids, of documents of `collection`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelatedField {
    /// The top-level field of the page's documents holding the ids.
    pub field: String,
    /// The collection the ids belong to.
    pub collection: String,
    /// The most distinct ids looked up: the first ones in page order, then array order.
    pub max_ids: usize,
}

impl RelatedField {
    /// The ids `field` holds name documents of `collection`; at most `max_ids` are looked up.
    pub fn new(
        field: impl Into<String>,
        collection: impl Into<String>,
        max_ids: usize,
    ) -> RelatedField {
        RelatedField {
            field: field.into(),
            collection: collection.into(),
            max_ids,
        }
    }
}

/// The documents of one [`RelatedField`] read along with a page
/// ([`Store::find_page`]).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RelatedRead {
    /// The relation field.
    pub field: String,
    /// Every id looked up, found or not, in no set order.
    pub ids: Vec<String>,
    /// The documents found among `ids`, whole as stored, each as `(id, its stored JSON text)`
    /// (one JSON object), in no set order.
    pub texts: Vec<(String, String)>,
}

/// A list read ([`Store::find_page`]): the query, whether its total is wanted, and the
/// relations whose documents are read along.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PageRead {
    /// The documents wanted.
    pub query: Query,
    /// Count every document of `query.selector` too (the list's total).
    pub count: bool,
    /// Relations whose documents the backend may read along with the page (see
    /// [`Store::find_page`]).
    pub related: Vec<RelatedField>,
}

impl PageRead {
    /// A read of `query`'s documents, without a total or related documents.
    pub fn new(query: Query) -> PageRead {
        PageRead {
            query,
            count: false,
            related: Vec::new(),
        }
    }

    /// Counts the documents of the query's selector too ([`Page::total`]).
    #[must_use]
    pub fn counted(mut self, count: bool) -> PageRead {
        self.count = count;
        self
    }

    /// Reads the documents of `related` along, where the backend can ([`Page::related`]).
    #[must_use]
    pub fn related(mut self, related: Vec<RelatedField>) -> PageRead {
        self.related = related;
        self
    }
}

/// What [`Store::find_page`] gives: the documents, their total, and the related
/// documents read along.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Page {
    /// The documents of the query, in its order.
    pub docs: Vec<Stored>,
    /// How many documents match the selector in all, when [`PageRead::count`] asked (from the
    /// snapshot the page was cut from, where the backend can).
    pub total: Option<u64>,
    /// The related documents read along (see [`Store::find_page`]).
    pub related: Vec<RelatedRead>,
}

impl Page {
    /// A page of `docs`, with `total` when counted, and no related documents read along.
    pub fn new(docs: Vec<Stored>, total: Option<u64>) -> Page {
        Page {
            docs,
            total,
            related: Vec::new(),
        }
    }

    /// A page of stored texts.
    pub fn of_texts(texts: Vec<String>, total: Option<u64>) -> Page {
        Page::new(texts.into_iter().map(Stored::Text).collect(), total)
    }

    /// A page of decoded documents.
    pub fn of_documents(docs: Vec<Document>, total: Option<u64>) -> Page {
        Page::new(docs.into_iter().map(Stored::Document).collect(), total)
    }

    /// The page's documents as their compact JSON texts (see [`Stored::into_text`]).
    ///
    /// # Errors
    /// As [`Stored::into_text`].
    pub fn into_texts(self) -> Result<Vec<String>> {
        self.docs.into_iter().map(Stored::into_text).collect()
    }
}

/// The documents of [`Store::insert_stream`], batch by batch: each item is a batch to insert, or
/// an error that stops the stream (and writes nothing).
pub type DocumentBatches = Box<dyn Iterator<Item = Result<Vec<Document>>> + Send>;

/// Options of [`Store::update`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpdateOptions {
    /// Update every matching document instead of the first one.
    pub multi: bool,
    /// Insert a document built from the selector and the update when nothing matches.
    pub upsert: bool,
}

impl UpdateOptions {
    /// Options with both flags given: `UpdateOptions::new(true, false)` updates every match.
    pub const fn new(multi: bool, upsert: bool) -> UpdateOptions {
        UpdateOptions { multi, upsert }
    }
}

/// A document store: named collections of JSON documents with string `_id`s.
///
/// Every method is stated by every implementation (there are no default bodies): a backend
/// without a better way calls the named helper of [`crate::fallback`] on purpose, and a wrapper
/// forwards each method to its inner store.
///
/// The trait is object safe, so a program can hold an `Arc<dyn Store>` and choose the backend at
/// run time from a URL (see [`crate::open`]). Every method is atomic on its own: an update is a
/// read-modify-write in one transaction, and an acknowledged write is durable (for persistent
/// backends). Collections spring into existence on first write; reading a collection that does not
/// exist finds nothing.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Inserts `doc` into `collection` and returns its `_id`.
    ///
    /// When `doc` has no `_id`, a new random id is generated (see [`crate::new_id`]).
    ///
    /// # Errors
    /// [`crate::Error::DuplicateId`] when the `_id` exists already (nothing is overwritten);
    /// [`crate::Error::InvalidDocument`] when `_id` is not a string.
    async fn insert(&self, collection: &str, doc: Document) -> Result<String>;

    /// [`Store::insert`], returning the `_id` and the document as stored, so that a reply can
    /// embed it without reading it back: a backend that encodes the document anyway gives its
    /// own text back (SQLite: and drops the document's tree as soon as it is encoded);
    /// [`crate::fallback::insert_stored`] gives the inserted document back, not encoded.
    ///
    /// # Errors
    /// As [`Store::insert`].
    async fn insert_stored(&self, collection: &str, doc: Document) -> Result<(String, Stored)>;

    /// Inserts every document of `docs` into `collection`, all or none, and returns their `_id`s
    /// in the order of `docs`.
    ///
    /// Each document is handled as by [`Store::insert`] (an `_id` is generated for a document
    /// without one). The batch is atomic: when one document is invalid, or its `_id` exists
    /// already in the collection or appears twice in the batch, nothing is written. One batch is
    /// much faster than as many single inserts (one transaction instead of one per document).
    ///
    /// # Errors
    /// [`crate::Error::DuplicateId`] for the first `_id` that exists already or repeats within
    /// the batch; [`crate::Error::InvalidDocument`] for the first document that is invalid; in
    /// both cases nothing is written.
    async fn insert_many(&self, collection: &str, docs: Vec<Document>) -> Result<Vec<String>>;

    /// Inserts every document of `batches` into `collection`, all or none, and returns how many
    /// it inserted: one all-or-nothing write of any size, read batch by batch (an import of a
    /// file larger than memory).
    ///
    /// Each document is handled as by [`Store::insert_many`]. When a batch is an error, a
    /// document is invalid or an `_id` exists already or repeats, nothing is written and that
    /// error is returned. The iterator is driven where the backend writes (it may block, as a
    /// channel from a reader thread does); SQLite holds its writer for the whole stream, with
    /// a page cache of up to 192 MiB for it (put back to 2 MiB after), and PostgreSQL one
    /// transaction. [`crate::fallback::insert_stream`] collects every batch and calls
    /// [`Store::insert_many`] (memory grows with the stream); the change feed gets one change
    /// without ids.
    ///
    /// # Errors
    /// The first error of `batches`, or as [`Store::insert_many`]; nothing is written then.
    async fn insert_stream(&self, collection: &str, batches: DocumentBatches) -> Result<u64>;

    /// Returns the documents matching `query`, sorted, skipped, limited and projected.
    ///
    /// Memory use is bounded by `skip + limit` (plus the backend's page size), not by the
    /// collection's size, so large collections are listed page by page with `skip`/`limit`.
    /// Without a sort, `skip` costs no memory; with one, `skip + limit` is at most
    /// [`crate::MAX_SORTED_WINDOW`].
    ///
    /// # Errors
    /// [`crate::Error::InvalidSort`] for a sorted query whose `skip + limit` is over
    /// [`crate::MAX_SORTED_WINDOW`]; backend failures.
    async fn find(&self, collection: &str, query: &Query) -> Result<Vec<Document>>;

    /// A list page: the documents [`Store::find`] returns for `read.query`, as stored
    /// ([`Stored`]: a backend that stores JSON text gives a page of a whole collection, or a
    /// page a sorted index serves, as that text, without decoding a document), with the count of
    /// `read.query.selector` when `read.count` asks (from one snapshot with the page where the
    /// backend can, so the total is the one the page was cut from), and the documents each of
    /// `read.related` names in the page's documents, where the backend can read them along in
    /// the same statement (a list page, its total and its related documents in one round trip).
    ///
    /// A [`RelatedRead`] lists the ids looked up (the first `max_ids` distinct string ids the
    /// page's stored documents hold in the field, an id or an array of ids, in page order then
    /// array order) and the documents found among them, unfiltered: the caller decides which it
    /// may show. A backend returns no `RelatedRead` for what it did not read along (the caller
    /// then reads the related documents itself), and may look up only some of the ids (the
    /// caller reads the others). [`crate::fallback::find_page`] counts, then finds, and reads
    /// nothing along.
    ///
    /// # Errors
    /// As [`Store::find`] and [`Store::count`].
    async fn find_page(&self, collection: &str, read: &PageRead) -> Result<Page>;

    /// Returns the first document matching `selector`, if any.
    ///
    /// # Errors
    /// Backend failures.
    async fn find_one(&self, collection: &str, selector: &Selector) -> Result<Option<Document>>;

    /// Returns the document with `_id == id`, if any. Its cost does not grow with the collection.
    ///
    /// # Errors
    /// Backend failures.
    async fn get(&self, collection: &str, id: &str) -> Result<Option<Document>>;

    /// The document [`Store::get`] returns, as stored ([`Stored`]): a backend that stores JSON
    /// text answers with that text, without decoding the document (a reply that embeds it as it
    /// is); [`crate::fallback::get_stored`] gives what `get` returns.
    ///
    /// # Errors
    /// As [`Store::get`].
    async fn get_stored(&self, collection: &str, id: &str) -> Result<Option<Stored>>;

    /// Counts the documents matching `selector`.
    ///
    /// Counting a whole collection (`Selector::all()`) reads no document: the backends keep each
    /// collection's count, so its cost does not grow with the collection (a list endpoint's
    /// total on every page).
    ///
    /// # Errors
    /// Backend failures.
    async fn count(&self, collection: &str, selector: &Selector) -> Result<u64>;

    /// The groups of `spec` over `collection` (see [`crate::Aggregate`]): one document per
    /// group, `{"_id": <group value>, "count": n, "sum_<path>": x, ...}`, sorted, skipped and
    /// limited as `spec` says. Memory is one accumulator per group, at most
    /// [`crate::MAX_GROUPS`]. [`crate::fallback::aggregate`] reads the matching documents with
    /// [`Store::find`]; the built-in backends group in the database instead.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSelector`] for a path that cannot be aggregated or too many
    /// groups; store failures.
    async fn aggregate(&self, collection: &str, spec: &crate::Aggregate) -> Result<Vec<Document>>;

    /// Keeps a full-text index of `collection` over `fields` (top-level fields; every string in
    /// them, through arrays and objects, is searched), for [`Store::search`]. The index follows
    /// every later write, whatever writes it (single writes, batches, streamed imports, another
    /// process on the same data), by the database itself. Calling it again with the same fields
    /// is a no-op; with other fields, the index is rebuilt over them.
    /// [`crate::fallback::ensure_search`] keeps nothing ([`crate::fallback::search`] reads the
    /// documents instead).
    ///
    /// # Errors
    /// [`crate::Error::InvalidName`] for unusable fields (see [`crate::check_search_fields`]);
    /// backend failures.
    async fn ensure_search(&self, collection: &str, fields: &[String]) -> Result<()>;

    /// The documents of `collection` holding every word of `search.text` in `search.fields`
    /// (whole words, any case) and matching `search.selector`, best first (ties in `_id`
    /// order), skipped, limited and projected; with how many match in all. SQLite ranks with
    /// FTS5's BM25, PostgreSQL with `ts_rank`; [`crate::fallback::search`] counts the occurrences of the words
    /// in every document [`Store::find`] gives for the selector (memory grows with them).
    ///
    /// # Errors
    /// [`crate::Error::InvalidSelector`] for too many words; on SQLite and PostgreSQL, a
    /// collection without an index over `search.fields` (see [`Store::ensure_search`]);
    /// backend failures.
    async fn search(
        &self,
        collection: &str,
        search: &crate::Search,
    ) -> Result<(Vec<Document>, u64)>;

    /// Applies `update` (a modifier, or a whole-document replacement that keeps `_id`) to the first
    /// matching document, or to all of them with `options.multi`; with `options.upsert`, inserts
    /// when nothing matches.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] when the update cannot be applied to a matching document
    /// (then no document is changed), backend failures.
    async fn update(
        &self,
        collection: &str,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult>;

    /// [`Store::update`] given the update itself rather than a borrow of it, so a backend may
    /// drop it (a replacement's document, a modifier's values) once it has made what it writes
    /// instead of holding it while the database copies that: for a large document, one copy
    /// fewer at the write's peak. The caller must not hold a clone of it for that to help (a
    /// replacement's document is shared by its clones). [`crate::fallback::update_owned`] borrows it for
    /// [`Store::update`].
    ///
    /// # Errors
    /// As [`Store::update`].
    async fn update_owned(
        &self,
        collection: &str,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult>;

    /// Removes every document matching `selector` and returns how many were removed.
    ///
    /// # Errors
    /// Backend failures.
    async fn remove(&self, collection: &str, selector: &Selector) -> Result<u64>;

    /// Makes equality lookups on the dotted `path` fast, including paths through arrays.
    /// Calling it again for the same path is a no-op.
    ///
    /// # Errors
    /// [`crate::Error::InvalidName`] for an unusable path, backend failures.
    async fn ensure_index(&self, collection: &str, path: &str) -> Result<()>;

    /// Makes `path` unique in `collection`: no two documents may hold one value there, and
    /// equality lookups on it are fast (it is an index as [`Store::ensure_index`] makes).
    ///
    /// Values are compared as selectors compare them (`1` and `1.0` are one value; strings
    /// exactly, so store a lowercase copy to make a name unique whatever its case). Through an
    /// array every element counts, so `{"emails": [{"address": "a"}]}` takes `"a"` at
    /// `emails.address`; a document may repeat a value within itself. `null` and a missing path
    /// are not values: any number of documents may lack the field. An insert or update that would
    /// break the rule fails with [`crate::Error::DuplicateKey`] and writes nothing, also when
    /// two writers race (on PostgreSQL, across instances). Calling it again is a no-op; calling
    /// it on a path with a plain index makes that index unique.
    ///
    /// # Errors
    /// [`crate::Error::DuplicateKey`] when stored documents already share a value at `path`
    /// (then nothing changes); [`crate::Error::InvalidName`] for an unusable path (`_id`, which
    /// is unique already, is accepted); backend failures.
    async fn ensure_unique_index(&self, collection: &str, path: &str) -> Result<()>;

    /// Keeps a sorted index of `collection` over `spec` (see [`crate::IndexSpec`]): created
    /// and filled from the stored documents when missing, then kept by every write in the
    /// write's own transaction. A sorted or filtered [`Store::find`] (and its count) whose sort
    /// and conditions the index serves reads only the index entries it needs instead of every
    /// document: a sort on the index's fields (after equality on the fields before them) reads
    /// `skip + limit` entries, with no cap on the window ([`crate::MAX_SORTED_WINDOW`] applies
    /// only to sorts no index serves). Results are exactly those without the index. Calling it
    /// again is a no-op (a unique spec makes an existing plain one unique). The memory backend
    /// keeps the list (and a unique spec's uniqueness) and reads as without indexes. SQLite
    /// fills a new index in one write transaction; PostgreSQL fills it without holding writes
    /// back (in batches, while every write keeps it) and reads through it once it is filled,
    /// and instances asking for one index at once make it once (a unique spec's equality index
    /// is made as [`Store::ensure_unique_index`] makes it, holding writes back while it fills).
    ///
    /// # Errors
    /// [`crate::Error::DuplicateKey`] for a unique spec over a field whose stored documents
    /// share a value; [`crate::Error::InvalidDocument`] when a stored document gives the index
    /// more than [`crate::MAX_INDEX_ENTRIES`] entries (then nothing changes); backend failures.
    async fn ensure_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<()>;

    /// The sorted indexes of `collection` ([`Store::ensure_sorted_index`]), in name order.
    ///
    /// # Errors
    /// Backend failures.
    async fn sorted_indexes(&self, collection: &str) -> Result<Vec<crate::IndexSpec>>;

    /// Removes the sorted index over `spec`'s fields; false when there was none. A unique
    /// spec's uniqueness stays (it is the equality index of [`Store::ensure_unique_index`]).
    ///
    /// # Errors
    /// Backend failures.
    async fn drop_sorted_index(&self, collection: &str, spec: &crate::IndexSpec) -> Result<bool>;

    /// Removes `collection` with all its documents and indexes. Dropping a missing one is a no-op.
    ///
    /// # Errors
    /// Backend failures.
    async fn drop_collection(&self, collection: &str) -> Result<()>;

    /// The names of the collections that exist, sorted.
    ///
    /// # Errors
    /// Backend failures.
    async fn list_collections(&self) -> Result<Vec<String>>;

    /// A number that differs from any earlier answer once a write to `collection` may have
    /// committed before this call began, made through this store, another store on the same
    /// data or another process (another instance on the same PostgreSQL database). Read it
    /// before reading data you mean to keep (a cache); while it is unchanged, nothing you read
    /// since has changed. `None` when the backend cannot tell (the memory backend, or PostgreSQL
    /// while its stamps cannot be read): then nothing read may be cached.
    ///
    /// It may change more often than needed (the SQLite backend changes it on a commit to any
    /// collection), never less. On PostgreSQL it is read from the database, but concurrent
    /// callers share one read that started after they called, so under load it costs a fraction
    /// of a round trip per call.
    async fn change_stamp(&self, collection: &str) -> Option<u64>;

    /// Applies `ops` in order, all or nothing, in one transaction: a reader sees either none of
    /// them or all of them, and when one fails nothing is written. Each write sees the ones
    /// before it (insert a document, then update it). Returns what each write did, in order.
    ///
    /// Backends without atomic batches write nothing and fail with
    /// [`BatchFailure::Unsupported`] (never a non-atomic fallback).
    ///
    /// # Errors
    /// [`BatchError`] naming the first write that failed and why; nothing is written then.
    async fn batch(&self, ops: Vec<BatchOp>) -> std::result::Result<Vec<BatchOutcome>, BatchError>;

    /// A reader of the store's change feed: every write committed from now on, as a
    /// [`Change`] (see [`crate::feed`]). Backends without a feed answer `None`,
    /// and then nothing can follow their documents live.
    ///
    /// The memory and SQLite backends tell the writes of this process; the PostgreSQL backend
    /// starts listening on its own connection on the first call and tells the writes of every
    /// instance on the database.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>>;

    /// The message bus between the instances sharing this store's database (see
    /// [`crate::bus`]); `None` when the data is seen by this process only (memory, SQLite).
    fn bus(&self) -> Option<std::sync::Arc<dyn crate::Bus>>;

    /// Closes the store: ends its connections and releases its hold on the database, whoever
    /// still holds a handle on it. On SQLite each connection is closed once its current
    /// operation has finished (the checkpoint thread's after its last checkpoint, the writer's
    /// last, so the WAL is checkpointed into the file), then the shared lock on `<file>-lock`
    /// is released: the file can be restored or opened again in this process. On PostgreSQL
    /// the pool's idle sessions end at once and those in use as their operation gives them
    /// back, with the replicas', the change-stamp reader's and (within a second) the change
    /// feed listener's. Every later call on this store, or on any clone of it, fails with
    /// [`crate::Error::Closed`]. Closing again does nothing. The memory store has nothing to
    /// release but refuses every later call the same way.
    async fn close(&self);
}

/// Each document as its compact JSON text.
///
/// # Errors
/// [`crate::Error::Backend`] when a document cannot be encoded (a map with string keys always
/// can; kept as an error rather than a panic).
pub(crate) fn encode_all(docs: &[Document]) -> Result<Vec<String>> {
    docs.iter()
        .map(|doc| {
            serde_json::to_string(doc)
                .map_err(|e| crate::Error::Backend(format!("cannot encode a document: {e}")))
        })
        .collect()
}
