//! One routes API (`portico_routes::Api`) per `[[api]]`.

use portico_platform::Platform;
use portico_routes::{
    AccessScope, Api, ApiOptions, BeforeHook, CollectionOptions, Context, DelayRange, Endpoint,
    HookEvent, LoginRateLimit, Op, RateLimit, Reply, RouteOptions,
};
use serde_json::json;

use portico_edge::RouteDoc;

use crate::scripts::Scripts;

use super::registry::{Clash, Owner, OwnerId, Reach, Registry};
use crate::config::{ApiConfig, CollectionConfig, ConfigError};

/// The front door's options for one `[[api]]`.
pub(crate) fn api_options(api: &ApiConfig) -> ApiOptions {
    let mut options = ApiOptions::default();
    options.api_path = api.api_path.clone();
    options.version = api.version.clone();
    options.pretty_json = api.pretty_json;
    options.default_headers = api.default_headers.clone();
    options.enable_cors = api.enable_cors;
    options.cors.allow_origins = api.cors_origins.clone();
    options.use_default_auth = api.use_default_auth;
    if let Some(delay) = api.auth_failure_delay {
        options.auth_failure_delay = DelayRange {
            min: delay,
            max: delay,
        };
    }
    options.trusted_proxies = api.trusted_proxies.clone();
    if let Some(limit) = api.login_rate_limit {
        let mut limits = LoginRateLimit::default();
        limits.per_identity = Some(RateLimit::new(limit.attempts, limit.per));
        options.login_rate_limit = limits;
    }
    options
}

/// The front door's options for one `[[api.collection]]`.
pub(crate) fn collection_options(collection: &CollectionConfig) -> CollectionOptions {
    let mut options = CollectionOptions::new()
        .path(collection.path.clone())
        .route_options(
            RouteOptions::new()
                .auth_required(collection.auth_required)
                .auth_optional(collection.auth_optional)
                .role_required(collection.role_required.clone()),
        );
    for endpoint in collection.excluded() {
        options = options.exclude(endpoint);
    }
    for (endpoint, settings) in &collection.endpoints {
        let mut configured = Endpoint::options();
        if let Some(auth) = settings.auth_required {
            configured = configured.auth_required(auth);
        }
        if let Some(optional) = settings.auth_optional {
            configured = configured.auth_optional(optional);
        }
        if !settings.role_required.is_empty() {
            configured = configured.role_required(settings.role_required.clone());
        }
        options = options.endpoint(*endpoint, configured);
    }
    if let Some(field) = &collection.owner_field {
        options = options.scope(AccessScope::owner_field(field.clone()));
    }
    if let Some(size) = collection.max_page_size {
        options = options.max_page_size(size);
    }
    options
}

/// The guards of the generated `users` collection: a caller changes or removes only their own
/// account unless they hold an `admin_role`; anonymous callers never do. With `self_only`,
/// callers also see only their own account.
fn guard_accounts(
    mut options: CollectionOptions,
    collection: &CollectionConfig,
    platform: &Platform,
) -> CollectionOptions {
    let admin_roles = collection.admin_role.clone();
    if collection.self_only {
        let admins = admin_roles.clone();
        options = options.scope(
            AccessScope::new(move |ctx: &Context| {
                let is_admin = ctx
                    .user
                    .as_ref()
                    .is_some_and(|user| is_account_admin(user, &admins));
                match &ctx.user_id {
                    Some(_) if is_admin => json!({}),
                    Some(id) => json!({"_id": id}),
                    None => json!({"_id": {"$in": []}}),
                }
            })
            .require_user(),
        );
    }
    let platform = platform.clone();
    options.before(BeforeHook::new(move |event: HookEvent| {
        let (platform, admin_roles) = (platform.clone(), admin_roles.clone());
        async move {
            if !matches!(event.op, Op::Put | Op::Patch | Op::Delete) {
                return Ok(event);
            }
            let Some(caller) = event.user_id.as_deref() else {
                return Err(Reply::error(401, "You must be logged in to do this."));
            };
            if event.id.as_deref() == Some(caller)
                || may_manage_accounts(&platform, caller, &admin_roles).await
            {
                Ok(event)
            } else {
                Err(Reply::error(403, "You may change only your own account."))
            }
        }
    }))
}

