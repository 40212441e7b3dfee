//! [`Cursor`]: a query over one collection that a publication returns.

use portico_store::Query;

/// A query over one collection, as returned by a publication handler.
#[derive(Debug, Clone)]
pub struct Cursor {
    /// The collection queried.
    pub collection: String,
    /// The query: selector, sort, skip, limit and projection.
    pub query: Query,
}

impl Cursor {
    /// A cursor over `collection` with `query`.
    pub fn new(collection: impl Into<String>, query: Query) -> Cursor {
        Cursor {
            collection: collection.into(),
            query,
        }
    }
}
