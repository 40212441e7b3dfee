"""The README's walk-through: the small app of examples/app/portico.toml (projects with a photo,
tasks that name their project, accounts with mail), the same app as the TypeScript client's
README, from sign-up to a password reset. Its server runs from examples/app/ with a mail server
on 127.0.0.1:1025 (`python3 -m aiosmtpd -n -l 127.0.0.1:1025`, which prints the mails):

    python clients/python/examples/walkthrough.py   # PORTICO_URL picks another server

It asks for the password-reset link's token, from the mail. The tests run the same function
(tests/test_walkthrough.py), with the mail read from a real SMTP server."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx

from portico_client import LiveEvent, Portico, PorticoError

GARDEN_PNG = Path(__file__).resolve().parents[3] / "examples" / "app" / "garden.png"


def until(check: Callable[[], bool], seconds: float = 10) -> None:
    """Waits until `check()` holds (the live list's thread keeps its documents)."""
    end = time.time() + seconds
    while not check() and time.time() < end:
        time.sleep(0.02)


def run(url: str, token_of_the_mail: Callable[[], str], say: Callable[..., None] = print) -> None:
    pc = Portico(url)

    # 1. Sign up (and log in); the server mails a link to verify the address.
    pc.auth.register(username="ann", email="ann@example.com", password="first-password")

    # 2. Collections: a project, and tasks that name it.
    projects = pc.collection("projects")
    tasks = pc.collection("tasks")
    garden = projects.create({"name": "Garden"})
    for title, hours in [("Plant the apple tree", 3), ("Water the roses", 1), ("Paint the fence", 5)]:
        tasks.create({"title": title, "hours": hours, "project": garden["_id"]})

    # 3. Expand: each task with its project in one request.
    page = tasks.list(sort="title", expand="project")
    say(f"{page.total} tasks:", ", ".join(f"{t['title']} ({t['expand']['project']['name']})" for t in page.items))

    # 4. Search, best match first; and the hours per project.
    found = tasks.list(search="apple tree")
    say("apple tree:", ", ".join(t["title"] for t in found.items))
    [per_project] = tasks.aggregate(group="project", count=True, sum="hours")
    say(f"hours: {per_project['sum_hours']} over {per_project['count']} tasks")

    # 5. A file: the garden's photo, uploaded with progress; a URL of its thumbnail for <img src>.
    def uploaded(sent: int, size: int | None) -> None:
        if sent == size:
            say(f"uploaded {size} bytes")

    photo = projects.upload(garden, "photo", GARDEN_PNG.read_bytes(), name="garden.png", progress=uploaded)
    src = projects.file_url(garden, "photo", photo["name"], thumb="100x100")
    say("thumbnail:", httpx.get(src).headers["content-type"])

    # 6. A live list of the open tasks; one is done, and leaves it.
    ended = threading.Event()

    def told(e: LiveEvent[Any]) -> None:
        if e.kind == "removed" and e.doc is not None:
            say("live: done:", e.doc["title"])
        if e.kind == "end":
            say("live list ended:", e.reason)
            ended.set()

    open_tasks = tasks.subscribe(where={"done": {"$ne": True}}, sort="title", on_event=told)
    open_tasks.wait_ready(10)
    fence = next(t for t in open_tasks.docs() if t["title"] == "Paint the fence")
    tasks.update(fence["_id"], {"done": True})
    until(lambda: len(open_tasks.docs()) == 2)

    # 7. A forgotten password: a mailed link, a new password; every session ends (the live list too).
    pc.auth.request_password_reset("ann@example.com")
    pc.auth.confirm_password_reset(token_of_the_mail(), "second-password")
    ended.wait(10)
    try:
        tasks.list()
    except PorticoError as e:
        say("old session:", e.status, e.reason)
    pc.auth.login(username="ann", password="second-password")
    say("open tasks:", tasks.list(where={"done": {"$ne": True}}).total)
    pc.close()


if __name__ == "__main__":
    run(os.environ.get("PORTICO_URL", "http://127.0.0.1:3000"), lambda: input("the reset link's token: ").strip())
