//! `portico serve`: build the platform and the front doors the config declares, and serve them
//! until SIGINT or SIGTERM.

pub mod admin;
mod backups;
pub mod body_budget;
mod connections;
mod impersonation;
mod json_log;
mod log_writer;
pub mod metrics;
pub mod openapi;
pub mod probes;
mod redact;
pub mod replicas;
pub mod request_id;
mod request_log;
mod route_limits;
pub mod store_metrics;
mod zero_config;

pub use log_writer::LogGuard;
pub use zero_config::{ZERO_CONFIG_API_PATH, zero_config};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use portico_platform::Platform;
use tower_http::timeout::RequestBodyTimeoutLayer;
use tracing::{info, warn};

use crate::config::{Config, DEFAULT_LISTEN};
use crate::database;
use crate::doors::{Doors, refused};

/// The arguments of `portico serve`, and of [`Served::build`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServeOptions {
    /// `--config`: the config file (default `portico.toml` when it exists).
    pub config: Option<PathBuf>,
    /// `--listen`: overrides the config's `listen`.
    pub listen: Option<String>,
    /// `--database`: overrides the config's `database`.
    pub database: Option<String>,
    /// `--watch`: reload `[scripts]` when their files change.
    pub watch: bool,
}

impl ServeOptions {
    /// No config file given (`./portico.toml` when it exists), the config's address and
    /// database, no watching.
    pub fn new() -> Self {
        ServeOptions::default()
    }

    /// The config file.
    pub fn config(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = Some(path.into());
        self
    }

    /// The address to serve on, over the config's `listen` (`127.0.0.1:0` picks a free port).
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = Some(addr.into());
        self
    }

    /// The store URL, over the config's `database`.
    pub fn database(mut self, url: impl Into<String>) -> Self {
        self.database = Some(url.into());
        self
    }

    /// Reload `[scripts]` when their files change.
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }
}

/// The line `serve` prints on standard output once it listens, followed by the address
/// (`listening on http://127.0.0.1:3000`); scripts wait for it and read the port from it.
pub const LISTENING: &str = "listening on http://";

/// How long in-flight requests may run on after SIGINT/SIGTERM unless `shutdown_grace_seconds`
/// says otherwise. Short: a client that stopped sending half-way must not hold a restart.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Logs to standard error at `info` (one line per request), or as `RUST_LOG` says. Keep the
/// returned guard until the process ends: dropping it writes out the lines still waiting.
///
/// Lines are formatted on the thread that logs them, gathered in memory and written by a
/// thread of their own in batches, at least every 20 ms (see `log_writer`): a `write` per line
/// showed as a third of the request log's cost in a profile of get-by-id, and a hand-off per
/// line to a writer thread as 15-20% of its throughput. No line is dropped: when the output
/// falls behind (a full pipe), logging threads wait for it. `None` when a subscriber is set
/// already, or when the writer thread cannot be started (then each line is written as it is
/// logged).
///
/// `format` is `[log] format`: text lines, or one JSON object per line (see `json_log`).
#[must_use = "dropping the guard at once stops the log writer"]
pub fn init_logging(format: crate::config::LogFormat) -> Option<LogGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = format == crate::config::LogFormat::Json;
    let ansi = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_target(false);
    // A second call (tests) finds a subscriber set already; that one is kept.
    let started = log_writer::start(std::io::stderr(), "portico-log");
    let (writer, guard) = match started {
        Some((writer, guard)) => (Some(writer), Some(guard)),
        None => (None, None),
    };
    let installed = match (json, writer) {
        (true, Some(writer)) => subscriber
            .event_format(json_log::JsonLines)
            .with_writer(writer)
            .try_init(),
        (true, None) => subscriber
            .event_format(json_log::JsonLines)
            .with_writer(std::io::stderr)
            .try_init(),
        (false, Some(writer)) => subscriber.with_writer(writer).try_init(),
        (false, None) => subscriber.with_writer(std::io::stderr).try_init(),
    };
    installed.ok().and(guard)
}

