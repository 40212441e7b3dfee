//! Portico's document store. SKELETON: crate docs to be written by the store work.

mod document;
mod error;
mod id;
mod modifier;
mod projection;
mod selector;
mod sort;
mod store;
mod url;
mod value;

#[cfg(feature = "memory")]
pub mod memory;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use document::{Document, document_id};
pub use error::{Error, Result};
pub use id::{IdKind, new_id, new_object_id};
pub use modifier::Update;
pub use projection::Projection;
pub use selector::Selector;
pub use sort::Sort;
pub use store::{Query, Store, UpdateOptions, UpdateResult};
pub use url::open;
pub use value::{compare_values, lookup_path};
