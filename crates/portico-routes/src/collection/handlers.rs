//! One handler per generated operation (getAll, post, get, put, patch, delete), each written
//! once over [`Records`], and the before/after hooks around them.
//!
//! Documents travel as the store gives them ([`Stored`]): a read of a collection shown as
//! stored sends the store's JSON text as it is, and a document is decoded only where something
//! must look inside it (field rules, a kind that shows part of it, an after hook, expansion of
//! a decoded page). Each operation is one flow whichever it is, ending in one tail that tags,
//! answers `If-None-Match` and builds the reply.

use portico_platform::{Expand, FieldView, IfMatch, PageRead, RelatedField, RelatedRead, Stored};
use portico_store::{Projection, Query, Selector};
use serde_json::{Map, Value, json};

use super::client_body::BodyUse;
use super::conditional::{
    if_match, list_etag, not_modified, not_modified_reply, precondition_failed,
};
use super::fields::{guard_write, stored_tag, view};
use super::list::{ListParams, bad, link_header};
use super::records::{Target, checked};
use super::{CollectionState, not_found, platform_error, scoped};
use crate::context::BodyState;
use crate::dispatch::body_error;
use crate::{AfterEvent, HookEvent};
use crate::{Context, Op, Reply};

/// What an operation produced: the reply data, extra headers, and the id it was about.
struct Handled {
    data: Data,
    headers: Vec<(String, String)>,
    id: Option<String>,
}

/// An operation's data: documents as the store gave them (decoded only if something looked
/// inside), or another value.
enum Data {
    /// One document.
    One(Stored),
    /// A page of documents.
    Many(Vec<Stored>),
    /// Anything else (a removal's message, a hook's reshaped data, no document).
    Value(Value),
}

impl Data {
    /// The data as a value, for an after hook: documents decoded.
    fn into_value(self) -> Result<Value, Reply> {
        Ok(match self {
            Data::One(doc) => Value::Object(doc.into_document().map_err(Reply::from)?),
            Data::Many(docs) => Value::Array(
                docs.into_iter()
                    .map(|doc| doc.into_document().map(Value::Object))
                    .collect::<Result<_, _>>()
                    .map_err(Reply::from)?,
            ),
            Data::Value(value) => value,
        })
    }

    /// The JSend success carrying the data: a stored text embedded as it is, a decoded
    /// document encoded once.
    fn into_reply(self) -> Result<Reply, Reply> {
        Ok(match self {
            Data::One(doc) => Reply::success_json(&doc.into_text().map_err(Reply::from)?),
            Data::Many(docs) => Reply::success_json_array(
                &docs
                    .into_iter()
                    .map(Stored::into_text)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(Reply::from)?,
            ),
            Data::Value(value) => Reply::success(value),
        })
    }
}

impl Handled {
    fn data(data: Data) -> Handled {
        Handled {
            data,
            headers: Vec::new(),
            id: None,
        }
    }
}

/// The body of a write: a JSON object or a form, taken out of the context (not copied). An
/// empty body or another content type is refused, never taken as `{}`.
fn write_body(ctx: &mut Context) -> Result<Map<String, Value>, Reply> {
    match ctx.body_state {
        BodyState::Empty => return Err(body_error(&portico_edge::BodyError::Empty)),
        BodyState::Other => return Err(body_error(&portico_edge::BodyError::UnsupportedMediaType)),
        BodyState::Data => {}
    }
    match std::mem::take(&mut ctx.body_params) {
        Value::Object(map) => Ok(map),
        _ => Err(Reply::error(400, "The request body must be an object")),
    }
}

/// Runs a generated operation: before hook, the operation, after hook, reply.
pub(crate) async fn run(state: &CollectionState, op: Op, mut ctx: Context) -> Reply {
    // The generated operations read the parsed body only: its bytes need not stay in memory
    // for the rest of the request.
    ctx.body = bytes::Bytes::new();
    let event = match before(state, op, &mut ctx).await {
        Ok(event) => event,
        Err(reply) => return reply,
    };
    if op == Op::GetAll && super::aggregate::wanted(&ctx.query_params) {
        // Groups, not documents: no after hook (it takes documents), no live stream.
        return match super::aggregate::get_aggregate(state, &ctx).await {
            Ok(reply) | Err(reply) => reply,
        };
    }
    let expand = match op {
        Op::GetAll | Op::Get => match super::expand::requested(&ctx) {
            Ok(expand) => expand,
            Err(reply) => return reply,
        },
        _ => None,
    };
    let HookEvent {
        id: event_id, body, ..
    } = event;
    let id = event_id.as_deref();
    let result = match op {
        Op::GetAll => get_all(state, &ctx, expand.as_ref()).await,
        Op::Post => post(state, &ctx, body.unwrap_or_default()).await,
        Op::Get => get(state, &ctx, id, expand.as_ref()).await,
        Op::Put => update(state, &ctx, id, body, BodyUse::Replace).await,
        Op::Patch => update(state, &ctx, id, body, BodyUse::Change).await,
        Op::Delete => delete(state, &ctx, id).await,
    };
    match result {
        Ok(outcome) => after(state, op, &ctx, event_id, outcome).await,
        Err(reply) => reply,
    }
}

