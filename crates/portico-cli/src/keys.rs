//! `portico keys`: add, list and revoke API keys (see "API keys" in the CLI README).

use portico_platform::{ApiKeyInfo, Platform};

/// Reads a lifetime such as `90d`, `12h`, `30m` or `45s`.
///
/// # Errors
/// [`crate::Error::Usage`] for anything else (or zero).
pub fn parse_lifetime(text: &str) -> crate::Result<chrono::Duration> {
    let text = text.trim();
    let bad = || {
        crate::Error::Usage(format!(
            "--expires takes a number and a unit, as in 90d, 12h, 30m or 45s (not {text:?})"
        ))
    };
    let split = text.len().checked_sub(1).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let secs = match unit {
        "d" => n.checked_mul(86_400),
        "h" => n.checked_mul(3_600),
        "m" => n.checked_mul(60),
        "s" => Some(n),
        _ => None,
    }
    .filter(|s| *s > 0 && *s <= 100 * 365 * 86_400)
    .ok_or_else(bad)?;
    Ok(chrono::Duration::seconds(secs))
}

/// Adds the key `name` with `roles`, expiring after `expires` (`90d`, ...) if given; returns
/// the key (shown once).
///
/// # Errors
/// A bad lifetime or name, a name taken; store failures.
pub async fn add(
    platform: &Platform,
    name: &str,
    roles: Vec<String>,
    expires: Option<&str>,
) -> crate::Result<String> {
    let lifetime = expires.map(parse_lifetime).transpose()?;
    Ok(platform
        .accounts()
        .add_api_key(name, roles, lifetime)
        .await?)
}

/// One line of `portico keys list`: name, roles, made, expiry, last use (never the key).
pub fn summary(key: &ApiKeyInfo) -> String {
    let roles = if key.roles.is_empty() {
        "-".to_owned()
    } else {
        key.roles.join(",")
    };
    format!(
        "{}  roles={roles}  created={}  expires={}  last_used={}",
        key.name,
        key.created_at,
        key.expires.as_deref().unwrap_or("never"),
        key.last_used.as_deref().unwrap_or("never"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_have_a_unit() {
        assert_eq!(parse_lifetime("90d").ok(), Some(chrono::Duration::days(90)));
        assert_eq!(
            parse_lifetime("12h").ok(),
            Some(chrono::Duration::hours(12))
        );
        assert_eq!(
            parse_lifetime("45s").ok(),
            Some(chrono::Duration::seconds(45))
        );
        for bad in ["", "d", "90", "0d", "-1d", "1w", "99999999999999d"] {
            assert!(parse_lifetime(bad).is_err(), "{bad}");
        }
    }
}
