//! A real SMTP server for the tests that send mail (Python's aiosmtpd running
//! `smtp_sink.py` of [`crate::support_dir`]), and the links and codes of the mails it got.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// An SMTP server on `127.0.0.1` writing each mail it receives as a JSON file
/// (`{"to", "from", "subject", "text", "html"}`) the test reads; stopped when dropped.
pub struct SmtpSink {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
}

/// The Python the sink runs on: `$PORTICO_TEST_PYTHON`, else Debian's interpreter (which has
/// python3-aiosmtpd, see `.ci/run`), else `python3` on the path.
fn python() -> String {
    std::env::var("PORTICO_TEST_PYTHON").unwrap_or_else(|_| {
        if std::path::Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3".into()
        } else {
            "python3".into()
        }
    })
}

impl SmtpSink {
    /// A sink on a free port, not started yet (the mail server is down): [`SmtpSink::up`]
    /// starts it.
    pub fn stopped() -> SmtpSink {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        SmtpSink {
            child: None,
            dir: tempfile::tempdir().expect("mail folder"),
            port,
        }
    }

    /// A sink on a free port, accepting mail.
    pub fn started() -> SmtpSink {
        let mut sink = SmtpSink::stopped();
        sink.up();
        sink
    }

    /// Starts the sink on its port and waits until it accepts connections.
    pub fn up(&mut self) {
        let script = crate::support_dir().join("smtp_sink.py");
        let mut child = Command::new(python())
            .arg(&script)
            .arg(self.dir.path())
            .arg(self.port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the SMTP sink (python3 with aiosmtpd; Debian: python3-aiosmtpd)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the sink's first line");
        assert_eq!(
            line.trim(),
            "ready",
            "the SMTP sink did not start (python3-aiosmtpd installed?)"
        );
        self.child = Some(child);
    }

    /// `smtp://127.0.0.1:PORT`, for a config's `[email] smtp_url`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every mail received so far, oldest first.
    pub fn mails(&self) -> Vec<Value> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .expect("read mail folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| {
                serde_json::from_str(&std::fs::read_to_string(p).expect("mail")).expect("mail json")
            })
            .collect()
    }

    /// Waits (up to 20 s) until `n` mails have arrived; returns them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mails = self.mails();
            if mails.len() >= n {
                return mails;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} mails arrived: {mails:?}",
                mails.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The token of the link `{link}?token=...` in `mail`, which must be addressed to `to` alone;
/// a 256-bit token (43 characters) is asserted.
pub fn link_token(mail: &Value, to: &str, link: &str) -> String {
    assert_eq!(mail["to"], json!([to]), "mail: {mail}");
    let text = mail["text"].as_str().unwrap_or_default();
    let prefix = format!("{link}?token=");
    let start = text
        .find(&prefix)
        .unwrap_or_else(|| panic!("no {prefix} link in {text:?}"))
        + prefix.len();
    let token: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert_eq!(token.len(), 43, "256-bit token in {text:?}");
    token
}

/// The six-digit code (also in the subject) and the token of the link `{link}?token=...` of a
/// sign-in mail to `to`.
pub fn code_and_token(mail: &Value, to: &str, link: &str) -> (String, String) {
    assert_eq!(mail["to"], json!([to]), "mail: {mail}");
    let text = mail["text"].as_str().unwrap_or_default();
    let code: String = text
        .split_whitespace()
        .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no code in {text:?}"))
        .to_owned();
    assert!(
        mail["subject"].as_str().unwrap_or_default().contains(&code),
        "{mail}"
    );
    (code, link_token(mail, to, link))
}
