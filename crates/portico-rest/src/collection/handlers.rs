//! One handler per generated operation (getAll, post, get, put, patch, delete), each written
//! once over [`Records`], and the before/after hooks around them.

use std::collections::BTreeMap;

use portico_platform::{Expand, FieldView, IfMatch, ReadAccess, RelatedField, RelatedRead};
use portico_store::{Query, Selector};
use serde_json::{Map, Value, json};

use super::client_body::BodyUse;
use super::conditional::{
    if_match, list_etag, list_etag_json, not_modified, not_modified_reply, precondition_failed,
};
use super::fields::{guard_write, stored_tag, view};
use super::list::{ListParams, bad, encoded_size, link_header};
use super::records::{Target, checked};
use super::{AfterEvent, CollectionState, HookEvent, not_found, platform_error, scoped};
use crate::context::BodyState;
use crate::dispatch::body_error;
use crate::{Context, Op, Reply};

/// What an operation produced: the reply data, extra headers, and the id it was about.
struct Outcome {
    data: Value,
    headers: Vec<(String, String)>,
    id: Option<String>,
}

impl Outcome {
    /// The JSend success carrying the data, with the headers.
    fn into_reply(self) -> Reply {
        let mut reply = Reply::success(self.data);
        for (name, value) in self.headers {
            reply = reply.with_header(name, value);
        }
        reply
    }

