//! [`LiveStream`]: the events of one subscriber, as a `futures` stream.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::Hub;
use super::caller::Control;
use super::event::{LiveEvent, SentEvent};
use super::query::LiveQuery;

/// What a stream gives back when it is dropped: its place in each query it follows, its
/// registration with the caller checks, and its slot under the stream cap.
pub(crate) struct Membership {
    pub(crate) hub: Arc<Hub>,
    pub(crate) queries: Vec<(Arc<LiveQuery>, u64)>,
    pub(crate) control: Arc<Control>,
    pub(crate) _permit: OwnedSemaphorePermit,
}

impl Drop for Membership {
    fn drop(&mut self) {
        // Whatever ends the stream (the client, logout, a slow reader) leaves every query.
        self.control.end("closed");
        for (query, id) in self.queries.drain(..) {
            self.hub.leave(&query, id);
        }
    }
}

/// The events of one live subscription: the initial `added` events, `ready`, then `added`,
/// `changed` and `removed` as the results change. It ends (after an [`LiveEvent::End`]) when
/// the caller's token is logged out or expires, or when the subscriber fell further behind
/// than its buffer; dropping it unsubscribes.
pub struct LiveStream {
    initial: VecDeque<Arc<SentEvent>>,
    rx: mpsc::Receiver<Arc<SentEvent>>,
    control: Arc<Control>,
    ended: BoxFuture<'static, ()>,
    done: bool,
    _membership: Membership,
}

impl fmt::Debug for LiveStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveStream")
            .field("initial", &self.initial.len())
            .field("caller", &self.control.caller)
            .finish_non_exhaustive()
    }
}

impl LiveStream {
    pub(crate) fn new(
        initial: VecDeque<Arc<SentEvent>>,
        rx: mpsc::Receiver<Arc<SentEvent>>,
        membership: Membership,
    ) -> LiveStream {
        let control = membership.control.clone();
        let mut watch = control.watch();
        let ended = Box::pin(async move {
            let _ = watch.wait_for(Option::is_some).await;
        });
        LiveStream {
            initial,
            rx,
            control,
            ended,
            done: false,
            _membership: membership,
        }
    }
}

impl Stream for LiveStream {
    type Item = Arc<SentEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.ended.as_mut().poll(cx).is_ready() {
            self.done = true;
            let reason = self.control.ended().unwrap_or("closed");
            return Poll::Ready(Some(SentEvent::new(LiveEvent::End { reason })));
        }
        if let Some(event) = self.initial.pop_front() {
            return Poll::Ready(Some(event));
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }
}