/// The operation's event (its body checked) as the before hook leaves it, or the reply that
/// ends the request.
async fn before(state: &CollectionState, op: Op, ctx: &mut Context) -> Result<HookEvent, Reply> {
    let body = match op {
        Op::Post | Op::Put | Op::Patch => Some(write_body(ctx)?),
        Op::GetAll | Op::Get | Op::Delete => None,
    };
    let event = HookEvent {
        op,
        user_id: ctx.user_id.clone(),
        id: ctx.url_param("id").map(str::to_owned),
        body,
    };
    match &state.before {
        Some(before) => before.call(event).await,
        None => Ok(event),
    }
}

/// The reply of an operation's outcome, through the after hook when there is one (which gets
/// the data decoded; without one, stored documents are sent as stored).
async fn after(
    state: &CollectionState,
    op: Op,
    ctx: &Context,
    event_id: Option<String>,
    outcome: Handled,
) -> Reply {
    let Handled { data, headers, id } = outcome;
    let data = match &state.after {
        Some(after) => {
            let data = match data.into_value() {
                Ok(data) => data,
                Err(reply) => return reply,
            };
            Data::Value(
                after
                    .call(AfterEvent {
                        op,
                        user_id: ctx.user_id.clone(),
                        id: id.or(event_id),
                        data,
                    })
                    .await,
            )
        }
        None => data,
    };
    let mut reply = match data.into_reply() {
        Ok(reply) | Err(reply) => reply,
    };
    for (name, value) in headers {
        reply = reply.with_header(name, value);
    }
    if op == Op::Post {
        reply = reply.with_status(201);
    }
    reply
}

/// `doc` as the caller sees it: as stored when the kind shows documents as stored and nothing
/// is hidden from the caller or projected afterwards; else decoded, its hidden fields removed,
/// projected by `after` and shown by the kind.
fn shown(
    state: &CollectionState,
    view: &FieldView,
    after: Option<&Projection>,
    doc: Stored,
) -> Result<Stored, Reply> {
    if state.records.tagged() && view.is_empty() && after.is_none() {
        return Ok(doc);
    }
    let doc = view.applied(doc.into_document().map_err(Reply::from)?);
    let doc = match after {
        Some(p) => p.apply(&doc),
        None => doc,
    };
    Ok(Stored::Document(state.records.show(doc)))
}

/// Documents read from the store per query while a page is filled.
const CHUNK: u64 = 50;

/// Reads one page, `CHUNK` documents at a time: up to the page's limit, or until the items'
/// JSON passes `max_reply_bytes` (at least one item is always sent). `fetch` reads one chunk
/// and gives each item with its encoded size. Returns the items and the page size the `Link`
/// header should use.
async fn read_chunks<T, F, Fut>(
    state: &CollectionState,
    selector: Selector,
    params: &ListParams,
    projection: Option<portico_store::Projection>,
    mut fetch: F,
) -> Result<(Vec<T>, u64), Reply>
where
    F: FnMut(Query) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<(T, usize)>, Reply>>,
{
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut read = 0u64;
    while read < params.limit {
        let want = (params.limit - read).min(CHUNK);
        let query = Query {
            selector: selector.clone(),
            sort: params.sort.clone(),
            skip: params.skip.saturating_add(read),
            limit: Some(want),
            projection: projection.clone(),
        };
        let chunk = fetch(query).await?;
        let got = chunk.len() as u64;
        for (item, size) in chunk {
            bytes = bytes.saturating_add(size);
            if bytes > state.max_reply_bytes && !items.is_empty() {
                // Full: the next page starts at this item.
                let page = items.len() as u64;
                return Ok((items, page));
            }
            items.push(item);
        }
        read += got;
        if got < want {
            break;
        }
    }
    Ok((items, params.limit))
}

