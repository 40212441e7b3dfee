//! What `portico serve` serves with no config file: every collection the database holds,
//! read-only, at `/api/<name>` and `/api/<name>/:id`, to logged-in callers, with the default
//! login and logout at `/api/login` and `/api/logout`. The `users` collection is left out
//! (account records stay private); `portico users add` creates the first account.

use portico_platform::Platform;
use portico_routes::Op;

use crate::config::{ApiConfig, CollectionConfig, Config, EndpointAuth};

/// The base path of the zero-config API.
pub const ZERO_CONFIG_API_PATH: &str = "api/";

/// The config `serve` uses without a config file: see the module docs.
///
/// # Errors
/// [`crate::Error::Database`] when the store cannot list its collections.
pub async fn zero_config(platform: &Platform, url: &str) -> crate::Result<Config> {
    let names =
        platform
            .store()
            .list_collections()
            .await
            .map_err(|err| crate::Error::Database {
                url: url.to_owned(),
                message: err.to_string(),
            })?;
    let collections = names
        .into_iter()
        .filter(|name| name != portico_platform::USERS && is_path_segment(name))
        .map(|name| CollectionConfig {
            path: name.clone(),
            name,
            auth_required: true,
            auth_optional: false,
            reads_unstated: false,
            role_required: Vec::new(),
            endpoints: vec![
                (Op::GetAll, EndpointAuth::default()),
                (Op::Get, EndpointAuth::default()),
            ],
            owner_field: None,
            max_page_size: None,
            admin_role: Vec::new(),
            timestamps: false,
            self_only: false,
            schema: None,
            field_rules: portico_platform::FieldRules::new(),
            relations: portico_platform::Relations::new(),
            search: Vec::new(),
            indexes: Vec::new(),
            files: std::collections::BTreeMap::new(),
            line: 0,
        })
        .collect();
    Ok(Config {
        apis: vec![ApiConfig {
            trusted_proxies: portico_edge::TrustedProxies::none(),
            api_path: ZERO_CONFIG_API_PATH.to_owned(),
            version: None,
            use_default_auth: true,
            pretty_json: false,
            enable_cors: true,
            default_headers: Vec::new(),
            auth_failure_delay: None,
            login_rate_limit: None,
            cors_origins: None,
            // Read-only: nothing to batch.
            batch_limit: 0,
            collections,
            line: 0,
        }],
        ..Config::default()
    })
}

/// Names that can be served as one URL path segment as they are.
fn is_path_segment(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
}
