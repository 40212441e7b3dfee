//! `[accounts]` and `[email]`: the account lifecycle (verification, password reset, email
//! change, `[[accounts.oidc]]` and `[[accounts.oauth2]]` providers) and the SMTP server its
//! mail goes through.

mod providers;

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use portico_platform::{Limit, MAIL_NAMES, MailLimits, MailTemplate, MailTemplates};
use serde::Deserialize;
use toml::Spanned;

pub use providers::OAuth2Section;

/// `{ attempts = 5, per_seconds = 3600 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimit {
    attempts: u32,
    per_seconds: u64,
}

/// `[accounts]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAccounts {
    app_url: Option<Spanned<String>>,
    require_verified_email: Option<bool>,
    password_min_length: Option<Spanned<u64>>,
    verify_email_token_secs: Option<Spanned<u64>>,
    password_reset_token_secs: Option<Spanned<u64>>,
    email_change_token_secs: Option<Spanned<u64>>,
    mail_rate_limit_per_address: Option<Spanned<RawLimit>>,
    mail_rate_limit_per_email: Option<Spanned<RawLimit>>,
    oidc_rate_limit_per_address: Option<Spanned<RawLimit>>,
    email_code_signup: Option<bool>,
    email_code_token_secs: Option<Spanned<u64>>,
    email_code_digits: Option<Spanned<u64>>,
    email_code_attempts: Option<Spanned<u64>>,
    email_code_rate_limit_per_address: Option<Spanned<RawLimit>>,
    email_code_rate_limit_per_email: Option<Spanned<RawLimit>>,
    allow_guests: Option<bool>,
    guest_ttl_days: Option<Spanned<f64>>,
    guest_rate_limit_per_address: Option<Spanned<RawLimit>>,
    impersonation_token_secs: Option<Spanned<u64>>,
    server_url: Option<Spanned<String>>,
    oidc: Option<Vec<Spanned<RawOidc>>>,
    rp_id: Option<Spanned<String>>,
    rp_name: Option<Spanned<String>>,
    origins: Option<Spanned<Vec<String>>>,
    oauth2: Option<Vec<Spanned<providers::RawOAuth2>>>,
}

/// `[[accounts.oidc]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOidc {
    name: Spanned<String>,
    issuer: Option<Spanned<String>>,
    preset: Option<Spanned<String>>,
    tenant: Option<Spanned<String>>,
    client_id: Spanned<String>,
    client_secret_env: Spanned<String>,
    scopes: Option<Spanned<Vec<String>>>,
}

/// `[[accounts.oidc]]`: an OpenID Connect provider users may sign in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcSection {
    /// `name`: the provider's part of `/auth/oidc/{name}`.
    pub name: String,
    /// `issuer`: `https://...` (or `http://` on this machine), read from
    /// `{issuer}/.well-known/openid-configuration`; filled by `preset`.
    pub issuer: String,
    /// `preset`: `google` or `microsoft` (with `tenant`, default `common`), which fill
    /// `issuer`; `apple` is refused with the reason.
    pub preset: Option<String>,
    /// `client_id`.
    pub client_id: String,
    /// `client_secret_env`: the environment variable holding the client secret (read by
    /// `serve`, never written in the file).
    pub client_secret_env: String,
    /// `scopes` (default `["openid", "email", "profile"]`; `openid` is required).
    pub scopes: Vec<String>,
}

/// `[email]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEmail {
    smtp_url: Spanned<String>,
    from: Spanned<String>,
    templates: Option<Spanned<String>>,
    retry_max_secs: Option<Spanned<u64>>,
}

