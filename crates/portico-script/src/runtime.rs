//! One script runtime: a QuickJS runtime and context on a thread of their own, running many
//! calls at once.
//!
//! The engine is single-threaded, so each runtime owns a thread and receives work as messages:
//! a call from the host, or the answer to a host operation (a data API call, a `fetch`) that a
//! script awaits. A host operation runs on the server's async runtime; while it waits, the
//! runtime's thread serves other calls. So one runtime runs any number of calls concurrently,
//! interleaved at their `await`s, and a pool of them spreads the work over the cores.
//!
//! Limits are the engine's, not the script's: each stretch of JavaScript the thread runs (a
//! call's start, or one promise job) gets `timeout` before the interrupt handler stops it with
//! an uncatchable error; the heap is capped at `memory_mb`; the native stack at
//! [`MAX_STACK`]. After a stop the runtime serves the next call as before.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Persistent, Runtime};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::{CallError, LoadError};
use crate::modules::Loader;
use crate::program::Shared;
use portico_platform::MethodReply;

/// The engine's limit on JavaScript's native stack (deep recursion is a `RangeError` past it).
pub(crate) const MAX_STACK: usize = 1024 * 1024;
/// The thread's own stack: room for [`MAX_STACK`] and the engine's native frames around it.
const THREAD_STACK: usize = 4 * MAX_STACK;

/// The kinds of call the prelude's dispatcher knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Load,
    Method,
    Publish,
    Route,
    Rule,
    Hook,
    Job,
    Channel,
    /// Not a script call: the runtime's memory use.
    Memory,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Load => "load",
            Kind::Method => "method",
            Kind::Publish => "publish",
            Kind::Route => "route",
            Kind::Rule => "rule",
            Kind::Hook => "hook",
            Kind::Job => "job",
            Kind::Channel => "channel",
            Kind::Memory => "memory",
        }
    }
}

pub(crate) type Reply = oneshot::Sender<Result<MethodReply, CallError>>;

pub(crate) enum Message {
    Call {
        kind: Kind,
        name: String,
        context: String,
        args: String,
        /// The write whose before hook this call runs (see `portico_platform::jobs`).
        write: Option<u64>,
        reply: Reply,
    },
    HostDone {
        request: u64,
        result: Result<String, String>,
    },
    /// The handle was dropped: finish the calls in flight, then end the thread.
    Stop,
}

/// The handle of one runtime thread. Dropping it stops the thread once its calls in flight
/// have finished.
pub(crate) struct RuntimeHandle {
    sender: mpsc::Sender<Message>,
}

impl Drop for RuntimeHandle {
    fn drop(&mut self) {
        let _ = self.sender.send(Message::Stop);
    }
}

