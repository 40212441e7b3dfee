//! `?expand=` and `?search=` on a publication's url.
//!
//! - `expand=author,tags,author.team` puts the documents the published documents' relation
//!   fields name under `"expand"` in each (see [`portico_platform::Platform::expand`]): one
//!   query per relation for the whole reply. A related collection is read only when
//!   [`AutoConfig::read`] gives it rules the caller passes (an `owner:FIELD` rule reads only the
//!   caller's documents), shown through that collection's field rules for the caller; without
//!   such rules nothing is expanded from it, whatever the publications publish.
//! - `search=words&skip=&limit=` answers the matches among what the publication publishes,
//!   best first (see [`portico_platform::Platform::search_publication`]), at most
//!   [`MAX_LIMIT`] (default [`DEFAULT_LIMIT`]), with the number of matches in `X-Total-Count`.

use std::collections::{BTreeMap, BTreeSet};

use portico_platform::{Expand, Platform, ReadAccess, ReadRule, Selector, user_has_any_role};
use portico_store::{Document, Search};
use serde_json::{Map, Value, json};

use crate::aggregate::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::{ApiError, AutoConfig};

/// The query parameters of a url (the last value of a name given twice).
pub(crate) fn params(query: Option<&str>) -> BTreeMap<String, String> {
    query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

fn invalid_expand(reason: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid-expand", reason)
}

fn invalid_search(reason: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid-search", reason)
}

/// The `expand` the url asks for, `None` when it names nothing.
///
/// # Errors
/// 400 `invalid-expand` for a malformed or too deep `expand`.
pub(crate) fn expand(params: &BTreeMap<String, String>) -> Result<Option<Expand>, ApiError> {
    let Some(text) = params.get("expand") else {
        return Ok(None);
    };
    let expand: Expand = text
        .parse()
        .map_err(|e: portico_platform::Error| invalid_expand(e.to_string()))?;
    Ok((!expand.is_empty()).then_some(expand))
}

/// The search the url asks for (text, `skip`, `limit`), `None` without a `search` or with an
/// empty one.
///
/// # Errors
/// 400 `invalid-search` for a bad number, or a `sort` or `where` beside it (matches come best
/// first, within what the publication selects).
pub(crate) fn search(params: &BTreeMap<String, String>) -> Result<Option<Search>, ApiError> {
    let Some(text) = params.get("search").filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    for name in ["sort", "where"] {
        if params.get(name).is_some_and(|v| !v.is_empty()) {
            return Err(invalid_search(format!(
                "{name} cannot be combined with search on a publication: matches come best first, among what it publishes"
            )));
        }
    }
    let number = |name: &str| -> Result<Option<u64>, ApiError> {
        params
            .get(name)
            .filter(|n| !n.is_empty())
            .map(|n| {
                n.parse::<u64>()
                    .map_err(|_| invalid_search(format!("{name} must be a non-negative integer")))
            })
            .transpose()
    };
    let mut search = Search::new(Vec::new(), text.clone());
    search.skip = number("skip")?.unwrap_or(0);
    search.limit = Some(number("limit")?.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT));
    // The words are checked here, so a search of too many words is a 400 before the publication runs.
    search.words().map_err(|e| invalid_search(e.to_string()))?;
    Ok(Some(search))
}

/// The caller's roles, read once per request when a `role:` rule asks.
struct Caller<'a> {
    platform: &'a Platform,
    user_id: Option<&'a str>,
    user: Option<Option<Document>>,
}

impl Caller<'_> {
    async fn has_role(&mut self, role: &str) -> Result<bool, ApiError> {
        let Some(id) = self.user_id else {
            return Ok(false);
        };
        if self.user.is_none() {
            let user = self.platform.accounts().find_user_by_id(id).await?;
            self.user = Some(user);
        }
        Ok(self
            .user
            .as_ref()
            .and_then(Option::as_ref)
            .is_some_and(|user| user_has_any_role(user, &[role.to_owned()])))
    }

    /// What this caller may read of `collection` by `rules` (any one passing), or `None`.
    async fn access(
        &mut self,
        collection: &str,
        rules: &[ReadRule],
    ) -> Result<Option<ReadAccess>, ApiError> {
        let mut every = false;
        let mut owned = Vec::new();
        for rule in rules {
            match rule {
                ReadRule::Anyone => every = true,
                ReadRule::Authenticated => every |= self.user_id.is_some(),
                ReadRule::Role(role) => every = every || self.has_role(role).await?,
                ReadRule::Owner(field) => {
                    if let Some(id) = self.user_id {
                        owned.push(json!({ field.as_str(): id }));
                    }
                }
                ReadRule::Nobody => {}
            }
        }
        if !every && owned.is_empty() {
            return Ok(None);
        }
        let view = self
            .platform
            .collection(collection)
            .field_view(self.user_id)
            .await?;
        let access = ReadAccess::new(view);
        if every {
            return Ok(Some(access));
        }
        let scope = Selector::parse(&json!({ "$or": owned }))
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(Some(access.scoped(scope)))
    }
}

/// Expands the documents of every collection of `published` (a publication's reply,
/// `{"<collection>": [documents]}`) by `expand`, for `user_id` under `config`'s read rules.
///
/// # Errors
/// 400 `invalid-expand` naming a field that is not a relation of a published collection; store
/// failures.
pub(crate) async fn expand_published(
    platform: &Platform,
    config: &AutoConfig,
    user_id: Option<&str>,
    expand: &Expand,
    published: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    let mut caller = Caller {
        platform,
        user_id,
        user: None,
    };
    let mut access = BTreeMap::new();
    let mut decided = BTreeSet::new();
    for collection in published.keys() {
        let targets = platform
            .expand_targets(collection, expand)
            .map_err(|e| invalid_expand(e.to_string()))?;
        for target in targets {
            if !decided.insert(target.clone()) {
                continue;
            }
            if let Some(granted) = caller.access(&target, config.read_rules(&target)).await? {
                access.insert(target, granted);
            }
        }
    }
    for (collection, docs) in published.iter_mut() {
        let Value::Array(items) = docs else {
            continue;
        };
        let mut shown: Vec<Document> = items
            .drain(..)
            .filter_map(|item| match item {
                Value::Object(doc) => Some(doc),
                _ => None,
            })
            .collect();
        platform
            .expand(collection, &mut shown, expand, &access)
            .await?;
        items.extend(shown.into_iter().map(Value::Object));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(query: &str) -> BTreeMap<String, String> {
        params(Some(query))
    }

    #[test]
    fn search_parameters_are_checked() {
        assert!(search(&of("search=")).unwrap().is_none());
        let s = search(&of("search=red%20apple&skip=2")).unwrap().unwrap();
        assert_eq!(
            (s.text.as_str(), s.skip, s.limit),
            ("red apple", 2, Some(DEFAULT_LIMIT))
        );
        let s = search(&of("search=a&limit=99999")).unwrap().unwrap();
        assert_eq!(s.limit, Some(MAX_LIMIT));
        for bad in [
            "search=a&sort=x",
            "search=a&where=%7B%7D",
            "search=a&limit=-1",
        ] {
            assert_eq!(
                search(&of(bad)).unwrap_err().status_code().as_u16(),
                400,
                "{bad}"
            );
        }
    }

    #[test]
    fn expand_parameters_are_checked() {
        assert!(expand(&of("x=1")).unwrap().is_none());
        assert!(expand(&of("expand=author,tags")).unwrap().is_some());
        assert!(expand(&of("expand=a.b.c")).is_err());
    }
}
