//! Application logic in JavaScript or TypeScript for Portico: methods, publications, route
//! endpoints and allow/deny rules written in script files next to the config, run on an
//! embedded engine.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use portico_script::{ScriptConfig, Scripts};
//! let platform = portico_platform::Platform::open("memory:").await?;
//! let scripts = Scripts::load(std::path::Path::new("."), ScriptConfig::new("server/main.ts"), platform.clone()).await?;
//! scripts.install(&platform)?; // methods, publications and rules join the platform
//! let reply = platform.call("hello", None, vec![serde_json::json!("you")]).await?;
//! # let _ = reply; Ok(()) }
//! ```
//!
//! | part | what it does |
//! |---|---|
//! | [`strip`] | TypeScript to JavaScript by blanking types (lines and columns kept) |
//! | engine | QuickJS-NG through `rquickjs`: one runtime per thread, a pool of them |
//! | `"portico"` module | `methods`, `publish`, `api`, `collection`, `files`, `accounts`, `roles`, `PorticoError` |
//! | limits | `timeout_ms` per stretch of JavaScript and per call, `memory_mb` per runtime, a native stack cap |
//! | host operations | the data API, files, accounts, roles and `fetch` (listed hosts only), all async |
//!
//! Why this engine: it builds from crates.io with a C compiler and nothing else (V8-based
//! engines download a prebuilt library at build time), starts a runtime in well under a
//! millisecond with a heap of a few hundred KiB, and has a memory limit and an interrupt handler
//! per runtime, which is what keeps a runaway script from taking the server with it. Its
//! interpreter is slower than a JIT, which matters little for code that mostly awaits the
//! database.

mod answer;
mod channels;
mod console;
mod definitions;
mod error;
mod fetch;
mod files;
mod hooks;
mod host;
mod install;
mod modules;
mod payload;
mod program;
mod runtime;
pub mod strip;
mod types;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use portico_platform::{MethodReply, Platform};
use serde_json::Value;
use tokio::sync::oneshot;

pub use definitions::{
    ChannelDefinition, CronDefinition, Definition, Definitions, EndpointDefinition, HookDefinition,
    JobDefinition, RouteDefinition, RuleDefinition,
};
pub use error::{CallError, LoadError, Position};
pub use types::TYPES;

use program::Shared;
use runtime::{Kind, RuntimeHandle};

/// The `[scripts]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScriptConfig {
    /// The main module, relative to the application's folder (`server/main.ts`).
    pub main: PathBuf,
    /// The longest a single call (and any stretch of JavaScript without an `await`) may run.
    pub timeout: Duration,
    /// The heap limit of each runtime, in MiB.
    pub memory_mb: usize,
    /// `host[:port]` a script's `fetch()` may reach (port 80 when none is given).
    pub fetch_hosts: Vec<String>,
    /// How many runtimes (threads) the pool has.
    pub runtimes: usize,
}

/// The default `timeout_ms`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);
/// The default `memory_mb`.
pub const DEFAULT_MEMORY_MB: usize = 64;

