//! The `portico` binary: one-shot commands and a server process on an ephemeral port.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use crate::http::Http;

/// The `portico` binary the tests run: `$PORTICO_BIN` when set, else the one cargo built beside
/// the test executable (`target/<profile>/portico`, which `cargo test -p portico-cli` builds).
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("PORTICO_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/portico
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable is in target/<profile>/deps");
    let path = profile.join(format!("portico{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "no portico binary at {}: build it (`cargo build -p portico-cli`) or set PORTICO_BIN",
        path.display()
    );
    path
}

/// The `portico` binary under test, without the environment variables that choose its address
/// and database (a test sets them itself when it is about them).
pub fn portico() -> Command {
    let mut command = Command::new(binary());
    for name in ["PORTICO_LISTEN", "PORTICO_DATABASE", "PORT"] {
        command.env_remove(name);
    }
    command
}

/// Bytes a process printed, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A running `portico serve` process; killed when dropped if not stopped. Dereferences to
/// [`Http`] for requests.
pub struct Process {
    /// The process.
    pub child: Child,
    /// Where its stderr (the log) goes.
    pub log: PathBuf,
    http: Http,
    _stdout: BufReader<ChildStdout>,
}

impl std::ops::Deref for Process {
    type Target = Http;

    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Process {
    /// Starts the server (`portico ARGS...` in `dir`) and waits for its
    /// `listening on http://ADDR` line.
    pub fn start(dir: &Path, args: &[&str]) -> Process {
        Process::start_full("info", dir, args, &[])
    }

    /// Starts the server with extra environment variables.
    pub fn start_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Process {
        Process::start_full("info", dir, args, env)
    }

    /// Starts the server logging at `level` (`RUST_LOG`), as [`Process::start`] does.
    pub fn start_logging(level: &str, dir: &Path, args: &[&str]) -> Process {
        Process::start_full(level, dir, args, &[])
    }

    /// Starts the server logging at `level` with extra environment variables.
    pub fn start_full(level: &str, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Process {
        static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = dir.join(format!("serve-{}-{n}.log", std::process::id()));
        let log_file = std::fs::File::create(&log).expect("log file");
        let mut child = portico()
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .env("RUST_LOG", level)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .expect("spawn portico serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line).unwrap_or(0);
        let Some(addr) = line
            .trim()
            .strip_prefix("listening on http://")
            .filter(|_| read > 0)
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "server did not start: stdout {line:?}, stderr:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        Process {
            http: Http::new(format!("http://{addr}")),
            child,
            log,
            _stdout: stdout,
        }
    }

    /// Sends SIGTERM and waits; returns whether the process exited with success, and its log.
    pub fn stop(mut self) -> (bool, String) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        (
            exit.success(),
            std::fs::read_to_string(&self.log).unwrap_or_default(),
        )
    }

    /// Waits for a server that was sent a signal already.
    pub fn stop_after_signal(mut self) -> (bool, String) {
        let exit = self.child.wait().expect("wait");
        (
            exit.success(),
            std::fs::read_to_string(&self.log).unwrap_or_default(),
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
