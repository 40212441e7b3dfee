//! Checking `[auto]`: its collections, rules, schemas and publications.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use toml::Spanned;

use super::{Checker, check_collection_name, check_field_name, check_path};
use crate::config::raw::{OneOrMany, RawAuto, RawPublication, RawRules};
use crate::config::{AutoConfig, CollectionRules, PublicationConfig, Rule, SchemaFile, value};

impl Checker<'_> {
    pub(super) fn auto(&mut self, raw: RawAuto) -> AutoConfig {
        let collections = raw
            .collections
            .map(|c| self.collection_names(c.into_inner(), "auto.collections"));
        let object_id_collections =
            self.collection_names(raw.object_id_collections, "auto.object_id_collections");
        let no_timestamps = self.collection_names(raw.no_timestamps, "auto.no_timestamps");
        let response_headers = self.headers(raw.response_headers, "auto.response_headers");
        let rules = self.auto_rules(raw.rules, collections.as_deref());
        let schemas = self.auto_schemas(raw.schemas);
        let publications = self.auto_publications(raw.publication);
        let field_rules = self.auto_field_rules(raw.field_rules);
        let indexes = self.auto_indexes(raw.indexes);
        AutoConfig {
            field_rules,
            indexes,
            collections,
            object_id_collections,
            no_timestamps,
            response_headers,
            allow_register: raw.allow_register.unwrap_or(true),
            auth_failure_delay: raw
                .auth_failure_delay_ms
                .map(std::time::Duration::from_millis),
            rules,
            publications,
            schemas,
            line: self.source.header_line("auto").unwrap_or(1),
        }
    }

    /// `[auto.rules.<collection>]`: each rule parsed; write rules for a collection without
    /// write endpoints, and client inserts into `users`, refused.
    fn auto_rules(
        &mut self,
        raw: BTreeMap<String, Spanned<RawRules>>,
        collections: Option<&[String]>,
    ) -> Vec<CollectionRules> {
        let mut rules = Vec::new();
        for (collection, spanned) in raw {
            let key = format!("auto.rules.{collection}");
            if let Err(message) = check_collection_name(&collection) {
                self.error(&spanned, &key, message);
            }
            // `read` alone needs no write endpoints (it rules what `?expand=` shows).
            let raw_ref = spanned.get_ref();
            let writes =
                raw_ref.insert.is_some() || raw_ref.update.is_some() || raw_ref.remove.is_some();
            if writes
                && let Some(list) = collections
                && !list.contains(&collection)
            {
                self.error(
                        &spanned,
                        &key,
                        format!(
                            "rules for `{collection}`, but `{collection}` is not in `auto.collections`, so it has no write endpoints"
                        ),
                    );
            }
            let line = self.line(&spanned);
            let raw_rules = spanned.into_inner();
            let auth_optional = self.auth_mode(raw_rules.auth.as_ref(), &format!("{key}.auth"));
            let mut parse = |rule: Option<Spanned<OneOrMany>>, op: &str| -> Vec<Rule> {
                let Some(rule) = rule else {
                    return Vec::new();
                };
                let mut parsed = Vec::new();
                for text in &rule.get_ref().0 {
                    match text.parse::<Rule>() {
                        Ok(r) => parsed.push(r),
                        Err(message) => self.error(&rule, &format!("{key}.{op}"), message),
                    }
                }
                parsed
            };
            let insert_span = raw_rules.insert.as_ref().map(|r| r.span());
            let insert = parse(raw_rules.insert, "insert");
            let update = parse(raw_rules.update, "update");
            let remove = parse(raw_rules.remove, "remove");
            let read = parse(raw_rules.read, "read");
            if collection == portico_platform::USERS
                && insert.iter().any(|rule| *rule != Rule::Nobody)
            {
                // A client insert into `users` would make an account without a hashed password
                // (and choose its fields); sign-up goes through `/users/register` instead.
                if let Some(span) = insert_span {
                    let err = self.source.error(
                        span,
                        &format!("{key}.insert"),
                        "clients may not insert into `users`: accounts are created by `/users/register` (`allow_register`) or `portico users add`",
                    );
                    self.errors.push(err);
                }
            }
            rules.push(CollectionRules {
                collection,
                insert,
                update,
                remove,
                read,
                auth_optional,
                line,
            });
        }
        rules
    }

    /// `[auto.schemas]`: collection names and schema file names checked.
    fn auto_schemas(&mut self, raw: BTreeMap<String, Spanned<String>>) -> Vec<SchemaFile> {
        let mut schemas = Vec::new();
        for (collection, path) in raw {
            let key = format!("auto.schemas.{collection}");
            if let Err(message) = check_collection_name(&collection) {
                self.error(&path, &key, message);
            }
            let line = self.line(&path);
            schemas.push(SchemaFile {
                collection,
                path: self.schema_path(&path, &key),
                line,
            });
        }
        schemas
    }

    /// `[[auto.publication]]`: each checked, names unique.
    fn auto_publications(&mut self, raw: Vec<RawPublication>) -> Vec<PublicationConfig> {
        let mut names = BTreeSet::new();
        raw.into_iter()
            .filter_map(|p| {
                let name = p.name.get_ref().clone();
                let duplicate = !names.insert(name.clone());
                if duplicate {
                    self.error(
                        &p.name,
                        "auto.publication.name",
                        format!("a publication named `{name}` is declared twice"),
                    );
                }
                self.publication(p)
            })
            .collect()
    }

    fn publication(&mut self, raw: RawPublication) -> Option<PublicationConfig> {
        let key = "auto.publication";
        let name = raw.name.get_ref();
        if name.trim().is_empty() || name.contains('/') || name == "api-routes" {
            self.error(
                &raw.name,
                &format!("{key}.name"),
                format!("`{name}` cannot name a publication (empty, a `/`, or the reserved `api-routes`)"),
            );
        }
        if let Err(message) = check_collection_name(raw.collection.get_ref()) {
            self.error(&raw.collection, &format!("{key}.collection"), message);
        }
        let mut json = |table: Option<Spanned<toml::Table>>, field: &str| -> Option<Value> {
            let table = table?;
            let json = value::table_to_json(table.get_ref());
            let parsed = match field {
                "selector" => portico_store::Selector::parse(&json).map(|_| ()),
                "sort" => portico_store::Sort::parse(&json).map(|_| ()),
                _ => portico_store::Projection::parse(&json).map(|_| ()),
            };
            if let Err(err) = parsed {
                self.error(&table, &format!("{key}.{field}"), err.to_string());
            }
            Some(json)
        };
        let selector =
            json(raw.selector, "selector").unwrap_or_else(|| Value::Object(Default::default()));
        let sort = json(raw.sort, "sort");
        let fields = json(raw.fields, "fields");
        let url = raw.url.map(|url| {
            let text = url.get_ref().trim_matches('/');
            if let Err(message) = check_path(text, true) {
                self.error(&url, &format!("{key}.url"), message);
            }
            text.to_owned()
        });
        let http_method = raw.http_method.map(|m| {
            let lower = m.get_ref().to_ascii_lowercase();
            if !["get", "post", "put", "patch", "delete"].contains(&lower.as_str()) {
                self.error(
                    &m,
                    &format!("{key}.http_method"),
                    format!(
                        "`{}` is not one of get, post, put, patch, delete",
                        m.get_ref()
                    ),
                );
            }
            lower
        });
        let owner_field = raw.owner_field.map(|field| {
            if let Err(message) = check_field_name(field.get_ref()) {
                self.error(&field, &format!("{key}.owner_field"), message);
            }
            field.into_inner()
        });
        let auth_optional = self.auth_mode(raw.auth.as_ref(), &format!("{key}.auth"));
        Some(PublicationConfig {
            auth_optional,
            owner_field,
            line: self.line(&raw.name),
            name: raw.name.into_inner(),
            collection: raw.collection.into_inner(),
            selector,
            sort,
            fields,
            url,
            http_method,
            auth_required: raw.auth_required.unwrap_or(false),
        })
    }
}
