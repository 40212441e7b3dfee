//! The auto API (`portico_auto::AutoApi`) from `[auto]`: collection rules become platform allow
//! rules, publications become platform publications.

use axum::Router;
use portico_auto::{AutoApi, BearerTokenLayer, LoginOptions};
use portico_edge::RouteDoc;
use portico_platform::{
    Collection, Cursor, Document, HttpMethod, MethodError, Platform, PublicationOptions, Query,
    Rules, Selector, user_has_any_role,
};
use portico_store::{Projection, Sort};
use serde_json::Value;

use crate::config::{AutoConfig, Config, PublicationConfig, Rule, USER_ID_PLACEHOLDER};

/// The headers every auto API response carries: the front door's defaults
/// (`Cache-Control: no-store`, `Pragma: no-cache`), overridden and extended by
/// `response_headers` (names compared case-insensitively).
fn response_headers(auto: &AutoConfig) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = vec![
        ("Cache-Control".into(), "no-store".into()),
        ("Pragma".into(), "no-cache".into()),
    ];
    for (name, value) in &auto.response_headers {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    headers
}

/// The auto API of `[auto]` on `platform` (see [`api`]): its router (write endpoints,
/// publications, the route listing, the login add-on and bearer-token authentication) and what
/// it serves, as route descriptions.
///
/// # Errors
/// What the front door or the platform refused, in words.
pub(crate) fn build(
    config: &Config,
    auto: &AutoConfig,
    platform: &Platform,
) -> Result<(Router, Vec<RouteDoc>), String> {
    let api = api(config, auto, platform).map_err(|e| e.to_string())?;
    let routes = api.routes().map_err(|e| e.to_string())?;
    let router = api.router().map_err(|e| e.to_string())?;
    Ok((router, routes))
}

/// The auto API of `[auto]`, its rules and publications registered on `platform`.
///
/// # Errors
/// [`crate::Error::Platform`] or [`crate::Error::Setup`] when a publication cannot be registered.
pub(crate) fn api(
    config: &Config,
    auto: &AutoConfig,
    platform: &Platform,
) -> crate::Result<AutoApi> {
    let writable = config.auto_write_collections(auto);
    for name in &writable {
        platform.collection(name);
    }
    for rules in &auto.rules {
        let collection = platform.collection(&rules.collection);
        // One rule set per operation, each named by its config rules, so listings read them.
        let describe = |list: &[Rule]| {
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" or ")
        };
        // `nobody` allows no one, so it is left out: an operation only `nobody` may do gets no
        // allow rule, and the platform refuses it before looking the document up (403 for every
        // id, as without rules; never a count that tells a missing id from an existing one).
        let allowing = |list: &[Rule]| -> Vec<Rule> {
            list.iter()
                .filter(|r| **r != Rule::Nobody)
                .cloned()
                .collect()
        };
        let (insert, update, remove) = (
            allowing(&rules.insert),
            allowing(&rules.update),
            allowing(&rules.remove),
        );
        for (insert, update, remove) in [
            (&insert[..], &[][..], &[][..]),
            (&[][..], &update[..], &[][..]),
            (&[][..], &[][..], &remove[..]),
        ] {
            let list = [insert, update, remove].concat();
            if !list.is_empty() {
                collection.allow(
                    allow_rules(platform, insert, update, remove).described(describe(&list)),
                );
            }
        }
    }
    for publication in &auto.publications {
        publish(platform, publication)?;
    }
    // Unless `[auto] auth_failure_delay_ms` says otherwise, the routes door's default delay
    // before every 401 and 403, so both doors answer failures alike.
    let failure_delay = match auto.auth_failure_delay {
        Some(delay) => portico_routes::DelayRange {
            min: delay,
            max: delay,
        },
        None => portico_routes::DelayRange::default(),
    };
    Ok(AutoApi::new(platform.clone())
        .configure({
            let mut o = portico_auto::AutoConfig::default();
            o.collections = Some(writable);
            o.object_id_collections = auto.object_id_collections.clone();
            o.read = auto
                .rules
                .iter()
                .filter(|rules| !rules.read.is_empty())
                .map(|rules| (rules.collection.clone(), rules.read.clone()))
                .collect();
            o.auth_optional_collections = auto
                .rules
                .iter()
                .filter(|rules| rules.auth_optional)
                .map(|rules| rules.collection.clone())
                .collect();
            o.auth_optional_publications = auto
                .publications
                .iter()
                .filter(|p| p.auth_optional)
                .map(|p| p.name.clone())
                .collect();
            o
        })
        .response_headers(response_headers(auto))
        .auth_failure_delay(failure_delay.min, failure_delay.max)
        .with_login({
            let mut o = LoginOptions::default();
            o.allow_register = auto.allow_register;
            o.trusted_proxies = config.trusted_proxies.clone();
            o
        })
        .with_token_authentication(BearerTokenLayer::new()))
}

/// Whether `user_id` holds any of `role` — looked up at call time, so role changes made with
/// `portico users roles` apply at once.
async fn has_role(platform: &Platform, user_id: Option<&str>, role: &str) -> bool {
    let Some(id) = user_id else {
        return false;
    };
    match platform.accounts().find_user_by_id(id).await {
        Ok(Some(user)) => user_has_any_role(&user, &[role.to_owned()]),
        Ok(None) => false,
        Err(err) => {
            tracing::warn!("role lookup failed: {err}");
            false
        }
    }
}

fn owns(doc: &Document, field: &str, user_id: Option<&str>) -> bool {
    match user_id {
        Some(id) => portico_store::lookup_path(doc, field)
            .iter()
            .any(|v| v.as_str() == Some(id)),
        None => false,
    }
}