/// The `[log] format` of the config `serve` will read (see [`database::load_config`]); text
/// when there is none or it does not load (`serve` then says why).
pub fn log_format(config: Option<&std::path::Path>) -> crate::config::LogFormat {
    database::load_config(config)
        .map(|(_, config)| config.log.format)
        .unwrap_or_default()
}

/// Builds the whole application the config declares on `platform`: one router per `[[api]]`,
/// then the auto API when `[auto]` is present (it answers every other path), with the health
/// probes, `/openapi.json` (unless `openapi = false`) and `/metrics` (when `[metrics]` serves
/// it beside the APIs).
///
/// # Errors
/// [`crate::Error::Setup`] when a front door refuses the config (a duplicate path, a bad
/// header...), [`crate::Error::Platform`] when a collection cannot be declared.
pub fn build_app(config: &Config, platform: &Platform) -> crate::Result<Router> {
    Ok(build_server(config, platform)?.router)
}

/// The application [`build_app`] makes, and every route it serves as data.
pub struct App {
    /// The application.
    pub router: Router,
    /// What it serves: both doors' routes, then the server's own.
    pub routes: Vec<portico_edge::RouteDoc>,
}

/// As [`build_app`], keeping the route descriptions (read by `/openapi.json`, `portico
/// openapi` and the metrics' route labels).
///
/// # Errors
/// As [`build_app`].
pub fn build_server(config: &Config, platform: &Platform) -> crate::Result<App> {
    let doors = Doors::build(config, platform).map_err(|errors| refused(None, errors))?;
    assemble(config, platform, doors)
}

/// The application around `doors` (built from `config` on `platform`): the doors' routers, the
/// health probes, `/metrics` and `/openapi.json` as the config says, and the one 404.
///
/// # Errors
/// [`crate::Error::Setup`] when the metrics cannot be set up.
pub fn assemble(config: &Config, platform: &Platform, doors: Doors) -> crate::Result<App> {
    let Doors {
        apis: mut routers,
        auto: auto_router,
        mut routes,
    } = doors;
    routes.extend(probes::docs());
    routers.push(probes::router(platform.clone()));
    // The live socket: channels by the config's rules, presence, publications.
    platform.channels().set_rules(config.channels.clone());
    routes.push(
        portico_edge::RouteDoc::new(
            portico_edge::Door::Server,
            axum::http::Method::GET,
            portico_edge::socket::LIVE_PATH,
            portico_edge::Access::OptionalUser,
        )
        .summary("The live socket (WebSocket): channels, presence, live lists and publications; or one list (`list`, a list URL) or publication (`publication`, `args` a JSON array) as server-sent events with `Accept: text/event-stream`")
        .query(["list", "publication", "args"]),
    );
    if crate::doors::server_paths::serves_account_routes(config) {
        routes.extend(portico_accounts::AuthRoutes::docs());
        routers.push(
            portico_accounts::AuthRoutes::new(platform.clone(), config.trusted_proxies.clone())
                .cors(config.apis.iter().any(|api| api.enable_cors))
                .router(),
        );
    }
    let metrics_here = config.metrics.as_ref().is_some_and(|m| m.listen.is_none());
    if metrics_here {
        routes.push(
            portico_edge::RouteDoc::new(
                portico_edge::Door::Server,
                axum::http::Method::GET,
                metrics::METRICS_PATH,
                portico_edge::Access::Public,
            )
            .summary("Prometheus metrics (text format)"),
        );
        routers.push(metrics::router(metrics::handle()?, platform.clone()));
    }
    if config.serves_openapi() {
        routes.push(openapi::self_doc());
        let document = openapi::document(&routes);
        routers.push(portico_edge::openapi::router(document));
    }
    // The doors' route registry refused every overlap (the server's own parts included), so
    // no merge below meets two routers claiming one path.
    let mut router = Router::new();
    for door in routers {
        router = router.merge(door);
    }
    let router = match auto_router {
        Some(auto) => router.merge(auto),
        None => router.fallback(not_found),
    };
    // A list followed over the live socket is requested through the doors themselves.
    let lists = router.clone();
    let mut router = router
        .merge(portico_edge::socket::router(platform.clone(), Some(lists)))
        .layer(axum::middleware::map_response(one_not_found));
    if config.metrics.is_some() {
        metrics::handle()?;
        router = metrics::track(router, metrics::RouteLabels::new(&routes));
    }
    Ok(App { router, routes })
}