impl RuntimeHandle {
    /// Starts a runtime on a thread of its own, loaded with the prelude (the main module is
    /// loaded by a [`Kind::Load`] call).
    pub(crate) fn start(shared: Arc<Shared>, index: usize) -> Result<RuntimeHandle, LoadError> {
        let (sender, receiver) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let own = sender.clone();
        std::thread::Builder::new()
            .name(format!("portico-script-{index}"))
            .stack_size(THREAD_STACK)
            .spawn(move || match Engine::new(shared, own) {
                Ok(engine) => {
                    let _ = ready_tx.send(Ok(()));
                    engine.serve(&receiver);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        ready_rx
            .recv()
            .map_err(|_| LoadError::Engine("the runtime thread ended at start".into()))??;
        Ok(RuntimeHandle { sender })
    }

    /// Sends a call; the answer comes on `reply`. `write` is the write whose before hook the
    /// call runs: the jobs its host operations enqueue join that write.
    pub(crate) fn call(
        &self,
        kind: Kind,
        name: String,
        context: String,
        args: String,
        write: Option<u64>,
        reply: Reply,
    ) {
        let message = Message::Call {
            kind,
            name,
            context,
            args,
            write,
            reply,
        };
        if let Err(mpsc::SendError(Message::Call { reply, .. })) = self.sender.send(message) {
            let _ = reply.send(Err(CallError::Stopped {
                reason: "the script runtime has stopped".into(),
            }));
        }
    }
}

/// The calls and host operations in flight on one runtime.
#[derive(Default)]
struct State {
    next_id: u64,
    calls: HashMap<u64, Reply>,
    /// Host operations awaited by a script: their promise's resolve and reject functions, and
    /// the call whose turn started them.
    host: HashMap<
        u64,
        (
            Persistent<Function<'static>>,
            Persistent<Function<'static>>,
            u64,
        ),
    >,
    /// The call whose turn runs now.
    owner: u64,
    /// The calls run for a write's before hook, and that write's number.
    writes: HashMap<u64, u64>,
}

impl State {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn answer(&mut self, id: u64, result: Result<MethodReply, CallError>) {
        self.writes.remove(&id);
        if let Some(reply) = self.calls.remove(&id) {
            let _ = reply.send(result);
        }
    }
}

/// Fields drop in order: the values kept across turns first, then the context, then the
/// runtime (the engine frees values through the runtime that owns them).
struct Engine {
    dispatch: Persistent<Function<'static>>,
    state: Rc<RefCell<State>>,
    deadline: Rc<Cell<Option<Instant>>>,
    timeout: Duration,
    context: Context,
    runtime: Runtime,
}

impl Engine {
    fn new(shared: Arc<Shared>, sender: mpsc::Sender<Message>) -> Result<Engine, LoadError> {
        let engine = |e: rquickjs::Error| LoadError::Engine(e.to_string());
        let runtime = Runtime::new().map_err(engine)?;
        runtime.set_memory_limit(shared.config.memory_mb.saturating_mul(1024 * 1024));
        runtime.set_max_stack_size(MAX_STACK);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        {
            let deadline = deadline.clone();
            runtime.set_interrupt_handler(Some(Box::new(move || {
                deadline.get().is_some_and(|d| Instant::now() >= d)
            })));
        }
        runtime.set_loader(Loader::new(shared.clone()), Loader::new(shared.clone()));
        let context = Context::full(&runtime).map_err(engine)?;
        let state = Rc::new(RefCell::new(State::default()));
        let dispatch = context.with(|ctx| -> Result<_, LoadError> {
            let globals = ctx.globals();
            globals
                .set(
                    "__portico_host",
                    host_function(&ctx, &shared, &state, sender)?,
                )
                .map_err(engine)?;
            globals
                .set("__portico_done", done_function(&ctx, &state)?)
                .map_err(engine)?;
            globals
                .set("__portico_log", crate::console::function(&ctx)?)
                .map_err(engine)?;
            ctx.eval::<(), _>(include_str!("prelude.js"))
                .catch(&ctx)
                .map_err(|e| LoadError::Engine(format!("prelude: {e}")))?;
            let dispatch: Function = globals.get("__portico_dispatch").map_err(engine)?;
            Ok(Persistent::save(&ctx, dispatch))
        })?;
        Ok(Engine {
            runtime,
            context,
            state,
            deadline,
            timeout: shared.config.timeout,
            dispatch,
        })
    }

    fn serve(self, receiver: &mpsc::Receiver<Message>) {
        let mut stopping = false;
        while let Ok(message) = receiver.recv() {
            match message {
                Message::Stop => stopping = true,
                Message::Call {
                    kind,
                    name,
                    context,
                    args,
                    write,
                    reply,
                } => {
                    if kind == Kind::Memory {
                        self.runtime.run_gc();
                        let used = self.runtime.memory_usage().memory_used_size;
                        let _ = reply.send(Ok(MethodReply {
                            value: Value::from(used),
                            status: None,
                        }));
                        continue;
                    }
                    let id = {
                        let mut state = self.state.borrow_mut();
                        if state.calls.len() > 1024 {
                            state.calls.retain(|_, r| !r.is_closed());
                            let calls = std::mem::take(&mut state.calls);
                            state.writes.retain(|id, _| calls.contains_key(id));
                            state.calls = calls;
                        }
                        let id = state.id();
                        state.calls.insert(id, reply);
                        if let Some(write) = write {
                            state.writes.insert(id, write);
                        }
                        id
                    };
                    let dispatch = self.dispatch.clone();
                    self.turn(id, move |ctx| {
                        let f = dispatch.restore(ctx)?;
                        f.call::<_, ()>((id as f64, kind.as_str(), name, context, args))
                    });
                }
                Message::HostDone { request, result } => {
                    let Some((resolve, reject, owner)) =
                        self.state.borrow_mut().host.remove(&request)
                    else {
                        continue;
                    };
                    self.turn(owner, move |ctx| match result {
                        Ok(text) => resolve.restore(ctx)?.call::<_, ()>((text,)),
                        Err(text) => reject.restore(ctx)?.call::<_, ()>((text,)),
                    });
                }
            }
            if stopping {
                let mut state = self.state.borrow_mut();
                state.calls.retain(|_, reply| !reply.is_closed());
                if state.calls.is_empty() && state.host.is_empty() {
                    break;
                }
            }
        }
    }

    /// Runs `f` and then every promise job it made ready, each with a fresh time budget. A
    /// stop (time, memory) fails the call `owner`.
    fn turn<F>(&self, owner: u64, f: F)
    where
        F: for<'js> FnOnce(&Ctx<'js>) -> rquickjs::Result<()>,
    {
        self.state.borrow_mut().owner = owner;
        self.deadline.set(Some(Instant::now() + self.timeout));
        let failure = self
            .context
            .with(|ctx| f(&ctx).catch(&ctx).err().map(|e| caught_message(&e)));
        if let Some(message) = failure {
            self.stop(owner, message);
        }
        loop {
            self.deadline.set(Some(Instant::now() + self.timeout));
            match self.runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(job) => {
                    let message = job.0.with(|ctx| {
                        caught_message(&CaughtError::from_error(&ctx, rquickjs::Error::Exception))
                    });
                    self.stop(owner, message);
                }
            }
        }
        self.deadline.set(None);
    }

    fn stop(&self, owner: u64, message: String) {
        let reason = if message.contains("interrupted") {
            let mut reason = format!(
                "the script ran longer than timeout_ms ({} ms) without awaiting, and was stopped",
                self.timeout.as_millis()
            );
            // Where it was running when stopped: the script frames of the engine's stack.
            let frames = script_frames(&message);
            if let Some(place) = frames.first().and_then(|frame| frame_place(frame)) {
                reason.push_str(" at ");
                reason.push_str(place);
                for frame in &frames {
                    reason.push_str("\n    ");
                    reason.push_str(frame);
                }
            }
            reason
        } else if message.contains("out of memory") {
            "the script runtime ran out of memory (memory_mb) and the call was stopped".to_owned()
        } else {
            message
        };
        self.state
            .borrow_mut()
            .answer(owner, Err(CallError::Stopped { reason }));
    }
}

/// The frames of an engine stack (`at f (server/main.ts:5:14)` lines) that are in the
/// application's files: not the prelude's (`eval_script`) nor native ones.
fn script_frames(stack: &str) -> Vec<&str> {
    stack
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("at "))
        .filter(|line| frame_place(line).is_some_and(|place| !place.starts_with("eval_script:")))
        .collect()
}

