//! Portico's document store: schemaless JSON documents in named collections, queried with
//! Mongo-style selectors and changed with Mongo-style modifiers, on a memory or SQLite backend.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> portico_store::Result<()> {
//! use portico_store::{Query, Selector, Sort, Store, Update, UpdateOptions};
//! use serde_json::json;
//!
//! let store = portico_store::open("memory:").await?;
//! for (title, year) in [("Dune", 1965), ("Neuromancer", 1984), ("Hyperion", 1989)] {
//!     let doc = json!({"title": title, "year": year, "tags": ["sf"]});
//!     store.insert("books", doc.as_object().cloned().unwrap_or_default()).await?;
//! }
//!
//! let query = Query {
//!     sort: Some(Sort::parse_list("-year")?),
//!     ..Query::new(Selector::parse(&json!({"year": {"$gt": 1970}, "tags": "sf"}))?)
//! };
//! let found = store.find("books", &query).await?;
//! let titles: Vec<_> = found.iter().map(|d| d["title"].clone()).collect();
//! assert_eq!(titles, [json!("Hyperion"), json!("Neuromancer")]);
//!
//! let inc = Update::parse(&json!({"$inc": {"reads": 1}}))?;
//! let by_title = Selector::parse(&json!({"title": "Dune"}))?;
//! store.update("books", &by_title, &inc, UpdateOptions::default()).await?;
//! assert_eq!(store.count("books", &Selector::parse(&json!({"reads": 1}))?).await?, 1);
//! # Ok(())
//! # }
//! ```
//!
//! # What it offers
//!
//! | part | what |
//! |---|---|
//! | [`Document`] | a JSON object keeping its field order, with a string `_id` ([`new_id`], [`new_object_id`]) |
//! | [`Selector`] | equality on dotted paths (array elements included), `$eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $all $size $elemMatch $regex` (+ `$options`) |
//! | [`Update`] | `$set $unset $inc $push $pull $addToSet` (with `$each`), or a whole-document replacement keeping `_id` |
//! | [`Sort`], [`Projection`], [`Query`] | sort on dotted paths, skip, limit, inclusion or exclusion of fields |
//! | [`IndexSpec`] | sorted indexes ([`Store::ensure_sorted_index`]): single and compound keys with directions, arrays by element, in the store's own order, so sorted and filtered finds read only the entries they need |
//! | [`Store`] | the async, object-safe backend trait; [`open`] picks a backend from a URL; [`Store::insert_stream`] writes a stream of any size all or nothing |
//! | [`feed`] | the change feed: what each committed write changed, for live queries ([`Store::changes`]) |
//! | [`routing`] | who reads: the scope a server sets per request, so reads can go to replicas with read-your-writes kept |
//! | [`json`] | bounded parsing of JSON bodies: nesting and value count checked before anything is built |
//! | limits | documents up to [`MAX_DOCUMENT_BYTES`] (16 MiB of JSON), `_id`s up to [`MAX_ID_BYTES`] (512), on every write; a sorted query's `skip + limit` up to [`MAX_SORTED_WINDOW`] (10,000) unless a sorted index serves it |
//!
//! | cargo feature | backend | URL |
//! |---|---|---|
//! | `memory` (default) | [`memory::MemoryStore`]: in memory, for tests and ephemeral data | `memory:` |
//! | `sqlite` (default) | `sqlite::SqliteStore`: one SQLite file, WAL, the embedded default | `sqlite:PATH` |
//! | `postgres` | `postgres::PostgresStore`: one PostgreSQL database shared by many instances | `postgres://user:pass@host:port/db` |
//!
//! # One meaning for every backend
//!
//! [`Selector::matches`] is the definition of what a selector means. A database backend may use
//! its indexes to narrow the candidates ([`Selector::id_equality`], [`Selector::equalities`]),
//! but the reference matcher decides every document it returns, and [`Update::apply`] computes
//! every changed document; so backends agree by construction.
//!
//! Comparisons are type-bracketed: `null < numbers < strings < objects < arrays < booleans`
//! ([`compare_values`]), and `$gt`/`$lt` only compare values of one bracket, so a number never
//! compares greater than a string. Client mistakes (an unknown operator, `$inc` on a string, a
//! change of `_id`) are errors naming the problem ([`Error::is_client_error`]), never panics.
//!
//! Numbers are kept exactly as sent (`serde_json` with `arbitrary_precision`): integers beyond
//! 64 bits and every digit of a float come back as written, and selectors and sort compare
//! numbers by their exact decimal value (`1 == 1.0`, `18446744073709551617 > 2^64`).

mod aggregate;
mod batch;
pub mod bus;
mod document;
mod error;
pub mod fallback;
pub mod feed;
pub mod format;
mod id;
mod index_key;
mod index_plan;
mod index_spec;
pub mod json;
mod members;
mod modifier;
mod number;
mod order_key;
mod paging;
mod projection;
mod redact;
pub mod routing;
mod search;
mod selector;
mod slow;
mod sort;
mod store;
mod stored;
mod url;
mod value;

#[cfg(feature = "memory")]
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use aggregate::{Aggregate, MAX_GROUPS, check_path as check_aggregate_path};
pub use batch::{BatchError, BatchFailure, BatchOp, BatchOutcome};
pub use bus::{BUS_MAX_MESSAGE, Bus, BusEvent, BusRefusal};
pub use document::{
    Document, MAX_DOCUMENT_BYTES, MAX_ID_BYTES, check_len, check_size, document_id, etag,
    etag_of_json, prepare_insert,
};
pub use error::{Error, ErrorKind, Result};
pub use feed::{Change, ChangeFeed, ChangeKind};
pub use format::{FORMAT_VERSION, FormatStatus};
pub use id::{IdKind, new_id, new_object_id};
pub use index_spec::{IndexField, IndexSpec, MAX_INDEX_FIELDS};
pub use members::{Members, object_members, related_ids_of_texts};
pub use modifier::{Update, UpdateResult};
pub use order_key::MAX_INDEX_ENTRIES;
pub use paging::MAX_SORTED_WINDOW;
pub use projection::Projection;
pub use redact::redact_url;
pub use search::{
    MAX_SEARCH_FIELDS, MAX_SEARCH_WORDS, Search, check_fields as check_search_fields,
    words as search_words,
};
pub use selector::Selector;
pub use slow::{DEFAULT_SLOW_SCAN_DOCS, set_slow_scan_docs, slow_scan_docs, slow_scans};
pub use sort::Sort;
pub(crate) use store::encode_all;
pub use store::{
    DocumentBatches, Page, PageRead, Query, RelatedField, RelatedRead, Store, UpdateOptions,
};
pub use stored::Stored;
pub use url::{open, stored_format};
pub use value::{compare_values, lookup_path};
