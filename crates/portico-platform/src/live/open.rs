//! Opening live streams on a [`Platform`]: a publication ([`Platform::subscribe_live`]) or one
//! query ([`Platform::live_query`]).

use std::sync::Arc;

use portico_store::document_id;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    HandSink, LiveCaller, LiveEvent, LiveStream, Membership, MergeBox, SentEvent, direct_stream,
    fields_of, run_merge,
};
use crate::functions::{run_caught, view_of};
use crate::{Cursor, MethodError, Platform, Subscription};

impl Platform {
    /// Follows `caller`'s login: the [`crate::LoginWatch`] ends when its token is logged out
    /// (on any instance) or expires, as a live stream of that caller would. It counts as one
    /// of the `max_streams`.
    ///
    /// # Errors
    /// `too-many-streams` (status 503); `live-unsupported` (501) for a store without a
    /// change feed.
    pub async fn watch_login(&self, caller: LiveCaller) -> Result<crate::LoginWatch, MethodError> {
        let (control, permit) = self.live_hub().open(caller).await?;
        let rx = control.watch();
        Ok(crate::LoginWatch {
            control,
            rx,
            _permit: permit,
        })
    }

    /// Follows one query over `collection` as `caller`: its current documents as `added`
    /// events, `ready`, then `added`/`changed`/`removed` as writes change the result. The
    /// query's projection applies to every event; with a sort and a limit, the window is kept
    /// (a document pushed out of it is `removed`, the one that moves in is `added`). Identical
    /// queries share one evaluation.
    ///
    /// # Errors
    /// `too-many-streams` (status 503) when the server has `max_streams` open;
    /// `live-unsupported` (501) for a store without a change feed; an internal error when the
    /// query fails.
    pub async fn live_query(
        &self,
        collection: &str,
        query: portico_store::Query,
        caller: LiveCaller,
    ) -> Result<LiveStream, MethodError> {
        let hub = self.live_hub().clone();
        let (control, permit) = hub.open(caller).await?;
        let (tx, rx) = mpsc::channel(hub.config().buffer.max(1));
        let mut cursor = Cursor::new(collection, query);
        if let Some(ruled) = self.get_collection(collection) {
            cursor.view = ruled
                .field_view(control.caller.user_id())
                .await
                .map_err(MethodError::from)?;
        }
        let (query, id, initial) = hub.join(&cursor, tx, &control).await?;
        let membership = Membership {
            hub,
            queries: vec![(query, id)],
            control,
            _permit: permit,
        };
        Ok(direct_stream(initial, rx, membership))
    }

    /// Runs the publication `name` as `caller` with `args`, and follows it: the documents of
    /// every cursor it returns and of every `added` call as `added` events, `ready`, then the
    /// changes. A document published by several sources is one document (see the merge
    /// rules in the live module). A handler that publishes by hand keeps calling
    /// `added`/`changed`/`removed` (and `ready`, when it returned no cursor) after it returned,
    /// from a task of its own, until [`Subscription::is_stopped`].
    ///
    /// # Errors
    /// As [`Platform::live_query`]; the publication's own error; `publication-not-found` (404).
    pub async fn subscribe_live(
        &self,
        name: &str,
        caller: LiveCaller,
        args: Vec<Value>,
    ) -> Result<LiveStream, MethodError> {
        let handler = self.found_publication(name)?;
        let hub = self.live_hub().clone();
        let (control, permit) = hub.open(caller.clone()).await?;
        let buffer = hub.config().buffer.max(1);
        let views = self.field_views(caller.user_id()).await?;
        let subscription =
            Subscription::new(self.clone(), caller.user_id.clone()).with_views(views.clone());
        let cursors =
            run_caught("publication", name, || handler(subscription.clone(), args)).await?;
        let cursors: Vec<Cursor> = cursors
            .into_iter()
            .map(|mut cursor| {
                cursor.view = view_of(&views, &cursor.collection);
                cursor
            })
            .collect();
        let (hand_tx, hand_rx) = mpsc::channel(buffer);
        let published = subscription.take_live(HandSink::new(hand_tx, control.clone()));
        let by_hand = !published.collections.is_empty() || published.ready;
        let mut membership = Membership {
            hub: hub.clone(),
            queries: Vec::new(),
            control: control.clone(),
            _permit: permit,
        };
        if cursors.len() == 1 && !by_hand {
            // One cursor: the subscriber reads the shared query directly (no per-stream task).
            let (tx, rx) = mpsc::channel(buffer);
            let (query, id, initial) = hub.join(&cursors[0], tx, &control).await?;
            membership.queries.push((query, id));
            return Ok(direct_stream(initial, rx, membership));
        }
        let mut merge_box = MergeBox::new(cursors.len() + 1);
        let mut sources = Vec::with_capacity(cursors.len() + 1);
        for (index, cursor) in cursors.iter().enumerate() {
            let (tx, rx) = mpsc::channel(buffer);
            let (query, id, initial) = hub.join(cursor, tx, &control).await?;
            membership.queries.push((query, id));
            for event in initial {
                merge_box.apply(index, &event);
            }
            sources.push(rx);
        }
        let nothing_by_hand = published.collections.is_empty();
        for (collection, docs) in published.collections {
            let Value::Object(docs) = docs else { continue };
            let collection: Arc<str> = collection.as_str().into();
            for (id, doc) in docs {
                let Value::Object(doc) = doc else { continue };
                let id = document_id(&doc).map_or(id, str::to_owned);
                let event = LiveEvent::Added {
                    collection: collection.clone(),
                    id,
                    fields: fields_of(doc),
                };
                merge_box.apply(cursors.len(), &event);
            }
        }
        sources.push(hand_rx);
        let mut initial: std::collections::VecDeque<Arc<SentEvent>> = merge_box.initial().into();
        // Ready at once unless the handler publishes by hand and has not said it is ready (it
        // will call `ready` itself); a handler that returned no cursor and published nothing
        // is ready too.
        let ready_now = !cursors.is_empty() || published.ready || nothing_by_hand;
        if ready_now {
            initial.push_back(SentEvent::new(LiveEvent::Ready));
        }
        let (out_tx, out_rx) = mpsc::channel(buffer);
        tokio::spawn(run_merge(merge_box, sources, out_tx, control, ready_now));
        Ok(LiveStream::new(initial, out_rx, membership))
    }
}
