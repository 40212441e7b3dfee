//! Shared fallbacks for [`Store`] methods: what a backend (or a wrapper) calls on purpose when it
//! has nothing better for a method. The trait gives no default bodies, so every implementation
//! states every method, and a wrapper cannot silently drop one of its inner store's own (a
//! timing wrapper that fell back to an in-memory search once switched off the database's
//! full-text index).

use crate::{
    Aggregate, Document, DocumentBatches, Page, PageRead, Query, Result, Search, Selector, Store,
    Stored, Update, UpdateOptions, UpdateResult,
};

/// [`Store::insert_stored`] by [`Store::insert`]: the inserted document is given back as it
/// was inserted (its `_id` set), not encoded.
///
/// # Errors
/// As [`Store::insert`].
pub async fn insert_stored<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    doc: Document,
) -> Result<(String, Stored)> {
    let (_, doc) = crate::prepare_insert(doc)?;
    let id = store.insert(collection, doc.clone()).await?;
    Ok((id, Stored::Document(doc)))
}

/// [`Store::insert_stream`] by [`Store::insert_many`]: every batch is collected first (memory
/// grows with the stream).
///
/// # Errors
/// The first error of `batches`, or as [`Store::insert_many`].
pub async fn insert_stream<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    batches: DocumentBatches,
) -> Result<u64> {
    let mut docs = Vec::new();
    for batch in batches {
        docs.extend(batch?);
    }
    let n = docs.len() as u64;
    store.insert_many(collection, docs).await?;
    Ok(n)
}

/// [`Store::find_page`] by [`Store::count`] (when asked), then [`Store::find`] (two reads,
/// not one snapshot); the documents are given decoded, and no related document is read
/// along (the caller reads them).
///
/// # Errors
/// As [`Store::find`] and [`Store::count`].
pub async fn find_page<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    read: &PageRead,
) -> Result<Page> {
    let total = if read.count {
        Some(store.count(collection, &read.query.selector).await?)
    } else {
        None
    };
    let docs = store.find(collection, &read.query).await?;
    Ok(Page::new(
        docs.into_iter().map(Stored::Document).collect(),
        total,
    ))
}

/// [`Store::get_stored`] by [`Store::get`], the document given decoded.
///
/// # Errors
/// As [`Store::get`].
pub async fn get_stored<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    id: &str,
) -> Result<Option<Stored>> {
    Ok(store.get(collection, id).await?.map(Stored::Document))
}

/// [`Store::aggregate`] over the documents [`Store::find`] gives for the selector, grouped in
/// memory.
///
/// # Errors
/// As [`Store::aggregate`].
pub async fn aggregate<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    spec: &Aggregate,
) -> Result<Vec<Document>> {
    let docs = store
        .find(collection, &Query::new(spec.selector.clone()))
        .await?;
    crate::aggregate::over(spec, &docs)
}

/// [`Store::ensure_search`] that keeps no index: the fields are checked, nothing is made
/// ([`search`] reads the documents instead).
///
/// # Errors
/// As [`Store::ensure_search`].
pub fn ensure_search(fields: &[String]) -> Result<()> {
    crate::search::check_fields(fields)
}

/// [`Store::search`] by counting the words in every document [`Store::find`] gives for the
/// selector (memory grows with them).
///
/// # Errors
/// As [`Store::search`].
pub async fn search<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    search: &Search,
) -> Result<(Vec<Document>, u64)> {
    crate::search::check_fields(&search.fields)?;
    let docs = store
        .find(collection, &Query::new(search.selector.clone()))
        .await?;
    crate::search::over(search, docs)
}

/// [`Store::update_owned`] by [`Store::update`], borrowing the update.
///
/// # Errors
/// As [`Store::update`].
pub async fn update_owned<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    selector: &Selector,
    update: Update,
    options: UpdateOptions,
) -> Result<UpdateResult> {
    store.update(collection, selector, &update, options).await
}
