//! A provider's metadata (`{issuer}/.well-known/openid-configuration`) and signing keys (its
//! `jwks_uri`), fetched on first use and kept for an hour; the keys are fetched again, at most
//! every 30 seconds, when an ID token names a key not among them (the provider rotated).

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use serde::Deserialize;

/// How long metadata and keys are kept.
pub(super) const KEEP: Duration = Duration::from_secs(3600);
/// The shortest time between two key fetches caused by an unknown key.
pub(super) const REFETCH_KEYS: Duration = Duration::from_secs(30);
/// The largest metadata, keys, token or userinfo reply read from a provider.
const MAX_REPLY: usize = 256 * 1024;

/// What the relying party needs of a provider's metadata.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Metadata {
    pub(super) issuer: String,
    pub(super) authorization_endpoint: String,
    pub(super) token_endpoint: String,
    pub(super) jwks_uri: String,
    #[serde(default)]
    pub(super) userinfo_endpoint: Option<String>,
    #[serde(default)]
    pub(super) token_endpoint_auth_methods_supported: Option<Vec<String>>,
}

impl Metadata {
    /// True when the client authenticates with HTTP Basic at the token endpoint (the default
    /// of the spec); false when the provider takes `client_secret_post` only.
    pub(super) fn basic_auth(&self) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => {
                methods.iter().any(|m| m == "client_secret_basic")
                    || !methods.iter().any(|m| m == "client_secret_post")
            }
            None => true,
        }
    }
}

/// A provider as fetched.
#[derive(Debug, Clone)]
pub(super) struct Discovered {
    pub(super) metadata: Metadata,
    pub(super) keys: JwkSet,
    pub(super) fetched: Instant,
    pub(super) keys_fetched: Instant,
}

/// The placeholder a multi-tenant provider's metadata puts in its issuer: Microsoft's
/// `https://login.microsoftonline.com/{tenantid}/v2.0` (tenants `common` and
/// `organizations`), whose ID tokens name the person's tenant in `iss` and `tid`.
pub(super) const TENANT_PLACEHOLDER: &str = "{tenantid}";

/// True when `issuer` is `expected`, or `expected` is a template with
/// [`TENANT_PLACEHOLDER`] and `issuer` is it with one tenant (letters, digits, `-`, `.`) in
/// its place.
pub(super) fn issuer_matches(expected: &str, issuer: &str) -> bool {
    let Some((before, after)) = expected.split_once(TENANT_PLACEHOLDER) else {
        return expected == issuer;
    };
    if issuer.len() <= before.len() + after.len()
        || !issuer.starts_with(before)
        || !issuer.ends_with(after)
    {
        return false;
    }
    issuer
        .get(before.len()..issuer.len() - after.len())
        .is_some_and(|tenant| {
            tenant
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        })
}

/// True for an address a provider may be reached at: `https://`, or `http://` on this machine
/// (a provider run for development or tests).
pub fn acceptable_url(url: &str) -> bool {
    if url.starts_with("https://") {
        return url.len() > "https://".len();
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if !h.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// Reads a JSON reply of at most [`MAX_REPLY`] bytes.
pub(in crate::accounts::lifecycle) async fn json_reply<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
    what: &str,
) -> Result<T, String> {
    let status = response.status();
    if response
        .content_length()
        .is_some_and(|n| n > MAX_REPLY as u64)
    {
        return Err(format!("{what}: the reply is too large"));
    }
    let body = response.bytes().await.map_err(|e| format!("{what}: {e}"))?;
    if body.len() > MAX_REPLY {
        return Err(format!("{what}: the reply is too large"));
    }
    if !status.is_success() {
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let code = error
            .get("error")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("no error code");
        return Err(format!("{what}: HTTP {status} ({code})"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{what}: not the expected JSON: {e}"))
}

/// Fetches the metadata of `issuer` and its keys; the metadata must name the same issuer and
/// acceptable endpoints.
pub(super) async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Discovered, String> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let response = http
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("discovery at {url}: {e}"))?;
    let metadata: Metadata = json_reply(response, "discovery").await?;
    // A multi-tenant template (see TENANT_PLACEHOLDER) stands for the configured tenant.
    if !issuer_matches(&metadata.issuer, issuer) {
        return Err(format!(
            "discovery: the provider says its issuer is {:?}, not {issuer:?}",
            metadata.issuer
        ));
    }
    for (name, url) in [
        ("authorization_endpoint", &metadata.authorization_endpoint),
        ("token_endpoint", &metadata.token_endpoint),
        ("jwks_uri", &metadata.jwks_uri),
    ] {
        if !acceptable_url(url) {
            return Err(format!("discovery: {name} {url:?} is not https://"));
        }
    }
    if let Some(url) = &metadata.userinfo_endpoint
        && !acceptable_url(url)
    {
        return Err(format!(
            "discovery: userinfo_endpoint {url:?} is not https://"
        ));
    }
    let keys = fetch_keys(http, &metadata.jwks_uri).await?;
    let now = Instant::now();
    Ok(Discovered {
        metadata,
        keys,
        fetched: now,
        keys_fetched: now,
    })
}

/// Fetches the key set at `jwks_uri`.
pub(super) async fn fetch_keys(http: &reqwest::Client, jwks_uri: &str) -> Result<JwkSet, String> {
    let response = http
        .get(jwks_uri)
        .send()
        .await
        .map_err(|e| format!("keys at {jwks_uri}: {e}"))?;
    json_reply(response, "keys").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_https_or_on_this_machine() {
        assert!(acceptable_url("https://id.example.com"));
        assert!(acceptable_url("http://127.0.0.1:8080/realms/x"));
        assert!(acceptable_url("http://localhost"));
        assert!(acceptable_url("http://[::1]:9000"));
        assert!(!acceptable_url("http://id.example.com"));
        assert!(!acceptable_url("http://127.0.0.1.example.com/"));
        assert!(!acceptable_url("https://"));
        assert!(!acceptable_url("ftp://127.0.0.1"));
    }

    #[test]
    fn a_tenant_template_matches_one_tenant() {
        let template = "https://login.microsoftonline.com/{tenantid}/v2.0";
        assert!(issuer_matches(
            template,
            "https://login.microsoftonline.com/common/v2.0"
        ));
        assert!(issuer_matches(
            template,
            "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"
        ));
        assert!(!issuer_matches(
            template,
            "https://login.microsoftonline.com/a/b/v2.0"
        ));
        assert!(!issuer_matches(
            template,
            "https://login.microsoftonline.com//v2.0"
        ));
        assert!(!issuer_matches(template, "https://evil.example/x/v2.0"));
        assert!(issuer_matches("https://id.example", "https://id.example"));
        assert!(!issuer_matches("https://id.example", "https://id.example/"));
    }
}
