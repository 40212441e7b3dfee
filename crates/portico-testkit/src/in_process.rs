//! The served app in this process: `Served::build` + `Served::serve` on a thread of its own.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

use portico_cli::serve::{ServeOptions, Served};

use crate::http::Http;

/// What `portico serve --config PATH` serves, built and served in this process on
/// `127.0.0.1:0`, on a tokio runtime of its own thread (so a sync test, or an async test on a
/// one-thread runtime, cannot starve it). Dereferences to [`Http`] for requests.
///
/// Dropped, it stops at once, as a killed process would (connections cut, background work
/// aborted, the database released); [`Server::stop`] stops it gracefully, as SIGTERM does.
/// Either way the database is free once it returns: a new server, `portico restore` or the
/// test itself may open it in this process. The process-wide parts of
/// a served app are shared by every server of a test binary: the metrics recorder, the
/// slow-scan threshold, the read replicas' store and the log subscriber (none is installed:
/// the in-process app logs nothing). A test about those spawns the binary ([`crate::Process`]).
pub struct Server {
    http: Http,
    /// The platform it serves (closed when the server stops).
    platform: Option<portico_platform::Platform>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<bool>>,
}

impl std::ops::Deref for Server {
    type Target = Http;

    fn deref(&self) -> &Http {
        &self.http
    }
}

/// What the server's thread sends once it serves (or fails to build).
type Ready = Result<(std::net::SocketAddr, portico_platform::Platform), String>;

impl Server {
    /// The platform it serves (its store, accounts, jobs...), to set up or inspect state. A
    /// clone kept past the server's stop is closed: its calls fail with a "closed" error.
    pub fn platform(&self) -> &portico_platform::Platform {
        self.platform
            .as_ref()
            .expect("the platform is there until the server stops")
    }

    /// Serves the config file `config` (its `database` included); panics with the build's
    /// error when the app does not build.
    pub fn start(config: PathBuf) -> Server {
        Server::try_start(ServeOptions::new().config(config)).unwrap_or_else(|e| {
            panic!("the app did not build: {e}");
        })
    }

    /// Serves what `options` describe (their `listen` aside); the build's error when it fails.
    ///
    /// # Errors
    /// What `Served::build` refuses, as text.
    pub fn try_start(options: ServeOptions) -> Result<Server, String> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Ready>();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (kill, kill_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("portico-in-process".into())
            .spawn(move || serve_on_this_thread(&options, &ready_tx, stop_rx, kill_rx))
            .expect("spawn the server's thread");
        match ready_rx.recv() {
            Ok(Ok((addr, platform))) => Ok(Server {
                http: Http::new(format!("http://{addr}")),
                platform: Some(platform),
                stop: Some(stop),
                kill: Some(kill),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => match thread.join() {
                Ok(_) => Err("the server's thread ended before serving".into()),
                Err(panic) => Err(format!("the server's thread panicked: {panic:?}")),
            },
        }
    }

    /// Stops as SIGTERM stops the binary: no new connections, in-flight requests get the
    /// grace period, the background work stops and the platform closes (see
    /// `Served::shut_down`); whether it got that far. The database is released when this
    /// returns.
    pub fn stop(mut self) -> bool {
        self.platform = None;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.thread
            .take()
            .is_some_and(|thread| thread.join().unwrap_or(false))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.platform = None;
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The server's thread: builds the app, binds a free port, says so on `ready`, serves until
/// `stop` (graceful) or `kill` (at once); whether it stopped gracefully.
fn serve_on_this_thread(
    options: &ServeOptions,
    ready: &std::sync::mpsc::Sender<Ready>,
    stop: tokio::sync::oneshot::Receiver<()>,
    kill: tokio::sync::oneshot::Receiver<()>,
) -> bool {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("portico-in-process")
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(format!("tokio runtime: {e}")));
            return false;
        }
    };
    let graceful = runtime.block_on(async {
        let served = match Served::build(options).await {
            Ok(served) => served,
            Err(e) => {
                let _ = ready.send(Err(e.to_string()));
                return false;
            }
        };
        let bound = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener.local_addr().map(|addr| (listener, addr)),
            Err(e) => Err(e),
        };
        let (listener, addr) = match bound {
            Ok(bound) => bound,
            Err(e) => {
                let _ = ready.send(Err(format!("bind 127.0.0.1:0: {e}")));
                served.shut_down().await;
                return false;
            }
        };
        let platform = served.platform.clone();
        let _ = ready.send(Ok((addr, platform.clone())));
        let serving = served.serve(listener, async move {
            let _ = stop.await;
        });
        let graceful = tokio::select! {
            () = serving => true,
            _ = kill => false,
        };
        // Killed: the database is released as a killed process's is (a graceful stop closed
        // the platform already; closing again does nothing).
        platform.close().await;
        graceful
    });
    // Connections and background tasks still running end with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(1));
    graceful
}
