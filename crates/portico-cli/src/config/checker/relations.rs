//! Checking relations: `relations = { author = "users", tags = "tags" }` of
//! `[[api.collection]]`. A related collection must be served by the same `[[api]]` (an
//! expansion reads it as that API's `GET /:id` would), and a collection served by several
//! APIs has one set of relations.

use std::collections::BTreeMap;

use portico_platform::Relations;
use toml::Spanned;

use super::{Checker, check_collection_name};
use crate::config::{ApiConfig, ConfigError};

const KEY: &str = "api.collection.relations";

impl Checker<'_> {
    /// `relations = { author = "users" }` of the collection `collection`.
    pub(super) fn relations(
        &mut self,
        collection: &str,
        spanned: Spanned<BTreeMap<String, String>>,
    ) -> Relations {
        if collection == portico_platform::USERS {
            self.error(
                &spanned,
                KEY,
                "`users` shows only `_id` and `profile` to clients; it cannot have relations",
            );
            return Relations::new();
        }
        let mut relations = Relations::new();
        for (field, target) in spanned.get_ref() {
            if let Err(message) = check_collection_name(target) {
                self.error(&spanned, &format!("{KEY}.{field}"), message);
                continue;
            }
            match relations.clone().field(field.clone(), target.clone()) {
                Ok(more) => relations = more,
                Err(e) => self.error(&spanned, &format!("{KEY}.{field}"), e.to_string()),
            }
        }
        relations
    }

    /// Every collection's relations; a target this API does not serve, or a collection given
    /// two different sets, is a mistake.
    pub(super) fn merged_relations(&mut self, apis: &[ApiConfig]) -> BTreeMap<String, Relations> {
        let mut declared = Vec::new();
        for api in apis {
            for collection in api.collections.iter().filter(|c| !c.relations.is_empty()) {
                for (field, target) in collection.relations.iter() {
                    if !api.collections.iter().any(|c| c.name == target) {
                        self.errors.push(ConfigError {
                            line: collection.line,
                            column: 1,
                            key: format!("relations.{field}"),
                            message: format!(
                                "`{target}` is not a collection of this [[api]]: an expansion reads a related collection as its GET /:id on the same API does (its authentication, roles, owner scope and field rules), so declare it with [[api.collection]] here"
                            ),
                        });
                    }
                }
                declared.push((
                    collection.name.clone(),
                    collection.relations.clone(),
                    collection.line,
                ));
            }
        }
        self.merge_once(declared, "relations", "sets of relations")
    }
}
