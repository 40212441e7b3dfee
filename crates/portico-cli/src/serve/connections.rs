//! The accept loop: every connection bounded in time, and their number capped.
//!
//! `axum::serve` keeps a connection as long as its client wants: 20,000 clients that each sent
//! half a request line held 20,000 file descriptors until the process could accept no more, and
//! a body that never arrives held its connection forever. Here (the limits in
//! [`ConnectionLimits`]):
//!
//! - a request head must arrive within `header_timeout` (hyper's header-read timer, which also
//!   runs while a kept-alive connection waits for its next request);
//! - a connection with no traffic for `keep_alive_timeout` is asked to close (after the request
//!   in flight, if any);
//! - a request body that pauses longer than `body_timeout` between two chunks fails (the front
//!   door answers with an error and the connection closes): a layer on the app, see
//!   [`super::with_body_timeout`];
//! - at most `max_connections` are open. When a new one arrives at the cap, the oldest
//!   connection that has not yet sent a whole request head is closed to make room, so clients
//!   that hold connections without using them cannot lock out one that does; when every open
//!   connection is busy, new ones wait in the listen queue. Either case is logged (at most once a
//!   second).
//! - a connection the server closes while its client may still be sending (a reply given before
//!   the request's body was read: a 404, 401, 405, 413...) is closed with a lingering close: the
//!   server's side is shut down first (the client reads the whole reply and its end), then what
//!   the client still sends is read and thrown away, up to [`LINGER_BYTES`] or [`LINGER_TIME`],
//!   before the socket is closed. Closing a socket with unread bytes makes the kernel send a
//!   reset, and a client that receives one loses the reply it had not read yet: 169 of 300
//!   POSTs of 1 MiB to a missing path saw a connection reset instead of their 404.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, oneshot, watch};
use tower::ServiceExt as _;
use tracing::{debug, warn};

use crate::config::ConnectionLimits;

/// Connections that have not yet sent a whole request head, oldest first, each with the switch
/// that closes it.
#[derive(Default)]
struct Unproven {
    next: u64,
    waiting: BTreeMap<u64, oneshot::Sender<()>>,
}

/// What the accept loop and its connections share.
struct Shared {
    limits: ConnectionLimits,
    open: AtomicUsize,
    closed: Notify,
    unproven: Mutex<Unproven>,
    last_warning: Mutex<Option<Instant>>,
}

impl Shared {
    fn unproven(&self) -> std::sync::MutexGuard<'_, Unproven> {
        self.unproven.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs that the cap was reached, at most once a second.
    fn warn_at_cap(&self, what: &str) {
        let mut last = self
            .last_warning
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
            *last = Some(Instant::now());
            warn!(
                max_connections = self.limits.max_connections,
                "connection limit reached: {what}"
            );
        }
    }

    /// Makes room for one more connection: closes the oldest one that has not sent a request
    /// head, or waits for one to close.
    async fn make_room(&self) {
        loop {
            let closed = self.closed.notified();
            if self.open.load(Ordering::Acquire) < self.limits.max_connections {
                return;
            }
            let oldest = self.unproven().waiting.pop_first();
            match oldest {
                Some((_, close)) => {
                    self.warn_at_cap("closing the oldest connections that have not sent a request");
                    let _ = close.send(());
                }
                None => self.warn_at_cap("every connection is busy; new ones wait"),
            }
            closed.await;
        }
    }
}

/// Serves `app` on `listener` until `stop` turns true, then lets open connections finish their
/// requests (they get no new ones). Dropping the future (the grace period is over) ends every
/// connection still open: none goes on serving, or holds the app, after it.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let shared = Arc::new(Shared {
        limits,
        open: AtomicUsize::new(0),
        closed: Notify::new(),
        unproven: Mutex::new(Unproven::default()),
        last_warning: Mutex::new(None),
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // No HTTP/2 keep-alive pings: their bytes would keep an idle connection from ever being
    // closed for idleness.
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let stopping = stop.clone();
    // The connections' tasks, aborted when this future is dropped.
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        // Finished connections are let go of as new ones come.
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            () = shared.make_room() => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was accepted: the
                // listener itself is fine. Pause so a full descriptor table does not spin.
                warn!("accept error: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        shared.open.fetch_add(1, Ordering::AcqRel);
        let (close_tx, close_rx) = oneshot::channel();
        let id = {
            let mut unproven = shared.unproven();
            unproven.next += 1;
            let id = unproven.next;
            unproven.waiting.insert(id, close_tx);
            id
        };
        let conn = Connection {
            shared: shared.clone(),
            id,
        };
        let builder = builder.clone();
        let app = app.clone();
        let stopping = stopping.clone();
        tasks.spawn(async move {
            conn.run(stream, peer, app, &builder, close_rx, stopping)
                .await;
        });
    }
    drop(listener);
    // Every connection was asked to close after its request in flight; wait for the last.
    loop {
        let closed = shared.closed.notified();
        if shared.open.load(Ordering::Acquire) == 0 {
            return;
        }
        closed.await;
    }
}