/// Every path no door has a route for gets the one 404 body of [`not_found`], whichever door's
/// area it falls in (the doors mark such replies with [`portico_edge::NoRoute`]).
async fn one_not_found(response: axum::response::Response) -> axum::response::Response {
    if response
        .extensions()
        .get::<portico_edge::NoRoute>()
        .is_none()
    {
        return response;
    }
    let (parts, _) = response.into_parts();
    let mut unified = axum::response::IntoResponse::into_response(not_found().await);
    for (name, value) in &parts.headers {
        if name != http::header::CONTENT_TYPE && name != http::header::CONTENT_LENGTH {
            unified.headers_mut().insert(name.clone(), value.clone());
        }
    }
    unified
}

/// The server's 404 for a path no door serves.
async fn not_found() -> (StatusCode, axum::Json<serde_json::Value>) {
    (
        StatusCode::NOT_FOUND,
        axum::Json(
            serde_json::json!({"status": "error", "message": "API endpoint does not exist"}),
        ),
    )
}

/// Wraps the application in the request log: one `info` line per request (target
/// `portico::request`), written when its response is ready (method, URI, version, status,
/// latency). The URI's query has the values of credential-like parameters (`token`,
/// `access_token`, `X-Auth-Token`, `password`, ... in any case or encoding) redacted; headers
/// and bodies are never logged.
///
/// Every reply also carries `X-Request-Id` (see [`request_id`]), the one in the request line:
/// a request from one of `proxies` keeps its own.
pub fn with_request_log(app: Router, proxies: portico_edge::TrustedProxies) -> Router {
    app.layer(request_log::RequestLogLayer::new(proxies))
}

/// Fails a request whose body pauses longer than `timeout` between two chunks (a client that
/// promises a `Content-Length` and stops sending): the front door sees a body error and answers
/// with one, and the connection closes.
pub fn with_body_timeout(app: Router, timeout: Duration) -> Router {
    app.layer(RequestBodyTimeoutLayer::new(timeout))
}

/// The environment variable that sets the listen address when `--listen` does not.
pub const LISTEN_ENV: &str = "PORTICO_LISTEN";
/// The port platforms that run containers give a service; when set (and neither `--listen` nor
/// `PORTICO_LISTEN` is), `serve` listens on every interface at that port.
pub const PORT_ENV: &str = "PORT";

/// Resolves the listen address and says where it came from: `--listen`, then `PORTICO_LISTEN`,
/// then `PORT` (as `0.0.0.0:PORT`), then the config's `listen`, then `127.0.0.1:3000`.
///
/// # Errors
/// [`crate::Error::Usage`] when the chosen value is not an address (or `PORT` not a port).
pub fn choose_listen(flag: Option<&str>, config: &Config) -> crate::Result<(SocketAddr, String)> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let parse = |text: &str, from: &str| {
        text.trim().parse::<SocketAddr>().map_err(|_| {
            crate::Error::Usage(format!(
                "{from} `{text}` is not an address; write an IP and a port, as in 127.0.0.1:3000"
            ))
        })
    };
    if let Some(text) = flag {
        return Ok((parse(text, "--listen")?, "--listen".to_owned()));
    }
    if let Some(text) = env(LISTEN_ENV) {
        return Ok((parse(&text, LISTEN_ENV)?, LISTEN_ENV.to_owned()));
    }
    if let Some(port) = env(PORT_ENV) {
        let port: u16 = port.trim().parse().map_err(|_| {
            crate::Error::Usage(format!("{PORT_ENV} `{port}` is not a port number"))
        })?;
        return Ok((SocketAddr::from(([0, 0, 0, 0], port)), PORT_ENV.to_owned()));
    }
    Ok(match config.listen {
        Some(addr) => (addr, "`listen` in the config".to_owned()),
        None => (
            DEFAULT_LISTEN
                .parse()
                .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 3000))),
            "the default".to_owned(),
        ),
    })
}

