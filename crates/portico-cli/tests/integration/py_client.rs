//! The Python client (`clients/python`, the package `portico-client`) against this binary: runs
//! its pytest suite, which starts `portico serve` itself (a temporary SQLite file, a free port),
//! an SMTP server (aiosmtpd) for the account mails, and checks every call with the sync and the
//! async client, live lists through a server restart, the README's walk-through, and
//! `mypy --strict` on typed uses.
//!
//! Needs the virtualenv `ci/test.sh` makes: `target/python-client-venv` at the workspace root
//! (or `PORTICO_PY_VENV`) with `clients/python/requirements-test.txt` and the client installed.
//! Without it the test fails saying so; it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The counts of pytest's closing line (`12 passed, 1 skipped in 3.2s`), by word.
fn counts(stdout: &str) -> Vec<(String, u32)> {
    let Some(line) = stdout
        .lines()
        .rev()
        .find(|line| line.contains(" passed") || line.contains(" failed"))
    else {
        return Vec::new();
    };
    let summary = line.trim_matches(|c: char| c == '=' || c.is_whitespace());
    let summary = summary.split(" in ").next().unwrap_or_default();
    summary
        .split(", ")
        .filter_map(|part| {
            let (n, word) = part.trim().split_once(' ')?;
            Some((word.to_owned(), n.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_python_client_passes_its_tests_against_the_binary() {
    let root = workspace();
    let venv = std::env::var_os("PORTICO_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/python-client-venv"));
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "the Python client's tests need the virtualenv {}: make it as ci/test.sh does \
         (python3 -m venv {0}; {0}/bin/pip install -r clients/python/requirements-test.txt \
         -e clients/python), or set PORTICO_PY_VENV",
        venv.display()
    );
    let ready = Command::new(&python)
        .args([
            "-c",
            "import portico_client, httpx, pytest, pytest_asyncio, aiosmtpd, mypy",
        ])
        .output()
        .expect("the virtualenv's python runs");
    assert!(
        ready.status.success(),
        "the virtualenv {} lacks a package the Python client's tests need: run ci/test.sh \
         (pip install -r clients/python/requirements-test.txt -e clients/python):\n{}",
        venv.display(),
        String::from_utf8_lossy(&ready.stderr)
    );
    let dir = root.join("clients/python");
    let output = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs"])
        .current_dir(&dir)
        .env("PORTICO_BIN", env!("CARGO_BIN_EXE_portico"))
        .output()
        .expect("pytest runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "pytest failed in {}:\n{stdout}\n{stderr}",
        dir.display()
    );
    let counts = counts(&stdout);
    let count = |word: &str| {
        counts
            .iter()
            .find(|(w, _)| w == word)
            .map_or(0, |(_, n)| *n)
    };
    assert!(count("passed") > 0, "no test passed:\n{stdout}");
    for word in ["failed", "skipped", "error", "errors", "xfailed", "xpassed"] {
        assert_eq!(count(word), 0, "{word}:\n{stdout}");
    }
}
