//! `?search=words` on a generated collection's getAll: full-text search over the collection's
//! search fields (see [`portico_platform::Collection::search`]), best matches first, within the
//! caller's access scope and `where`, paged by `skip` and `limit` like any list. A caller from
//! whom a search field is hidden cannot search (the matches would reveal it).

use portico_platform::FieldView;
use portico_store::{Projection, Search, Selector, Stored};

use super::list::{ListParams, bad, single};
use super::{CollectionState, platform_error};
use crate::{Context, Reply};

/// The text of the request's `search`, when it has one, checked against the collection and
/// the caller.
///
/// # Errors
/// 400 when the collection cannot be searched, a search field is hidden from the caller, or
/// a `sort` is given too (matches come best first).
pub(crate) fn requested(
    state: &CollectionState,
    ctx: &Context,
    params: &ListParams,
    view: &FieldView,
) -> Result<Option<String>, Reply> {
    let Some(text) = single(&ctx.query_params, "search")?.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let fields = &state.collection.options().search;
    if fields.is_empty() {
        return Err(bad(format!(
            "Invalid search: {} has no search fields",
            state.collection.name()
        )));
    }
    view.check_query(fields.iter().map(String::as_str))
        .map_err(platform_error)?;
    if params.sort.is_some() {
        return Err(bad(
            "Invalid search: matches come best first; sort cannot be combined with search".into(),
        ));
    }
    Ok(Some(text.to_owned()))
}

/// The page of matches of `text` as the caller sees them, its size for the `Link` header (cut
/// short when the reply would pass `max_reply_bytes`), and the number of matches in all.
pub(crate) async fn read_page(
    state: &CollectionState,
    selector: Selector,
    params: &ListParams,
    projection: Option<Projection>,
    view: &FieldView,
    text: String,
) -> Result<(u64, (Vec<Stored>, u64)), Reply> {
    let mut search = Search::new(Vec::new(), text);
    search.selector = selector;
    search.skip = params.skip;
    search.limit = Some(params.limit);
    let (docs, total) = state
        .collection
        .search(&search)
        .await
        .map_err(platform_error)?;
    let mut items = Vec::with_capacity(docs.len());
    let mut bytes = 0usize;
    for doc in docs {
        // Fields shown by ownership are decided on the whole document, then projected.
        let doc = view.applied(doc);
        let doc = match &projection {
            Some(p) => p.apply(&doc),
            None => doc,
        };
        let item = Stored::Document(state.records.show(doc));
        bytes = bytes.saturating_add(item.encoded_len());
        if bytes > state.max_reply_bytes && !items.is_empty() {
            let page = items.len() as u64;
            return Ok((total, (items, page)));
        }
        items.push(item);
    }
    Ok((total, (items, params.limit)))
}
