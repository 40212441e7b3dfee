//! Store URLs in messages and logs: a password never shows.

/// `url` with its password (if any) replaced by `***`, for messages and logs:
/// `postgres://ann:secret@db/app` becomes `postgres://ann:***@db/app`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let mut out = match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_string(),
    };
    // libpq also takes the password as a query parameter.
    if let Some(start) = out.find("password=") {
        let value_start = start + "password=".len();
        let end = out[value_start..]
            .find('&')
            .map_or(out.len(), |i| value_start + i);
        out.replace_range(value_start..end, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://ann:secret@db:5432/app"),
            "postgres://ann:***@db:5432/app"
        );
        assert_eq!(redact_url("postgres://ann@db/app"), "postgres://ann@db/app");
        assert_eq!(
            redact_url("postgresql:///app?host=/tmp&password=pw&user=x"),
            "postgresql:///app?host=/tmp&password=***&user=x"
        );
        assert_eq!(redact_url("sqlite:app.db"), "sqlite:app.db");
    }
}
