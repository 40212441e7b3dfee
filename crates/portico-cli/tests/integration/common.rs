//! Running the binary: one-shot commands and a server on an ephemeral port.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};

use serde_json::{Value, json};

/// The `portico` binary under test, without the environment variables that choose its address
/// and database (a test sets them itself when it is about them).
pub(crate) fn portico() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_portico"));
    for name in ["PORTICO_LISTEN", "PORTICO_DATABASE", "PORT"] {
        command.env_remove(name);
    }
    command
}

/// A temporary directory holding a config file and a SQLite database (or naming a PostgreSQL
/// database).
pub(crate) struct Workspace {
    pub(crate) dir: tempfile::TempDir,
    /// The store URL when it is not this directory's SQLite file.
    url: Option<String>,
}

/// This test binary's throwaway PostgreSQL cluster, started on first use and stopped when the
/// binary exits. Without PostgreSQL installed, the tests using it fail saying what to install.
pub(crate) fn cluster() -> &'static portico_store::postgres::testing::TestCluster {
    use std::sync::OnceLock;

    use portico_store::postgres::testing::TestCluster;
    static CLUSTER: OnceLock<Result<TestCluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(TestCluster::start) {
        Ok(cluster) => cluster,
        Err(e) => panic!("cannot start PostgreSQL for the tests: {e}"),
    }
}

