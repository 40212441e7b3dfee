//! The platform's locks, taken whether or not a panic poisoned them: what it keeps behind them
//! (registries, the collections, their rules and hooks) changes by single inserts and
//! replacements, which a panic cannot leave half done, so a poisoned lock holds a usable value.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Reads `lock`.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `lock`.
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