/// `[accounts]`: the account lifecycle's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountsSection {
    /// `app_url`: links in mails are `{app_url}/verify-email?token=...` and the like.
    pub app_url: String,
    /// `require_verified_email` (default false): logins of accounts without a verified email
    /// are refused with 403, on both doors and the admin page.
    pub require_verified_email: bool,
    /// `password_min_length` (default 8): the shortest password a sign-up (both doors), a
    /// password reset or the admin page accepts.
    pub password_min_length: usize,
    /// `verify_email_token_secs` (default 24 hours).
    pub verify_email_token: Duration,
    /// `password_reset_token_secs` (default 1 hour).
    pub password_reset_token: Duration,
    /// `email_change_token_secs` (default 1 hour).
    pub email_change_token: Duration,
    /// `mail_rate_limit_per_address` and `mail_rate_limit_per_email` (default 20 and 5 per
    /// hour): requests that send mail, counted in the database.
    pub mail_limits: MailLimits,
    /// `oidc_rate_limit_per_address` (default 30 per 10 minutes): sign-ins with a provider
    /// started per client address.
    pub oidc_start_limit: Option<Limit>,
    /// `email_code_signup` (default false): a sign-in code requested for an address no account
    /// has makes an account when confirmed (otherwise the mail says no account has it).
    pub email_code_signup: bool,
    /// `email_code_token_secs` (default 10 minutes): how long a sign-in code and link work.
    pub email_code_token: Duration,
    /// `email_code_digits` (6 to 8, default 6).
    pub email_code_digits: u32,
    /// `email_code_attempts` (default 5): the guesses one code allows.
    pub email_code_attempts: u32,
    /// `email_code_rate_limit_per_address` (default 30 per 10 minutes): failed confirmations
    /// per client address.
    pub email_code_failures_per_address: Option<Limit>,
    /// `email_code_rate_limit_per_email` (default 10 per hour): failed confirmations per
    /// email address.
    pub email_code_failures_per_email: Option<Limit>,
    /// `allow_guests` (default false): `POST /auth/guest` makes guest accounts.
    pub allow_guests: bool,
    /// `guest_ttl_days` (default 30; a number above 0, 0.5 is half a day): guests unused this
    /// long are removed with their owned documents.
    pub guest_ttl: Duration,
    /// `guest_rate_limit_per_address` (default 10 per hour): guests made per client address.
    pub guest_limit: Option<Limit>,
    /// `impersonation_token_secs` (default 15 minutes): how long a token an admin gets on the
    /// admin page to act as a user works.
    pub impersonation_token: Duration,
    /// `server_url`: the address clients reach this server at; providers send the browser
    /// back to `{server_url}/auth/oidc/{name}/callback`. Required with `[[accounts.oidc]]`.
    pub server_url: Option<String>,
    /// `[[accounts.oidc]]`: the OpenID Connect providers.
    pub oidc: Vec<OidcSection>,
    /// `rp_id`, `rp_name` and `origins`: passkeys, on when `rp_id` is set (`origins` is then
    /// required; `rp_name` defaults to `rp_id`).
    pub passkeys: Option<portico_platform::PasskeyConfig>,
    /// `[[accounts.oauth2]]`: the OAuth2 providers (GitHub, GitLab, Discord, ...).
    pub oauth2: Vec<OAuth2Section>,
}

impl Default for AccountsSection {
    fn default() -> Self {
        let defaults = portico_platform::AccountsConfig::default();
        AccountsSection {
            app_url: defaults.app_url,
            require_verified_email: defaults.require_verified_email,
            password_min_length: defaults.password_min_length,
            verify_email_token: defaults
                .verify_email_lifetime
                .to_std()
                .unwrap_or(Duration::ZERO),
            password_reset_token: defaults
                .password_reset_lifetime
                .to_std()
                .unwrap_or(Duration::ZERO),
            email_change_token: defaults
                .email_change_lifetime
                .to_std()
                .unwrap_or(Duration::ZERO),
            mail_limits: defaults.mail_limits,
            oidc_start_limit: defaults.oidc_start_limit,
            email_code_signup: defaults.email_code_signup,
            email_code_token: defaults
                .email_code_lifetime
                .to_std()
                .unwrap_or(Duration::ZERO),
            email_code_digits: defaults.email_code_digits,
            email_code_attempts: defaults.email_code_attempts,
            email_code_failures_per_address: defaults.email_code_failures_per_address,
            email_code_failures_per_email: defaults.email_code_failures_per_email,
            allow_guests: defaults.allow_guests,
            guest_ttl: defaults.guest_ttl.to_std().unwrap_or(Duration::ZERO),
            guest_limit: defaults.guest_limit,
            impersonation_token: defaults
                .impersonation_lifetime
                .to_std()
                .unwrap_or(Duration::ZERO),
            server_url: None,
            oidc: Vec::new(),
            passkeys: None,
            oauth2: Vec::new(),
        }
    }
}

/// `[email]`: where the account mail is sent from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailConfig {
    /// `smtp_url`: `smtp://host:port` (STARTTLS when offered), `smtps://host:port`, with
    /// `user:password@` when needed.
    pub smtp_url: String,
    /// `from`: the sender, `Name <address>` or an address.
    pub from: String,
    /// `templates`: a folder (relative to the config file) whose `NAME.subject`, `NAME.txt`
    /// and `NAME.html` replace the built-in texts (`NAME`: `verify-email`, `password-reset`,
    /// `email-change`).
    pub templates: Option<String>,
    /// `retry_max_secs` (default 600): the longest wait between two attempts at a mail while
    /// the SMTP server is down.
    pub retry_max: Duration,
}