/// Whether `user` manages accounts: holds one of `admin_roles`, and is not an API key's
/// service account (a key never reaches other accounts, whatever its roles).
fn is_account_admin(user: &portico_platform::Document, admin_roles: &[String]) -> bool {
    !portico_platform::is_service_account(user)
        && portico_platform::user_has_any_role(user, admin_roles)
}

/// Whether `user_id` holds one of `admin_roles`, looked up now so `portico users roles` applies
/// at once.
async fn may_manage_accounts(platform: &Platform, user_id: &str, admin_roles: &[String]) -> bool {
    if admin_roles.is_empty() {
        return false;
    }
    match platform.accounts().find_user_by_id(user_id).await {
        Ok(Some(user)) => is_account_admin(&user, admin_roles),
        Ok(None) => false,
        Err(err) => {
            tracing::warn!("role lookup failed: {err}");
            false
        }
    }
}

/// The routes API of one `[[api]]` with all its collections, its login and batch routes and
/// the routes `scripts` (with the line of `[scripts]`) give it, each claimed in `registry`
/// before it is added.
///
/// # Errors
/// What the front door or the registry refused, at the config line of the declaration.
pub(crate) fn build_each(
    api: &ApiConfig,
    platform: &Platform,
    scripts: Option<(&Scripts, usize)>,
    registry: &mut Registry,
) -> Result<Api, ConfigError> {
    let base = api.base_path();
    let at_api = |key: &str, message: String| ConfigError::at_line(api.line, key, message);
    let owner = |what: &str, key| Owner::new(format!("{what} at line {}", api.line), api.line, key);
    let whole = registry.owner(owner("the [[api]]", "api.api_path"));
    registry
        .door(Reach::Area(base.clone()), &base, whole)
        .map_err(Clash::refusal)?;
    // The API's router answers its bare base path too (`/api`, `/api/`).
    registry
        .door(Reach::Route(base.clone()), &base, whole)
        .map_err(Clash::refusal)?;
    let mut rest =
        Api::new(api_options(api), platform.clone()).map_err(|e| at_api("api", e.to_string()))?;
    let login = registry.owner(owner(
        "use_default_auth of the [[api]]",
        "api.use_default_auth",
    ));
    claim(registry, &rest.describe(), &base, login)?;
    // The download-token route is the API's, added with the first collection that has files.
    let files_token = format!("{base}files/token");
    let token_owner = registry.owner(owner("the file token route of the [[api]]", "api"));
    for collection in &api.collections {
        let owner = registry.owner(Owner::new(
            format!(
                "the [[api.collection]] {:?} at line {}",
                collection.name, collection.line
            ),
            collection.line,
            "api.collection.path",
        ));
        let routes = alone(api, platform, |scratch| {
            scratch.add_collection(
                platform.collection(&collection.name),
                collection_options(collection),
            )
        })
        .map_err(|e| ConfigError::at_line(collection.line, "api.collection", e.to_string()))?;
        let (token, own): (Vec<RouteDoc>, Vec<RouteDoc>) = routes
            .into_iter()
            .partition(|r| r.path == files_token && !collection.files.is_empty());
        claim(registry, &token, &base, token_owner)?;
        claim(registry, &own, &base, owner)?;
        let mut options = collection_options(collection);
        if collection.is_users() {
            options = guard_accounts(options, collection, platform);
        }
        rest.add_collection(platform.collection(&collection.name), options)
            .map_err(|e| ConfigError::at_line(collection.line, "api.collection", e.to_string()))?;
    }
    if let Some((scripts, line)) = scripts {
        add_script_routes(&mut rest, &base, scripts, line, registry)?;
    }
    if api.batch_limit > 0 {
        let mut options = portico_routes::BatchOptions::default();
        options.max_requests = api.batch_limit;
        let routes = alone(api, platform, |scratch| scratch.add_batch(options.clone()))
            .map_err(|e| at_api("api.batch_limit", e.to_string()))?;
        let batch = registry.owner(owner("the batch route of the [[api]]", "api.batch_limit"));
        claim(registry, &routes, &base, batch)?;
        rest.add_batch(options)
            .map_err(|e| at_api("api.batch_limit", e.to_string()))?;
    }
    Ok(rest)
}

