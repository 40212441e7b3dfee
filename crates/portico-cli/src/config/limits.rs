//! `[[limits]]`: request limits per route, counted per client address or per account in the
//! database (so every instance on one database shares the counts, as login limits do).

use serde::Deserialize;
use toml::Spanned;

/// `[[limits]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRouteLimit {
    path: Spanned<String>,
    per: Option<Spanned<String>>,
    requests: Spanned<u64>,
    window_secs: Spanned<u64>,
    methods: Option<Spanned<Vec<String>>>,
}

/// Whom a `[[limits]]` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitPer {
    /// `per = "address"` (the default): each client address.
    Address,
    /// `per = "account"`: each logged-in account (a request without a valid token counts for
    /// its client address).
    Account,
}

/// One `[[limits]]`: at most `requests` per `window` to the matching paths, per address or
/// per account; past it 429 with `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteLimit {
    /// `path`: one path (`/auth/email-code`) or every path below a prefix (`/auth/*`).
    pub path: String,
    /// `per`: `address` (default) or `account`.
    pub per: LimitPer,
    /// `requests`: how many in a window (1 to 1,000,000).
    pub requests: u32,
    /// `window_secs`: the sliding window (1 second to a day).
    pub window: std::time::Duration,
    /// `methods`: the methods counted (default all), uppercase.
    pub methods: Vec<String>,
}

impl RouteLimit {
    /// True when a request of `method` to `path` counts against this limit.
    pub fn applies(&self, method: &str, path: &str) -> bool {
        let path_matches = match self.path.strip_suffix("/*") {
            Some(prefix) => {
                path == prefix
                    || path
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with('/'))
            }
            None => path == self.path,
        };
        path_matches && (self.methods.is_empty() || self.methods.iter().any(|m| m == method))
    }
}

/// A mistake: where, which key, why.
type Mistake = (std::ops::Range<usize>, &'static str, String);

impl RouteLimit {
    /// Checks one `[[limits]]`; the mistakes come back with their places.
    pub(crate) fn check(raw: RawRouteLimit, mistakes: &mut Vec<Mistake>) -> Option<RouteLimit> {
        let before = mistakes.len();
        let path = raw.path.get_ref().trim().to_owned();
        let pattern = path.strip_suffix("/*").unwrap_or(&path);
        if !path.starts_with('/')
            || pattern.contains('*')
            || path.contains(char::is_whitespace)
            || path.contains('?')
        {
            mistakes.push((
                raw.path.span(),
                "limits.path",
                "write a path (\"/auth/email-code\") or a prefix and /* (\"/auth/*\")".into(),
            ));
        }
        let per = match raw.per.as_ref().map(|p| p.get_ref().as_str()) {
            None | Some("address") => LimitPer::Address,
            Some("account") => LimitPer::Account,
            Some(_) => {
                if let Some(p) = &raw.per {
                    mistakes.push((
                        p.span(),
                        "limits.per",
                        "write \"address\" or \"account\"".into(),
                    ));
                }
                LimitPer::Address
            }
        };
        let requests = u32::try_from(*raw.requests.get_ref())
            .ok()
            .filter(|n| (1..=1_000_000).contains(n));
        if requests.is_none() {
            mistakes.push((
                raw.requests.span(),
                "limits.requests",
                "must be between 1 and 1000000".into(),
            ));
        }
        let window = *raw.window_secs.get_ref();
        if !(1..=86_400).contains(&window) {
            mistakes.push((
                raw.window_secs.span(),
                "limits.window_secs",
                "must be between 1 and 86400".into(),
            ));
        }
        let methods: Vec<String> = raw
            .methods
            .as_ref()
            .map(|m| {
                m.get_ref()
                    .iter()
                    .map(|s| s.trim().to_ascii_uppercase())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(m) = &raw.methods
            && methods
                .iter()
                .any(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_uppercase()))
        {
            mistakes.push((
                m.span(),
                "limits.methods",
                "list methods, as in [\"POST\"]".into(),
            ));
        }
        (mistakes.len() == before).then(|| RouteLimit {
            path,
            per,
            requests: requests.unwrap_or(1),
            window: std::time::Duration::from_secs(window),
            methods,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_prefixes_match() {
        let limit = |path: &str, methods: &[&str]| RouteLimit {
            path: path.into(),
            per: LimitPer::Address,
            requests: 1,
            window: std::time::Duration::from_secs(1),
            methods: methods.iter().map(|m| (*m).to_owned()).collect(),
        };
        let auth = limit("/auth/*", &[]);
        assert!(auth.applies("GET", "/auth") && auth.applies("POST", "/auth/email-code"));
        assert!(!auth.applies("POST", "/authors") && !auth.applies("POST", "/api/auth/x"));
        let one = limit("/auth/guest", &["POST"]);
        assert!(one.applies("POST", "/auth/guest"));
        assert!(!one.applies("GET", "/auth/guest") && !one.applies("POST", "/auth/guest/upgrade"));
    }
}