/// A mistake: where, which key, why.
pub(crate) type Mistake = (Range<usize>, &'static str, String);

fn limit(
    raw: Option<Spanned<RawLimit>>,
    default: Option<Limit>,
    key: &'static str,
    mistakes: &mut Vec<Mistake>,
) -> Option<Limit> {
    let Some(raw) = raw else { return default };
    let span = raw.span();
    let raw = raw.into_inner();
    if raw.per_seconds == 0 {
        mistakes.push((span, key, "per_seconds must be at least 1".into()));
        return default;
    }
    Some(Limit::new(
        raw.attempts,
        Duration::from_secs(raw.per_seconds),
    ))
}

fn secs(
    raw: Option<Spanned<u64>>,
    default: Duration,
    key: &'static str,
    mistakes: &mut Vec<Mistake>,
) -> Duration {
    match raw {
        Some(v) if *v.get_ref() == 0 => {
            mistakes.push((v.span(), key, "must be at least 1 second".into()));
            default
        }
        Some(v) => Duration::from_secs(*v.get_ref()),
        None => default,
    }
}

/// A whole number within `(low, high, default)`; a mistake under `key` otherwise.
fn bounded(
    raw: Option<Spanned<u64>>,
    (low, high, default): (u32, u32, u32),
    key: &'static str,
    mistakes: &mut Vec<Mistake>,
) -> u32 {
    let Some(raw) = raw else { return default };
    match u32::try_from(*raw.get_ref()) {
        Ok(n) if (low..=high).contains(&n) => n,
        _ => {
            mistakes.push((raw.span(), key, format!("must be between {low} and {high}")));
            default
        }
    }
}

/// An `http(s)://` address without its trailing `/`; a mistake under `key` otherwise.
fn address(url: &Spanned<String>, key: &'static str, mistakes: &mut Vec<Mistake>) -> String {
    let text = url.get_ref().trim().trim_end_matches('/').to_owned();
    if !(text.starts_with("http://") || text.starts_with("https://"))
        || text.contains(char::is_whitespace)
    {
        mistakes.push((
            url.span(),
            key,
            "write an address, as in \"https://app.example.com\"".into(),
        ));
    }
    text
}

/// The issuer of `[[accounts.oidc]]` (written, or filled by its preset) and the default scopes.
fn oidc_issuer(
    raw: &RawOidc,
    span: Range<usize>,
    mistakes: &mut Vec<Mistake>,
) -> (String, Vec<String>) {
    let scopes = ["openid", "email", "profile"].map(str::to_owned).to_vec();
    match (&raw.preset, &raw.issuer) {
        (Some(preset), None) => providers::oidc_preset(preset, raw.tenant.as_ref(), mistakes)
            .unwrap_or((String::new(), scopes)),
        (Some(_), Some(issuer)) => {
            mistakes.push((
                issuer.span(),
                "accounts.oidc.issuer",
                "the preset sets the issuer: write one or the other".into(),
            ));
            (String::new(), scopes)
        }
        (None, issuer) => {
            if let Some(tenant) = &raw.tenant {
                mistakes.push((
                    tenant.span(),
                    "accounts.oidc.tenant",
                    "tenant goes with preset = \"microsoft\" only".into(),
                ));
            }
            let text = issuer
                .as_ref()
                .map(|i| i.get_ref().trim().to_owned())
                .unwrap_or_default();
            if !portico_platform::acceptable_provider_url(&text) {
                mistakes.push((
                    issuer.as_ref().map_or(span, Spanned::span),
                    "accounts.oidc.issuer",
                    format!(
                        "write the provider's https:// issuer, as in \"https://accounts.google.com\" \
                         (http:// only on this machine: 127.0.0.1, localhost), or a preset ({})",
                        providers::OIDC_PRESETS.join(", ")
                    ),
                ));
            }
            (text, scopes)
        }
    }
}

/// Checks every `[[accounts.oidc]]`; `server_url` is true when `accounts.server_url` is set
/// (the providers need it).
fn check_all_oidc(
    raw: Option<Vec<Spanned<RawOidc>>>,
    server_url: bool,
    mistakes: &mut Vec<Mistake>,
) -> Vec<OidcSection> {
    let raw = raw.unwrap_or_default();
    if let (Some(first), false) = (raw.first(), server_url) {
        mistakes.push((
            first.span(),
            "accounts.server_url",
            "[[accounts.oidc]] needs accounts.server_url: the address clients reach this \
             server at, as in \"https://api.example.com\" (providers send the browser back \
             to {server_url}/auth/oidc/{name}/callback)"
                .into(),
        ));
    }
    let mut taken = Vec::new();
    raw.into_iter()
        .map(|p| check_oidc(p, &mut taken, mistakes))
        .collect()
}

/// Checks one `[[accounts.oidc]]`; `taken` holds the names before it.
fn check_oidc(
    raw: Spanned<RawOidc>,
    taken: &mut Vec<String>,
    mistakes: &mut Vec<Mistake>,
) -> OidcSection {
    let span = raw.span();
    let raw = raw.into_inner();
    let name = raw.name.get_ref().trim().to_owned();
    let good_name = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !good_name || name == "exchange" {
        mistakes.push((
            raw.name.span(),
            "accounts.oidc.name",
            "write lowercase letters, digits, - and _ (not \"exchange\"), as in \"google\"".into(),
        ));
    } else if taken.contains(&name) {
        mistakes.push((
            raw.name.span(),
            "accounts.oidc.name",
            format!("another provider is named {name:?}"),
        ));
    }
    taken.push(name.clone());
    let (issuer, preset_scopes) = oidc_issuer(&raw, span, mistakes);
    let (client_id, client_secret_env) = client_credentials(
        &raw.client_id,
        &raw.client_secret_env,
        ["accounts.oidc.client_id", "accounts.oidc.client_secret_env"],
        "OIDC_GOOGLE_SECRET",
        mistakes,
    );
    let scopes = match raw.scopes {
        Some(scopes) => {
            let list: Vec<String> = scopes
                .get_ref()
                .iter()
                .map(|s| s.trim().to_owned())
                .collect();
            if !list.iter().any(|s| s == "openid")
                || list
                    .iter()
                    .any(|s| s.is_empty() || s.contains(char::is_whitespace))
            {
                mistakes.push((
                    scopes.span(),
                    "accounts.oidc.scopes",
                    "list single-word scopes, \"openid\" among them".into(),
                ));
            }
            list
        }
        None => preset_scopes,
    };
    OidcSection {
        name,
        issuer,
        preset: raw.preset.map(|p| p.into_inner().trim().to_owned()),
        client_id,
        client_secret_env,
        scopes,
    }
}

/// `rp_id`, `rp_name` and `origins` of `[accounts]` as written.
struct RawPasskeys {
    rp_id: Option<Spanned<String>>,
    rp_name: Option<Spanned<String>>,
    origins: Option<Spanned<Vec<String>>>,
}

impl RawPasskeys {
    /// The passkey keys, taken out of `raw`.
    fn take(raw: &mut RawAccounts) -> RawPasskeys {
        RawPasskeys {
            rp_id: raw.rp_id.take(),
            rp_name: raw.rp_name.take(),
            origins: raw.origins.take(),
        }
    }
}

/// Checks the passkey keys: passkeys are on when `rp_id` is set, and then need `origins`;
/// `origins` or `rp_name` without `rp_id` is a mistake (passkeys would silently be off).
fn check_passkeys(
    raw: RawPasskeys,
    mistakes: &mut Vec<Mistake>,
) -> Option<portico_platform::PasskeyConfig> {
    let Some(rp_id) = raw.rp_id else {
        if let Some(span) = raw
            .origins
            .as_ref()
            .map(Spanned::span)
            .or_else(|| raw.rp_name.as_ref().map(Spanned::span))
        {
            mistakes.push((
                span,
                "accounts.rp_id",
                "passkeys need accounts.rp_id: the domain they are bound to, as in \
                 \"example.com\" (passkeys are on only when it is set)"
                    .into(),
            ));
        }
        return None;
    };
    let Some(origins) = raw.origins.filter(|o| !o.get_ref().is_empty()) else {
        mistakes.push((
            rp_id.span(),
            "accounts.origins",
            "passkeys need accounts.origins: the origins pages call from, as in \
             [\"https://app.example.com\"]"
                .into(),
        ));
        return None;
    };
    let mut config =
        portico_platform::PasskeyConfig::new(rp_id.get_ref().trim(), origins.get_ref().clone());
    if let Some(name) = &raw.rp_name {
        config = config.rp_name(name.get_ref().trim());
    }
    if let Err(why) = config.check() {
        let (span, key) = if why.contains("relying party id must") {
            (rp_id.span(), "accounts.rp_id")
        } else {
            (origins.span(), "accounts.origins")
        };
        mistakes.push((span, key, why));
        return None;
    }
    Some(config)
}

/// The guest keys of `[accounts]` as written, and `impersonation_token_secs`.
struct RawGuests {
    allow: Option<bool>,
    ttl_days: Option<Spanned<f64>>,
    per_address: Option<Spanned<RawLimit>>,
    impersonation_secs: Option<Spanned<u64>>,
}

/// The `email_code_*` keys of `[accounts]` as written.
struct RawEmailCode {
    signup: Option<bool>,
    token_secs: Option<Spanned<u64>>,
    digits: Option<Spanned<u64>>,
    attempts: Option<Spanned<u64>>,
    per_address: Option<Spanned<RawLimit>>,
    per_email: Option<Spanned<RawLimit>>,
}

impl RawEmailCode {
    /// The `email_code_*` keys, taken out of `raw`.
    fn take(raw: &mut RawAccounts) -> RawEmailCode {
        RawEmailCode {
            signup: raw.email_code_signup.take(),
            token_secs: raw.email_code_token_secs.take(),
            digits: raw.email_code_digits.take(),
            attempts: raw.email_code_attempts.take(),
            per_address: raw.email_code_rate_limit_per_address.take(),
            per_email: raw.email_code_rate_limit_per_email.take(),
        }
    }
}

impl AccountsSection {
    /// Checks `allow_guests`, `guest_ttl_days`, `guest_rate_limit_per_address` and
    /// `impersonation_token_secs` into this section (which holds the defaults).
    fn check_guests(&mut self, raw: RawGuests, mistakes: &mut Vec<Mistake>) {
        let RawGuests {
            allow,
            ttl_days,
            per_address,
            impersonation_secs,
        } = raw;
        self.impersonation_token = secs(
            impersonation_secs,
            self.impersonation_token,
            "accounts.impersonation_token_secs",
            mistakes,
        );
        self.allow_guests = allow.unwrap_or(self.allow_guests);
        if let Some(days) = ttl_days {
            let value = *days.get_ref();
            match Duration::try_from_secs_f64(value * 86_400.0) {
                Ok(ttl) if value > 0.0 && value <= 36_500.0 => self.guest_ttl = ttl,
                _ => mistakes.push((
                    days.span(),
                    "accounts.guest_ttl_days",
                    "write a number of days above 0 (0.5 is half a day), at most 36500".into(),
                )),
            }
        }
        self.guest_limit = limit(
            per_address,
            self.guest_limit,
            "accounts.guest_rate_limit_per_address",
            mistakes,
        );
    }

    /// Checks the `email_code_*` keys into this section (which holds the defaults).
    fn check_email_code(&mut self, raw: RawEmailCode, mistakes: &mut Vec<Mistake>) {
        self.email_code_signup = raw.signup.unwrap_or(self.email_code_signup);
        self.email_code_token = secs(
            raw.token_secs,
            self.email_code_token,
            "accounts.email_code_token_secs",
            mistakes,
        );
        self.email_code_digits = bounded(
            raw.digits,
            (6, 8, self.email_code_digits),
            "accounts.email_code_digits",
            mistakes,
        );
        self.email_code_attempts = bounded(
            raw.attempts,
            (1, 100, self.email_code_attempts),
            "accounts.email_code_attempts",
            mistakes,
        );
        self.email_code_failures_per_address = limit(
            raw.per_address,
            self.email_code_failures_per_address,
            "accounts.email_code_rate_limit_per_address",
            mistakes,
        );
        self.email_code_failures_per_email = limit(
            raw.per_email,
            self.email_code_failures_per_email,
            "accounts.email_code_rate_limit_per_email",
            mistakes,
        );
    }
}

impl AccountsSection {
    /// Checks `[accounts]`; the mistakes come back with their places.
    pub(crate) fn check(mut raw: RawAccounts) -> (AccountsSection, Vec<Mistake>) {
        let mut mistakes = Vec::new();
        let raw_email_code = RawEmailCode::take(&mut raw);
        let raw_guests = RawGuests {
            allow: raw.allow_guests.take(),
            ttl_days: raw.guest_ttl_days.take(),
            per_address: raw.guest_rate_limit_per_address.take(),
            impersonation_secs: raw.impersonation_token_secs.take(),
        };
        let raw_passkeys = RawPasskeys::take(&mut raw);
        let defaults = AccountsSection::default();
        let app_url = match &raw.app_url {
            Some(url) => address(url, "accounts.app_url", &mut mistakes),
            None => defaults.app_url.clone(),
        };
        let server_url = raw
            .server_url
            .as_ref()
            .map(|url| address(url, "accounts.server_url", &mut mistakes));
        let oidc = check_all_oidc(raw.oidc.take(), server_url.is_some(), &mut mistakes);
        let oauth2 = providers::check_all_oauth2(
            raw.oauth2.take().unwrap_or_default(),
            server_url.is_some(),
            &mut mistakes,
        );
        let password_min_length = match raw.password_min_length {
            Some(n) if *n.get_ref() == 0 || *n.get_ref() > 1024 => {
                mistakes.push((
                    n.span(),
                    "accounts.password_min_length",
                    "must be between 1 and 1024".into(),
                ));
                defaults.password_min_length
            }
            Some(n) => usize::try_from(*n.get_ref()).unwrap_or(defaults.password_min_length),
            None => defaults.password_min_length,
        };
        let mut section = AccountsSection {
            app_url,
            require_verified_email: raw.require_verified_email.unwrap_or(false),
            password_min_length,
            verify_email_token: secs(
                raw.verify_email_token_secs,
                defaults.verify_email_token,
                "accounts.verify_email_token_secs",
                &mut mistakes,
            ),
            password_reset_token: secs(
                raw.password_reset_token_secs,
                defaults.password_reset_token,
                "accounts.password_reset_token_secs",
                &mut mistakes,
            ),
            email_change_token: secs(
                raw.email_change_token_secs,
                defaults.email_change_token,
                "accounts.email_change_token_secs",
                &mut mistakes,
            ),
            mail_limits: MailLimits {
                per_address: limit(
                    raw.mail_rate_limit_per_address,
                    defaults.mail_limits.per_address,
                    "accounts.mail_rate_limit_per_address",
                    &mut mistakes,
                ),
                per_email: limit(
                    raw.mail_rate_limit_per_email,
                    defaults.mail_limits.per_email,
                    "accounts.mail_rate_limit_per_email",
                    &mut mistakes,
                ),
            },
            oidc_start_limit: limit(
                raw.oidc_rate_limit_per_address,
                defaults.oidc_start_limit,
                "accounts.oidc_rate_limit_per_address",
                &mut mistakes,
            ),
            server_url,
            oidc,
            oauth2,
            ..defaults
        };
        section.check_email_code(raw_email_code, &mut mistakes);
        section.check_guests(raw_guests, &mut mistakes);
        section.passkeys = check_passkeys(raw_passkeys, &mut mistakes);
        (section, mistakes)
    }
}

impl EmailConfig {
    /// Checks `[email]`; the mistakes come back with their places.
    pub(crate) fn check(raw: RawEmail) -> (EmailConfig, Vec<Mistake>) {
        let mut mistakes = Vec::new();
        let smtp_url = raw.smtp_url.get_ref().trim().to_owned();
        let from = raw.from.get_ref().trim().to_owned();
        if !(smtp_url.starts_with("smtp://") || smtp_url.starts_with("smtps://")) {
            mistakes.push((
                raw.smtp_url.span(),
                "email.smtp_url",
                "write smtp://host:port or smtps://host:port".into(),
            ));
        } else if let Err(e) = portico_platform::SmtpTransport::new(&smtp_url, "check@example.com")
        {
            mistakes.push((raw.smtp_url.span(), "email.smtp_url", e.to_string()));
        }
        if portico_platform::SmtpTransport::new("smtp://127.0.0.1:25", &from).is_err() {
            mistakes.push((
                raw.from.span(),
                "email.from",
                "write an address, or a name and an address: \"Example <no-reply@example.com>\""
                    .into(),
            ));
        }
        let retry_max = secs(
            raw.retry_max_secs,
            Duration::from_secs(600),
            "email.retry_max_secs",
            &mut mistakes,
        );
        let config = EmailConfig {
            smtp_url,
            from,
            templates: raw.templates.map(Spanned::into_inner),
            retry_max,
        };
        (config, mistakes)
    }

    /// The mail templates in the `templates` folder (under `folder`, the config file's):
    /// `NAME.subject`, `NAME.txt`, `NAME.html` for the default (English) texts and
    /// `NAME.LANG.subject`, `.txt`, `.html` per language (`password-reset.fr.txt`); `reset` and
    /// `verify` name `password-reset` and `verify-email` too. Each placeholder must be one the
    /// mail fills in.
    ///
    /// # Errors
    /// A message naming a file that cannot be read, a file of no known mail, a bad language
    /// tag or an unknown placeholder.
    pub fn read_templates(&self, folder: Option<&Path>) -> Result<MailTemplates, String> {
        let mut templates = MailTemplates::default();
        let Some(dir) = &self.templates else {
            return Ok(templates);
        };
        let dir = folder.map_or_else(|| Path::new(dir).to_path_buf(), |f| f.join(dir));
        let files = template_files(&dir)?;
        // The default texts first: the per-language ones fall back to them part by part.
        for ((name, _), parts) in files.iter().filter(|((_, l), _)| l.is_none()) {
            let built_in = templates.get(name);
            templates.set(name, merged(parts, built_in));
        }
        for ((name, language), parts) in &files {
            if let Some(language) = language {
                let base = templates.get(name);
                templates.set_in(name, language, merged(parts, base));
            }
        }
        Ok(templates)
    }
}

/// The parts of one mail read from files: subject, text, HTML.
type TemplateParts = (Option<String>, Option<String>, Option<String>);

/// `parts` over `base`: a part not given keeps `base`'s, except that a new text without its
/// HTML drops `base`'s HTML (which would say something else, or in another language).
fn merged(parts: &TemplateParts, base: MailTemplate) -> MailTemplate {
    let (subject, text, html) = parts;
    let html = match (html, text) {
        (Some(html), _) => Some(html.clone()),
        (None, Some(_)) => None,
        (None, None) => base.html,
    };
    MailTemplate {
        subject: subject
            .as_deref()
            .map_or(base.subject, |s| s.trim().to_owned()),
        text: text.clone().unwrap_or(base.text),
        html,
    }
}

/// The mail a file stem names (`password-reset`, or `reset`), if any.
fn mail_name(stem: &str) -> Option<&'static str> {
    match stem {
        "reset" => Some("password-reset"),
        "verify" => Some("verify-email"),
        _ => MAIL_NAMES.iter().copied().find(|n| *n == stem),
    }
}