/// One page as the client sees the documents (see [`read_chunks`] and [`shown`]): documents
/// shown as stored stay the store's text (a page of a whole collection, or one a sorted index
/// serves, is never decoded) and the size budget is counted on that text. The first chunk is
/// read with the total count of `selector` when `params.total` asks (one snapshot where the
/// store can), which is returned too (`None` when no chunk was read), and with the documents of
/// `related` it names, where the store reads them along.
async fn read_page(
    state: &CollectionState,
    selector: Selector,
    params: &ListParams,
    projection: Option<Projection>,
    view: &FieldView,
    related: &[RelatedField],
) -> Result<(Vec<Stored>, u64, Option<u64>, Vec<RelatedRead>), Reply> {
    // Fields shown by ownership are decided on the whole document, then projected.
    let (store_projection, after) = if view.is_empty() {
        (projection, None)
    } else {
        (None, projection)
    };
    let after = &after;
    // Set by the first chunk's read.
    let total = std::sync::OnceLock::new();
    let along = std::sync::OnceLock::new();
    let (items, page) = read_chunks(state, selector, params, store_projection, |query| {
        let (total, along) = (&total, &along);
        async move {
            let first = along.get().is_none();
            let read = PageRead::new(query)
                .counted(first && params.total)
                .related(if first { related.to_vec() } else { Vec::new() });
            let page = state
                .collection
                .find_page(&read)
                .await
                .map_err(platform_error)?;
            if let Some(n) = page.total {
                let _ = total.set(n);
            }
            let _ = along.set(page.related);
            page.docs
                .into_iter()
                .map(|doc| {
                    let item = shown(state, view, after.as_ref(), doc)?;
                    let size = item.encoded_len();
                    Ok((item, size))
                })
                .collect()
        }
    })
    .await?;
    Ok((
        items,
        page,
        total.into_inner(),
        along.into_inner().unwrap_or_default(),
    ))
}

/// The `Link` header of a page: under `Router::nest` the request's uri lost the outer prefix,
/// so links use the original one.
/// The `Link` header of a page of `page` documents; without a total (`total=false`), a full
/// page has a `next` (the next one may be empty).
fn list_link(ctx: &Context, params: &ListParams, page: u64, total: Option<u64>) -> Option<String> {
    let uri = ctx
        .request
        .extensions
        .get::<axum::extract::OriginalUri>()
        .map_or(&ctx.request.uri, |o| &o.0);
    let total = total.unwrap_or_else(|| {
        let seen = params.skip.saturating_add(page);
        if page >= params.limit {
            seen.saturating_add(1)
        } else {
            seen
        }
    });
    link_header(uri.path(), uri.query(), params.skip, page, total)
}

async fn get_all(
    state: &CollectionState,
    ctx: &Context,
    expand: Option<&Expand>,
) -> Result<Handled, Reply> {
    let params = ListParams::parse(
        &ctx.query_params,
        state.default_page_size,
        state.max_page_size,
    )?;
    let projection = state.records.list_projection(&params)?;
    let view = view(state, ctx).await?;
    // A filter or sort on a hidden field would reveal it one question at a time.
    view.check_query(params.paths().iter().map(String::as_str))
        .map_err(platform_error)?;
    let selector = scoped(state, ctx, params.filter.clone())?;
    let search = super::search::requested(state, ctx, &params, &view)?;
    if portico_edge::wants_event_stream(&ctx.request.headers) {
        return Err(live(state, ctx, &params, selector, projection, search, expand).await);
    }
    // What the caller may read of each related collection, known before the page is read so
    // that the store can read the related documents along with it (one round trip).
    let (access, related) = match expand {
        Some(expand) => {
            let access = super::expand::access(state, ctx, expand).await?;
            let related = ctx
                .platform
                .related_fields(state.collection.name(), expand, &access)
                .map_err(platform_error)?;
            (Some(access), related)
        }
        None => (None, Vec::new()),
    };
    let (mut items, page, total, along) = match search {
        Some(text) => {
            let (total, (items, page)) =
                super::search::read_page(state, selector.clone(), &params, projection, &view, text)
                    .await?;
            // A search counts its matches as it ranks them: the total costs nothing more.
            (items, page, params.total.then_some(total), Vec::new())
        }
        None => {
            read_page(
                state,
                selector.clone(),
                &params,
                projection,
                &view,
                &related,
            )
            .await?
        }
    };
    if let (Some(expand), Some(access)) = (expand, &access) {
        // One query per relation for the whole page (less what the page's read brought
        // along); the reply size budget counted the page before; the tag covers what is added.
        items = super::expand::expand_stored(state, ctx, expand, access, items, along).await?;
    }
    let total = match (total, params.total) {
        (Some(total), _) => Some(total),
        (None, true) => Some(
            state
                .collection
                .count(&selector)
                .await
                .map_err(platform_error)?,
        ),
        (None, false) => None,
    };
    let mut headers = Vec::new();
    if let Some(total) = total {
        headers.push(("X-Total-Count".to_owned(), total.to_string()));
    }
    if let Some(link) = list_link(ctx, &params, page, total) {
        headers.push(("Link".to_owned(), link));
    }
    let tag = list_etag(&items, total.unwrap_or(u64::MAX)).map_err(Reply::from)?;
    if not_modified(
        &ctx.request.headers,
        tag.trim_start_matches("W/").trim_matches('"'),
    ) {
        return Err(not_modified_reply(tag));
    }
    headers.push(("ETag".to_owned(), tag));
    Ok(Handled {
        data: Data::Many(items),
        headers,
        id: None,
    })
}

