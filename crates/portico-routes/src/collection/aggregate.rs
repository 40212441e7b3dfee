//! Aggregates on a generated collection's getAll url: `?group=status&count=true&sum=amount`
//! (with `avg`, `min`, `max`, and `where`, `sort`, `skip`, `limit`) answers the groups instead
//! of the documents, computed by the store (in SQL on SQLite and PostgreSQL), within the
//! caller's access scope and field rules, and bounded like a page.

use portico_store::Aggregate;
use serde_json::{Map, Value};

use super::fields::view;
use super::list::{ListParams, bad};
use super::{CollectionState, platform_error, scoped};
use crate::{Context, Reply};

/// True when the request asks for groups rather than documents.
pub(crate) fn wanted(query: &Map<String, Value>) -> bool {
    Aggregate::PARAMS.iter().any(|p| query.contains_key(*p))
}

/// The groups the request asks for, as a JSend success whose data is the array of groups.
pub(crate) async fn get_aggregate(state: &CollectionState, ctx: &Context) -> Result<Reply, Reply> {
    if !state.records.tagged() {
        return Err(bad(
            "Aggregates are not available on this collection (its documents are not shown whole)"
                .into(),
        ));
    }
    let query = &ctx.query_params;
    if query.contains_key("search") {
        return Err(bad(
            "Invalid aggregate: groups cannot be combined with search".into(),
        ));
    }
    let params = ListParams::parse(query, state.default_page_size, state.max_page_size)?;
    let view = view(state, ctx).await?;
    if let Some(filter) = &params.filter {
        let mut names = Vec::new();
        // Validated by ListParams::parse; a shape error only means "no paths".
        let _ = super::list::selector_paths(filter, &mut names);
        view.check_query(names.iter().map(String::as_str))
            .map_err(platform_error)?;
    }
    let parsed = Aggregate::from_params(|name| query.get(name).and_then(Value::as_str))
        .map_err(|e| bad(format!("Invalid aggregate: {e}")))?;
    let Some(mut spec) = parsed else {
        return Err(bad(
            "Invalid aggregate: give group, count, sum, avg, min or max".into(),
        ));
    };
    spec.selector = scoped(state, ctx, params.filter.clone())?;
    spec.sort = params.sort.clone();
    spec.skip = params.skip;
    spec.limit = Some(params.limit);
    let rows = state
        .collection
        .aggregate_as(ctx.user_id.as_deref(), &spec)
        .await
        .map_err(platform_error)?;
    Ok(Reply::success(Value::Array(
        rows.into_iter().map(Value::Object).collect(),
    )))
}
