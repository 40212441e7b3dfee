//! The collection's field-level read rules on the generated endpoints: the caller's
//! [`FieldView`] hides fields from every reply (and from the entity tags computed over them),
//! refuses writes to hidden fields (403), and lets a replacement keep what the caller cannot
//! see. Filters and sorts on hidden fields are refused where a list is parsed (`handlers.rs`).
//!
//! File fields are guarded here too: a client's body never sets or changes a file field's
//! metadata (403); only the file routes (`files.rs`) do.

use portico_platform::FieldView;
use portico_store::Document;
use serde_json::json;

use super::client_body::BodyUse;
use super::{CollectionState, platform_error, scoped};
use crate::{Context, Reply};

/// What the caller of `ctx` may see of the collection's documents.
pub(crate) async fn view(state: &CollectionState, ctx: &Context) -> Result<FieldView, Reply> {
    if !state.collection.has_field_rules() {
        return Ok(FieldView::all());
    }
    state
        .collection
        .field_view(ctx.user_id.as_deref())
        .await
        .map_err(platform_error)
}

/// The document `id` as stored, within the caller's scope (for the checks of a write).
async fn stored(
    state: &CollectionState,
    ctx: &Context,
    id: &str,
) -> Result<Option<Document>, Reply> {
    let selector = scoped(state, ctx, Some(json!({"_id": id})))?;
    state
        .collection
        .find_one(&selector)
        .await
        .map_err(platform_error)
}

/// Refuses a write of `body` that sets a field hidden from the caller (403 naming it); a
/// replacement gets the stored document's hidden fields back, since a caller cannot remove
/// what it cannot see.
pub(crate) async fn guard_write(
    state: &CollectionState,
    ctx: &Context,
    view: &FieldView,
    id: Option<&str>,
    body: &mut Document,
    how: BodyUse,
) -> Result<(), Reply> {
    guard_file_fields(state, ctx, id, body, how).await?;
    if view.is_empty() {
        return Ok(());
    }
    let denied = |e| platform_error(e);
    match (how, id) {
        (BodyUse::Create, _) | (_, None) => view
            .check_write(body, body.keys().map(String::as_str))
            .map_err(denied),
        (BodyUse::Change, Some(id)) => {
            // A missing document is the write's 404; nothing to check against.
            let Some(doc) = stored(state, ctx, id).await? else {
                return Ok(());
            };
            view.check_write(&doc, body.keys().map(String::as_str))
                .map_err(denied)
        }
        (BodyUse::Replace, Some(id)) => {
            let Some(doc) = stored(state, ctx, id).await? else {
                return Ok(());
            };
            view.check_write(&doc, body.keys().map(String::as_str))
                .map_err(denied)?;
            body.extend(view.hidden_of(&doc));
            Ok(())
        }
    }
}

/// Refuses a write of `body` that sets, changes or removes a file field (403 naming it): its
/// metadata changes only by an upload or a delete. A field repeated unchanged passes (a client
/// may send back the document it read), and a replacement that leaves one out keeps it.
async fn guard_file_fields(
    state: &CollectionState,
    ctx: &Context,
    id: Option<&str>,
    body: &mut Document,
    how: BodyUse,
) -> Result<(), Reply> {
    let collection = &state.collection;
    let fields = collection.server_fields();
    if fields.is_empty() {
        return Ok(());
    }
    let id = match (how, id) {
        (BodyUse::Create, _) | (_, None) => {
            return collection
                .check_server_fields(None, body)
                .map_err(platform_error);
        }
        (_, Some(id)) => id,
    };
    // A missing document is the write's 404; nothing to check against.
    let Some(doc) = stored(state, ctx, id).await? else {
        return Ok(());
    };
    if how == BodyUse::Replace {
        collection.keep_server_fields(&doc, body);
        return collection
            .check_server_fields(Some(&doc), body)
            .map_err(platform_error);
    }
    for (key, value) in body.iter() {
        let top = key.split('.').next().unwrap_or(key);
        if !fields.iter().any(|f| f == top) {
            continue;
        }
        let unchanged = key == top
            && doc.get(top).filter(|v| !v.is_null()) == Some(value).filter(|v| !v.is_null());
        if !unchanged {
            return Err(platform_error(portico_platform::Error::FileField(
                top.to_owned(),
            )));
        }
    }
    Ok(())
}

/// For an `If-Match` on a collection with hidden fields: the caller's tags are of the document
/// as it sees it, the store checks the stored document's own tag. Returns the stored tag when
/// one of `tags` is the caller's tag of the document now, else the first of `tags` (which the
/// store will not find: 412 or 404).
pub(crate) async fn stored_tag(
    state: &CollectionState,
    ctx: &Context,
    view: &FieldView,
    id: &str,
    tags: &[String],
) -> Result<Option<String>, Reply> {
    let Some(doc) = stored(state, ctx, id).await? else {
        return Ok(tags.first().cloned());
    };
    let seen = portico_store::etag(&view.applied(doc.clone()));
    if tags.contains(&seen) {
        Ok(Some(portico_store::etag(&doc)))
    } else {
        Ok(tags.first().cloned())
    }
}