/// The listen address (see [`choose_listen`]).
///
/// # Errors
/// As [`choose_listen`].
pub fn listen_addr(flag: Option<&str>, config: &Config) -> crate::Result<SocketAddr> {
    choose_listen(flag, config).map(|(addr, _)| addr)
}

/// The app `serve` would build for the config file `config` (`./portico.toml` when it exists),
/// without serving it, and the config as `adjust` left it: for `portico openapi` and
/// `portico types`. A config file's routes do not depend on the data, so it is built on an
/// in-memory store; without a config file the zero-config default reads the database's
/// collections, so the database `serve` would use is opened.
///
/// # Errors
/// A bad config, an unreachable database (no config file), or a front door refusing the config.
pub async fn described(
    config: Option<PathBuf>,
    database_flag: Option<String>,
    adjust: impl FnOnce(&mut Config),
) -> crate::Result<(Config, App)> {
    let (path, mut config) = database::load_config(config.as_deref())?;
    let platform = match &path {
        Some(_) => database::open("memory:").await?,
        None => {
            let choice = database::choose_database(database_flag.as_deref(), None, &config);
            let platform = database::open(&choice.url).await?;
            config = zero_config(&platform, &choice.url).await?;
            platform
        }
    };
    adjust(&mut config);
    crate::doors::declare_collections(&config, &platform)?;
    let scripts = crate::scripts::load(&config, &platform).await?;
    let doors = Doors::build_with(&config, &platform, scripts.as_ref())
        .map_err(|errors| refused(path.as_deref(), errors))?;
    let app = assemble(&config, &platform, doors)?;
    Ok((config, app))
}

/// Everything `portico serve` serves, built from a config by [`Served::build`]: the
/// application with every layer around it (the front doors, the admin page, probes, metrics,
/// the request log, limits and budgets), the platform under it, and the work it runs in the
/// background (account mail, jobs and schedules, scheduled backups, the guest sweep, the files
/// cleaner, the scripts' watcher, the change feed).
///
/// The binary only binds an address and calls [`Served::serve`]; a test or an embedding
/// program builds the same thing in process and serves it on a listener of its own.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use portico_cli::serve::{ServeOptions, Served};
///
/// let served = Served::build(&ServeOptions::new().config("portico.toml")).await?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// // Serves until the future given resolves, then finishes in-flight requests, stops the
/// // background work and closes the platform: the database is released when it returns.
/// served.serve(listener, std::future::pending::<()>()).await;
/// # Ok(())
/// # }
/// ```
pub struct Served {
    /// The whole application, layers included.
    pub router: Router,
    /// The platform it serves.
    pub platform: Platform,
    /// The config it was built from (the zero-config default without a file).
    pub config: Config,
    /// The config file, when one was read.
    pub config_path: Option<PathBuf>,
    /// The database and why it was chosen.
    pub database: database::DatabaseChoice,
    mail_sender: Option<portico_platform::MailSender>,
    job_worker: portico_platform::jobs::JobWorker,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("config_path", &self.config_path)
            .field("database", &self.database.to_string())
            .finish_non_exhaustive()
    }
}

impl Served {
    /// Builds what `portico serve` serves for `options` (its `listen` aside), and starts its
    /// background work.
    ///
    /// # Errors
    /// A bad config, an unreachable database, a script that does not load, a front door
    /// refusing the config: the error says exactly what is wrong.
    pub async fn build(options: &ServeOptions) -> crate::Result<Served> {
        let (path, mut config) = database::load_config(options.config.as_deref())?;
        let choice =
            database::choose_database(options.database.as_deref(), path.as_deref(), &config);
        let url = choice.url.clone();
        let platform = open_platform(&url, &config).await?;
        if path.is_none() {
            config = zero_config(&platform, &url).await?;
        }
        set_up_platform(&config, &platform, &url).await?;
        let scripts = crate::scripts::load(&config, &platform).await?;
        schedule_crons(&config, &platform)?;
        // The doors are built once: served, listed on the admin page and described in the
        // OpenAPI document. What they refuse is a mistake in the config file.
        let doors = Doors::build_with(&config, &platform, scripts.as_ref())
            .map_err(|errors| refused(path.as_deref(), errors))?;
        let mut tasks = Vec::new();
        if let (Some(scripts), true) = (&scripts, options.watch) {
            tasks.push(crate::scripts::watch(scripts.clone()));
        }
        let door_routes = doors.routes.clone();
        // Account mail leaves through the outbox; this instance's sender runs until shutdown.
        let mail_sender = start_mail_sender(&config, &platform)?;
        // Jobs (defined by scripts or the platform) run on every instance; each claims its own.
        let job_worker = platform.jobs().start(config.jobs);
        let backups = crate::backup::configured_set(&config, &choice)?.map(std::sync::Arc::new);
        let app = assemble(&config, &platform, doors)?.router;
        let app = admin::mount(app, &config, &platform, door_routes, backups.clone()).await?;
        let router = with_layers(app, &config, &platform);
        if let (Some(set), Some(every)) = (&backups, config.backups.as_ref().and_then(|b| b.every))
        {
            tasks.push(backups::schedule(std::sync::Arc::clone(set), every));
        }
        Ok(Served {
            router,
            platform,
            config,
            config_path: path,
            database: choice,
            mail_sender,
            job_worker,
            tasks,
        })
    }