/// The list followed live (`Accept: text/event-stream`): one reading of its parameters for
/// the page and the stream alike; a search or an expansion cannot be followed.
async fn live(
    state: &CollectionState,
    ctx: &Context,
    params: &ListParams,
    selector: Selector,
    projection: Option<Projection>,
    search: Option<String>,
    expand: Option<&Expand>,
) -> Reply {
    if search.is_some() {
        return bad("Invalid search: a live list (text/event-stream) cannot be searched".into());
    }
    if expand.is_some() {
        return bad(
            "Invalid expand: a live list (text/event-stream) cannot expand relations".into(),
        );
    }
    let query = Query {
        selector,
        sort: params.sort.clone(),
        skip: params.skip,
        limit: Some(params.limit),
        projection,
    };
    super::live::get_all(state, ctx, query).await
}

async fn post(
    state: &CollectionState,
    ctx: &Context,
    body: Map<String, Value>,
) -> Result<Handled, Reply> {
    let mut body = checked(body, BodyUse::Create, None)?;
    let view = view(state, ctx).await?;
    guard_write(state, ctx, &view, None, &mut body, BodyUse::Create).await?;
    // The stored document when the kind knows it (no read-back: after a write, a read on
    // another connection finds its page cache stale and refills it), as the store wrote its
    // text where it did (the body's tree is dropped once encoded).
    let (id, stored) = state.records.insert(state, ctx, body).await?;
    let created = match stored {
        Some(doc) => Some(doc),
        None => state
            .collection
            .get_stored(&id)
            .await
            .map_err(platform_error)?,
    };
    let data = match created {
        Some(doc) => Data::One(shown(state, &view, None, doc)?),
        None => Data::Value(Value::Null),
    };
    Ok(Handled {
        data,
        headers: Vec::new(),
        id: Some(id),
    })
}

/// The document `id` as the caller may see it (scope applied, see [`shown`]), or 404.
async fn read(
    state: &CollectionState,
    ctx: &Context,
    id: &str,
    view: &FieldView,
) -> Result<Stored, Reply> {
    let found = if state.scope.is_some() {
        let selector: Selector = scoped(state, ctx, Some(json!({"_id": id})))?;
        (state.collection.find_one(&selector).await).map(|doc| doc.map(Stored::Document))
    } else {
        state.collection.get_stored(id).await
    };
    let doc = found.map_err(platform_error)?.ok_or_else(not_found)?;
    shown(state, view, None, doc)
}

/// The `ETag` header of a document shown as stored (none for a kind that shows part of it).
fn tag_of(state: &CollectionState, doc: &Stored) -> Option<String> {
    state
        .records
        .tagged()
        .then(|| format!("\"{}\"", doc.etag()))
}

