//! Id generation.

use rand::RngExt;

/// The characters of a random id (no `0`, `1`, `I`, `O`, `U`, `V`, `l`: easy to read aloud).
const ALPHABET: &[u8] = b"23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz";

/// The length of a random id.
const ID_LEN: usize = 17;

/// How new `_id`s of a collection are made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// 17 characters from `23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz`.
    #[default]
    Random,
    /// 24 lowercase hexadecimal characters.
    ObjectId,
}

impl IdKind {
    /// A new id of this kind.
    pub fn generate(self) -> String {
        match self {
            IdKind::Random => new_id(),
            IdKind::ObjectId => new_object_id(),
        }
    }

    /// True when `id` has the form of an id of this kind. Any non-empty string is a valid
    /// [`IdKind::Random`] id (clients may choose their own); [`IdKind::ObjectId`] requires 24 hex digits.
    pub fn is_valid(self, id: &str) -> bool {
        match self {
            IdKind::Random => !id.is_empty(),
            IdKind::ObjectId => id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        }
    }
}

/// A new 17-character random id from a CSPRNG.
///
/// `rand::rng()` is a cryptographically secure generator (ChaCha, seeded from the OS), so ids
/// cannot be guessed from earlier ones.
pub fn new_id() -> String {
    let mut rng = rand::rng();
    (0..ID_LEN)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// A new 24-character lowercase hex object id from a CSPRNG.
pub fn new_object_id() -> String {
    let bytes: [u8; 12] = rand::rng().random();
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn random_ids_use_the_alphabet() {
        let ids: HashSet<String> = (0..200).map(|_| new_id()).collect();
        assert_eq!(ids.len(), 200);
        for id in &ids {
            assert_eq!(id.len(), 17);
            assert!(id.bytes().all(|b| ALPHABET.contains(&b)), "{id}");
            assert!(IdKind::Random.is_valid(id));
        }
        assert!(!IdKind::Random.is_valid(""));
    }

    #[test]
    fn object_ids_are_lowercase_hex() {
        let id = IdKind::ObjectId.generate();
        assert_eq!(id.len(), 24);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert!(IdKind::ObjectId.is_valid(&id));
        assert!(!IdKind::ObjectId.is_valid("xyz"));
        assert!(!IdKind::ObjectId.is_valid(&new_id()));
        assert_ne!(id, new_object_id());
    }
}