    /// Serves on `listener` (with the config's connection limits) until `stop` resolves; then
    /// in-flight requests get the grace period (`shutdown_grace_seconds`) to finish, and
    /// [`Served::shut_down`] stops the background work and closes the platform. When this
    /// returns the database is released: on SQLite the file can be opened again, or restored
    /// in place, in this same process; on PostgreSQL the pool's connections are closed.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        stop: impl Future<Output = ()> + Send + 'static,
    ) {
        let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            stop.await;
            let _ = stopping_tx.send(true);
        });
        serve_until(
            listener,
            self.router.clone(),
            &self.config,
            stopping_rx,
            None,
        )
        .await;
        self.shut_down().await;
    }

    /// Stops the background work (the scheduled backups and the scripts' watcher end, the mail
    /// being sent and the jobs running finish within their grace), then closes the platform
    /// ([`Platform::close`]): its registries let go of every handler, and the store releases
    /// the database, whoever still holds a handle on the platform (a clone kept by the
    /// program, a request still running past the grace period: their later store calls fail
    /// with a "closed" error, 503 to a client).
    pub async fn shut_down(self) {
        for task in &self.tasks {
            task.abort();
        }
        for task in self.tasks {
            // An aborted task ends at its next await; its error says it was cancelled.
            let _ = task.await;
        }
        shut_down(self.mail_sender, self.job_worker, &self.platform).await;
    }
}

/// Serves until SIGINT or SIGTERM, then lets in-flight requests finish and closes the platform
/// and its store.
///
/// # Errors
/// A bad config, an unreachable database, a port in use: nothing is served then, and the error
/// says exactly what is wrong.
pub async fn run(options: ServeOptions) -> crate::Result<()> {
    let (_, config) = database::load_config(options.config.as_deref())?;
    let (addr, listen_source) = choose_listen(options.listen.as_deref(), &config)?;
    let served = Served::build(&options).await?;
    let (listener, bound) = bind(addr).await?;
    let config = &served.config;
    if let Some(metrics_addr) = config.metrics.as_ref().and_then(|m| m.listen) {
        metrics::serve_apart(metrics_addr, served.platform.clone(), config.server).await?;
    }
    log_start(served.config_path.as_deref(), config, &served.database);
    info!("listening on {bound} (address from {listen_source})");
    if config.admin.enabled {
        info!(
            "admin page: http://{bound}{} (accounts holding the `{}` role)",
            config.admin.path, config.admin.role
        );
    }
    // Listen for signals before saying "listening": a script that stops the server as soon as
    // it reads that line must find the handlers in place (else SIGTERM's default action ends
    // the process at once, without its last log lines).
    let signals = Signals::listen();
    say_listening(bound);
    serve_until_signalled(listener, served, signals).await;
    Ok(())
}

