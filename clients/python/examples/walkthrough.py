"""The README's walk-through: a small app against `portico serve` on examples/portico.toml with
clients/python/examples/app.toml appended, an editor `ed` (ed@example.com, password ed-secret)
and a mail server on 127.0.0.1:1025 (`python3 -m aiosmtpd -n -l 127.0.0.1:1025`).

    python clients/python/examples/walkthrough.py   # PORTICO_URL picks another server

It asks for the password-reset link's token, which the mail server prints. The tests run the
same function (tests/test_walkthrough.py)."""

from __future__ import annotations

import os
import time
import zlib
from typing import Callable

from portico_client import Portico, PorticoError


def cover_png() -> bytes:
    """A 4 x 4 red PNG: the post's cover."""
    import struct

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00\xff" * 4 for _ in range(4))
    header = struct.pack(">IIBBBBB", 4, 4, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def collections(pc: Portico, say: Callable[..., None]) -> None:
    # articles: editors write, anyone reads
    articles = pc.collection("articles")
    article = articles.create({"title": "Hello from portico_client", "body": "First post"})
    page = articles.list(sort="-createdAt", limit=5, fields="title")
    say("articles:", page.total, "in all, newest:", page.items[0]["title"])
    read = articles.get(article["_id"])
    articles.update(article["_id"], {"title": "Hello again"}, if_match=read)  # applies
    try:
        articles.update(article["_id"], {"title": "Lost update"}, if_match=read)  # it changed since
    except PorticoError as e:
        say("stale write refused:", e.status, e.reason)
    say("iterated", len(list(articles.iterate(limit=2))), "articles, 2 per request")


def posts(pc: Portico, say: Callable[..., None]) -> str:
    # a post names its author: expand puts the author in
    ann = pc.collection("authors").create({"name": "Ann"})
    posts = pc.collection("posts")
    post = posts.create({"title": "Apple pie", "body": "Bake it slowly", "author": ann["_id"]})
    posts.create({"title": "Cherry pie", "body": "No apples here", "author": ann["_id"]})
    say("author:", posts.get(post["_id"], expand="author")["expand"]["author"]["name"])
    say("search 'apple':", [p["title"] for p in posts.list(search="apple").items])
    # a file: the cover, uploaded with progress, and a URL an <img> can use
    sent: list[int] = []
    meta = posts.upload(post, "cover", cover_png(), name="cover.png", progress=lambda n, total: sent.append(n))
    say("cover:", meta["type"], meta["size"], "bytes, progress", sent)
    url = posts.file_url(post, "cover", "cover.png", thumb="100x100")
    say("thumbnail URL carries a download token:", "token=" in url)
    return url


def until(check: Callable[[], bool], seconds: float = 10) -> None:
    """Waits until `check()` holds (the live list's thread fills the cache)."""
    end = time.time() + seconds
    while not check() and time.time() < end:
        time.sleep(0.01)


def live(pc: Portico, say: Callable[..., None]) -> None:
    # a live list: ed's private notes, kept up to date in sub.docs()
    notes = pc.collection("notes")
    sub = notes.subscribe(sort="-createdAt", on_event=lambda e: e.doc and say("live:", e.kind, e.doc["text"]))
    sub.wait_ready(10)
    note = notes.create({"text": "buy flour"})
    until(lambda: [n["text"] for n in sub.docs()] == ["buy flour"])
    notes.update(note["_id"], {"text": "buy flour and apples"})
    until(lambda: [n["text"] for n in sub.docs()] == ["buy flour and apples"])
    say("cache:", [n["text"] for n in sub.docs()])
    sub.stop()


def reset(url: str, pc: Portico, token_of_the_mail: Callable[[], str], say: Callable[..., None]) -> None:
    # a forgotten password: the mail's link carries a token; the app's page sends it back
    pc.auth.request_password_reset("ed@example.com")
    Portico(url, api="api/v1/").auth.confirm_password_reset(token_of_the_mail(), "ed-new-secret")
    try:
        pc.collection("notes").list()
    except PorticoError as e:
        say("old session:", e.status, "and logged out here:", pc.auth.token is None)
    pc.auth.login(username="ed", password="ed-new-secret")
    say("logged in again as", pc.auth.user["username"] if pc.auth.user else None)


def run(url: str, token_of_the_mail: Callable[[], str], say: Callable[..., None] = print) -> None:
    pc = Portico(url, api="api/v1/")
    pc.auth.login(username="ed", password="ed-secret")
    collections(pc, say)
    posts(pc, say)
    live(pc, say)
    reset(url, pc, token_of_the_mail, say)
    pc.auth.logout()


if __name__ == "__main__":
    run(os.environ.get("PORTICO_URL", "http://127.0.0.1:3000"), lambda: input("the reset link's token: ").strip())
