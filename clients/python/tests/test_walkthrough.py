"""The README's walk-through, run as written: examples/walkthrough.py against the repository's
examples/app/portico.toml (the small app the TypeScript client's README walks through too), with
its JSON Schemas beside it, on a free port and a fresh SQLite file, with the reset mail read from
a real SMTP server. The README's code is the script's."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx

from support import Mailbox, Server

CLIENT = Path(__file__).resolve().parents[1]
ROOT = CLIENT.parents[1]
APP = ROOT / "examples" / "app"


def test_the_walkthrough_runs_against_the_shared_app(mailbox: Mailbox) -> None:
    config = (APP / "portico.toml").read_text()
    assert "smtp://127.0.0.1:1025" in config
    schemas = {p.name: p.read_text() for p in APP.glob("*.schema.json")}
    assert sorted(schemas) == ["projects.schema.json", "tasks.schema.json"]
    srv = Server(config.replace("smtp://127.0.0.1:1025", mailbox.url), schemas)
    try:
        srv.start()
        sys.path.insert(0, str(CLIENT / "examples"))
        import walkthrough

        lines: list[str] = []
        walkthrough.run(srv.url, lambda: mailbox.link_token("ann@example.com", "reset-password"),
                        lambda *a: lines.append(" ".join(map(str, a))))
        assert lines == [
            "3 tasks: Paint the fence (Garden), Plant the apple tree (Garden), Water the roses (Garden)",
            "apple tree: Plant the apple tree",
            "hours: 9 over 3 tasks",
            f"uploaded {(APP / 'garden.png').stat().st_size} bytes",
            "thumbnail: image/png",
            "live: done: Paint the fence",
            "live list ended: logged-out",
            "old session: 401 You must be logged in to do this.",
            "open tasks: 2",
        ]
        # The sign-up mailed a link to verify the address; the reset's new password holds.
        assert mailbox.link_token("ann@example.com", "verify-email")
        login = httpx.post(srv.url + "/api/login", json={"username": "ann", "password": "second-password"})
        assert login.status_code == 200, login.text
        old = httpx.post(srv.url + "/api/login", json={"username": "ann", "password": "first-password"})
        assert old.status_code == 401, old.text
    finally:
        srv.remove()


def test_the_readme_shows_the_walkthroughs_code() -> None:
    script = (CLIENT / "examples" / "walkthrough.py").read_text()
    readme = (CLIENT / "README.md").read_text()
    block = readme.split("<!-- walkthrough -->")[1].split("<!-- /walkthrough -->")[0]
    code = re.findall(r"```python\n(.*?)```", block, re.S)
    lines = [line.strip() for part in code for line in part.splitlines() if line.strip()]
    assert len(lines) > 40
    script_lines = {line.strip() for line in script.splitlines()}
    missing = [line for line in lines if line not in script_lines]
    assert not missing, f"README lines not in examples/walkthrough.py: {missing}"