async fn get(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
    expand: Option<&Expand>,
) -> Result<Handled, Reply> {
    let id = id.ok_or_else(not_found)?;
    let view = view(state, ctx).await?;
    let mut doc = read(state, ctx, id, &view).await?;
    if let Some(expand) = expand {
        let access = super::expand::access(state, ctx, expand).await?;
        let expanded =
            super::expand::expand_stored(state, ctx, expand, &access, vec![doc], Vec::new())
                .await?;
        doc = expanded.into_iter().next().ok_or_else(not_found)?;
    }
    // The tag of what is sent, expanded documents included.
    let tag = tag_of(state, &doc);
    if let Some(tag) = &tag
        && not_modified(&ctx.request.headers, tag.trim_matches('"'))
    {
        return Err(not_modified_reply(tag.clone()));
    }
    let mut outcome = Handled::data(Data::One(doc));
    outcome
        .headers
        .extend(tag.map(|tag| ("ETag".to_owned(), tag)));
    Ok(outcome)
}

/// The write's target: its id and the tag `If-Match` asks for (of several listed, the one the
/// stored document has, read now; the write re-checks it). A kind without tags can never match
/// a tag.
async fn target<'a>(
    state: &CollectionState,
    ctx: &Context,
    id: &'a str,
    condition: &'a IfMatch,
) -> Result<Target<'a>, Reply> {
    if let IfMatch::Tags(tags) = condition {
        let view = view(state, ctx).await?;
        if state.records.tagged() && !view.is_empty() {
            let tag = stored_tag(state, ctx, &view, id, tags).await?;
            return Ok(Target {
                id,
                tag: tag.map(std::borrow::Cow::Owned),
            });
        }
    }
    let tag = match condition {
        IfMatch::Tags(_) if !state.records.tagged() => return Err(precondition_failed()),
        IfMatch::Tags(tags) => match tags.as_slice() {
            [] => None,
            [only] => Some(only.as_str()),
            [first, ..] => {
                let stored = state
                    .collection
                    .get_stored(id)
                    .await
                    .map_err(platform_error)?
                    .map(|doc| doc.etag());
                let current = tags.iter().find(|t| Some(t.as_str()) == stored.as_deref());
                // None listed is current: the write with the first one finds nothing, and
                // `missed` tells a changed document (412) from one the caller cannot see (404).
                Some(current.unwrap_or(first).as_str())
            }
        },
        IfMatch::Absent | IfMatch::Any => None,
    };
    Ok(Target {
        id,
        tag: tag.map(std::borrow::Cow::Borrowed),
    })
}

/// After a write that found nothing: 412 when the document is there but changed, else 404.
async fn missed(state: &CollectionState, ctx: &Context, target: Target<'_>) -> Reply {
    if target.tag.is_some() && read(state, ctx, target.id, &FieldView::all()).await.is_ok() {
        return precondition_failed();
    }
    not_found()
}

/// The write of a put or patch (the body is dropped once it is written); gives the caller's
/// view of the collection's fields back.
async fn write_update(
    state: &CollectionState,
    ctx: &Context,
    id: &str,
    body: Option<Map<String, Value>>,
    how: BodyUse,
) -> Result<FieldView, Reply> {
    let condition = if_match(&ctx.request.headers)?;
    let target = target(state, ctx, id, &condition).await?;
    let mut body = checked(body.unwrap_or_default(), how, Some(id))?;
    let view = view(state, ctx).await?;
    guard_write(state, ctx, &view, Some(id), &mut body, how).await?;
    if !state
        .records
        .update(state, ctx, target.clone(), body, how)
        .await?
    {
        return Err(missed(state, ctx, target).await);
    }
    Ok(view)
}

async fn update(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
    body: Option<Map<String, Value>>,
    how: BodyUse,
) -> Result<Handled, Reply> {
    let id = id.ok_or_else(not_found)?;
    let view = write_update(state, ctx, id, body, how).await?;
    // The changed document as stored (not decoded to be sent, where nothing hides a field).
    let doc = read(state, ctx, id, &view).await?;
    let tag = tag_of(state, &doc);
    let mut outcome = Handled::data(Data::One(doc));
    outcome
        .headers
        .extend(tag.map(|tag| ("ETag".to_owned(), tag)));
    Ok(outcome)
}

async fn delete(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
) -> Result<Handled, Reply> {
    let id = id.ok_or_else(not_found)?;
    let condition = if_match(&ctx.request.headers)?;
    let target = target(state, ctx, id, &condition).await?;
    if !state.records.remove(state, ctx, target.clone()).await? {
        return Err(missed(state, ctx, target).await);
    }
    Ok(Handled::data(Data::Value(
        json!({"message": "Item removed"}),
    )))
}
