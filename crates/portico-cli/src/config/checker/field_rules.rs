//! Checking field-level read rules: `field_rules` of `[[api.collection]]` and
//! `[auto.field_rules.<collection>]`, each rule word parsed, one set per collection.

use std::collections::BTreeMap;

use portico_platform::{FieldRules, ReadRule};
use toml::Spanned;

use super::{Checker, check_collection_name};
use crate::config::raw::OneOrMany;
use crate::config::{ApiConfig, AutoConfig, ConfigError};

impl Checker<'_> {
    /// `field_rules = { salary = "role:hr", notes = ["owner:ownerId", "role:admin"] }`.
    pub(super) fn field_rules(
        &mut self,
        collection: &str,
        spanned: Spanned<BTreeMap<String, OneOrMany>>,
        key: &str,
    ) -> FieldRules {
        if collection == portico_platform::USERS {
            self.error(
                &spanned,
                key,
                "`users` shows only `_id` and `profile` to clients already; field rules do not apply to it",
            );
            return FieldRules::new();
        }
        let mut rules = FieldRules::new();
        for (field, words) in spanned.get_ref() {
            let mut parsed = Vec::new();
            for word in &words.0 {
                match word.parse::<ReadRule>() {
                    Ok(rule) => parsed.push(rule),
                    Err(message) => self.error(&spanned, &format!("{key}.{field}"), message),
                }
            }
            match rules.clone().field(field.clone(), parsed) {
                Ok(more) => rules = more,
                Err(e) => self.error(&spanned, &format!("{key}.{field}"), e.to_string()),
            }
        }
        rules
    }

    /// `[auto.field_rules.<collection>]`.
    pub(super) fn auto_field_rules(
        &mut self,
        raw: BTreeMap<String, Spanned<BTreeMap<String, OneOrMany>>>,
    ) -> Vec<(String, FieldRules)> {
        let mut out = Vec::new();
        for (collection, spanned) in raw {
            let key = format!("auto.field_rules.{collection}");
            if let Err(message) = check_collection_name(&collection) {
                self.error(&spanned, &key, message);
            }
            let rules = self.field_rules(&collection, spanned, &key);
            out.push((collection, rules));
        }
        out
    }

    /// Every collection's field rules, from `[[api.collection]]` and `[auto.field_rules]`; a
    /// collection given two different sets is a mistake.
    pub(super) fn merged_field_rules(
        &mut self,
        apis: &[ApiConfig],
        auto: Option<&AutoConfig>,
    ) -> BTreeMap<String, FieldRules> {
        let declared: Vec<(String, FieldRules, usize)> = apis
            .iter()
            .flat_map(|api| &api.collections)
            .filter(|c| !c.field_rules.is_empty())
            .map(|c| (c.name.clone(), c.field_rules.clone(), c.line))
            .chain(auto.into_iter().flat_map(|auto| {
                auto.field_rules
                    .iter()
                    .map(move |(name, rules)| (name.clone(), rules.clone(), auto.line))
            }))
            .collect();
        self.merge_once(declared, "field_rules", "sets of field rules")
    }

    /// One value per collection out of `declared` (collection, value, line): a collection
    /// given two different values is a mistake, reported under `key` (`what` names them).
    pub(super) fn merge_once<T: PartialEq>(
        &mut self,
        declared: impl IntoIterator<Item = (String, T, usize)>,
        key: &str,
        what: &str,
    ) -> BTreeMap<String, T> {
        let mut merged: BTreeMap<String, (T, usize)> = BTreeMap::new();
        for (name, value, line) in declared {
            match merged.get(&name) {
                Some((existing, first)) if *existing != value => {
                    self.errors.push(ConfigError {
                        line,
                        column: 1,
                        key: key.into(),
                        message: format!(
                            "collection `{name}` has two different {what} (the first at line {first}); give them once"
                        ),
                    });
                }
                Some(_) => {}
                None => {
                    merged.insert(name, (value, line));
                }
            }
        }
        merged
            .into_iter()
            .map(|(name, (value, _))| (name, value))
            .collect()
    }
}
