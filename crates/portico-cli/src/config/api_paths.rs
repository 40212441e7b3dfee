//! Two route APIs on one base path, or one at the root beside the auto API: each would answer
//! every path of the other.

use super::{Config, ConfigError};

/// Every `[[api]]` whose base path another `[[api]]` (or, at the root, the auto API) has.
pub(super) fn clashes(config: &Config) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    for (index, api) in config.apis.iter().enumerate() {
        let base = api.base_path();
        if let Some(first) = config.apis[..index].iter().find(|a| a.base_path() == base) {
            errors.push(ConfigError {
                line: api.line,
                column: 1,
                key: "api.api_path".to_owned(),
                message: format!(
                    "two [[api]] tables on one base path {base} (the other is at line {}); give one a `version` or another `api_path`, or put their collections in one [[api]]",
                    first.line
                ),
            });
        }
        if base == "/"
            && let Some(auto) = &config.auto
        {
            errors.push(ConfigError {
                    line: api.line,
                    column: 1,
                    key: "api.api_path".to_owned(),
                    message: format!(
                        "an [[api]] at the root path / would answer every path of the auto API ([auto] at line {}); give it an `api_path`",
                        auto.line
                    ),
                });
        }
    }
    errors
}
