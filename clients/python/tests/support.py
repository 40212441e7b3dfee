"""The real parts the tests run against: the `portico` binary (`PORTICO_BIN`) serving a config
from a temporary directory with a SQLite file, on a free port read from its `listening on
http://` line; an SMTP server (aiosmtpd) keeping every mail it receives; RFC 6238 codes."""

from __future__ import annotations

import base64
import email
import email.policy
import hashlib
import hmac
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from aiosmtpd.controller import Controller


def binary() -> str:
    """The `portico` binary: PORTICO_BIN, or the workspace's debug build. Missing: fail."""
    default = Path(__file__).resolve().parents[3] / "target" / "debug" / "portico"
    path = os.environ.get("PORTICO_BIN") or str(default)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is not an executable: build it (`cargo build -p portico-cli`) or set PORTICO_BIN")
    return path


def free_port() -> int:
    """A TCP port of 127.0.0.1 free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Mailbox:
    """An SMTP server on 127.0.0.1 (aiosmtpd): every mail it receives, decoded."""

    def __init__(self) -> None:
        self.mails: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.port = free_port()
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        record = {"to": list(envelope.rcpt_tos), "subject": str(message["subject"]), "text": body.get_content() if body else ""}
        with self._lock:
            self.mails.append(record)
        return "250 OK"

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def wait(self, to: str, match: Callable[[dict[str, Any]], bool] = lambda m: True, timeout: float = 15.0) -> dict[str, Any]:
        """The first mail to `to` that `match`es and was not taken before; fails after `timeout`."""
        end = time.time() + timeout
        while time.time() < end:
            with self._lock:
                for mail in self.mails:
                    if to in mail["to"] and match(mail):
                        self.mails.remove(mail)
                        return mail
            time.sleep(0.05)
        raise AssertionError(f"no mail to {to} within {timeout} s (got {self.mails})")

    def link_token(self, to: str, page: str) -> str:
        """The token of the link to `{app_url}/<page>?token=` in the next mail to `to`."""
        mail = self.wait(to, lambda m: f"/{page}?token=" in m["text"])
        found = re.search(rf"/{page}\?token=([A-Za-z0-9_\-]+)", mail["text"])
        assert found, mail["text"]
        return found.group(1)

    def stop(self) -> None:
        self._controller.stop()


class Server:
    """`portico serve` on `config` (`DB` replaced by a SQLite file) in a temporary directory."""

    def __init__(self, config: str, files: dict[str, str] | None = None) -> None:
        self.bin = binary()
        self.dir = tempfile.mkdtemp(prefix="portico-py-")
        self.db = os.path.join(self.dir, "portico.db")
        self.config = os.path.join(self.dir, "portico.toml")
        with open(self.config, "w") as f:
            f.write(config.replace("DB", self.db))
        for name, text in (files or {}).items():
            path = os.path.join(self.dir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.listen = "127.0.0.1:0"

    def add_user(self, username: str, password: str, *roles: str, email: str | None = None) -> str:
        """`portico users add`; returns the new account's id."""
        args = [self.bin, "users", "add", "--config", self.config, "--username", username, "--password", password]
        if email:
            args += ["--email", email]
        for role in roles:
            args += ["--role", role]
        out = subprocess.run(args, cwd=self.dir, capture_output=True, text=True)
        assert out.returncode == 0, f"portico users add failed: {out.stderr}"
        return out.stdout.strip().splitlines()[-1]

    def start(self) -> str:
        """Starts serving (on the port of the last start, when there was one); returns the URL."""
        env = {**os.environ, "RUST_LOG": "warn", "PORTICO_LISTEN": "", "PORTICO_DATABASE": "", "PORT": ""}
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--config", self.config, "--listen", self.listen],
            cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        end, seen = time.time() + 20, ""
        while time.time() < end:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                seen += line
                found = re.search(r"listening on (http://\S+)", line)
                if found:
                    self.url = found.group(1).rstrip("/")
                    self.listen = self.url.removeprefix("http://")
                    threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
                    return self.url
            if self.proc.poll() is not None:
                break
        stderr = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
        self.stop()
        raise AssertionError(f"portico serve did not start:\n{seen}\n{stderr}")

    @staticmethod
    def _drain(proc: subprocess.Popen[str]) -> None:
        for stream in (proc.stdout, proc.stderr):
            threading.Thread(target=lambda s=stream: [None for _ in s], daemon=True).start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def totp(secret: str, at: float | None = None, step: int = 30, digits: int = 6) -> str:
    """The RFC 6238 code (HMAC-SHA1) of a base32 `secret` at time `at`."""
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    counter = int((time.time() if at is None else at) // step)
    mac = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10**digits).zfill(digits)


def until(check: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    """Polls `check` until it returns something true; fails after `timeout` saying `what`."""
    end = time.time() + timeout
    while time.time() < end:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


SCRIPT = """
import { methods, PorticoError } from "portico";
methods({
  add(a, b) { return a + b; },
  whoami() { return this.userId; },
  fail(code) {
    const error = new PorticoError(code, "It failed on purpose", { why: "test" });
    error.statusCode = 409;
    throw error;
  },
});
"""


def config(smtp: str) -> str:
    """The config the tests serve: routes collections (plain, searched, related, role-written,
    owner-scoped, with files), accounts with mail, guests, the auto API with a publication, and a
    script with methods."""
    return f"""
database = "sqlite:DB"
shutdown_grace_seconds = 1

[[api]]
use_default_auth = true
auth_failure_delay_ms = 0
login_rate_limit = {{ attempts = 100, per_seconds = 10 }}

[[api.collection]]
name = "tasks"
max_page_size = 50

[[api.collection]]
name = "projects"
search = ["title"]

[[api.collection]]
name = "jobs"
relations = {{ project = "projects" }}

[[api.collection]]
name = "articles"
endpoints = {{ post = {{ role_required = "editor" }}, patch = {{ role_required = "editor" }} }}

[[api.collection]]
name = "notes"
owner_field = "ownerId"
auth_required = true

[[api.collection]]
name = "posts"
owner_field = "ownerId"
files = {{ cover = {{ types = ["image/png"], max = 1, thumbs = ["2x2"] }}, attachments = {{ max = 10 }} }}

[[api.collection]]
name = "albums"
files = {{ photo = {{ max = 1 }} }}

[accounts]
app_url = "http://app.example"
allow_guests = true
guest_rate_limit_per_address = {{ attempts = 1000, per_seconds = 3600 }}
mail_rate_limit_per_address = {{ attempts = 1000, per_seconds = 3600 }}
mail_rate_limit_per_email = {{ attempts = 1000, per_seconds = 3600 }}

[email]
smtp_url = "{smtp}"
from = "Portico <no-reply@example.com>"
retry_max_secs = 1

[auto]
auth_failure_delay_ms = 0
collections = ["widgets"]
allow_register = true

[auto.rules.widgets]
insert = "owner:ownerId"
update = "owner:ownerId"
remove = "owner:ownerId"

[[auto.publication]]
name = "widgets"
collection = "widgets"
selector = {{}}
sort = {{ createdAt = -1 }}
fields = {{ secret = 0 }}

[scripts]
main = "main.js"

[live]
ping_secs = 1
"""


# A 4x4 red PNG (the files tests' cover image).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000004000000040806000000a9f19e7e0000001249444154789c63f8cf"
    "c0f01f1933902e00003c401fe1e08177b40000000049454e44ae426082"
)
