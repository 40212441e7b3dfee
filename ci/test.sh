#!/usr/bin/env bash
# The whole test suite, on a machine with only a Rust toolchain: installs what the tests need
# (the README's test command; .ci/run calls it after formatting and lints), then runs
# `cargo test --workspace`. Installing Debian packages needs root (or sudo).
# Everything the Rust tests need is built from crates.io (SQLite is bundled by rusqlite). The
# PostgreSQL tests start throwaway servers themselves and need Debian's `postgresql` package
# (initdb, pg_ctl); the multi-instance example also uses nginx. The admin page's browser tests
# need Debian's Chromium, Node.js and their driver (playwright-core, pinned by
# crates/portico-admin/tests/browser/package-lock.json). The auto API's live-stream browser
# test needs only Debian's chromium. The TypeScript client's tests (clients/js) need Node.js
# 20+, chromium and `npm ci` in clients/js, and for its account tests python3's aiosmtpd and the
# OpenID Connect test provider below. The OpenID Connect tests need Node.js and `npm ci` in
# crates/portico-cli/tests/support/oidc (the OAuth2 tests need Node.js only:
# tests/support/oauth2/github.mjs has no packages), the webhook tests `npm ci` in
# crates/portico-cli/tests/support/webhooks. The account tests read mail from an SMTP server they
# start with python3's aiosmtpd. The Python client's tests (clients/python) run in a virtualenv
# made here with pinned requirements. The files tests on S3 need the `s3s-fs` server, installed with
# `cargo install` when missing. The passkey tests'
# software authenticator runs in a venv made here with python-fido2, pinned by
# crates/portico-cli/tests/support/passkeys/requirements.txt. Extra arguments go to `cargo test`
# (`ci/test.sh -p portico-store`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then
  apt-get() { sudo apt-get "$@"; }
fi

if ! command -v cc >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q gcc
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q postgresql
fi

# The browser tests (admin page; live streams in the auto API): Debian's chromium (never a downloaded browser), node, and the
# driver from the committed lock file. The tests fail, never skip, when these are missing.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The scripts' https fetch test makes its certificates with openssl.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q && apt-get install -y -q "${missing[@]}"
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "the admin page's browser driver (playwright-core) needs Node.js 20 or later; found $(node --version)" >&2
  exit 1
fi
echo "== npm ci (admin page browser tests)"
(cd crates/portico-admin/tests/browser && npm ci --no-audit --no-fund)
# The TypeScript client (clients/js): its compiler, bundler and browser driver, pinned by its
# lock file. `cargo test --workspace` runs its `npm test` (crates/portico-cli/tests/integration/js_client.rs).
echo "== npm ci (TypeScript client, clients/js)"
(cd clients/js && npm ci --no-audit --no-fund)
# The OpenID Connect sign-in tests (crates/portico-cli/tests/integration/oidc.rs) run a real
# provider: npm's oidc-provider, pinned by the lock file next to its script.
echo "== npm ci (OpenID Connect test provider)"
(cd crates/portico-cli/tests/support/oidc && npm ci --no-audit --no-fund)
# The webhook tests (crates/portico-cli/tests/integration/webhooks.rs) check each delivery's
# signature in a receiver built on npm's standardwebhooks, the Standard Webhooks reference
# library, pinned by the lock file next to the receiver.
echo "== npm ci (webhook test receiver)"
(cd crates/portico-cli/tests/support/webhooks && npm ci --no-audit --no-fund)

if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1 \
  || ! command -v curl >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip curl
fi
# The account tests (crates/portico-accounts/tests, and crates/portico-cli/tests/integration's
# of the binary) read mail from an SMTP server they start with Debian's python3 and aiosmtpd
# (crates/portico-cli/tests/support/smtp_sink.py, through the test kit's `mail::SmtpSink`).
if ! /usr/bin/python3 -c 'import aiosmtpd' >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q python3-aiosmtpd
fi
# The passkey tests (crates/portico-accounts/tests/integration/passkeys.rs): a software authenticator
# on python-fido2, in a venv of its own, pinned by the requirements file next to it.
passkeys=crates/portico-cli/tests/support/passkeys
if ! "$passkeys/.venv/bin/python" -c 'import fido2, cryptography' >/dev/null 2>&1; then
  echo "== venv (passkey tests' software authenticator)"
  python3 -m venv "$passkeys/.venv"
  "$passkeys/.venv/bin/pip" install -q -r "$passkeys/requirements.txt"
fi

# The Python client's tests (clients/python; crates/portico-cli/tests/integration/py_client.rs
# runs them): a virtualenv with their pinned requirements (httpx, pytest, pytest-asyncio,
# aiosmtpd, mypy) and the client itself, installed editable.
echo "== virtualenv of the Python client's tests (target/python-client-venv)"
[ -x target/python-client-venv/bin/python ] || python3 -m venv target/python-client-venv
target/python-client-venv/bin/pip install -q -r clients/python/requirements-test.txt
target/python-client-venv/bin/pip install -q -e clients/python

# The files tests' S3-compatible server: s3s-fs (an S3 API over a directory, from crates.io;
# MinIO is not packaged by Debian and would be a downloaded binary). Built once, ~2 min.
if ! command -v s3s-fs >/dev/null 2>&1; then
  echo "== cargo install s3s-fs (S3-compatible server of the files tests)"
  cargo install --locked s3s-fs --version 0.14.1 --features binary
fi

echo "== cargo test --workspace"
if [ $# -gt 0 ]; then
  cargo test "$@"
else
  cargo test --workspace
fi

# The slim binary (no scripts, `--no-default-features --features full,jemalloc`): its own
# tests check that a config with [scripts] is refused by every command, never served without
# them. Last, as it relinks target/debug/portico without scripts.
if [ $# -eq 0 ]; then
  echo "== cargo test of the slim binary (no scripts)"
  slim=$(cargo test -p portico-cli --no-default-features --features full,jemalloc \
    --test without_scripts 2>&1) || { echo "$slim"; exit 1; }
  echo "$slim"
  # A build that unified scripts back in (a dependency asking for portico-cli's defaults) would
  # compile none of these tests and pass on nothing.
  if ! echo "$slim" | grep -q "test result: ok. [1-9]"; then
    echo "the slim binary's tests did not run: is the build still without scripts?"
    exit 1
  fi
fi
