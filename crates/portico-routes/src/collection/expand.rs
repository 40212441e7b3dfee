//! `?expand=author,tags,author.team` on a generated collection's get and getAll: the documents
//! a relation field names are put under `"expand"` in each result (see
//! [`portico_platform::Platform::expand`]), read with one query per relation for the whole
//! page, each as the caller could read it at the related collection's own `GET /:id` on this
//! API: its authentication and roles, its access scope and its field rules. A related
//! collection the caller could not read there (or that this API does not serve by its
//! generated get, or that has an after hook, which could reshape what it shows) is not read:
//! its documents are left out, never shown.

use std::collections::BTreeMap;
use std::sync::Arc;

use portico_platform::{Document, Expand, ReadAccess, RelatedRead, Stored};

use super::fields::view;
use super::list::{bad, single};
use super::{CollectionState, platform_error, scoped};
use crate::HookEvent;
use crate::{Context, Op, Reply, ResolvedOptions};

/// The request's `expand`, when it names something.
///
/// # Errors
/// 400 for a malformed or too deep `expand`.
pub(crate) fn requested(ctx: &Context) -> Result<Option<Expand>, Reply> {
    let Some(text) = single(&ctx.query_params, "expand")? else {
        return Ok(None);
    };
    let expand: Expand = text
        .parse()
        .map_err(|e: portico_platform::Error| bad(e.to_string()))?;
    Ok((!expand.is_empty()).then_some(expand))
}

/// The collection served as `name` by this API, if any.
fn reader(state: &CollectionState, name: &str) -> Option<Arc<CollectionState>> {
    state
        .readers
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(name)
        .and_then(std::sync::Weak::upgrade)
        .and_then(|any| any.downcast::<CollectionState>().ok())
}

/// Whether the caller of `ctx` passes the authentication and roles of `options`.
fn admitted(ctx: &Context, options: &ResolvedOptions) -> bool {
    if options.auth_required && ctx.user_id.is_none() {
        return false;
    }
    options.role_required.is_empty()
        || ctx
            .user
            .as_ref()
            .is_some_and(|user| portico_platform::user_has_any_role(user, &options.role_required))
}

/// What the caller of `ctx` may read of each collection the expansion reads.
pub(crate) async fn access(
    state: &CollectionState,
    ctx: &Context,
    expand: &Expand,
) -> Result<BTreeMap<String, ReadAccess>, Reply> {
    let targets = ctx
        .platform
        .expand_targets(state.collection.name(), expand)
        .map_err(platform_error)?;
    let mut out = BTreeMap::new();
    for target in targets {
        let Some(related) = reader(state, &target) else {
            continue;
        };
        let Some(options) = &related.read_options else {
            continue;
        };
        if related.after.is_some() || !admitted(ctx, options) {
            continue;
        }
        if let Some(before) = &related.before {
            // Asked as for a list of the related collection: a refusal reads nothing.
            let event = HookEvent {
                op: Op::GetAll,
                user_id: ctx.user_id.clone(),
                id: None,
                body: None,
            };
            if before.call(event).await.is_err() {
                continue;
            }
        }
        let scope = scoped(&related, ctx, None)?;
        let view = view(&related, ctx).await?;
        out.insert(target, ReadAccess::new(view).scoped(scope));
    }
    Ok(out)
}

/// Expands `items` (documents of `state`'s collection as the caller sees them) under `access`
/// (from [`access`]), with the first level's related documents the page's read brought along
/// (`read`; see [`portico_platform::Platform::expand_read`]). Documents still as stored get
/// their related documents put into their text as text
/// ([`portico_platform::Platform::expand_texts`]: each related document shown and encoded once,
/// none of the page decoded); decoded ones are expanded as documents.
///
/// # Errors
/// 400 naming a field that is not a relation; store failures.
pub(crate) async fn expand_stored(
    state: &CollectionState,
    ctx: &Context,
    expand: &Expand,
    access: &BTreeMap<String, ReadAccess>,
    items: Vec<Stored>,
    read: Vec<RelatedRead>,
) -> Result<Vec<Stored>, Reply> {
    let name = state.collection.name();
    if items.iter().all(Stored::is_text) {
        let texts = items
            .into_iter()
            .map(Stored::into_text)
            .collect::<Result<Vec<_>, _>>()
            .map_err(Reply::from)?;
        let texts = ctx
            .platform
            .expand_texts(name, texts, expand, access, read)
            .await
            .map_err(platform_error)?;
        return Ok(texts.into_iter().map(Stored::Text).collect());
    }
    let mut docs = items
        .into_iter()
        .map(Stored::into_document)
        .collect::<Result<Vec<Document>, _>>()
        .map_err(Reply::from)?;
    ctx.platform
        .expand_read(name, &mut docs, expand, access, read)
        .await
        .map_err(platform_error)?;
    Ok(docs.into_iter().map(Stored::Document).collect())
}
