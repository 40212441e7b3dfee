//! The TypeScript client (`clients/js`, the npm package `portico-client`) against this binary:
//! runs `npm test` there, which builds the package with its pinned TypeScript compiler and runs
//! Node's test runner: every call of the client against `portico serve` (and the auto API's
//! `todos` example, for methods), and pages in headless Chromium (one test across two instances
//! on a throwaway PostgreSQL cluster).
//!
//! Needs Node.js 20+ and npm, `npm ci` run in `clients/js`, Debian's `chromium` (or `CHROMIUM`),
//! Debian's `postgresql` binaries (or `PORTICO_PG_BIN`), and the `todos` example built (`cargo test --workspace` builds it; `.ci/run` does the rest).
//! Without any of them the test fails saying what is missing; it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/js")
}

#[test]
fn the_typescript_client_passes_its_tests_against_the_binary() {
    let dir = client_dir();
    let node = Command::new("node")
        .args(["-p", "process.versions.node.split('.')[0]"])
        .output();
    let major = node.ok().filter(|o| o.status.success()).and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<u32>()
            .ok()
    });
    assert!(
        major.is_some_and(|m| m >= 20),
        "the TypeScript client's tests need Node.js 20 or later on the PATH (found {major:?})"
    );
    for module in ["typescript", "playwright-core", "esbuild"] {
        assert!(
            dir.join("node_modules").join(module).is_dir(),
            "the TypeScript client's tests need {module}: run `npm ci` in {} (as .ci/run does)",
            dir.display()
        );
    }
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).exists(),
        "the TypeScript client's browser test needs Chromium at {chromium}: install Debian's \
         package (`apt-get install -y chromium`, as .ci/run does) or set CHROMIUM"
    );
    let portico = Path::new(env!("CARGO_BIN_EXE_portico"));
    let todos = portico
        .parent()
        .map(|bin| bin.join("examples/todos"))
        .unwrap_or_default();
    assert!(
        todos.exists(),
        "the TypeScript client's method tests need the auto API's todos example at {}: \
         `cargo build -p portico-auto --example todos` (cargo test --workspace builds it)",
        todos.display()
    );
    let output = Command::new("npm")
        .arg("test")
        .current_dir(&dir)
        .env("PORTICO_BIN", portico)
        .env("PORTICO_TODOS_BIN", &todos)
        .env("CHROMIUM", &chromium)
        .output()
        .expect("npm runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "npm test failed in {}:\n{stdout}\n{stderr}",
        dir.display()
    );
    let count = |key: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    assert_eq!(count("# fail "), Some(0), "{stdout}");
    assert_eq!(count("# skipped "), Some(0), "{stdout}");
    assert!(count("# pass ").is_some_and(|n| n >= 28), "{stdout}");
}
