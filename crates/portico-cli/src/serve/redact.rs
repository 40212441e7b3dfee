//! Credentials out of the request log.
//!
//! The front doors refuse a token in the query string unless the host turns it on, but a client
//! may send one anyway (`?X-Auth-Token=...`), and the request log writes every URI: whoever reads
//! the log would hold a working token. So the logged URI has the value of every query parameter
//! whose name looks like a credential replaced.

use axum::http::Uri;

/// What a redacted value is logged as.
pub(crate) const REDACTED: &str = "[redacted]";

/// Parts of a parameter name (lowercase, punctuation removed) that mark a credential: `token`
/// covers `access_token`, `X-Auth-Token`, `authToken`, `id_token`...; `code` the authorization
/// code an OpenID Connect provider sends back to `/auth/oidc/{name}/callback`.
const SECRET_NAME_PARTS: [&str; 12] = [
    "token",
    "password",
    "passwd",
    "pwd",
    "secret",
    "auth",
    "apikey",
    "key",
    "session",
    "credential",
    "signature",
    "code",
];

/// True when a query parameter named `name` (as sent, percent-encoded or not) may hold a
/// credential.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let decoded = percent_decode(name);
    let folded: String = decoded
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_NAME_PARTS.iter().any(|part| folded.contains(part))
}

/// The URI to log: path as is, and the query with every credential's value redacted. A
/// parameter without `=` is kept as is only when its name is harmless.
pub(crate) fn redacted_uri(uri: &Uri) -> String {
    let Some(query) = uri.query() else {
        return uri.to_string();
    };
    let mut out = String::with_capacity(uri.path().len() + query.len() + 1);
    out.push_str(uri.path());
    out.push('?');
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        let (name, value) = match pair.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (pair, None),
        };
        if is_secret_name(name) {
            out.push_str(name);
            out.push('=');
            out.push_str(REDACTED);
        } else {
            out.push_str(name);
            if let Some(value) = value {
                out.push('=');
                out.push_str(value);
            }
        }
    }
    out
}

/// `+` and `%XX` decoded, lossily (a name is only inspected, never used).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    // Decoding twice catches a name encoded twice (`X%252DAuth%252DToken`).
    let once = String::from_utf8_lossy(&out).into_owned();
    if once.contains('%') && once != text {
        percent_decode(&once)
    } else {
        once
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(uri: &str) -> String {
        match uri.parse::<Uri>() {
            Ok(uri) => redacted_uri(&uri),
            Err(e) => panic!("{uri}: {e}"),
        }
    }

    #[test]
    fn credentials_are_redacted_in_every_spelling() {
        for name in [
            "token",
            "TOKEN",
            "access_token",
            "X-Auth-Token",
            "x-auth-token",
            "X%2DAuth%2DToken",
            "X%252DAuth%252DToken",
            "authToken",
            "password",
            "Pass%77ord",
            "api_key",
            "user[password]",
            "client_secret",
            "code",
        ] {
            let logged = redact(&format!("/api/items?limit=5&{name}=s3cr3tvalue&x"));
            assert!(!logged.contains("s3cr3tvalue"), "{name}: {logged}");
            assert!(logged.starts_with("/api/items?limit=5&"), "{logged}");
            assert!(logged.ends_with("&x"), "{logged}");
        }
        assert_eq!(redact("/a?where=%7B%7D&sort=x"), "/a?where=%7B%7D&sort=x");
        assert_eq!(redact("/a"), "/a");
        assert_eq!(redact("/a?token"), "/a?token=[redacted]");
    }
}
