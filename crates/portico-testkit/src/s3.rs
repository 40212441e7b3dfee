//! A real S3-compatible server for file tests.

use crate::binary::Process;
use crate::workspace::Workspace;

/// A real S3-compatible server for the test: `s3s-fs` (the `s3s` project's server over a
/// directory, installed by `.ci/run` with `cargo install --locked`), on a free port, with one
/// bucket. Killed when dropped.
pub struct S3Server {
    child: std::process::Child,
    /// The directory the server keeps its buckets in (one folder per bucket).
    pub root: tempfile::TempDir,
    endpoint: String,
}

impl S3Server {
    const KEY: &'static str = "portico-test-key";
    const SECRET: &'static str = "portico-test-secret";

    /// Starts the server with one empty bucket, `bucket`.
    pub fn start(bucket: &str) -> S3Server {
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
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", S3Server::KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", S3Server::SECRET.to_owned()),
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }

    /// `portico serve` (the binary: the settings are environment variables it reads at start)
    /// of the workspace's config, with this server's settings in `AWS_*`.
    pub fn serve(&self, ws: &Workspace) -> Process {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        ws.serve_with_env(&env)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