impl ScriptConfig {
    /// Defaults for the main module `main`: 5 s, 64 MiB, no fetch hosts, one runtime per core.
    pub fn new(main: impl Into<PathBuf>) -> ScriptConfig {
        ScriptConfig {
            main: main.into(),
            timeout: DEFAULT_TIMEOUT,
            memory_mb: DEFAULT_MEMORY_MB,
            fetch_hosts: Vec::new(),
            runtimes: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// One load of the modules: a pool of runtimes and what the modules defined.
struct Program {
    shared: Arc<Shared>,
    runtimes: Vec<RuntimeHandle>,
    next: AtomicUsize,
    definitions: Definitions,
}

struct Inner {
    /// The program serving calls now; a reload replaces it, and calls in flight finish on the
    /// one they started on.
    current: RwLock<Arc<Program>>,
    root: PathBuf,
    config: ScriptConfig,
    platform: Platform,
    /// What the first load defined: the names the platform and the doors serve.
    definitions: Definitions,
}

/// A loaded program: a pool of runtimes, each with the application's modules, and what the
/// modules defined. Cheap to clone.
#[derive(Clone)]
pub struct Scripts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts")
            .field("main", &self.inner.config.main)
            .field("runtimes", &self.program().runtimes.len())
            .finish_non_exhaustive()
    }
}

impl Program {
    async fn load(
        root: &Path,
        config: ScriptConfig,
        platform: Platform,
    ) -> Result<Program, LoadError> {
        let main_path = root.join(&config.main);
        let main = modules::name_of(root, &main_path).ok_or_else(|| LoadError::Read {
            file: config.main.display().to_string(),
            reason: "the main module must be inside the config file's folder".into(),
        })?;
        let count = config.runtimes.max(1);
        let shared = Arc::new(Shared::new(
            root.to_path_buf(),
            config,
            platform,
            tokio::runtime::Handle::current(),
        ));
        // Reading and checking the main file first gives its errors their position.
        shared.source(&main)?;
        let mut runtimes = Vec::with_capacity(count);
        let mut definitions = None;
        for index in 0..count {
            let runtime = {
                let shared = shared.clone();
                tokio::task::spawn_blocking(move || RuntimeHandle::start(shared, index))
                    .await
                    .map_err(|e| LoadError::Engine(e.to_string()))??
            };
            let (tx, rx) = oneshot::channel();
            runtime.call(Kind::Load, main.clone(), "{}".into(), "[]".into(), None, tx);
            let loaded = rx
                .await
                .map_err(|_| LoadError::Engine("the runtime stopped while loading".into()))?;
            match loaded {
                Ok(outcome) => {
                    if definitions.is_none() {
                        definitions = Some(Definitions::from_json(outcome.value)?);
                    }
                }
                Err(e) => {
                    return Err(shared.take_load_error().unwrap_or_else(|| match e {
                        CallError::Failed { message } | CallError::Stopped { reason: message } => {
                            LoadError::Evaluation(format!("{main}: {message}"))
                        }
                        other => LoadError::Evaluation(format!("{main}: {other}")),
                    }));
                }
            }
            runtimes.push(runtime);
        }
        Ok(Program {
            shared,
            runtimes,
            next: AtomicUsize::new(0),
            definitions: definitions.unwrap_or_default(),
        })
    }
}

impl Scripts {
    /// Loads `config.main` (relative to `root`, the application's folder) into a pool of
    /// runtimes whose host operations use `platform`. Must be called inside a Tokio runtime.
    ///
    /// # Errors
    /// [`LoadError`]: a file that cannot be read, a syntax, import or type-stripping error with
    /// its file, line and column, a module that throws while it loads, a malformed definition.
    pub async fn load(
        root: &Path,
        config: ScriptConfig,
        platform: Platform,
    ) -> Result<Scripts, LoadError> {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let program = Program::load(&root, config.clone(), platform.clone()).await?;
        Ok(Scripts {
            inner: Arc::new(Inner {
                definitions: program.definitions.clone(),
                current: RwLock::new(Arc::new(program)),
                root,
                config,
                platform,
            }),
        })
    }

