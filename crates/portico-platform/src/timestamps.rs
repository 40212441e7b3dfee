//! Document timestamps: `createdAt` on insert and `updatedAt` on every write, in server time, for
//! collections declared with [`crate::CollectionOptions::timestamps`].
//!
//! Both are ISO-8601 UTC strings with milliseconds (the form account records use), so they sort
//! correctly as strings and a `sort = { createdAt = -1 }` lists the newest first.

use portico_store::{Document, Update};
use serde_json::Value;

use crate::Result;

/// The field set once, when a document is inserted.
pub const CREATED_AT: &str = "createdAt";
/// The field set on every write.
pub const UPDATED_AT: &str = "updatedAt";

/// Stamps a new document: both fields are `now`, whatever the document said (server time).
pub(crate) fn stamp_new(doc: &mut Document, now: &str) {
    doc.insert(CREATED_AT.into(), Value::String(now.to_owned()));
    doc.insert(UPDATED_AT.into(), Value::String(now.to_owned()));
}

/// `update` that also sets `updatedAt` to `now`. A replacement keeps `created` (the replaced
/// document's `createdAt`; `now` when there was none).
///
/// Nothing the update holds is copied: a replacement's document is shared with the stamped
/// one, a modifier's values move into it.
pub(crate) fn stamp_update(update: Update, created: Option<Value>, now: &str) -> Result<Update> {
    let now = || Value::String(now.to_owned());
    let mut stamps = vec![(UPDATED_AT.to_owned(), now())];
    if update.is_replacement() {
        stamps.insert(0, (CREATED_AT.to_owned(), created.unwrap_or_else(now)));
    }
    Ok(update.with_set(stamps)?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(value: Value) -> Document {
        match value {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    #[test]
    fn modifiers_gain_updated_at_and_replacements_keep_created_at() -> Result<()> {
        let now = "2026-11-23T00:00:00.000Z";
        let modifier = Update::parse(&json!({"$inc": {"n": 1}}))?;
        let stamped = stamp_update(modifier, None, now)?;
        assert_eq!(
            stamped.to_value(),
            &json!({"$inc": {"n": 1}, "$set": {"updatedAt": now}})
        );
        let replacement = Update::replace(doc(json!({"a": 1, "createdAt": "forged"})))?;
        let stamped = stamp_update(replacement, Some(json!("then")), now)?;
        assert_eq!(
            stamped.to_value(),
            &json!({"a": 1, "createdAt": "then", "updatedAt": now})
        );
        let mut new = doc(json!({"_id": "x", "createdAt": "forged"}));
        stamp_new(&mut new, now);
        assert_eq!(
            Value::Object(new),
            json!({"_id": "x", "createdAt": now, "updatedAt": now})
        );
        Ok(())
    }
}
