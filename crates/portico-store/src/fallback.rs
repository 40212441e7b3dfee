//! Shared fallbacks for [`Store`] methods: what a backend (or a wrapper) calls on purpose when it
//! has nothing better for a method. The trait gives no default bodies, so every implementation
//! states every method, and a wrapper cannot silently drop one of its inner store's own (a
//! timing wrapper that fell back to an in-memory search once switched off the database's
//! full-text index).

use crate::{
    Aggregate, Document, DocumentBatches, Query, RelatedField, RelatedRead, Result, Search,
    Selector, Store, Update, UpdateOptions, UpdateResult,
};

/// [`Store::insert_json`] by [`Store::insert`]: the document is encoded, then inserted.
///
/// # Errors
/// As [`Store::insert`].
pub async fn insert_json<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    doc: Document,
) -> Result<(String, String)> {
    let (_, doc) = crate::prepare_insert(doc)?;
    let text = crate::document::encode(&doc)?;
    let id = store.insert(collection, doc).await?;
    Ok((id, text))
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

/// [`Store::find_json`] by [`Store::find`], each document encoded.
///
/// # Errors
/// As [`Store::find`].
pub async fn find_json<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    query: &Query,
) -> Result<Vec<String>> {
    crate::encode_all(&store.find(collection, query).await?)
}

/// [`Store::find_json_counted`] by [`Store::count`], then [`Store::find_json`] (two reads,
/// not one snapshot).
///
/// # Errors
/// As [`Store::find_json`] and [`Store::count`].
pub async fn find_json_counted<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    query: &Query,
) -> Result<(Vec<String>, u64)> {
    crate::store::count_then_page(store, collection, query).await
}

/// [`Store::find_json_counted_related`] by [`Store::find_json_counted`], reading no related
/// document along (the caller reads them).
///
/// # Errors
/// As [`Store::find_json_counted`].
pub async fn find_json_counted_related<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    query: &Query,
    related: &[RelatedField],
) -> Result<(Vec<String>, u64, Vec<RelatedRead>)> {
    let _ = related;
    let (page, total) = store.find_json_counted(collection, query).await?;
    Ok((page, total, Vec::new()))
}

/// [`Store::get_json`] by [`Store::get`], the document encoded.
///
/// # Errors
/// As [`Store::get`].
pub async fn get_json<S: Store + ?Sized>(
    store: &S,
    collection: &str,
    id: &str,
) -> Result<Option<String>> {
    match store.get(collection, id).await? {
        Some(doc) => Ok(crate::encode_all(std::slice::from_ref(&doc))?.pop()),
        None => Ok(None),
    }
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
