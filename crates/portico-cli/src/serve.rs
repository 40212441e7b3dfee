//! `portico serve`: build the platform and the front doors the config declares, and serve them
//! until SIGINT or SIGTERM.

mod auto;
mod connections;
mod redact;
mod rest;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use portico_platform::Platform;
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::{Level, info, warn};

use crate::config::{Config, DEFAULT_LISTEN};
use crate::database;

/// The arguments of `portico serve`.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// `--config`: the config file (default `portico.toml` when it exists).
    pub config: Option<PathBuf>,
    /// `--listen`: overrides the config's `listen`.
    pub listen: Option<String>,
    /// `--database`: overrides the config's `database`.
    pub database: Option<String>,
}

/// The line `serve` prints on standard output once it listens, followed by the address
/// (`listening on http://127.0.0.1:3000`); scripts wait for it and read the port from it.
pub const LISTENING: &str = "listening on http://";

/// How long in-flight requests may run on after SIGINT/SIGTERM.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Logs to standard error at `info` (one line per request), or as `RUST_LOG` says.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A second call (tests) finds a subscriber set already; that one is kept.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Builds the whole application the config declares on `platform`: one router per `[[api]]`,
/// then the auto API when `[auto]` is present (it answers every other path).
///
/// # Errors
/// [`crate::Error::Setup`] when a front door refuses the config (a duplicate path, a bad
/// header...), [`crate::Error::Platform`] when a collection cannot be declared.
pub fn build_app(config: &Config, platform: &Platform) -> crate::Result<Router> {
    // Object-id collections are declared first: declaring them after a plain `collection(name)`
    // would be refused by the platform.
    if let Some(auto) = &config.auto {
        auto::declare_object_id_collections(auto, platform)?;
    }
    let mut routers = Vec::new();
    for api in &config.apis {
        routers.push(rest::router(api, platform)?);
    }
    let auto_router = match &config.auto {
        Some(auto) => Some(auto::router(config, auto, platform)?),
        None => None,
    };
    // A merge of two routers claiming one path panics inside axum; the config check refuses
    // such configs, and this turns any case it missed into a setup error instead of a crash.
    let merged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let mut app = Router::new();
        for router in routers {
            app = app.merge(router);
        }
        match auto_router {
            Some(auto) => app.merge(auto),
            None => app.fallback(not_found),
        }
    }));
    merged.map_err(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "two routes overlap".to_owned());
        crate::Error::Setup(reason)
    })
}

async fn not_found() -> (StatusCode, axum::Json<serde_json::Value>) {
    (
        StatusCode::NOT_FOUND,
        axum::Json(
            serde_json::json!({"status": "error", "message": "API endpoint does not exist"}),
        ),
    )
}

/// Wraps the application in the request log: one `info` line per request, written when its
/// response is ready (method, URI, status, latency). The URI's query has the values of
/// credential-like parameters (`token`, `access_token`, `X-Auth-Token`, `password`, ... in any
/// case or encoding) redacted; headers and bodies are never logged.
pub fn with_request_log(app: Router) -> Router {
    app.layer(
        TraceLayer::new_for_http()
            .make_span_with(|request: &axum::http::Request<axum::body::Body>| {
                tracing::span!(
                    Level::INFO,
                    "request",
                    method = %request.method(),
                    uri = %redact::redacted_uri(request.uri()),
                    version = ?request.version(),
                )
            })
            .on_request(())
            .on_response(DefaultOnResponse::new().level(Level::INFO)),
    )
}

/// Fails a request whose body pauses longer than `timeout` between two chunks (a client that
/// promises a `Content-Length` and stops sending): the front door sees a body error and answers
/// with one, and the connection closes.
pub fn with_body_timeout(app: Router, timeout: Duration) -> Router {
    app.layer(RequestBodyTimeoutLayer::new(timeout))
}

/// Resolves the listen address: `--listen`, then the config's `listen`, then `127.0.0.1:3000`.
///
/// # Errors
/// [`crate::Error::Usage`] when `--listen` is not an address.
pub fn listen_addr(flag: Option<&str>, config: &Config) -> crate::Result<SocketAddr> {
    match flag {
        Some(text) => text.parse().map_err(|_| {
            crate::Error::Usage(format!(
                "--listen `{text}` is not an address; write an IP and a port, as in 127.0.0.1:3000"
            ))
        }),
        None => Ok(config.listen.unwrap_or_else(|| {
            DEFAULT_LISTEN
                .parse()
                .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 3000)))
        })),
    }
}