    fn program(&self) -> Arc<Program> {
        self.inner
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Loads the modules again from their files and serves every later call with the new code;
    /// calls in flight finish on the old code. When the new code does not load, the old code
    /// goes on serving. The names served (methods, publications, routes, rules) stay those of
    /// the first load: a name the new code adds is not served until a restart, and one it
    /// drops answers with the script's "not found" error.
    ///
    /// # Errors
    /// Why the new code did not load; nothing changed then.
    pub async fn reload(&self) -> Result<Definitions, LoadError> {
        let program = Program::load(
            &self.inner.root,
            self.inner.config.clone(),
            self.inner.platform.clone(),
        )
        .await?;
        let definitions = program.definitions.clone();
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(program);
        Ok(definitions)
    }

    /// What the modules defined (at the first load): methods, publications, routes, rules.
    pub fn definitions(&self) -> &Definitions {
        &self.inner.definitions
    }

    /// The script files the program was loaded from.
    pub fn files(&self) -> Vec<PathBuf> {
        self.program().shared.files()
    }

    /// The settings the program was loaded with.
    pub fn config(&self) -> &ScriptConfig {
        &self.inner.config
    }

    /// Calls into the program on the next runtime of the pool; `context` becomes `this`'s
    /// data, `args` the arguments. Waits at most `timeout_ms`.
    pub(crate) async fn call(
        &self,
        kind: Kind,
        name: &str,
        context: &Value,
        args: &Value,
    ) -> Result<MethodReply, CallError> {
        self.call_with(kind, name, context, args, None, self.inner.config.timeout)
            .await
    }

    /// [`Scripts::call`] for the before hook of the write `write` (its enqueues join the
    /// write), waiting at most `timeout`.
    pub(crate) async fn call_with(
        &self,
        kind: Kind,
        name: &str,
        context: &Value,
        args: &Value,
        write: Option<u64>,
        timeout: Duration,
    ) -> Result<MethodReply, CallError> {
        let program = self.program();
        let runtimes = &program.runtimes;
        let index = program.next.fetch_add(1, Ordering::Relaxed) % runtimes.len();
        let (tx, rx) = oneshot::channel();
        runtimes[index].call(
            kind,
            name.to_owned(),
            context.to_string(),
            args.to_string(),
            write,
            tx,
        );
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(CallError::Stopped {
                reason: "the script runtime stopped during the call".into(),
            }),
            Err(_) => Err(CallError::Stopped {
                reason: format!(
                    "the call did not finish within timeout_ms ({} ms)",
                    timeout.as_millis()
                ),
            }),
        }
    }

    /// Calls the script method `name` as the user `user_id` (with their public record `user`).
    ///
    /// # Errors
    /// The script's [`CallError`].
    pub async fn call_method(
        &self,
        name: &str,
        user_id: Option<&str>,
        user: Option<&Value>,
        args: Vec<Value>,
    ) -> Result<MethodReply, CallError> {
        let context = serde_json::json!({ "userId": user_id, "user": user });
        self.call(Kind::Method, name, &context, &Value::Array(args))
            .await
    }

    /// Calls the route endpoint `index` (of [`Definitions::routes`]) for `method` with the
    /// endpoint context `context` (`urlParams`, `queryParams`, `bodyParams`, `user`, `userId`,
    /// `request`). The value is `{value}` for a returned value or `{done: {statusCode, headers,
    /// body}}` when the endpoint wrote the response itself.
    ///
    /// # Errors
    /// The script's [`CallError`].
    pub async fn call_route(
        &self,
        index: usize,
        method: portico_platform::HttpMethod,
        mut context: Value,
    ) -> Result<MethodReply, CallError> {
        if let Value::Object(map) = &mut context {
            map.insert("index".into(), Value::from(index));
            map.insert(
                "method".into(),
                Value::from(method.as_str().to_ascii_lowercase()),
            );
        }
        self.call(Kind::Route, "", &context, &Value::Array(Vec::new()))
            .await
    }

    /// Registers the program's methods, publications and rules on `platform`.
    ///
    /// # Errors
    /// [`LoadError::Definition`] when a name is taken already (naming the script's place).
    pub fn install(&self, platform: &Platform) -> Result<(), LoadError> {
        install::install(self, platform)
    }

    /// The memory each runtime of the pool uses now, in bytes (the engine's own count).
    pub async fn memory_per_runtime(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let program = self.program();
        for index in 0..program.runtimes.len() {
            let (tx, rx) = oneshot::channel();
            program.runtimes[index].call(
                Kind::Memory,
                String::new(),
                "{}".into(),
                "[]".into(),
                None,
                tx,
            );
            if let Ok(Ok(outcome)) = rx.await {
                out.push(outcome.value.as_u64().unwrap_or(0));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
