//! Where a live publication's by-hand calls (`added`, `changed`, `removed`, `ready`) go once its
//! handler returned: into the publication's merged stream.

use std::sync::Arc;

use portico_store::Document;
use tokio::sync::mpsc;

use super::Control;
use super::event::{LiveEvent, SentEvent};
use crate::functions::HandCalls;

/// Where a live publication's by-hand calls go once its handler returned.
#[derive(Debug)]
pub(crate) struct HandSink {
    tx: mpsc::Sender<Arc<SentEvent>>,
    control: Arc<Control>,
}

impl HandSink {
    /// A sink sending into `tx`; a full buffer ends the stream `control` stands for.
    pub(crate) fn new(tx: mpsc::Sender<Arc<SentEvent>>, control: Arc<Control>) -> HandSink {
        HandSink { tx, control }
    }

    fn send(&self, event: LiveEvent) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(SentEvent::new(event)) {
            self.control.end("slow-subscriber");
        }
    }
}

impl HandCalls for HandSink {
    fn added(&self, collection: &str, id: &str, mut fields: Document) {
        fields.shift_remove("_id");
        self.send(LiveEvent::Added {
            collection: collection.into(),
            id: id.to_owned(),
            fields,
        });
    }

    /// `null` values clear fields, as [`crate::Subscription::changed`] says.
    fn changed(&self, collection: &str, id: &str, fields: Document) {
        let mut set = Document::new();
        let mut cleared = Vec::new();
        for (k, v) in fields {
            if k == "_id" {
                continue;
            }
            if v.is_null() {
                cleared.push(k);
            } else {
                set.insert(k, v);
            }
        }
        self.send(LiveEvent::Changed {
            collection: collection.into(),
            id: id.to_owned(),
            fields: set,
            cleared,
        });
    }

    fn removed(&self, collection: &str, id: &str) {
        self.send(LiveEvent::Removed {
            collection: collection.into(),
            id: id.to_owned(),
        });
    }

    fn ready(&self) {
        self.send(LiveEvent::Ready);
    }

    fn is_stopped(&self) -> bool {
        self.control.ended().is_some() || self.tx.is_closed()
    }
}