/// Adds the routes of `scripts` (with the line of `[scripts]`) that name the API of `base` to
/// `rest`, each claimed in `registry` first; the routes door makes each a route
/// (`portico_routes::scripts`).
///
/// # Errors
/// What the registry or the front door refused, at the line of `[scripts]`.
#[cfg(feature = "scripts")]
fn add_script_routes(
    rest: &mut Api,
    base: &str,
    scripts: &Scripts,
    line: usize,
    registry: &mut Registry,
) -> Result<(), ConfigError> {
    for route in &scripts.definitions().routes {
        if portico_routes::scripts::route_base(route) != base {
            continue;
        }
        let owner = Owner::new(
            format!("the script route at {}", route.place),
            line,
            "scripts",
        );
        let owner = registry.owner(owner);
        let path = format!("{base}{}", route.path.trim_matches('/'));
        registry
            .door(Reach::Route(path), base, owner)
            .map_err(Clash::refusal)?;
        portico_routes::scripts::add_route(rest, scripts, route).map_err(|e| {
            let message = format!("route added at {}: {e}", route.place);
            ConfigError::at_line(line, "scripts", crate::Error::Setup(message).to_string())
        })?;
    }
    Ok(())
}

/// The script routes of a build without the `scripts` feature: none (no [`Scripts`] value
/// exists).
#[cfg(not(feature = "scripts"))]
fn add_script_routes(
    _rest: &mut Api,
    _base: &str,
    scripts: &Scripts,
    _line: usize,
    _registry: &mut Registry,
) -> Result<(), ConfigError> {
    match *scripts {}
}

/// The routes `add` gives an API of `api`'s base path on its own (without login routes), so
/// they are claimed before the real API gets them.
fn alone(
    api: &ApiConfig,
    platform: &Platform,
    add: impl FnOnce(&mut Api) -> portico_routes::Result<()>,
) -> portico_routes::Result<Vec<RouteDoc>> {
    let mut options = api_options(api);
    options.use_default_auth = false;
    let mut scratch = Api::new(options, platform.clone())?;
    add(&mut scratch)?;
    Ok(scratch.describe())
}

/// Claims the path of every route in `routes` for `owner`, a door declaration under `base`.
fn claim(
    registry: &mut Registry,
    routes: &[RouteDoc],
    base: &str,
    owner: OwnerId,
) -> Result<(), ConfigError> {
    for route in routes {
        registry
            .door(Reach::Route(route.path.clone()), base, owner)
            .map_err(Clash::refusal)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Config;

    fn first_api(text: &str) -> ApiConfig {
        match Config::parse(text) {
            Ok(config) => config.apis[0].clone(),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn every_api_key_reaches_the_front_door() {
        let api = first_api(
            "[[api]]\napi_path = \"x/\"\nversion = \"v3\"\nuse_default_auth = true\npretty_json = true\nenable_cors = true\ndefault_headers = { \"X-A\" = \"1\" }\nauth_failure_delay_ms = 250\nlogin_rate_limit = { attempts = 7, per_seconds = 30 }\ncors_origins = [\"https://a.example\"]\n",
        );
        let options = api_options(&api);
        assert_eq!(
            (options.api_path.as_str(), options.version.as_deref()),
            ("x/", Some("v3"))
        );
        assert!(options.use_default_auth && options.pretty_json && options.enable_cors);
        assert_eq!(
            options.default_headers,
            vec![("X-A".to_owned(), "1".to_owned())]
        );
        let delay = Duration::from_millis(250);
        assert_eq!(
            options.auth_failure_delay,
            DelayRange {
                min: delay,
                max: delay
            }
        );
        assert_eq!(
            options.login_rate_limit.per_identity,
            Some(RateLimit::new(7, Duration::from_secs(30)))
        );
        assert_eq!(
            options.login_rate_limit.per_address,
            LoginRateLimit::default().per_address
        );
        assert_eq!(
            options.cors.allow_origins,
            Some(vec!["https://a.example".to_owned()])
        );
    }

    #[test]
    fn unset_keys_keep_the_front_door_defaults() {
        let options = api_options(&first_api("[[api]]\n"));
        let defaults = ApiOptions::default();
        assert_eq!(options.auth_failure_delay, defaults.auth_failure_delay);
        assert_eq!(options.login_rate_limit, defaults.login_rate_limit);
        assert!(options.enable_cors && !options.use_default_auth && !options.pretty_json);
        assert_eq!(options.cors.allow_origins, None);
    }
}
