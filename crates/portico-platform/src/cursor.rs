//! [`Cursor`]: a query over one collection that a publication returns.

use portico_store::{Document, Query};

use crate::FieldView;

/// A query over one collection, as returned by a publication handler.
#[derive(Debug, Clone)]
pub struct Cursor {
    /// The collection queried.
    pub collection: String,
    /// The query: selector, sort, skip, limit and projection.
    pub query: Query,
    /// What the subscriber may see of the documents (the collection's field rules), set by the
    /// platform before the cursor is read.
    pub(crate) view: FieldView,
}

impl Cursor {
    /// A cursor over `collection` with `query`.
    pub fn new(collection: impl Into<String>, query: Query) -> Cursor {
        Cursor {
            collection: collection.into(),
            query,
            view: FieldView::all(),
        }
    }

    /// The query the store runs: without the projection when fields are hidden by ownership,
    /// so the owner fields are there to decide (the projection is applied after the view, by
    /// [`Cursor::shape`]).
    pub(crate) fn store_query(&self) -> Query {
        if self.view.is_empty() || self.query.projection.is_none() {
            return self.query.clone();
        }
        Query {
            projection: None,
            ..self.query.clone()
        }
    }

    /// A document the store returned for [`Cursor::store_query`], as the subscriber sees it.
    pub(crate) fn shape(&self, doc: Document) -> Document {
        if self.view.is_empty() {
            return doc;
        }
        let doc = self.view.applied(doc);
        match &self.query.projection {
            Some(p) => p.apply(&doc),
            None => doc,
        }
    }
}