/// Whether one rule lets `user_id` write `doc`. For updates, `changed` lists the top-level
/// fields the update touches: an owner may not change the owner field itself.
async fn allows(
    platform: &Platform,
    rule: &Rule,
    user_id: Option<&str>,
    doc: &Document,
    changed: Option<&[String]>,
) -> bool {
    match rule {
        Rule::Anyone => true,
        Rule::Nobody => false,
        Rule::Authenticated => user_id.is_some(),
        Rule::Role(role) => has_role(platform, user_id, role).await,
        Rule::Owner(field) => {
            let root = field.split('.').next().unwrap_or(field);
            let changes_owner = changed.is_some_and(|c| c.iter().any(|f| f == root || f == field));
            owns(doc, field, user_id) && !changes_owner
        }
    }
}

async fn any_allows(
    platform: &Platform,
    rules: &[Rule],
    user_id: Option<&str>,
    doc: &Document,
    changed: Option<&[String]>,
) -> bool {
    for rule in rules {
        if allows(platform, rule, user_id, doc, changed).await {
            return true;
        }
    }
    false
}

/// The platform allow rules for one collection. An operation with no rule gets no allow rule,
/// so the platform refuses it.
fn allow_rules(platform: &Platform, insert: &[Rule], update: &[Rule], remove: &[Rule]) -> Rules {
    let mut rules = Rules::new();
    if !insert.is_empty() {
        let (platform, insert) = (platform.clone(), insert.to_vec());
        rules = rules.insert(move |user_id: Option<String>, doc: Document| {
            let (platform, insert) = (platform.clone(), insert.clone());
            async move { any_allows(&platform, &insert, user_id.as_deref(), &doc, None).await }
        });
    }
    if !update.is_empty() {
        let (platform, update) = (platform.clone(), update.to_vec());
        rules = rules.update(
            move |user_id: Option<String>, doc: Document, fields: Vec<String>, _modifier: Value| {
                let (platform, update) = (platform.clone(), update.clone());
                async move {
                    any_allows(&platform, &update, user_id.as_deref(), &doc, Some(&fields)).await
                }
            },
        );
    }
    if !remove.is_empty() {
        let (platform, remove) = (platform.clone(), remove.to_vec());
        rules = rules.remove(move |user_id: Option<String>, doc: Document| {
            let (platform, remove) = (platform.clone(), remove.clone());
            async move { any_allows(&platform, &remove, user_id.as_deref(), &doc, None).await }
        });
    }
    rules
}

/// The query a publication runs (its selector, sort and projection were checked with the config).
fn publication_query(publication: &PublicationConfig) -> Result<Query, String> {
    let selector = Selector::parse(&publication.selector).map_err(|e| e.to_string())?;
    let sort = publication
        .sort
        .as_ref()
        .map(Sort::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    let projection = publication
        .fields
        .as_ref()
        .map(Projection::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok(Query {
        selector,
        sort,
        projection,
        ..Query::default()
    })
}

/// A query of `collection` that matches nothing (what anonymous callers get from an
/// `auth_required` publication: `{"<collection>": []}`).
fn nothing(collection: &Collection) -> Result<Cursor, MethodError> {
    let selector = Selector::parse(&serde_json::json!({"_id": {"$in": []}}))
        .map_err(|e| MethodError::internal(e.to_string()))?;
    Ok(collection.cursor(Query::new(selector)))
}

/// `query` narrowed to the caller: `"$userId"` values in `selector` become `user_id`, and with
/// `owner_field` only documents whose field holds `user_id` match.
fn caller_query(
    query: &Query,
    selector: &Value,
    owner_field: Option<&str>,
    user_id: &str,
) -> Result<Query, MethodError> {
    fn fill(value: &Value, user_id: &str) -> Value {
        match value {
            Value::String(s) if s == USER_ID_PLACEHOLDER => Value::String(user_id.to_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, user_id)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), fill(v, user_id)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut selector = fill(selector, user_id);
    if let Some(field) = owner_field {
        selector = serde_json::json!({"$and": [selector, {field: user_id}]});
    }
    let selector = Selector::parse(&selector).map_err(|e| MethodError::internal(e.to_string()))?;
    Ok(Query {
        selector,
        ..query.clone()
    })
}

fn publish(platform: &Platform, publication: &PublicationConfig) -> crate::Result<()> {
    let query = publication_query(publication).map_err(|message| {
        crate::Error::Setup(format!(
            "publication `{}` (line {}): {message}",
            publication.name, publication.line
        ))
    })?;
    // The config checker allowed only known methods; a bad one here is still a setup error.
    let http_method = publication
        .http_method
        .as_deref()
        .map(str::parse::<HttpMethod>)
        .transpose()
        .map_err(|err| {
            crate::Error::Setup(format!(
                "publication `{}` (line {}): {err}",
                publication.name, publication.line
            ))
        })?;
    let collection = platform.collection(&publication.collection);
    let auth_required = publication.auth_required;
    let caller_scoped = publication.is_caller_scoped();
    let (selector, owner_field) = (
        publication.selector.clone(),
        publication.owner_field.clone(),
    );
    platform.publish_with_options(
        &publication.name,
        {
            let mut o = PublicationOptions::default();
            o.url = publication.url.clone();
            o.http_method = http_method;
            o.args_extractor = None;
            o
        },
        move |subscription, _args| {
            let cursor = match subscription.user_id() {
                None if auth_required || caller_scoped => nothing(&collection),
                Some(user_id) if caller_scoped => {
                    caller_query(&query, &selector, owner_field.as_deref(), user_id)
                        .map(|q| collection.cursor(q))
                }
                _ => Ok(collection.cursor(query.clone())),
            };
            async move { Ok(vec![cursor?]) }
        },
    )?;
    Ok(())
}
