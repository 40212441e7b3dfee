//! `?group=&count=true&sum=...` on a publication's url: the groups of what it publishes,
//! computed by the store (see [`portico_platform::Platform::aggregate_publication`]), with
//! `where` (a JSON selector narrowing it further), `sort` (by the groups' fields), `skip` and
//! `limit` (at most [`MAX_LIMIT`] groups, [`DEFAULT_LIMIT`] without it).

use std::collections::BTreeMap;

use portico_store::{Aggregate, Selector, Sort};

use crate::ApiError;

/// Groups answered without `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// The most groups one answer holds (a larger `limit` is clamped).
pub const MAX_LIMIT: u64 = 1000;

fn invalid(reason: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid-aggregate", reason)
}

/// The aggregate the url's query asks for, `None` when it asks for none.
///
/// # Errors
/// 400 `invalid-aggregate` naming what is wrong.
pub(crate) fn from_query(query: Option<&str>) -> Result<Option<Aggregate>, ApiError> {
    let params: BTreeMap<String, String> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let get = |name: &str| params.get(name).map(String::as_str);
    let Some(mut spec) = Aggregate::from_params(get).map_err(|e| invalid(e.to_string()))? else {
        return Ok(None);
    };
    if let Some(text) = get("where").filter(|w| !w.is_empty()) {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("where is not JSON: {e}")))?;
        spec.selector = Selector::parse(&value).map_err(|e| invalid(format!("where: {e}")))?;
    }
    if let Some(text) = get("sort").filter(|s| !s.is_empty()) {
        spec.sort = Some(Sort::parse_list(text).map_err(|e| invalid(format!("sort: {e}")))?);
    }
    let number = |name: &str| -> Result<Option<u64>, ApiError> {
        get(name)
            .filter(|n| !n.is_empty())
            .map(|n| {
                n.parse::<u64>()
                    .map_err(|_| invalid(format!("{name} must be a non-negative integer")))
            })
            .transpose()
    };
    spec.skip = number("skip")?.unwrap_or(0);
    spec.limit = Some(number("limit")?.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT));
    Ok(Some(spec))
}