/// Serves until SIGINT or SIGTERM, then lets in-flight requests finish and closes the store.
///
/// # Errors
/// A bad config, an unreachable database, a port in use: nothing is served then, and the error
/// says exactly what is wrong.
pub async fn run(options: ServeOptions) -> crate::Result<()> {
    let (path, config) = database::load_config(options.config.as_deref())?;
    let addr = listen_addr(options.listen.as_deref(), &config)?;
    let url = database::database_url(options.database.as_deref(), &config);
    let platform = database::open(&url).await?;
    let app = with_request_log(with_body_timeout(
        build_app(&config, &platform)?,
        config.server.body_timeout,
    ));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| crate::Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(crate::Error::Serve)?;
    match &path {
        Some(path) => info!(config = %path.display(), database = %url, "serving"),
        None => info!(database = %url, "serving without a config file"),
    }
    if config.apis.is_empty() && config.auto.is_none() {
        warn!("the config declares no [[api]] and no [auto]: every path answers 404");
    }
    {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        // Scripts (and the tests) read this line; a closed stdout must not stop the server.
        let _ = writeln!(stdout, "{LISTENING}{bound}");
        let _ = stdout.flush();
    }
    let (stopping_tx, mut stopping_rx) = tokio::sync::watch::channel(false);
    let signal = async move {
        shutdown_signal().await;
        let _ = stopping_tx.send(true);
    };
    tokio::spawn(signal);
    let server = connections::serve(listener, app, config.server, stopping_rx.clone());
    // In-flight requests get SHUTDOWN_GRACE to finish; a client that never finishes its request
    // must not keep the process alive forever.
    let grace = async move {
        let _ = stopping_rx.wait_for(|stopping| *stopping).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        () = server => {}
        () = grace => warn!(
            "requests still running {} s after the signal; stopping without them",
            SHUTDOWN_GRACE.as_secs()
        ),
    }
    // Every connection has finished; the routers are gone. Dropping the last handle closes the
    // store (SQLite checkpoints and closes its connections).
    drop(platform);
    // Give the store's background closing a moment on slow disks before the process exits.
    tokio::time::sleep(Duration::from_millis(10)).await;
    info!("stopped");
    Ok(())
}

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => info!("SIGINT received, finishing in-flight requests"),
        () = terminate => info!("SIGTERM received, finishing in-flight requests"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[tokio::test]
    async fn overlapping_front_doors_are_a_setup_error_not_a_crash() {
        let platform = match Platform::open("memory:").await {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let one = match Config::parse("[[api]]\n[[api.collection]]\nname = \"a\"\n") {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        };
        // Two APIs on one base path: the config check refuses this; build it by hand anyway.
        let mut twice = one.clone();
        twice.apis.push(one.apis[0].clone());
        twice.apis[1].collections[0].name = "b".into();
        twice.apis[1].collections[0].path = "b".into();
        let built = build_app(&twice, &platform);
        assert!(matches!(built, Err(crate::Error::Setup(_))), "{built:?}");
        assert!(build_app(&one, &platform).is_ok());
    }

    /// The (method, path) pairs the front doors built from `text` say they serve (HEAD and
    /// OPTIONS aside).
    async fn served(text: &str) -> (Config, std::collections::BTreeSet<(String, String)>) {
        let config = match Config::parse(text) {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        };
        let platform = match Platform::open("memory:").await {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        let mut served = std::collections::BTreeSet::new();
        if let Some(auto_config) = &config.auto {
            if let Err(e) = auto::declare_object_id_collections(auto_config, &platform) {
                panic!("{e}");
            }
        }
        for api in &config.apis {
            let rest = match rest::build(api, &platform) {
                Ok(r) => r,
                Err(e) => panic!("{e}"),
            };
            for route in rest.routes() {
                for method in route.methods {
                    if method != "HEAD" && method != "OPTIONS" {
                        served.insert((method, route.path.clone()));
                    }
                }
            }
        }
        if let Some(auto_config) = &config.auto {
            let listing =
                match auto::build(&config, auto_config, &platform).map(|a| a.route_listing()) {
                    Ok(Ok(listing)) => listing,
                    other => panic!("{other:?}"),
                };
            for entry in listing["api-routes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                let path = entry["path"].as_str().unwrap_or_default().to_owned();
                for method in entry["methods"].as_array().cloned().unwrap_or_default() {
                    let method = method.as_str().unwrap_or_default().to_ascii_uppercase();
                    if method != "OPTIONS" {
                        served.insert((method, path.clone()));
                    }
                }
            }
        }
        (config, served)
    }

    /// `portico routes` prints the table computed from the config; the front doors list what
    /// they actually serve. They must agree, method for method.
    #[tokio::test]
    async fn the_route_table_is_what_the_front_doors_serve() {
        let configs = [
            include_str!("../../../examples/portico.toml"),
            "[[api]]\nversion = \"v1\"\n[[api.collection]]\nname = \"a\"\nexcluded_endpoints = \"getAll\"\n[[api.collection]]\nname = \"a\"\npath = \"deep/a\"\n[[api]]\napi_path = \"other\"\nuse_default_auth = true\n",
            "[auto]\nobject_id_collections = [\"o\"]\nallow_register = false\n[auto.rules.w]\ninsert = \"anyone\"\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"feeds/:0/items\"\nhttp_method = \"POST\"\n",
        ];
        for text in configs {
            let (config, served) = served(text).await;
            let listed: std::collections::BTreeSet<(String, String)> =
                crate::routes::route_table(&config)
                    .into_iter()
                    .map(|r| (r.method, r.path))
                    .collect();
            assert_eq!(listed, served, "{text}");
        }
    }
}
