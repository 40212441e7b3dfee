//! Checking one `[[api.collection]]`: its endpoints and their safe defaults, its owner scope,
//! its admin role and its limits.

use std::collections::BTreeSet;

use portico_routes::Op;
use toml::Spanned;

use super::{Checker, check_collection_name, check_field_name};
use crate::config::raw::{OneOrMany, RawCollection, RawEndpoint, RawEndpoints};
use crate::config::{CollectionConfig, EndpointAuth};

const KEY: &str = "api.collection";

impl Checker<'_> {
    pub(super) fn collection(&mut self, raw: RawCollection) -> CollectionConfig {
        let name = raw.name.get_ref().clone();
        if let Err(message) = check_collection_name(raw.name.get_ref()) {
            self.error(&raw.name, &format!("{KEY}.name"), message);
        }
        let path = match &raw.path {
            Some(path) => self.path_part(path, &format!("{KEY}.path"), true),
            None => raw.name.get_ref().clone(),
        };
        let role_required = self.roles(
            raw.role_required,
            &raw.name,
            &format!("{KEY}.role_required"),
        );
        let excluded = self.excluded_endpoints(raw.excluded_endpoints.as_ref());
        let mut endpoints = self.endpoints(raw.endpoints.unwrap_or_default(), &excluded, &raw.name);
        let is_users = raw.name.get_ref() == portico_platform::USERS;
        let open = raw.auth_required.is_none() && role_required.is_empty();
        let reads_unstated = open
            && endpoints.iter().all(|(endpoint, options)| {
                !matches!(endpoint, Op::Get | Op::GetAll)
                    || (options.auth_required.is_none() && options.role_required.is_empty())
            });
        secure_by_default(&mut endpoints, is_users, open);
        if endpoints.is_empty() {
            self.error(
                &raw.name,
                &format!("{KEY}.name"),
                "every endpoint of this collection is excluded",
            );
        }
        let (owner_field, self_only) =
            self.owner_scope(raw.owner_field, raw.self_only.as_ref(), is_users);
        if self_only {
            // "Own account only" needs to know the caller on every endpoint, as an owner scope
            // does; written here so the route table shows it.
            for (_, options) in &mut endpoints {
                options.auth_required = Some(true);
            }
        }
        let admin_role = self.admin_role(raw.admin_role, &raw.name, is_users);
        let max_page_size = raw.max_page_size.map(|size| {
            if *size.get_ref() == 0 {
                self.error(&size, &format!("{KEY}.max_page_size"), "must be at least 1");
            }
            size.into_inner()
        });
        let files = self.file_fields(raw.files, &raw.name, is_users);
        let auth_optional = self.auth_mode(raw.auth.as_ref(), &format!("{KEY}.auth"));
        CollectionConfig {
            reads_unstated,
            auth_optional,
            files,
            line: self.line(&raw.name),
            name: raw.name.into_inner(),
            path,
            auth_required: raw.auth_required.unwrap_or(false),
            role_required,
            endpoints,
            owner_field,
            max_page_size,
            admin_role,
            self_only,
            timestamps: raw.timestamps.unwrap_or(true),
            schema: raw
                .schema
                .map(|schema| self.schema_path(&schema, &format!("{KEY}.schema"))),
            field_rules: raw
                .field_rules
                .map(|rules| self.field_rules(&name, rules, &format!("{KEY}.field_rules")))
                .unwrap_or_default(),
            relations: raw
                .relations
                .map(|relations| self.relations(&name, relations))
                .unwrap_or_default(),
            search: raw
                .search
                .map(|fields| self.search_fields(&name, fields))
                .unwrap_or_default(),
            indexes: raw
                .indexes
                .map(|specs| self.index_specs(&format!("{KEY}.indexes"), specs))
                .unwrap_or_default(),
        }
    }

    /// `files`: the collection's file fields, each checked.
    fn file_fields(
        &mut self,
        raw: Option<
            Spanned<std::collections::BTreeMap<String, crate::config::files::RawFileField>>,
        >,
        name: &Spanned<String>,
        is_users: bool,
    ) -> std::collections::BTreeMap<String, portico_platform::FileField> {
        let Some(raw) = raw else {
            return std::collections::BTreeMap::new();
        };
        let (fields, mistakes) = crate::config::files::check_fields(raw, &format!("{KEY}.files"));
        for (span, key, message) in mistakes {
            let err = self.source.error(span, &key, message);
            self.errors.push(err);
        }
        if is_users && !fields.is_empty() {
            self.error(
                name,
                &format!("{KEY}.files"),
                "the `users` collection cannot have file fields; keep files in a collection of their own",
            );
        }
        fields
    }

    /// The endpoints `excluded_endpoints` names, each checked.
    fn excluded_endpoints(&mut self, list: Option<&Spanned<OneOrMany>>) -> BTreeSet<Op> {
        let mut excluded = BTreeSet::new();
        let Some(list) = list else {
            return excluded;
        };
        for name in &list.get_ref().0 {
            match name.parse::<Op>() {
                Ok(endpoint) => {
                    excluded.insert(endpoint);
                }
                Err(_) => self.error(
                    list,
                    &format!("{KEY}.excluded_endpoints"),
                    format!(
                        "`{name}` is not an endpoint; expected getAll, post, get, put, patch or delete"
                    ),
                ),
            }
        }
        excluded
    }

    /// The endpoints served, in route order, with the options each one's table gives.
    fn endpoints(
        &mut self,
        raw: RawEndpoints,
        excluded: &BTreeSet<Op>,
        name: &Spanned<String>,
    ) -> Vec<(Op, EndpointAuth)> {
        let settings = [
            (Op::GetAll, raw.get_all),
            (Op::Post, raw.post),
            (Op::Get, raw.get),
            (Op::Put, raw.put),
            (Op::Patch, raw.patch),
            (Op::Delete, raw.delete),
        ];
        let mut endpoints = Vec::new();
        for (endpoint, setting) in settings {
            let options = match setting {
                Some(RawEndpoint::Enabled(false)) => continue,
                None | Some(RawEndpoint::Enabled(true)) => EndpointAuth::default(),
                Some(RawEndpoint::Options(options)) => EndpointAuth {
                    auth_optional: options.auth.as_ref().map(|auth| {
                        self.auth_mode(
                            Some(auth),
                            &format!("{KEY}.endpoints.{}.auth", endpoint.name()),
                        )
                    }),
                    auth_required: options.auth_required,
                    role_required: self.roles(
                        options.role_required,
                        name,
                        &format!("{KEY}.endpoints.{}.role_required", endpoint.name()),
                    ),
                },
            };
            if !excluded.contains(&endpoint) {
                endpoints.push((endpoint, options));
            }
        }
        endpoints
    }

    /// `auth`: the one value it takes, `"optional"` (true); absent, false.
    pub(super) fn auth_mode(&mut self, auth: Option<&Spanned<String>>, key: &str) -> bool {
        let Some(auth) = auth else {
            return false;
        };
        if auth.get_ref() != "optional" {
            self.error(
                auth,
                key,
                format!(
                    "`{}` is not an auth mode; the one mode is \"optional\" (a caller who sends a token is authenticated, one who sends none is anonymous); a login is required with `auth_required = true`",
                    auth.get_ref()
                ),
            );
            return false;
        }
        true
    }

    /// `owner_field` and `self_only` checked: the owner field (none when `users` is owned by
    /// `_id`), and whether callers reach only their own account.
    fn owner_scope(
        &mut self,
        owner_field: Option<Spanned<String>>,
        self_only_flag: Option<&Spanned<bool>>,
        is_users: bool,
    ) -> (Option<String>, bool) {
        let mut self_only = false;
        let owner_field = owner_field.and_then(|field| {
            if is_users && field.get_ref() == "_id" {
                // On accounts, "owned by the caller" means "is the caller".
                self_only = true;
                return None;
            }
            if let Err(message) = check_field_name(field.get_ref()) {
                self.error(&field, &format!("{KEY}.owner_field"), message);
            }
            Some(field.into_inner())
        });
        if let Some(flag) = self_only_flag {
            if !is_users {
                self.error(
                    flag,
                    &format!("{KEY}.self_only"),
                    "`self_only` applies to the `users` collection only; use `owner_field` for others",
                );
            }
            self_only |= *flag.get_ref();
        }
        (owner_field, self_only)
    }

    /// `admin_role` checked: `users` only, no empty names.
    fn admin_role(
        &mut self,
        roles: Option<Spanned<OneOrMany>>,
        name: &Spanned<String>,
        is_users: bool,
    ) -> Vec<String> {
        let Some(roles) = roles else {
            return Vec::new();
        };
        if !is_users {
            self.error(
                &roles,
                &format!("{KEY}.admin_role"),
                "`admin_role` applies to the `users` collection only; use `role_required` for others",
            );
        }
        let roles = roles.into_inner().0;
        if roles.iter().any(|r| r.trim().is_empty()) {
            self.error(name, &format!("{KEY}.admin_role"), "a role name is empty");
        }
        roles
    }
}

/// Safe by default: with no auth key on the collection (`open`), reads stay public and every
/// write endpoint that says nothing itself needs a logged-in caller. `auth_required = false`
/// written out keeps writes open (and `portico check` warns). Changing or removing an account
/// needs to know who asks (see `serve::rest`), so those endpoints always identify the caller,
/// whatever `auth_required` says. The accounts are never public by default either: in the
/// `users` collection the reads that say nothing need a logged-in caller too (anonymous callers
/// would otherwise list every account's id, the admins' too).
fn secure_by_default(endpoints: &mut [(Op, EndpointAuth)], is_users: bool, open: bool) {
    for (endpoint, options) in endpoints {
        if is_users && endpoint.on_item() && *endpoint != Op::Get {
            options.auth_required = Some(true);
        }
        let write = !matches!(endpoint, Op::Get | Op::GetAll);
        if open
            && (write || is_users)
            && options.auth_required.is_none()
            && options.role_required.is_empty()
        {
            options.auth_required = Some(true);
        }
    }
}
