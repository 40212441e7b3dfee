//! `[admin]`: the admin page `portico serve` mounts (see `portico_admin`).

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

/// `[admin]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAdmin {
    enabled: Option<bool>,
    path: Option<Spanned<String>>,
    role: Option<Spanned<String>>,
}

/// `[admin]`: whether, where and for whom the admin page is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// `enabled` (default true).
    pub enabled: bool,
    /// `path` (default `/_/`).
    pub path: String,
    /// `role` a user must hold to use the page (default `admin`).
    pub role: String,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            enabled: true,
            path: portico_admin::DEFAULT_PATH.to_owned(),
            role: portico_admin::DEFAULT_ROLE.to_owned(),
        }
    }
}

/// A mistake in `[admin]`: where, which key, why.
pub(crate) type AdminMistake = (Range<usize>, &'static str, String);

impl AdminConfig {
    /// Checks `[admin]`; the mistakes come back with their places.
    pub(crate) fn check(raw: RawAdmin) -> (AdminConfig, Vec<AdminMistake>) {
        let mut mistakes = Vec::new();
        let mut config = AdminConfig {
            enabled: raw.enabled.unwrap_or(true),
            ..AdminConfig::default()
        };
        if let Some(path) = raw.path {
            match portico_admin::normalize_path(path.get_ref()) {
                Ok(prefix) if prefix.is_empty() => mistakes.push((
                    path.span(),
                    "admin.path",
                    "the admin page needs a path of its own, such as \"/_/\" or \"/admin\"".into(),
                )),
                Ok(prefix) => config.path = format!("{prefix}/"),
                Err(err) => mistakes.push((path.span(), "admin.path", err.to_string())),
            }
        }
        if let Some(role) = raw.role {
            let name = role.get_ref().trim();
            if name.is_empty() {
                mistakes.push((
                    role.span(),
                    "admin.role",
                    "the role may not be empty".into(),
                ));
            } else {
                config.role = name.to_owned();
            }
        }
        (config, mistakes)
    }
}