    fn data(data: Value) -> Outcome {
        Outcome {
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
    // Documents with field rules are shown as each caller may see them, never as stored; an
    // expanded read shows more than the stored text.
    let expand = match op {
        Op::GetAll | Op::Get => match super::expand::requested(&ctx) {
            Ok(expand) => expand,
            Err(reply) => return reply,
        },
        _ => None,
    };
    match as_stored(state, op, &ctx, event, expand.as_ref()).await {
        Ok(reply) => reply,
        Err(event) => parsed(state, op, &ctx, event, expand.as_ref()).await,
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

/// The reply of an operation whose documents are sent as the store's JSON text (no field
/// rules, search, expansion, scope or after hook stands between), or the event back when
/// the documents must be parsed ([`parsed`]).
async fn as_stored(
    state: &CollectionState,
    op: Op,
    ctx: &Context,
    event: HookEvent,
    expand: Option<&Expand>,
) -> Result<Reply, HookEvent> {
    let id = event.id.as_deref();
    let searching = op == Op::GetAll && ctx.query_params.contains_key("search");
    let shown_as_stored = !state.collection.has_field_rules() && !searching;
    let as_stored = shown_as_stored && expand.is_none();
    if op == Op::GetAll
        && shown_as_stored
        && state.after.is_none()
        && state.records.tagged()
        && !portico_edge::wants_event_stream(&ctx.request.headers)
    {
        // Documents shown as stored and no after hook to hand them to: the page is sent as the
        // store's JSON text (see `get_all_json`), with what `expand` adds put into the text.
        // A live list (`Accept: text/event-stream`) goes to `get_all`, which streams it.
        return Ok(match get_all_json(state, ctx, expand).await {
            Ok(reply) | Err(reply) => reply,
        });
    }
    if op == Op::Get
        && as_stored
        && state.after.is_none()
        && state.records.tagged()
        && state.scope.is_none()
    {
        // The same for one document read by id: its stored text is the reply's data, and its
        // entity tag is computed from that text (see `get_json`).
        return Ok(match get_json(state, ctx, id).await {
            Ok(reply) | Err(reply) => reply,
        });
    }
    if op == Op::Post
        && as_stored
        && state.after.is_none()
        && state.records.tagged()
        && state.scope.is_none()
    {
        // The created document is sent as the store wrote its text (see `post_json`).
        return Ok(
            match post_json(state, ctx, event.body.unwrap_or_default()).await {
                Ok(reply) | Err(reply) => reply,
            },
        );
    }
    if matches!(op, Op::Put | Op::Patch)
        && as_stored
        && state.after.is_none()
        && state.records.tagged()
        && state.scope.is_none()
    {
        // The same for the document a put or patch leaves (see `update_json`).
        let how = if op == Op::Put {
            BodyUse::Replace
        } else {
            BodyUse::Change
        };
        return Ok(match update_json(state, ctx, id, event.body, how).await {
            Ok(reply) | Err(reply) => reply,
        });
    }
    Err(event)
}

/// An operation on parsed documents, its result handed to the after hook.
async fn parsed(
    state: &CollectionState,
    op: Op,
    ctx: &Context,
    event: HookEvent,
    expand: Option<&Expand>,
) -> Reply {
    let id = event.id.as_deref();
    let result = match op {
        Op::GetAll => get_all(state, ctx, expand).await,
        Op::Post => post(state, ctx, event.body.unwrap_or_default()).await,
        Op::Get => get(state, ctx, id, expand).await,
        Op::Put => update(state, ctx, id, event.body, BodyUse::Replace).await,
        Op::Patch => update(state, ctx, id, event.body, BodyUse::Change).await,
        Op::Delete => delete(state, ctx, id).await,
    };
    let outcome = match result {
        Ok(o) => o,
        Err(reply) => return reply,
    };
    let data = match &state.after {
        Some(after) => {
            let id = outcome.id.clone().or(event.id);
            let user_id = ctx.user_id.clone();
            after
                .call(AfterEvent {
                    op,
                    user_id,
                    id,
                    data: outcome.data,
                })
                .await
        }
        None => outcome.data,
    };
    let mut reply = Outcome { data, ..outcome }.into_reply();
    if op == Op::Post {
        reply = reply.with_status(201);
    }
    reply
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

/// One page as the client sees the documents (see [`read_chunks`]).
async fn read_page(
    state: &CollectionState,
    selector: Selector,
    params: &ListParams,
    projection: Option<portico_store::Projection>,
    view: &FieldView,
) -> Result<(Vec<Value>, u64), Reply> {
    // Fields shown by ownership are decided on the whole document, then projected.
    let (store_projection, after) = if view.is_empty() {
        (projection, None)
    } else {
        (None, projection)
    };
    let after = &after;
    read_chunks(
        state,
        selector,
        params,
        store_projection,
        |query| async move {
            let docs = state
                .collection
                .find(&query)
                .await
                .map_err(platform_error)?;
            docs.into_iter()
                .map(|doc| {
                    let doc = view.applied(doc);
                    let doc = match after {
                        Some(p) => p.apply(&doc),
                        None => doc,
                    };
                    let item = state.records.show(doc);
                    let size = encoded_size(&item)?;
                    Ok((item, size))
                })
                .collect()
        },
    )
    .await
}

/// [`read_page`] for documents shown as stored, as their JSON text: the store answers a page
/// of a whole collection from the stored text without decoding a document, and the size budget
/// is counted on that text. The first chunk is read with the total count of `selector` (one
/// snapshot where the store can), which is returned too (`None` when no chunk was read), and
/// with the documents of `related` it names, where the store reads them along.
async fn read_page_json(
    state: &CollectionState,
    selector: Selector,
    params: &ListParams,
    related: &[RelatedField],
) -> Result<(Vec<String>, u64, Option<u64>, Vec<RelatedRead>), Reply> {
    // Set by the first chunk's read.
    let total = std::sync::OnceLock::new();
    let along = std::sync::OnceLock::new();
    let (items, page) = read_chunks(state, selector, params, None, |query| {
        let (total, along) = (&total, &along);
        async move {
            let docs = if params.total && total.get().is_none() {
                let (docs, n, read) = state
                    .collection
                    .find_json_counted_related(&query, related)
                    .await
                    .map_err(platform_error)?;
                let _ = total.set(n);
                let _ = along.set(read);
                docs
            } else {
                state
                    .collection
                    .find_json(&query)
                    .await
                    .map_err(platform_error)?
            };
            Ok(docs
                .into_iter()
                .map(|doc| {
                    let size = doc.len();
                    (doc, size)
                })
                .collect())
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

/// The getAll reply when documents are shown as stored and no after hook runs: the same
/// status, headers and body as [`get_all`], with the documents' stored JSON text embedded as it
/// is instead of decoded and encoded again. With `expand`, the page (and its total, from the
/// same snapshot) is still read as text, and each document's related documents are put into
/// its text as text (each related document shown and encoded once), for both the tag and the
/// reply.
async fn get_all_json(
    state: &CollectionState,
    ctx: &Context,
    expand: Option<&Expand>,
) -> Result<Reply, Reply> {
    let params = ListParams::parse(
        &ctx.query_params,
        state.default_page_size,
        state.max_page_size,
    )?;
    if state.records.list_projection(&params)?.is_some() {
        let outcome = get_all(state, ctx, expand).await?;
        return Ok(outcome.into_reply());
    }
    let selector = scoped(state, ctx, params.filter.clone())?;
    // What the caller may read of each related collection, known before the page is read so
    // that the store can read the related documents along with it (one round trip).
    let access = match expand {
        Some(expand) => Some(super::expand::access(state, ctx, expand).await?),
        None => None,
    };
    let related = match (expand, &access) {
        (Some(expand), Some(access)) => ctx
            .platform
            .related_fields(state.collection.name(), expand, access)
            .map_err(platform_error)?,
        _ => Vec::new(),
    };
    let (mut items, page, counted, along) =
        read_page_json(state, selector.clone(), &params, &related).await?;
    if let (Some(expand), Some(access)) = (expand, &access) {
        // The reply size budget counted the page as stored (as `get_all` does).
        items = expanded_texts(state, ctx, expand, access, items, along).await?;
    }
    let total = match (counted, params.total) {
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
    let tag = list_etag_json(&items, total.unwrap_or(u64::MAX));
    if not_modified(
        &ctx.request.headers,
        tag.trim_start_matches("W/").trim_matches('"'),
    ) {
        return Err(not_modified_reply(tag));
    }
    let mut reply = Reply::success_json_array(&items);
    if let Some(total) = total {
        reply = reply.with_header("X-Total-Count", total.to_string());
    }
    if let Some(link) = list_link(ctx, &params, page, total) {
        reply = reply.with_header("Link", link);
    }
    Ok(reply.with_header("ETag", tag))
}

/// Stored documents' JSON texts with their related documents put in as text (see
/// [`portico_platform::Platform::expand_texts`]; `along`: those read with the page).
async fn expanded_texts(
    state: &CollectionState,
    ctx: &Context,
    expand: &Expand,
    access: &BTreeMap<String, ReadAccess>,
    texts: Vec<String>,
    along: Vec<RelatedRead>,
) -> Result<Vec<String>, Reply> {
    ctx.platform
        .expand_texts(state.collection.name(), texts, expand, access, along)
        .await
        .map_err(platform_error)
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
) -> Result<Outcome, Reply> {
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
        if search.is_some() {
            return Err(bad(
                "Invalid search: a live list (text/event-stream) cannot be searched".into(),
            ));
        }
        if expand.is_some() {
            return Err(bad(
                "Invalid expand: a live list (text/event-stream) cannot expand relations".into(),
            ));
        }
        // The same list, followed live: one reading of its parameters for both.
        let query = portico_store::Query {
            selector,
            sort: params.sort,
            skip: params.skip,
            limit: Some(params.limit),
            projection,
        };
        return Err(super::live::get_all(state, ctx, query).await);
    }
    let (total, (mut items, page)) = match search {
        Some(text) => {
            let (total, page) =
                super::search::read_page(state, selector, &params, projection, &view, text).await?;
            // A search counts its matches as it ranks them: the total costs nothing more.
            (params.total.then_some(total), page)
        }
        None => {
            let total = if params.total {
                Some(
                    state
                        .collection
                        .count(&selector)
                        .await
                        .map_err(platform_error)?,
                )
            } else {
                None
            };
            (
                total,
                read_page(state, selector, &params, projection, &view).await?,
            )
        }
    };
    if let Some(expand) = expand {
        // One query per relation for the whole page; the tag below covers what is expanded.
        super::expand::expand_items(state, ctx, expand, &mut items).await?;
    }
    let mut headers = Vec::new();
    if let Some(total) = total {
        headers.push(("X-Total-Count".to_owned(), total.to_string()));
    }
    if let Some(link) = list_link(ctx, &params, page, total) {
        headers.push(("Link".to_owned(), link));
    }
    let items = Value::Array(items);
    let tag = list_etag(&items, total.unwrap_or(u64::MAX));
    if not_modified(
        &ctx.request.headers,
        tag.trim_start_matches("W/").trim_matches('"'),
    ) {
        return Err(not_modified_reply(tag));
    }
    headers.push(("ETag".to_owned(), tag));
    Ok(Outcome {
        data: items,
        headers,
        id: None,
    })
}

async fn post(
    state: &CollectionState,
    ctx: &Context,
    body: Map<String, Value>,
) -> Result<Outcome, Reply> {
    let mut body = checked(body, BodyUse::Create, None)?;
    let view = view(state, ctx).await?;
    guard_write(state, ctx, &view, None, &mut body, BodyUse::Create).await?;
    // The stored document when the kind knows it (no read-back: after a write, a read on
    // another connection finds its page cache stale and refills it).
    let (id, stored) = state.records.insert(state, ctx, body).await?;
    let created = match stored {
        Some(doc) => Some(doc),
        None => state.collection.get(&id).await.map_err(platform_error)?,
    };
    Ok(Outcome {
        data: created.map_or(Value::Null, |d| state.records.show(view.applied(d))),
        headers: Vec::new(),
        id: Some(id),
    })
}

/// The post reply when documents are shown as stored, unscoped, with no after hook: the same
/// status and body as [`post`], with the document's JSON text as the store wrote it (the
/// body's tree is dropped once encoded, and the reply is not encoded from it again).
async fn post_json(
    state: &CollectionState,
    ctx: &Context,
    body: Map<String, Value>,
) -> Result<Reply, Reply> {
    let body = checked(body, BodyUse::Create, None)?;
    // No field rules here (`as_stored`), but file fields are filled only by uploads.
    state
        .collection
        .check_server_fields(None, &body)
        .map_err(platform_error)?;
    let (_, text) = state
        .collection
        .insert_json_as(ctx.user_id.as_deref(), body)
        .await
        .map_err(platform_error)?;
    Ok(Reply::success_json(&text).with_status(201))
}

/// The document `id` as the caller may see it (scope applied) with its entity tag (for kinds
/// shown as stored), or 404.
async fn read(state: &CollectionState, ctx: &Context, id: &str) -> Result<Outcome, Reply> {
    let found = if state.scope.is_some() {
        let selector: Selector = scoped(state, ctx, Some(json!({"_id": id})))?;
        state.collection.find_one(&selector).await
    } else {
        state.collection.get(id).await
    };
    let doc = found.map_err(platform_error)?.ok_or_else(not_found)?;
    // Shown, and tagged, without the fields the caller may not see.
    let doc = view(state, ctx).await?.applied(doc);
    let mut outcome = Outcome::data(Value::Null);
    if state.records.tagged() {
        let tag = portico_store::etag(&doc);
        outcome
            .headers
            .push(("ETag".to_owned(), format!("\"{tag}\"")));
        outcome.id = Some(tag);
    }
    outcome.data = state.records.show(doc);
    Ok(outcome)
}

async fn get(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
    expand: Option<&Expand>,
) -> Result<Outcome, Reply> {
    let id = id.ok_or_else(not_found)?;
    let mut outcome = read(state, ctx, id).await?;
    if let Some(expand) = expand {
        let mut items = [std::mem::take(&mut outcome.data)];
        super::expand::expand_items(state, ctx, expand, &mut items).await?;
        let [data] = items;
        if let (Some(_), Value::Object(doc)) = (&outcome.id, &data) {
            // The tag of what is sent, expanded documents included.
            let tag = portico_store::etag(doc);
            outcome.headers.retain(|(name, _)| name != "ETag");
            outcome
                .headers
                .push(("ETag".to_owned(), format!("\"{tag}\"")));
            outcome.id = Some(tag);
        }
        outcome.data = data;
    }
    if let Some(tag) = outcome.id.take()
        && not_modified(&ctx.request.headers, &tag)
    {
        return Err(not_modified_reply(format!("\"{tag}\"")));
    }
    Ok(outcome)
}

/// The get reply when the document is shown as stored, unscoped, with no after hook: the
/// same status, headers and body as [`get`], from the document's stored JSON text (no decoding,
/// no encoding; the entity tag is the one [`portico_store::etag`] gives the decoded document).
async fn get_json(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
) -> Result<Reply, Reply> {
    let id = id.ok_or_else(not_found)?;
    let text = state
        .collection
        .get_json(id)
        .await
        .map_err(platform_error)?
        .ok_or_else(not_found)?;
    let tag = portico_store::etag_of_json(text.as_bytes());
    if not_modified(&ctx.request.headers, &tag) {
        return Err(not_modified_reply(format!("\"{tag}\"")));
    }
    Ok(Reply::success_json(&text).with_header("ETag", format!("\"{tag}\"")))
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
                    .get_json(id)
                    .await
                    .map_err(platform_error)?
                    .map(|text| portico_store::etag_of_json(text.as_bytes()));
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
    if target.tag.is_some() && read(state, ctx, target.id).await.is_ok() {
        return precondition_failed();
    }
    not_found()
}

/// The write of a put or patch (the body is dropped once it is written).
async fn write_update(
    state: &CollectionState,
    ctx: &Context,
    id: &str,
    body: Option<Map<String, Value>>,
    how: BodyUse,
) -> Result<(), Reply> {
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
    Ok(())
}

async fn update(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
    body: Option<Map<String, Value>>,
    how: BodyUse,
) -> Result<Outcome, Reply> {
    let id = id.ok_or_else(not_found)?;
    write_update(state, ctx, id, body, how).await?;
    let mut outcome = read(state, ctx, id).await?;
    outcome.id = None;
    Ok(outcome)
}

/// The put or patch reply when the document is shown as stored, unscoped, with no after hook:
/// the same status, headers and body as [`update`], from the document's stored JSON text (as
/// [`get_json`]): the changed document is not decoded again to be sent.
async fn update_json(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
    body: Option<Map<String, Value>>,
    how: BodyUse,
) -> Result<Reply, Reply> {
    let id = id.ok_or_else(not_found)?;
    write_update(state, ctx, id, body, how).await?;
    let text = state
        .collection
        .get_json(id)
        .await
        .map_err(platform_error)?
        .ok_or_else(not_found)?;
    let tag = portico_store::etag_of_json(text.as_bytes());
    Ok(Reply::success_json(&text).with_header("ETag", format!("\"{tag}\"")))
}

async fn delete(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
) -> Result<Outcome, Reply> {
    let id = id.ok_or_else(not_found)?;
    let condition = if_match(&ctx.request.headers)?;
    let target = target(state, ctx, id, &condition).await?;
    if !state.records.remove(state, ctx, target.clone()).await? {
        return Err(missed(state, ctx, target).await);
    }
    Ok(Outcome::data(json!({"message": "Item removed"})))
}
