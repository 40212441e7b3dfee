//! `[[accounts.oauth2]]` (GitHub, GitLab, Discord, or explicit endpoints) and the presets of
//! `[[accounts.oidc]]` (Google, Microsoft; Apple refused with the reason).

use std::ops::Range;

use portico_platform::{OAuth2Preset, OAuth2Profile, OAuth2Provider};
use serde::Deserialize;
use toml::Spanned;

use super::Mistake;

/// The OpenID Connect presets that work, as written.
pub(crate) const OIDC_PRESETS: [&str; 2] = ["google", "microsoft"];

/// Microsoft's personal-accounts tenant, whose metadata names another issuer than its address.
const MICROSOFT_CONSUMERS: &str = "consumers";

/// What `apple` needs that Portico does not do yet, said when it is asked for.
const APPLE_REFUSAL: &str = "preset \"apple\" is not supported: Sign in with Apple sends the \
     browser back with a cross-site POST (response_mode=form_post, required as soon as email \
     or name is asked for), which the SameSite=Lax state cookie does not survive, and its client \
     secret is a JWT signed with your ES256 key that expires within 6 months; neither is \
     implemented";

/// `[[accounts.oidc]]`'s `preset` and `tenant` resolved: the issuer and default scopes.
///
/// `preset` is `google` (`https://accounts.google.com`) or `microsoft`
/// (`https://login.microsoftonline.com/{tenant}/v2.0`, `tenant` default `common`); a mistake
/// under the key at fault otherwise.
pub(crate) fn oidc_preset(
    preset: &Spanned<String>,
    tenant: Option<&Spanned<String>>,
    mistakes: &mut Vec<Mistake>,
) -> Option<(String, Vec<String>)> {
    let scopes = ["openid", "email", "profile"].map(str::to_owned).to_vec();
    let name = preset.get_ref().trim();
    if let Some(tenant) = tenant.filter(|_| name != "microsoft") {
        mistakes.push((
            tenant.span(),
            "accounts.oidc.tenant",
            "tenant goes with preset = \"microsoft\" only".into(),
        ));
    }
    match name {
        "google" => Some(("https://accounts.google.com".into(), scopes)),
        "microsoft" => {
            let tenant_name = tenant.map_or("common", |t| t.get_ref().trim());
            let good = !tenant_name.is_empty()
                && tenant_name.len() <= 64
                && tenant_name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            let span = tenant.map_or(preset.span(), Spanned::span);
            if !good {
                mistakes.push((
                    span,
                    "accounts.oidc.tenant",
                    "write \"common\", \"organizations\", a tenant id or a tenant's domain".into(),
                ));
                return None;
            }
            if tenant_name == MICROSOFT_CONSUMERS {
                mistakes.push((
                    span,
                    "accounts.oidc.tenant",
                    "tenant \"consumers\" is not supported: Microsoft's metadata for it names \
                     another issuer than its address; \"common\" (the default) signs in \
                     personal accounts too"
                        .into(),
                ));
                return None;
            }
            Some((
                format!("https://login.microsoftonline.com/{tenant_name}/v2.0"),
                scopes,
            ))
        }
        "apple" => {
            mistakes.push((preset.span(), "accounts.oidc.preset", APPLE_REFUSAL.into()));
            None
        }
        other => {
            mistakes.push((
                preset.span(),
                "accounts.oidc.preset",
                format!(
                    "unknown preset {other:?}: write {} (or no preset and an issuer)",
                    quoted(&OIDC_PRESETS)
                ),
            ));
            None
        }
    }
}

/// `"a", "b" or "c"`.
fn quoted(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// `[[accounts.oauth2]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOAuth2 {
    name: Option<Spanned<String>>,
    preset: Option<Spanned<String>>,
    client_id: Spanned<String>,
    client_secret_env: Spanned<String>,
    base_url: Option<Spanned<String>>,
    api_url: Option<Spanned<String>>,
    auth_url: Option<Spanned<String>>,
    token_url: Option<Spanned<String>>,
    userinfo_url: Option<Spanned<String>>,
    scopes: Option<Spanned<Vec<String>>>,
    pkce: Option<bool>,
    id_field: Option<Spanned<String>>,
    email_field: Option<Spanned<String>>,
    email_verified_field: Option<Spanned<String>>,
}

/// `[[accounts.oauth2]]`: an OAuth2 provider users may sign in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth2Section {
    /// `name` (default: the preset's): the provider's part of `/auth/oauth2/{name}`.
    pub name: String,
    /// `preset`: `github`, `gitlab` or `discord`; `None` for explicit endpoints.
    pub preset: Option<String>,
    /// `client_id`.
    pub client_id: String,
    /// `client_secret_env`: the environment variable holding the client secret (read by
    /// `serve`, never written in the file).
    pub client_secret_env: String,
    /// The provider as `serve` uses it (its secret empty until `serve` reads it): the preset's
    /// endpoints under `base_url`/`api_url`, or `auth_url`, `token_url`, `userinfo_url` and
    /// the `*_field` mapping; `scopes` and `pkce`.
    pub provider: OAuth2Provider,
}