/// The `file:line:column` of a stack frame (`at f (server/main.ts:5:14)`), when it names one.
fn frame_place(frame: &str) -> Option<&str> {
    let inner = frame.rsplit_once('(')?.1.strip_suffix(')')?;
    (inner != "native" && inner.contains(':')).then_some(inner)
}

fn caught_message(e: &CaughtError<'_>) -> String {
    match e {
        CaughtError::Exception(e) => {
            let mut text = e.message().unwrap_or_default();
            if let Some(stack) = e.stack() {
                text.push('\n');
                text.push_str(stack.trim_end());
            }
            text
        }
        CaughtError::Value(v) => format!("{v:?}"),
        CaughtError::Error(e) => e.to_string(),
    }
}

/// `__portico_done(id, json)`: the prelude's answer to a call.
fn done_function<'js>(
    ctx: &Ctx<'js>,
    state: &Rc<RefCell<State>>,
) -> Result<Function<'js>, LoadError> {
    let state = state.clone();
    Function::new(ctx.clone(), move |id: f64, text: String| {
        let result = crate::answer::parse(&text);
        state.borrow_mut().answer(id as u64, result);
    })
    .map_err(|e| LoadError::Engine(e.to_string()))
}

/// `__portico_host(op, json)`: starts a host operation on the server's async runtime and
/// returns a promise of its JSON answer.
fn host_function<'js>(
    ctx: &Ctx<'js>,
    shared: &Arc<Shared>,
    state: &Rc<RefCell<State>>,
    sender: mpsc::Sender<Message>,
) -> Result<Function<'js>, LoadError> {
    let state = state.clone();
    let shared = shared.clone();
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              op: String,
              payload: String|
              -> rquickjs::Result<rquickjs::Promise<'js>> {
            let (promise, resolve, reject) = ctx.promise()?;
            let (request, write) = {
                let mut state = state.borrow_mut();
                let request = state.id();
                let owner = state.owner;
                let write = state.writes.get(&owner).copied();
                state.host.insert(
                    request,
                    (
                        Persistent::save(&ctx, resolve),
                        Persistent::save(&ctx, reject),
                        owner,
                    ),
                );
                (request, write)
            };
            let sender = sender.clone();
            let shared = shared.clone();
            shared.tokio.clone().spawn(async move {
                let result = crate::host::run(&shared, &op, &payload, write).await;
                let _ = sender.send(Message::HostDone { request, result });
            });
            Ok(promise)
        },
    )
    .map_err(|e| LoadError::Engine(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_call_is_placed_by_its_script_frames() {
        let stack = "InternalError: interrupted\n    at busy (server/main.ts:3:1)\n    at spin (server/main.ts:9:19)\n    at apply (native)\n    at run (eval_script:289:53)\n    at <anonymous> (eval_script:346:65)";
        let frames = script_frames(stack);
        assert_eq!(
            frames,
            [
                "at busy (server/main.ts:3:1)",
                "at spin (server/main.ts:9:19)"
            ]
        );
        assert_eq!(frame_place(frames[0]), Some("server/main.ts:3:1"));
        assert_eq!(frame_place("at apply (native)"), None);
        assert!(script_frames("InternalError: interrupted").is_empty());
    }
}