/// Readies `platform` for `config` before its scripts load: the files store and its cleaner,
/// the collections, search and sorted indexes, the slow-scan warning, jobs and webhooks.
async fn set_up_platform(config: &Config, platform: &Platform, url: &str) -> crate::Result<()> {
    crate::files::open(config, platform, url)?;
    crate::doors::declare_collections(config, platform)?;
    crate::files::start_cleaner(platform);
    if platform.accounts().config().allow_guests {
        platform.start_guest_sweeper();
    }
    platform.ensure_search_indexes().await?;
    crate::indexes::ensure(config, platform).await?;
    portico_store::set_slow_scan_docs(
        config
            .log
            .slow_scan_docs
            .unwrap_or(portico_store::DEFAULT_SLOW_SCAN_DOCS),
    );
    platform.jobs().set_config(config.jobs);
    set_webhooks(config, platform)
}

/// Schedules every `[[cron]]` of `config`.
fn schedule_crons(config: &Config, platform: &Platform) -> crate::Result<()> {
    for entry in &config.cron {
        platform
            .jobs()
            .schedule(&entry.name, entry.spec.clone(), &entry.job)
            .map_err(|e| crate::Error::Setup(format!("[[cron]] at line {}: {e}", entry.line)))?;
    }
    Ok(())
}

/// `app` in the layers around every request: the read replicas' caller tracking (when on),
/// the body timeout, the in-flight body budget (shared with file uploads) and the request log.
fn with_layers(app: Router, config: &Config, platform: &Platform) -> Router {
    let app = if replicas::enabled() {
        replicas::with_callers(app, config.trusted_proxies.clone())
    } else {
        app
    };
    let app = impersonation::with_impersonation_log(app, platform.clone());
    let app = route_limits::with_route_limits(
        app,
        &config.limits,
        platform.clone(),
        config.trusted_proxies.clone(),
    );
    let app = with_body_timeout(app, config.server.body_timeout);
    let memory = body_budget::MemoryBudget::new(config.server.max_inflight_body);
    if let (Some(memory), Some(files)) = (&memory, platform.files()) {
        memory.share_with(files);
    }
    with_request_log(
        body_budget::with_body_budget(app, memory.as_ref(), body_budget::upload_matcher(config)),
        config.trusted_proxies.clone(),
    )
}

/// Prints the [`LISTENING`] line scripts wait for.
fn say_listening(bound: SocketAddr) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    // Scripts (and the tests) read this line; a closed stdout must not stop the server.
    let _ = writeln!(stdout, "{LISTENING}{bound}");
    let _ = stdout.flush();
}

/// After the last connection: stops the mail sender and the job worker, then closes the
/// platform and its store.
async fn shut_down(
    mail_sender: Option<portico_platform::MailSender>,
    job_worker: portico_platform::jobs::JobWorker,
    platform: &Platform,
) {
    // The other instances let this one's channel members leave at once.
    platform.channels().shutdown();
    // A mail being sent finishes (or gives its claim back), so the next instance to start sends
    // it at once rather than after the claim's lease.
    if let Some(sender) = mail_sender {
        sender.stop(Duration::from_secs(10)).await;
    }
    // Runs under way finish and record their outcome; past the grace their leases end and
    // another instance runs them again.
    job_worker.stop(Duration::from_secs(10)).await;
    // The registries let go of their handlers (which hold the platform: scripts, rules), and
    // the store ends its connections (SQLite checkpoints the WAL into the file and releases
    // its lock), whatever handle on the platform is still alive.
    platform.close().await;
    info!("stopped");
}

/// The receivers of `[[webhooks]]`, each with its secret read from its environment variable.
///
/// # Errors
/// [`crate::Error::Setup`] for a variable that is not set or not a secret.
fn set_webhooks(config: &Config, platform: &Platform) -> crate::Result<()> {
    if config.webhooks.is_empty() {
        return Ok(());
    }
    let mut hooks = Vec::with_capacity(config.webhooks.len());
    for entry in &config.webhooks {
        let place = format!("[[webhooks]] at line {}", entry.line);
        let text = std::env::var(&entry.secret_env).map_err(|_| {
            crate::Error::Setup(format!(
                "{place}: the environment variable {} (secret_env) is not set; set it to the receiver's secret, `whsec_` and base64",
                entry.secret_env
            ))
        })?;
        let secret = portico_platform::WebhookSecret::parse(&text)
            .map_err(|e| crate::Error::Setup(format!("{place}: {}: {e}", entry.secret_env)))?;
        let mut hook =
            portico_platform::Webhook::new(entry.url.clone(), entry.collection.clone(), secret);
        hook.events.clone_from(&entry.events);
        hooks.push(hook);
    }
    platform.set_webhooks(hooks)?;
    Ok(())
}

