//! Checking full-text search fields: `search = ["title", "body"]` of `[[api.collection]]`.
//! A collection served by several APIs has one set of search fields.

use std::collections::BTreeMap;

use toml::Spanned;

use super::Checker;
use crate::config::ApiConfig;

const KEY: &str = "api.collection.search";

impl Checker<'_> {
    /// `search = ["title", "body"]` of the collection `collection`.
    pub(super) fn search_fields(
        &mut self,
        collection: &str,
        spanned: Spanned<Vec<String>>,
    ) -> Vec<String> {
        if collection == portico_platform::USERS {
            self.error(
                &spanned,
                KEY,
                "`users` shows only `_id` and `profile` to clients; it cannot be searched",
            );
            return Vec::new();
        }
        if let Err(e) = portico_store::check_search_fields(spanned.get_ref()) {
            self.error(&spanned, KEY, e.to_string());
            return Vec::new();
        }
        spanned.into_inner()
    }

    /// Every searched collection's fields; a collection given two different lists is a
    /// mistake.
    pub(super) fn merged_search(&mut self, apis: &[ApiConfig]) -> BTreeMap<String, Vec<String>> {
        let declared: Vec<(String, Vec<String>, usize)> = apis
            .iter()
            .flat_map(|api| &api.collections)
            .filter(|c| !c.search.is_empty())
            .map(|c| (c.name.clone(), c.search.clone(), c.line))
            .collect();
        self.merge_once(declared, "search", "lists of search fields")
    }
}