/// Checks the address under `key` (`https://`, or `http://` on this machine).
fn provider_url(url: &Spanned<String>, key: &'static str, mistakes: &mut Vec<Mistake>) -> String {
    let text = url.get_ref().trim().trim_end_matches('/').to_owned();
    if !portico_platform::acceptable_provider_url(&text) {
        mistakes.push((
            url.span(),
            key,
            "write an https:// address (http:// only on this machine: 127.0.0.1, localhost)".into(),
        ));
    }
    text
}

/// A field name of the user reply (letters, digits, `_`, `-`, dots between).
fn field_name(
    raw: Option<&Spanned<String>>,
    default: &str,
    key: &'static str,
    mistakes: &mut Vec<Mistake>,
) -> String {
    let Some(raw) = raw else {
        return default.to_owned();
    };
    let text = raw.get_ref().trim();
    let good = !text.is_empty()
        && text.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if !good {
        mistakes.push((
            raw.span(),
            key,
            "write a field of the user reply, as in \"id\" or \"data.id\"".into(),
        ));
    }
    text.to_owned()
}

/// A key, and where it is written when it is.
type KeyAt = (&'static str, Option<Range<usize>>);

/// The keys that go with no preset only, or with a preset only: a mistake for each one
/// written where it does not belong.
fn misplaced(raw: &RawOAuth2, preset: bool, mistakes: &mut Vec<Mistake>) {
    let (keys, why): (Vec<KeyAt>, &str) = if preset {
        (
            vec![
                (
                    "accounts.oauth2.auth_url",
                    raw.auth_url.as_ref().map(Spanned::span),
                ),
                (
                    "accounts.oauth2.token_url",
                    raw.token_url.as_ref().map(Spanned::span),
                ),
                (
                    "accounts.oauth2.userinfo_url",
                    raw.userinfo_url.as_ref().map(Spanned::span),
                ),
                (
                    "accounts.oauth2.id_field",
                    raw.id_field.as_ref().map(Spanned::span),
                ),
                (
                    "accounts.oauth2.email_field",
                    raw.email_field.as_ref().map(Spanned::span),
                ),
                (
                    "accounts.oauth2.email_verified_field",
                    raw.email_verified_field.as_ref().map(Spanned::span),
                ),
            ],
            "the preset sets this; to move its addresses write base_url (and api_url)",
        )
    } else {
        (
            vec![
                (
                    "accounts.oauth2.base_url",
                    raw.base_url.as_ref().map(Spanned::span),
                ),
                (
                    "accounts.oauth2.api_url",
                    raw.api_url.as_ref().map(Spanned::span),
                ),
            ],
            "goes with a preset only; without one write auth_url, token_url and userinfo_url",
        )
    };
    for (key, span) in keys {
        if let Some(span) = span {
            mistakes.push((span, key, why.into()));
        }
    }
}

/// Checks every `[[accounts.oauth2]]`; `server_url` is true when `accounts.server_url` is set
/// (the providers need it).
pub(crate) fn check_all_oauth2(
    raw: Vec<Spanned<RawOAuth2>>,
    server_url: bool,
    mistakes: &mut Vec<Mistake>,
) -> Vec<OAuth2Section> {
    if let (Some(first), false) = (raw.first(), server_url) {
        mistakes.push((
            first.span(),
            "accounts.server_url",
            "[[accounts.oauth2]] needs accounts.server_url: the address clients reach this \
             server at, as in \"https://api.example.com\" (providers send the browser back \
             to {server_url}/auth/oauth2/{name}/callback)"
                .into(),
        ));
    }
    let mut taken = Vec::new();
    raw.into_iter()
        .map(|p| check_oauth2(p, &mut taken, mistakes))
        .collect()
}

/// Checks one `[[accounts.oauth2]]` (`span`: where it is); `taken` holds the names before it.
fn check_oauth2(
    raw: Spanned<RawOAuth2>,
    taken: &mut Vec<String>,
    mistakes: &mut Vec<Mistake>,
) -> OAuth2Section {
    let span = raw.span();
    let raw = raw.into_inner();
    let preset = raw.preset.as_ref().and_then(|p| {
        let found = OAuth2Preset::parse(p.get_ref().trim());
        if found.is_none() {
            mistakes.push((
                p.span(),
                "accounts.oauth2.preset",
                format!(
                    "unknown preset {:?}: write {} (or no preset and auth_url, token_url, \
                     userinfo_url)",
                    p.get_ref(),
                    quoted(&OAuth2Preset::NAMES)
                ),
            ));
        }
        found
    });
    misplaced(&raw, raw.preset.is_some(), mistakes);
    let name = check_name(&raw, preset, span.clone(), taken, mistakes);
    let (client_id, client_secret_env) = super::client_credentials(
        &raw.client_id,
        &raw.client_secret_env,
        [
            "accounts.oauth2.client_id",
            "accounts.oauth2.client_secret_env",
        ],
        "GITHUB_CLIENT_SECRET",
        mistakes,
    );
    let mut provider = match preset {
        Some(preset) => {
            let base = raw
                .base_url
                .as_ref()
                .map(|u| provider_url(u, "accounts.oauth2.base_url", mistakes));
            let api = raw
                .api_url
                .as_ref()
                .map(|u| provider_url(u, "accounts.oauth2.api_url", mistakes));
            OAuth2Provider::preset(
                preset,
                &name,
                &client_id,
                "",
                base.as_deref(),
                api.as_deref(),
            )
        }
        None => explicit(&raw, &name, &client_id, span, mistakes),
    };
    if let Some(scopes) = &raw.scopes {
        let list: Vec<String> = scopes
            .get_ref()
            .iter()
            .map(|s| s.trim().to_owned())
            .collect();
        if list
            .iter()
            .any(|s| s.is_empty() || s.contains(char::is_whitespace))
        {
            mistakes.push((
                scopes.span(),
                "accounts.oauth2.scopes",
                "list single-word scopes".into(),
            ));
        }
        provider = provider.scopes(list);
    }
    provider = provider.pkce(raw.pkce.unwrap_or(true));
    OAuth2Section {
        name,
        preset: preset.map(|p| p.name().to_owned()),
        client_id,
        client_secret_env,
        provider,
    }
}

/// `name`, or the preset's; a mistake when it is no good or taken.
fn check_name(
    raw: &RawOAuth2,
    preset: Option<OAuth2Preset>,
    span: Range<usize>,
    taken: &mut Vec<String>,
    mistakes: &mut Vec<Mistake>,
) -> String {
    let (name, span) = match (&raw.name, preset) {
        (Some(name), _) => (name.get_ref().trim().to_owned(), name.span()),
        (None, Some(preset)) => (preset.name().to_owned(), span),
        (None, None) => {
            if raw.preset.is_none() {
                mistakes.push((
                    span,
                    "accounts.oauth2.name",
                    "write a name (the part of /auth/oauth2/{name}), as in \"github\"".into(),
                ));
            }
            return String::new();
        }
    };
    let good = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !good || name == "exchange" {
        mistakes.push((
            span,
            "accounts.oauth2.name",
            "write lowercase letters, digits, - and _ (not \"exchange\"), as in \"github\"".into(),
        ));
    } else if taken.contains(&name) {
        mistakes.push((
            span,
            "accounts.oauth2.name",
            format!("another [[accounts.oauth2]] provider is named {name:?} (set name to tell them apart)"),
        ));
    }
    taken.push(name.clone());
    name
}

/// A provider of no preset: `auth_url`, `token_url` and `userinfo_url` required, the reply
/// read with `id_field` (default `id`), `email_field` (default `email`) and
/// `email_verified_field` (none: never verified).
fn explicit(
    raw: &RawOAuth2,
    name: &str,
    client_id: &str,
    span: Range<usize>,
    mistakes: &mut Vec<Mistake>,
) -> OAuth2Provider {
    let mut url = |value: &Option<Spanned<String>>, key: &'static str| match value {
        Some(v) => provider_url(v, key, mistakes),
        None => {
            if raw.preset.is_none() {
                mistakes.push((
                    span.clone(),
                    key,
                    format!(
                        "write a preset ({}) or the provider's three addresses: auth_url, \
                         token_url and userinfo_url",
                        quoted(&OAuth2Preset::NAMES)
                    ),
                ));
            }
            String::new()
        }
    };
    let auth = url(&raw.auth_url, "accounts.oauth2.auth_url");
    let token = url(&raw.token_url, "accounts.oauth2.token_url");
    let userinfo = url(&raw.userinfo_url, "accounts.oauth2.userinfo_url");
    let profile = OAuth2Profile::Fields {
        id: field_name(
            raw.id_field.as_ref(),
            "id",
            "accounts.oauth2.id_field",
            mistakes,
        ),
        email: field_name(
            raw.email_field.as_ref(),
            "email",
            "accounts.oauth2.email_field",
            mistakes,
        ),
        email_verified: raw.email_verified_field.as_ref().map(|f| {
            field_name(
                Some(f),
                "",
                "accounts.oauth2.email_verified_field",
                mistakes,
            )
        }),
    };
    OAuth2Provider::new(name, [&auth, &token, &userinfo], client_id, "").profile(profile)
}