/// The sender of the account lifecycle's mail, when `[email]` is set; stop it with
/// [`portico_platform::MailSender::stop`] (dropping it stops it at once).
fn start_mail_sender(
    config: &Config,
    platform: &Platform,
) -> crate::Result<Option<portico_platform::MailSender>> {
    let Some(email) = &config.email else {
        return Ok(None);
    };
    let transport = portico_platform::SmtpTransport::new(&email.smtp_url, &email.from)?;
    let options = portico_platform::SenderOptions::with_retry_max(email.retry_max);
    let sender = platform
        .lifecycle()
        .start_sender(std::sync::Arc::new(transport), options);
    Ok(Some(sender))
}

/// The platform on the store `url` names, with the config's live limits and accounts settings
/// (and store metrics when `[metrics]` is on).
async fn open_platform(url: &str, config: &Config) -> crate::Result<Platform> {
    let mut platform_config = portico_platform::PlatformConfig::default();
    platform_config.live = config.live.clone();
    platform_config.channels = config.channel_limits.clone();
    platform_config.accounts =
        crate::config::platform_accounts(config).map_err(crate::Error::Setup)?;
    // PostgreSQL is opened with its options (replicas, `database_cache_mb`,
    // `database_stamp_*`; the other backends ignore those) and kept for the stamp and cache
    // counters of `/metrics`. A build without the backend opens it the usual way, and says so.
    let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let tuned = config.database_cache_bytes.is_some()
        || config.database_stamp_batch.is_some()
        || config.database_stamp_wait.is_some();
    if !config.database_replicas.is_empty() || (postgres && (tuned || cfg!(feature = "postgres"))) {
        let store = replicas::open_store(url, config).await?;
        if config.metrics.is_some() {
            metrics::handle()?;
            return store_metrics::platform_on(url, store, platform_config).await;
        }
        return portico_platform::Platform::with_store_config(store, platform_config)
            .await
            .map_err(|e| crate::Error::Database {
                url: portico_store::redact_url(url),
                message: e.to_string(),
            });
    }
    if config.metrics.is_some() {
        metrics::handle()?;
        Ok(store_metrics::open(url, platform_config).await?)
    } else {
        Ok(database::open_with(url, platform_config).await?)
    }
}

