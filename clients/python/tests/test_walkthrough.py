"""The README's walk-through, run as written: examples/walkthrough.py against
examples/portico.toml with examples/app.toml appended, on a free port and a fresh SQLite file,
with the reset mail read from a real SMTP server. The README's code is the script's."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx

from support import Mailbox, Server

CLIENT = Path(__file__).resolve().parents[1]
ROOT = CLIENT.parents[1]


def test_the_walkthrough_runs_against_the_example_config(mailbox: Mailbox) -> None:
    config = (ROOT / "examples" / "portico.toml").read_text() + (CLIENT / "examples" / "app.toml").read_text()
    config = config.replace("smtp://127.0.0.1:1025", mailbox.url)
    srv = Server(config)
    try:
        srv.add_user("ed", "ed-secret", "editor", email="ed@example.com")
        srv.start()
        sys.path.insert(0, str(CLIENT / "examples"))
        import walkthrough

        lines: list[str] = []
        walkthrough.run(srv.url, lambda: mailbox.link_token("ed@example.com", "reset-password"),
                        lambda *a: lines.append(" ".join(map(str, a))))
        text = "\n".join(lines)
        assert "articles: 1 in all, newest: Hello from portico_client" in text
        assert "stale write refused: 412 Precondition failed" in text
        assert "iterated 1 articles, 2 per request" in text
        assert "author: Ann" in text and "search 'apple': ['Apple pie']" in text
        assert re.search(r"cover: image/png \d+ bytes, progress \[\d+\]", text)
        assert "thumbnail URL carries a download token: True" in text
        assert "live: added buy flour" in text and "live: changed buy flour and apples" in text
        assert "cache: ['buy flour and apples']" in text
        assert "old session: 401 and logged out here: True" in text
        assert "logged in again as ed" in text
        login = httpx.post(srv.url + "/api/v1/login", json={"username": "ed", "password": "ed-new-secret"})
        assert login.status_code == 200
    finally:
        srv.remove()


def test_the_readme_shows_the_walkthroughs_code() -> None:
    script = (CLIENT / "examples" / "walkthrough.py").read_text()
    readme = (CLIENT / "README.md").read_text()
    block = readme.split("<!-- walkthrough -->")[1]
    code = re.findall(r"```python\n(.*?)```", block, re.S)
    lines = [line.strip() for part in code for line in part.splitlines() if line.strip()]
    assert len(lines) > 30
    missing = [line for line in lines if line not in script]
    assert not missing, f"README lines not in examples/walkthrough.py: {missing}"