impl Workspace {
    pub(crate) fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().expect("temporary directory"),
            url: None,
        }
    }

    /// A workspace whose store is `url` (a PostgreSQL database, say).
    pub(crate) fn with_database(url: String) -> Workspace {
        Workspace {
            url: Some(url),
            ..Workspace::new()
        }
    }

    /// A workspace on a fresh database of this binary's PostgreSQL cluster.
    pub(crate) fn on_postgres() -> Workspace {
        let url = cluster().create_database().expect("create database");
        Workspace::with_database(url)
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The store URL of this workspace's database.
    pub(crate) fn database(&self) -> String {
        match &self.url {
            Some(url) => url.clone(),
            None => format!("sqlite:{}", self.path("portico.db").display()),
        }
    }

    /// Writes `portico.toml` (with this workspace's database) and returns its path.
    pub(crate) fn config(&self, body: &str) -> PathBuf {
        let path = self.path("portico.toml");
        let text = format!("database = \"{}\"\n{body}", self.database());
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// Writes `body` as the config, runs `portico check` on it, expects it to fail and returns
    /// what it printed on stderr.
    pub(crate) fn check_refuses(&self, body: &str) -> String {
        self.config(body);
        let out = self.run(&["check", "--config", "portico.toml"]);
        assert!(!out.status.success(), "check accepted: {body}");
        text(&out.stderr)
    }

    /// Runs `portico import` of `file` (in this workspace) into `collection` of its database.
    pub(crate) fn import(&self, collection: &str, file: &str) -> Output {
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
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        portico()
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run portico")
    }

    /// Runs `portico users add` on this workspace's database; returns the new id.
    pub(crate) fn add_user(&self, username: &str, password: &str, roles: &[&str]) -> String {
        self.add_account(username, None, password, roles)
    }

    /// Runs `portico users add` with an email address too; returns the new id.
    pub(crate) fn add_account(
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

    /// Starts `portico serve --config portico.toml --listen 127.0.0.1:0`.
    pub(crate) fn serve(&self) -> Server {
        self.serve_logging("info")
    }

    /// Starts the server as [`Workspace::serve`] does, with extra environment variables.
    pub(crate) fn serve_with_env(&self, env: &[(&str, &str)]) -> Server {
        Server::start_with_env(self.dir.path(), &SERVE_ARGS, env)
    }

    /// Runs `portico serve` as [`Workspace::serve`] does, expecting it to refuse to start
    /// (within 30 s); what it printed on stderr.
    pub(crate) fn serve_refuses(&self) -> String {
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

    /// Starts the server as [`Workspace::serve`] does, logging at `level` (`RUST_LOG`).
    pub(crate) fn serve_logging(&self, level: &str) -> Server {
        Server::start_logging(
            level,
            self.dir.path(),
            &[
                "serve",
                "--config",
                "portico.toml",
                "--listen",
                "127.0.0.1:0",
            ],
        )
    }
}

/// `portico serve` on this workspace's config, on an ephemeral port.
const SERVE_ARGS: [&str; 5] = [
    "serve",
    "--config",
    "portico.toml",
    "--listen",
    "127.0.0.1:0",
];

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A running `portico serve`; killed when dropped if not stopped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) log: PathBuf,
    _stdout: BufReader<ChildStdout>,
    pub(crate) http: reqwest::Client,
}

impl Server {
    /// Starts the server and waits for its `listening on http://ADDR` line.
    pub(crate) fn start(dir: &Path, args: &[&str]) -> Server {
        Server::start_full("info", dir, args, &[])
    }

    /// Starts the server with extra environment variables.
    pub(crate) fn start_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_full("info", dir, args, env)
    }

    /// Starts the server logging at `level`, as [`Server::start`] does.
    pub(crate) fn start_logging(level: &str, dir: &Path, args: &[&str]) -> Server {
        Server::start_full(level, dir, args, &[])
    }

    /// Starts the server logging at `level` with extra environment variables.
    pub(crate) fn start_full(
        level: &str,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
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
        Server {
            base: format!("http://{addr}"),
            child,
            log,
            _stdout: stdout,
            http: reqwest::Client::new(),
        }
    }

    /// Logs `user` in to the admin page's API (`POST /_/api/login`), asserting it succeeds;
    /// its token.
    pub(crate) async fn admin_token(&self, user: &str, password: &str) -> String {
        let login = self
            .call(
                "POST",
                "/_/api/login",
                Some(serde_json::json!({"user": user, "password": password})),
                &[],
            )
            .await;
        assert_eq!(login.status, 200, "admin login of {user}: {}", login.raw);
        login.body["token"].as_str().unwrap_or_default().to_owned()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends SIGTERM and waits; returns whether the process exited with success.
    pub(crate) fn stop(mut self) -> (bool, String) {
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
    pub(crate) fn stop_after_signal(mut self) -> (bool, String) {
        let exit = self.child.wait().expect("wait");
        (
            exit.success(),
            std::fs::read_to_string(&self.log).unwrap_or_default(),
        )
    }

    /// Sends a request with an optional JSON body and header; returns status, headers and body.
    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let raw = response.text().await.expect("body");
        let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            raw,
        }
    }

    /// Logs in through a routes API's default login; returns (token, user id).
    pub(crate) async fn rest_login(
        &self,
        base: &str,
        username: &str,
        password: &str,
    ) -> (String, String) {
        let reply = self
            .call(
                "POST",
                &format!("{base}login"),
                Some(json!({"username": username, "password": password})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 200, "login failed: {}", reply.raw);
        (
            reply.body["data"]["authToken"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            reply.body["data"]["userId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }

    /// Logs in through the auto API's login add-on; returns (token, user id).
    pub(crate) async fn auto_login(&self, username: &str, password: &str) -> (String, String) {
        let reply = self
            .call(
                "POST",
                "/users/login",
                Some(json!({"username": username, "password": password})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 200, "login failed: {}", reply.raw);
        (
            reply.body["token"].as_str().unwrap_or_default().to_owned(),
            reply.body["id"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP reply.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: Value,
    pub(crate) raw: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// `X-Auth-Token: token` for routes APIs.
pub(crate) fn x_auth(token: &str) -> [(&'static str, &str); 1] {
    [("X-Auth-Token", token)]
}

/// A real S3-compatible server for the test: `s3s-fs` (the `s3s` project's server over a
/// directory, installed by `.ci/run` with `cargo install --locked`), on a free port, with one
/// bucket. Killed when dropped.
pub(crate) struct S3Server {
    child: std::process::Child,
    /// The directory the server keeps its buckets in (one folder per bucket).
    pub(crate) root: tempfile::TempDir,
    endpoint: String,
}

impl S3Server {
    const KEY: &'static str = "portico-test-key";
    const SECRET: &'static str = "portico-test-secret";

    /// Starts the server with one empty bucket, `bucket`.
    pub(crate) fn start(bucket: &str) -> S3Server {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(bucket)).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("s3s-fs")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", S3Server::KEY, "--secret-key", S3Server::SECRET])
            .arg(root.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("s3s-fs (cargo install --locked s3s-fs --version 0.14.1 --features binary; .ci/run does)");
        let endpoint = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        S3Server {
            child,
            root,
            endpoint,
        }
    }

    /// The `AWS_*` variables that point Portico at this server.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", S3Server::KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", S3Server::SECRET.to_owned()),
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }

    /// `portico serve` of the workspace's config, with this server's settings in `AWS_*`.
    pub(crate) fn serve(&self, ws: &Workspace) -> Server {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Server::start_with_env(
            ws.dir.path(),
            &[
                "serve",
                "--config",
                "portico.toml",
                "--listen",
                "127.0.0.1:0",
            ],
            &env,
        )
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