/// One accepted connection; its drop frees its place.
struct Connection {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.unproven().waiting.remove(&self.id);
        self.shared.open.fetch_sub(1, Ordering::AcqRel);
        self.shared.closed.notify_waiters();
    }
}

impl Connection {
    async fn run(
        self,
        stream: TcpStream,
        peer: SocketAddr,
        app: Router,
        builder: &auto::Builder<TokioExecutor>,
        close: oneshot::Receiver<()>,
        mut stop: watch::Receiver<bool>,
    ) {
        // Resolves only when the accept loop closes this connection to make room; the switch is
        // dropped (and this never resolves) once a request head arrived.
        let close = async move {
            if close.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::pin!(close);
        let activity = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let io = TokioIo::new(Tracked {
            inner: Some(stream),
            activity: activity.clone(),
            started,
            answered: false,
        });
        let shared = self.shared.clone();
        let id = self.id;
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // A whole request head arrived: this connection is in use, not to be evicted.
            shared.unproven().waiting.remove(&id);
            request.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(request.map(axum::body::Body::new))
        });
        let served = builder.serve_connection_with_upgrades(io, service);
        tokio::pin!(served);
        let keep_alive = self.shared.limits.keep_alive_timeout;
        let mut asked_to_close = false;
        loop {
            let idle_for = Duration::from_millis(activity.load(Ordering::Relaxed))
                .saturating_add(keep_alive)
                .saturating_sub(started.elapsed());
            tokio::select! {
                result = served.as_mut() => {
                    if let Err(e) = result {
                        debug!(%peer, "connection ended: {e}");
                    }
                    return;
                }
                () = &mut close => {
                    debug!(%peer, "closed to make room: no request yet");
                    return;
                }
                _ = stop.wait_for(|stop| *stop), if !asked_to_close => {
                    served.as_mut().graceful_shutdown();
                    asked_to_close = true;
                }
                () = tokio::time::sleep(idle_for), if !asked_to_close => {
                    let last = Duration::from_millis(activity.load(Ordering::Relaxed));
                    if started.elapsed().saturating_sub(last) >= keep_alive {
                        // Idle: no new request; one in flight still finishes.
                        served.as_mut().graceful_shutdown();
                        asked_to_close = true;
                    }
                }
            }
        }
    }
}

/// The most a lingering close reads and throws away before it closes the socket anyway.
pub(crate) const LINGER_BYTES: usize = 4 * 1024 * 1024;
/// The longest a lingering close waits for its client to finish sending and close.
pub(crate) const LINGER_TIME: Duration = Duration::from_secs(2);

/// A socket that notes when it last moved bytes (milliseconds since `started`), and closes
/// with a lingering close once it has answered (see the module docs).
struct Tracked {
    /// Always `Some` until the drop hands the socket to [`linger`].
    inner: Option<TcpStream>,
    activity: Arc<AtomicU64>,
    started: Instant,
    /// Whether any byte was written: a connection that never answered has no reply to lose.
    answered: bool,
}

impl Tracked {
    fn touch(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.activity.store(now, Ordering::Relaxed);
    }

    fn stream(&mut self) -> io::Result<&mut TcpStream> {
        self.inner
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let Some(stream) = self.inner.take() else {
            return;
        };
        if !self.answered {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(linger(stream));
        }
    }
}

/// A lingering close: shuts the server's side down (the client sees the reply end), reads and
/// throws away what the client still sends until it closes, up to [`LINGER_BYTES`] and
/// [`LINGER_TIME`], then closes. A client that had sent everything closes at once.
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let drain = async {
        let mut buf = [0u8; 16 * 1024];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(self.stream()?).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(self.stream()?).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.answered = true;
            self.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.stream()?).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.stream()?).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(self.stream()?).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.answered = true;
            self.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(TcpStream::is_write_vectored)
    }
}
