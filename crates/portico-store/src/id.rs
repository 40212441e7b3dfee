//! Id generation.

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
        todo!("store: id validation {id:?}")
    }
}

/// A new 17-character random id from a CSPRNG.
pub fn new_id() -> String {
    todo!("store: new_id")
}

/// A new 24-character lowercase hex object id from a CSPRNG.
pub fn new_object_id() -> String {
    todo!("store: new_object_id")
}