/// Every template file of `dir`, by mail and language, checked (see
/// [`EmailConfig::read_templates`]).
fn template_files(
    dir: &Path,
) -> Result<std::collections::BTreeMap<(String, Option<String>), TemplateParts>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|_| format!("email.templates: {} is not a folder", dir.display()))?;
    let mut files = std::collections::BTreeMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let file = path
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or_default();
        let Some((stem, ext)) = file.rsplit_once('.') else {
            continue;
        };
        if !["subject", "txt", "html"].contains(&ext) {
            continue;
        }
        let (stem, language) = match stem.split_once('.') {
            Some((stem, language)) => (stem, Some(language.to_ascii_lowercase())),
            None => (stem, None),
        };
        let Some(name) = mail_name(stem) else {
            return Err(format!(
                "email.templates: {} is no mail's: name it after one of {} (or reset, verify)",
                path.display(),
                MAIL_NAMES.join(", ")
            ));
        };
        if let Some(l) = &language
            && !portico_platform::is_mail_language(l)
        {
            return Err(format!(
                "email.templates: {}: {l:?} is not a language tag (fr, pt-br, ...)",
                path.display()
            ));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("email.templates: cannot read {}: {e}", path.display()))?;
        let unknown = portico_platform::unknown_placeholders(name, &text);
        if !unknown.is_empty() {
            let known: Vec<String> = portico_platform::mail_placeholders(name)
                .iter()
                .map(|p| format!("{{{{{p}}}}}"))
                .collect();
            return Err(format!(
                "email.templates: {}: unknown placeholder {} (the {name} mail fills in {})",
                path.display(),
                unknown
                    .iter()
                    .map(|u| format!("{{{{{u}}}}}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                known.join(", ")
            ));
        }
        let parts: &mut TemplateParts = files.entry((name.to_owned(), language)).or_default();
        match ext {
            "subject" => parts.0 = Some(text),
            "txt" => parts.1 = Some(text),
            _ => parts.2 = Some(text),
        }
    }
    Ok(files)
}

