//! Checking sorted indexes: `indexes = ["city", "-createdAt", ["ownerId", "-createdAt"],
//! { fields = ["email"], unique = true }]` of `[[api.collection]]`, and `[auto.indexes]`
//! (`tasks = [...]`). A collection declared by several APIs has the union of their indexes.

use std::collections::BTreeMap;

use portico_store::IndexSpec;
use toml::Spanned;

use super::Checker;
use crate::config::value::to_json;
use crate::config::{ApiConfig, AutoConfig};

impl Checker<'_> {
    /// The indexes of one collection, each parsed; a mistake names the item.
    pub(super) fn index_specs(
        &mut self,
        key: &str,
        spanned: Spanned<Vec<toml::Value>>,
    ) -> Vec<IndexSpec> {
        let mut specs: Vec<IndexSpec> = Vec::new();
        let mut mistakes = Vec::new();
        for (n, item) in spanned.get_ref().iter().enumerate() {
            match IndexSpec::parse(&to_json(item)) {
                Ok(spec) if specs.contains(&spec) => {}
                Ok(spec) => specs.push(spec),
                Err(e) => mistakes.push(format!(
                    "item {} ({item}): {}",
                    n + 1,
                    e.to_string().trim_start_matches("invalid name: ")
                )),
            }
        }
        for message in mistakes {
            self.error(
                &spanned,
                key,
                format!(
                    "{message}; an index is \"field\", \"-field\" (descending), \
                     [\"a\", \"-b\"] (compound) or {{ fields = [\"email\"], unique = true }}"
                ),
            );
        }
        specs
    }

    /// `[auto.indexes]`: the indexes of each collection, checked.
    pub(super) fn auto_indexes(
        &mut self,
        raw: BTreeMap<String, Spanned<Vec<toml::Value>>>,
    ) -> Vec<(String, Vec<IndexSpec>)> {
        let mut out = Vec::new();
        for (collection, spanned) in raw {
            let key = format!("auto.indexes.{collection}");
            if let Err(message) = super::check_collection_name(&collection) {
                self.error(&spanned, &key, message);
                continue;
            }
            let specs = self.index_specs(&key, spanned);
            out.push((collection, specs));
        }
        out
    }

    /// Every collection's indexes: the union of what each API and `[auto]` declare.
    pub(super) fn merged_indexes(
        &mut self,
        apis: &[ApiConfig],
        auto: Option<&AutoConfig>,
    ) -> BTreeMap<String, Vec<IndexSpec>> {
        let mut out: BTreeMap<String, Vec<IndexSpec>> = BTreeMap::new();
        let declared = apis
            .iter()
            .flat_map(|api| &api.collections)
            .map(|c| (&c.name, &c.indexes))
            .chain(
                auto.into_iter()
                    .flat_map(|a| a.indexes.iter().map(|(c, s)| (c, s))),
            );
        for (collection, specs) in declared {
            let list = out.entry(collection.clone()).or_default();
            for spec in specs {
                // One index per set of fields; a unique declaration wins.
                match list.iter_mut().find(|s| s.fields == spec.fields) {
                    Some(existing) => existing.unique |= spec.unique,
                    None => list.push(spec.clone()),
                }
            }
        }
        out.retain(|_, specs| !specs.is_empty());
        out
    }
}