/// The start-up log: what is served from which config (or the zero-config default), its
/// warnings, and the database.
fn log_start(path: Option<&Path>, config: &Config, choice: &database::DatabaseChoice) {
    let url = choice.url.as_str();
    match path {
        Some(path) => {
            info!(config = %path.display(), database = %portico_store::redact_url(url), "serving");
            for warning in crate::check::warning_lines(path, config) {
                warn!("{warning}");
            }
        }
        None => {
            let names: Vec<&str> = config
                .apis
                .iter()
                .flat_map(|api| api.collections.iter().map(|c| c.name.as_str()))
                .collect();
            info!(
                "no config file (no ./portico.toml, no --config): serving the zero-config default: every collection of the database read-only at /{ZERO_CONFIG_API_PATH}<name> for logged-in users (login: POST /{ZERO_CONFIG_API_PATH}login; `portico users add` makes an account); write a portico.toml to choose what to serve"
            );
            info!(
                "collections served: {}",
                if names.is_empty() {
                    "none yet (the database has none)".to_owned()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    info!("database: {choice}");
    if config.apis.is_empty() && config.auto.is_none() {
        warn!("the config declares no [[api]] and no [auto]: every path answers 404");
    }
}

/// Serves `served` on `listener` until a signal; then in-flight requests get the grace period
/// to finish, and a second signal stops at once. The background work stops after.
async fn serve_until_signalled(
    listener: tokio::net::TcpListener,
    served: Served,
    mut signals: Signals,
) {
    let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
    let (now_tx, now_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let name = signals.next().await;
        info!("{name} received, finishing in-flight requests");
        let _ = stopping_tx.send(true);
        signals.next().await;
        let _ = now_tx.send(());
    });
    serve_until(
        listener,
        served.router.clone(),
        &served.config,
        stopping_rx,
        Some(now_rx),
    )
    .await;
    served.shut_down().await;
}

/// Serves `app` on `listener` until `stopping` turns true; then in-flight requests get the
/// grace period to finish, or until `now` resolves.
async fn serve_until(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    config: &Config,
    mut stopping: tokio::sync::watch::Receiver<bool>,
    now: Option<tokio::sync::oneshot::Receiver<()>>,
) {
    let server = connections::serve(listener, app, config.server, stopping.clone());
    // In-flight requests get the grace period to finish; a client that never finishes its
    // request must not keep the process alive forever, and a second signal means "now".
    let grace_period = config.shutdown_grace.unwrap_or(SHUTDOWN_GRACE);
    let grace = async move {
        let _ = stopping.wait_for(|stopping| *stopping).await;
        let now = async move {
            match now {
                Some(now) => now.await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = tokio::time::sleep(grace_period) => warn!(
                "requests still running {} s after the signal; stopping without them",
                grace_period.as_secs_f32()
            ),
            true = now => warn!("second signal: stopping without in-flight requests"),
        }
    };
    tokio::select! {
        () = server => {}
        () = grace => {}
    }
}

/// SIGINT (Ctrl-C) and SIGTERM, listened for from the moment [`Signals::listen`] returns.
struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the handlers now.
    fn listen() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves on the next SIGINT or SIGTERM, with its name.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                () = recv(&mut self.interrupt) => "SIGINT",
                () = recv(&mut self.terminate) => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            "SIGINT"
        }
    }
}

/// Binds `addr` and says which address it got (port 0 picks a free one): the APIs' listener
/// and the separate `[metrics] listen` one.
pub(crate) async fn bind(addr: SocketAddr) -> crate::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| crate::Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(crate::Error::Serve)?;
    Ok((listener, bound))
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
            let _ = auto_config;
            if let Err(e) = crate::doors::declare_collections(&config, &platform) {
                panic!("{e}");
            }
        }
        for api in &config.apis {
            let mut registry = crate::doors::registry::Registry::new();
            let rest = match crate::doors::rest::build_each(api, &platform, None, &mut registry) {
                Ok(r) => r,
                Err(e) => panic!("{e:?}"),
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
            let listing = match crate::doors::auto::api(&config, auto_config, &platform)
                .map(|a| a.route_listing())
            {
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

    /// `portico routes` prints the doors' own descriptions; the doors' route tables (the
    /// `Allow` lists and `api-routes`) are another reading of what they serve. They must agree,
    /// method for method.
    #[tokio::test]
    async fn the_route_table_is_what_the_front_doors_serve() {
        let configs = [
            include_str!("../../../../examples/portico.toml"),
            "[[api]]\nversion = \"v1\"\n[[api.collection]]\nname = \"a\"\nexcluded_endpoints = \"getAll\"\n[[api.collection]]\nname = \"a\"\npath = \"deep/a\"\n[[api]]\napi_path = \"other\"\nuse_default_auth = true\n",
            "[auto]\nobject_id_collections = [\"o\"]\nallow_register = false\n[auto.rules.w]\ninsert = \"anyone\"\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"feeds/:0/items\"\nhttp_method = \"POST\"\n",
        ];
        for text in configs {
            let (config, served) = served(text).await;
            // The doors' own tables, as `routes::route_table` reads them (named here, not
            // called: `routes` builds on `serve`).
            let table = match crate::doors::Doors::build_scratch(&config) {
                Ok(doors) => doors.routes,
                Err(refusals) => panic!("{}", crate::doors::lines(&refusals)),
            };
            let listed: std::collections::BTreeSet<(String, String)> = table
                .into_iter()
                .filter(|r| r.method != http::Method::OPTIONS)
                .map(|r| (r.method.as_str().to_owned(), r.path))
                .collect();
            assert_eq!(listed, served, "{text}");
        }
    }
}
