//! Warnings about a valid config: things it allows on purpose that are easy to allow by mistake
//! (anonymous writes, rules over accounts, publications that ignore an owner scope).
//!
//! `portico check` prints them and `portico serve` logs them; neither refuses the config.

use std::fmt;

use super::{Config, Rule};

/// One warning, with the config line it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// 1-based line of the key the warning is about.
    pub line: usize,
    /// What the config allows, in words.
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Who sees whom in a `users` collection, when the config does not say it narrowly: anonymous
/// callers reading accounts (written out on purpose), or every logged-in caller reading every
/// account (the default when nothing is said).
fn account_reads(
    api: &super::ApiConfig,
    collection: &super::CollectionConfig,
) -> Option<ConfigWarning> {
    if !collection.is_users() || collection.self_only || !collection.role_required.is_empty() {
        return None;
    }
    let at = format!("{}{}", api.base_path(), collection.path);
    let anonymous = collection.anonymous_reads();
    let message = if !anonymous.is_empty() {
        let names: Vec<&str> = anonymous.iter().map(|e| e.name()).collect();
        format!(
            "anonymous callers can list every account (`_id` and `profile`, the admins' too) at {at} ({}); write `self_only = true` to show each caller only their own account",
            names.join(", ")
        )
    } else if collection.reads_unstated {
        format!(
            "every logged-in caller can list every account (`_id` and `profile`, the admins' too) at {at}; write `self_only = true` to show each caller only their own account, or `auth_required = true` if every user may see every account"
        )
    } else {
        return None;
    };
    Some(ConfigWarning {
        line: collection.line,
        message,
    })
}

impl Config {
    /// Every warning about this config, in line order.
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        let mut warnings = Vec::new();
        for api in &self.apis {
            for collection in &api.collections {
                if let Some(warning) = account_reads(api, collection) {
                    warnings.push(warning);
                }
                let open = collection.anonymous_writes();
                if open.is_empty() {
                    continue;
                }
                let names: Vec<&str> = open.iter().map(|e| e.name()).collect();
                let message = if collection.is_users() {
                    format!(
                        "anonymous callers can create accounts through {}{} (post)",
                        api.base_path(),
                        collection.path
                    )
                } else {
                    format!(
                        "anonymous callers can write collection `{}` at {}{} ({}); set `auth_required` or `role_required` unless that is intended",
                        collection.name,
                        api.base_path(),
                        collection.path,
                        names.join(", ")
                    )
                };
                warnings.push(ConfigWarning {
                    line: collection.line,
                    message,
                });
            }
        }
        if let Some(auto) = &self.auto {
            for rules in &auto.rules {
                let open: Vec<&str> = [
                    ("insert", &rules.insert),
                    ("update", &rules.update),
                    ("remove", &rules.remove),
                ]
                .into_iter()
                .filter(|(_, list)| list.contains(&Rule::Anyone))
                .map(|(op, _)| op)
                .collect();
                let changes_accounts = !rules.update.is_empty() || !rules.remove.is_empty();
                if rules.collection == portico_platform::USERS && changes_accounts {
                    warnings.push(ConfigWarning {
                        line: rules.line,
                        message: "rules over `users` let clients change or remove accounts through the auto API (`roles` and `services` stay protected); make sure each rule limits callers to their own account (`owner:_id`) or an admin role".to_owned(),
                    });
                }
                if !open.is_empty() {
                    warnings.push(ConfigWarning {
                        line: rules.line,
                        message: format!(
                            "anonymous callers can write collection `{}` through the auto API ({} = \"anyone\")",
                            rules.collection,
                            open.join(", ")
                        ),
                    });
                }
            }
        }
        warnings.extend(self.unscoped_publications());
        warnings.sort_by_key(|w| w.line);
        warnings
    }

    /// Publications over a collection that a route API serves owner-scoped (or the `users`
    /// collection with `self_only`), which return every caller's documents to anyone.
    fn unscoped_publications(&self) -> Vec<ConfigWarning> {
        let Some(auto) = &self.auto else {
            return Vec::new();
        };
        let scoped: Vec<(&str, usize)> = self
            .apis
            .iter()
            .flat_map(|api| &api.collections)
            .filter(|c| c.owner_field.is_some() || c.self_only)
            .map(|c| (c.name.as_str(), c.line))
            .collect();
        auto.publications
            .iter()
            .filter(|p| !p.is_caller_scoped())
            .filter_map(|p| {
                let (_, line) = scoped.iter().find(|(name, _)| *name == p.collection)?;
                Some(ConfigWarning {
                    line: p.line,
                    message: format!(
                        "publication `{}` returns every document of `{}`, which the route API on line {line} serves to each caller's own documents only; add `owner_field` or a \"$userId\" selector value",
                        p.name, p.collection
                    ),
                })
            })
            .collect()
    }
}
