//! A temporary directory holding a config file and a database.

use std::path::PathBuf;
use std::process::{Output, Stdio};

use crate::binary::{Process, portico, text};
use crate::in_process::Server;

/// `portico serve` on a workspace's config, on an ephemeral port.
const SERVE_ARGS: [&str; 5] = [
    "serve",
    "--config",
    "portico.toml",
    "--listen",
    "127.0.0.1:0",
];

/// A temporary directory holding a config file (`portico.toml`) and a SQLite database (or
/// naming a PostgreSQL database).
pub struct Workspace {
    /// The directory (removed when dropped).
    pub dir: tempfile::TempDir,
    /// The store URL when it is not this directory's SQLite file.
    url: Option<String>,
}

impl Default for Workspace {
    fn default() -> Workspace {
        Workspace::new()
    }
}

impl Workspace {
    /// A workspace on its own SQLite file, `portico.db`.
    pub fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().expect("temporary directory"),
            url: None,
        }
    }

    /// A workspace whose store is `url` (a PostgreSQL database, say).
    pub fn with_database(url: String) -> Workspace {
        Workspace {
            url: Some(url),
            ..Workspace::new()
        }
    }

    /// A workspace on a fresh database of this binary's PostgreSQL cluster.
    pub fn on_postgres() -> Workspace {
        let url = crate::cluster().create_database().expect("create database");
        Workspace::with_database(url)
    }

    /// The path of `name` in this workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The store URL of this workspace's database.
    pub fn database(&self) -> String {
        match &self.url {
            Some(url) => url.clone(),
            None => format!("sqlite:{}", self.path("portico.db").display()),
        }
    }

    /// Writes `portico.toml` (with this workspace's database) and returns its path.
    pub fn config(&self, body: &str) -> PathBuf {
        let path = self.path("portico.toml");
        let text = format!("database = \"{}\"\n{body}", self.database());
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// Serves `portico.toml` in this process ([`Server`]), on an ephemeral port.
    pub fn serve(&self) -> Server {
        Server::start(self.path("portico.toml"))
    }

    /// Starts `portico serve --config portico.toml --listen 127.0.0.1:0`, the binary.
    pub fn serve_binary(&self) -> Process {
        self.serve_logging("info")
    }

    /// Starts the binary as [`Workspace::serve_binary`] does, with extra environment variables.
    pub fn serve_with_env(&self, env: &[(&str, &str)]) -> Process {
        Process::start_with_env(self.dir.path(), &SERVE_ARGS, env)
    }

    /// Starts the binary as [`Workspace::serve_binary`] does, logging at `level` (`RUST_LOG`).
    pub fn serve_logging(&self, level: &str) -> Process {
        Process::start_logging(level, self.dir.path(), &SERVE_ARGS)
    }

    /// Runs `portico serve` as [`Workspace::serve_binary`] does, expecting it to refuse to start
    /// (within 30 s); what it printed on stderr.
    pub fn serve_refuses(&self) -> String {
        let mut child = portico()
            .args(SERVE_ARGS)
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn portico serve");
        let start = std::time::Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if start.elapsed() > std::time::Duration::from_secs(30) {
                let _ = child.kill();
                panic!("serve started, and was expected to refuse");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        assert!(!out.status.success());
        text(&out.stderr)
    }

    /// Writes `body` as the config, runs `portico check` on it, expects it to fail and returns
    /// what it printed on stderr.
    pub fn check_refuses(&self, body: &str) -> String {
        self.config(body);
        let out = self.run(&["check", "--config", "portico.toml"]);
        assert!(!out.status.success(), "check accepted: {body}");
        text(&out.stderr)
    }

    /// Runs `portico import` of `file` (in this workspace) into `collection` of its database.
    pub fn import(&self, collection: &str, file: &str) -> Output {
        let db = self.database();
        self.run(&[
            "import",
            "--database",
            &db,
            "--collection",
            collection,
            file,
        ])
    }

    /// Runs `portico ARGS...` in this workspace and waits for it.
    pub fn run(&self, args: &[&str]) -> Output {
        portico()
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run portico")
    }

    /// Runs `portico users add` on this workspace's database (the binary: for tests of the
    /// CLI; [`Workspace::create_user`] makes one in this process); returns the new id.
    pub fn add_user(&self, username: &str, password: &str, roles: &[&str]) -> String {
        self.add_account(username, None, password, roles)
    }

    /// Runs `portico users add` with an email address too; returns the new id.
    pub fn add_account(
        &self,
        username: &str,
        email: Option<&str>,
        password: &str,
        roles: &[&str],
    ) -> String {
        let db = self.database();
        let mut args = vec![
            "users",
            "add",
            "--database",
            &db,
            "--username",
            username,
            "--password",
            password,
        ];
        if let Some(email) = email {
            args.push("--email");
            args.push(email);
        }
        for role in roles {
            args.push("--role");
            args.push(role);
        }
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "users add failed: {}",
            text(&out.stderr)
        );
        text(&out.stdout).trim().to_owned()
    }
}