/// The `(collection, field)` pairs whose documents a guest owns: each owner field the config
/// names (`owner_field` of `[[api.collection]]` and `[[auto.publication]]`, `owner:FIELD` in
/// `[auto.rules.<collection>]`), once each.
pub(crate) fn guest_owned(config: &super::Config) -> Vec<(String, String)> {
    let mut owned: Vec<(String, String)> = Vec::new();
    let mut add = |collection: &str, field: &str| {
        let pair = (collection.to_owned(), field.to_owned());
        if !owned.contains(&pair) {
            owned.push(pair);
        }
    };
    for collection in config.apis.iter().flat_map(|api| &api.collections) {
        if let Some(field) = &collection.owner_field {
            add(&collection.name, field);
        }
    }
    if let Some(auto) = &config.auto {
        for rules in &auto.rules {
            let words = rules
                .insert
                .iter()
                .chain(&rules.update)
                .chain(&rules.remove);
            for word in words {
                if let super::rule::Rule::Owner(field) = word {
                    add(&rules.collection, field);
                }
            }
        }
        for publication in &auto.publications {
            if let Some(field) = &publication.owner_field {
                add(&publication.collection, field);
            }
        }
    }
    owned
}

/// The platform's accounts settings from `[accounts]` and `[email]`.
///
/// # Errors
/// A message when the mail templates cannot be read.
pub fn platform_accounts(
    config: &super::Config,
) -> Result<portico_platform::AccountsConfig, String> {
    let mut accounts = portico_platform::AccountsConfig::default();
    if let Some(section) = &config.accounts {
        let lifetime = |d: Duration| chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
        accounts.app_url = section.app_url.clone();
        accounts.require_verified_email = section.require_verified_email;
        accounts.password_min_length = section.password_min_length;
        accounts.verify_email_lifetime = lifetime(section.verify_email_token);
        accounts.password_reset_lifetime = lifetime(section.password_reset_token);
        accounts.email_change_lifetime = lifetime(section.email_change_token);
        accounts.mail_limits = section.mail_limits;
        accounts.oidc_start_limit = section.oidc_start_limit;
        accounts.email_code_signup = section.email_code_signup;
        accounts.email_code_lifetime = lifetime(section.email_code_token);
        accounts.email_code_digits = section.email_code_digits;
        accounts.email_code_attempts = section.email_code_attempts;
        accounts.email_code_failures_per_address = section.email_code_failures_per_address;
        accounts.email_code_failures_per_email = section.email_code_failures_per_email;
        accounts.allow_guests = section.allow_guests;
        accounts.guest_ttl = lifetime(section.guest_ttl);
        accounts.guest_limit = section.guest_limit;
        accounts.guest_owned = guest_owned(config);
        accounts.impersonation_lifetime = lifetime(section.impersonation_token);
        accounts.passkeys = section.passkeys.clone();
        if let Some(url) = &section.server_url {
            accounts.server_url = url.clone();
        }
        for p in &section.oidc {
            let secret = std::env::var(&p.client_secret_env).map_err(|_| {
                format!(
                    "accounts.oidc {:?}: set the environment variable {} to the client secret",
                    p.name, p.client_secret_env
                )
            })?;
            let mut provider =
                portico_platform::OidcProvider::new(&p.name, &p.issuer, &p.client_id, secret);
            provider.scopes = p.scopes.clone();
            accounts.oidc.push(provider);
        }
        for p in &section.oauth2 {
            let secret = std::env::var(&p.client_secret_env).map_err(|_| {
                format!(
                    "accounts.oauth2 {:?}: set the environment variable {} to the client secret",
                    p.name, p.client_secret_env
                )
            })?;
            let mut provider = p.provider.clone();
            provider.client_secret = secret;
            accounts.oauth2.push(provider);
        }
    }
    if let Some(email) = &config.email {
        accounts.mail_templates = email.read_templates(config.folder.as_deref())?;
    }
    Ok(accounts)
}

/// A provider's `client_id` and `client_secret_env`, trimmed; a mistake at `keys` for an empty
/// id, or a variable name that is not letters, digits and `_` (`example` shows one).
fn client_credentials(
    client_id: &Spanned<String>,
    secret_env: &Spanned<String>,
    keys: [&'static str; 2],
    example: &str,
    mistakes: &mut Vec<Mistake>,
) -> (String, String) {
    let id = client_id.get_ref().trim().to_owned();
    if id.is_empty() {
        mistakes.push((
            client_id.span(),
            keys[0],
            "write the client id the provider gave this server".into(),
        ));
    }
    let env = secret_env.get_ref().trim().to_owned();
    if env.is_empty() || !env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        mistakes.push((
            secret_env.span(),
            keys[1],
            format!(
                "write the name of the environment variable holding the client secret, as in {example:?}"
            ),
        ));
    }
    (id, env)
}
