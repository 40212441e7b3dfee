//! [`LiveEvent`]: what a live stream tells its subscriber, and the field diff behind `changed`.

use std::sync::Arc;

use portico_store::Document;
use serde_json::{Map, Value, json};

/// One event of a live stream. The names ([`LiveEvent::name`]) and the JSON shapes
/// ([`LiveEvent::data`]) are the wire contract of both front doors.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// A document is in the result: once per document of the initial set, then whenever one
    /// comes to match. `fields` are its (projected) top-level fields, without `_id`.
    Added {
        /// The collection.
        collection: Arc<str>,
        /// The document's `_id`.
        id: String,
        /// Its fields, without `_id`.
        fields: Document,
    },
    /// The initial set is complete (sent once).
    Ready,
    /// A document of the result changed: `fields` holds the changed or new top-level fields,
    /// `cleared` the names of those removed.
    Changed {
        /// The collection.
        collection: Arc<str>,
        /// The document's `_id`.
        id: String,
        /// Changed or new top-level fields.
        fields: Document,
        /// Top-level fields removed.
        cleared: Vec<String>,
    },
    /// A document left the result (removed, or no longer matching).
    Removed {
        /// The collection.
        collection: Arc<str>,
        /// The document's `_id`.
        id: String,
    },
    /// The stream ends now; `reason` says why (`logged-out`, `slow-subscriber`, `error`).
    /// Sent last, and only when the server ends the stream.
    End {
        /// Why the stream ended.
        reason: &'static str,
    },
}

impl LiveEvent {
    /// The event name: `added`, `ready`, `changed`, `removed` or `end`.
    pub fn name(&self) -> &'static str {
        match self {
            LiveEvent::Added { .. } => "added",
            LiveEvent::Ready => "ready",
            LiveEvent::Changed { .. } => "changed",
            LiveEvent::Removed { .. } => "removed",
            LiveEvent::End { .. } => "end",
        }
    }

    /// The event's JSON object: `{"collection", "id", "fields"}` for `added`, `{}` for `ready`,
    /// `{"collection", "id", "fields", "cleared"}` for `changed`, `{"collection", "id"}` for
    /// `removed`, `{"reason"}` for `end`.
    pub fn data(&self) -> Value {
        match self {
            LiveEvent::Added {
                collection,
                id,
                fields,
            } => json!({"collection": &**collection, "id": id, "fields": fields}),
            LiveEvent::Ready => Value::Object(Map::new()),
            LiveEvent::Changed {
                collection,
                id,
                fields,
                cleared,
            } => {
                json!({"collection": &**collection, "id": id, "fields": fields, "cleared": cleared})
            }
            LiveEvent::Removed { collection, id } => json!({"collection": &**collection, "id": id}),
            LiveEvent::End { reason } => json!({"reason": reason}),
        }
    }

    /// The collection and id a document event is about.
    pub(crate) fn target(&self) -> Option<(&Arc<str>, &str)> {
        match self {
            LiveEvent::Added { collection, id, .. }
            | LiveEvent::Changed { collection, id, .. }
            | LiveEvent::Removed { collection, id } => Some((collection, id)),
            LiveEvent::Ready | LiveEvent::End { .. } => None,
        }
    }
}

/// An event as its subscribers get it: the [`LiveEvent`] (reachable through `Deref`) with its
/// JSON data encoded once, however many subscribers it goes to.
#[derive(Debug)]
pub struct SentEvent {
    event: LiveEvent,
    json: String,
}

impl SentEvent {
    pub(crate) fn new(event: LiveEvent) -> Arc<SentEvent> {
        let json = event.data().to_string();
        Arc::new(SentEvent { event, json })
    }

    /// The event.
    pub fn event(&self) -> &LiveEvent {
        &self.event
    }

    /// [`LiveEvent::data`] as JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }
}

impl std::ops::Deref for SentEvent {
    type Target = LiveEvent;

    fn deref(&self) -> &LiveEvent {
        &self.event
    }
}

/// The document's fields without `_id`.
pub(crate) fn fields_of(mut doc: Document) -> Document {
    doc.shift_remove("_id");
    doc
}

/// The event that takes a subscriber from `old` to `new` (the fields of one document as it
/// was and is in the result, `None` when not in it); `None` when nothing it can see changed.
pub(crate) fn diff(
    collection: &Arc<str>,
    id: &str,
    old: Option<&Document>,
    new: Option<&Document>,
) -> Option<LiveEvent> {
    match (old, new) {
        (None, None) => None,
        (None, Some(new)) => Some(LiveEvent::Added {
            collection: collection.clone(),
            id: id.to_owned(),
            fields: new.clone(),
        }),
        (Some(_), None) => Some(LiveEvent::Removed {
            collection: collection.clone(),
            id: id.to_owned(),
        }),
        (Some(old), Some(new)) => {
            let fields: Document = new
                .iter()
                .filter(|(k, v)| old.get(*k) != Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let cleared: Vec<String> = old
                .keys()
                .filter(|k| !new.contains_key(*k))
                .cloned()
                .collect();
            (!fields.is_empty() || !cleared.is_empty()).then(|| LiveEvent::Changed {
                collection: collection.clone(),
                id: id.to_owned(),
                fields,
                cleared,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(v: Value) -> Document {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn diffs_name_changed_new_and_cleared_fields() {
        let c: Arc<str> = "c".into();
        let old = doc(json!({"a": 1, "b": 2, "gone": true}));
        let new = doc(json!({"a": 1, "b": 3, "fresh": "x"}));
        let event = diff(&c, "1", Some(&old), Some(&new)).unwrap();
        assert_eq!(
            event.data(),
            json!({"collection": "c", "id": "1", "fields": {"b": 3, "fresh": "x"}, "cleared": ["gone"]})
        );
        assert_eq!(event.name(), "changed");
        assert!(diff(&c, "1", Some(&old), Some(&old)).is_none());
        assert_eq!(diff(&c, "1", None, Some(&new)).unwrap().name(), "added");
        assert_eq!(
            diff(&c, "1", Some(&old), None).unwrap().data(),
            json!({"collection": "c", "id": "1"})
        );
        assert!(diff(&c, "1", None, None).is_none());
        assert_eq!(LiveEvent::Ready.data(), json!({}));
    }
}
