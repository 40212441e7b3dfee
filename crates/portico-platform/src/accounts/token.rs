//! Login tokens: random secrets stored only as their SHA-256.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// The alphabet of login tokens: `a-zA-Z0-9-_` (64 symbols, so 6 random bits each).
const TOKEN_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Length of a login token: 43 characters (258 random bits).
pub(crate) const TOKEN_LEN: usize = 43;

/// A new login token: 43 characters of `a-zA-Z0-9-_` from a CSPRNG.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_LEN];
    rand::rng().fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(TOKEN_ALPHABET[usize::from(b & 63)]))
        .collect()
}

/// The stored form of a login token: padded standard base64 of its SHA-256 (44 characters).
///
/// ```
/// # use portico_platform::hash_token;
/// assert_eq!(hash_token(""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
/// ```
pub fn hash_token(token: &str) -> String {
    STANDARD.encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn tokens_are_43_url_safe_characters_and_differ() {
        let tokens: HashSet<String> = (0..100).map(|_| new_token()).collect();
        assert_eq!(tokens.len(), 100);
        for t in &tokens {
            assert_eq!(t.len(), TOKEN_LEN);
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{t}"
            );
        }
    }

    #[test]
    fn hashed_tokens_are_padded_base64_of_sha256() {
        let h = hash_token("abc");
        assert_eq!(h, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
        assert_eq!(h.len(), 44);
    }
}
