"""Live lists and publications over server-sent events: the cache, the events, iteration, a
refusal, a logout, and a server restart after which the cache catches up; each with the sync
(a thread) and the async (a task) client."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable

import pytest

from helpers import account, maybe, until
from portico_client import AsyncPortico, LiveEvent, Portico, PorticoError
from support import Server


def kinds(events: list[LiveEvent[Any]]) -> list[str]:
    return [e.kind for e in events if e.kind != "error"]


async def test_a_live_list_keeps_its_cache_and_ends_at_logout(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    writer = Portico(server.url)
    writer.auth.login(username=name, password=f"{name}-password")
    tasks = writer.collection("tasks")
    first = tasks.create({"title": "first", "n": 2, "tag": name})
    events: list[LiveEvent[Any]] = []
    sub = c.collection("tasks").subscribe(where={"tag": name}, sort="n", fields=["title", "n", "tag"], on_event=events.append, keep_events=False)
    await maybe(sub.wait_ready(10))
    assert kinds(events) == ["added", "ready"] and sub.get(first["_id"])["title"] == "first"
    second = tasks.create({"title": "second", "n": 1, "tag": name})
    await until(lambda: len(sub.docs()) == 2, "the second task")
    assert [t["title"] for t in sub.docs()] == ["second", "first"]
    tasks.update(first["_id"], {"title": "first, renamed", "n": 0})
    await until(lambda: sub.docs()[0]["title"] == "first, renamed", "the rename")
    change = [e for e in events if e.kind == "changed"][-1]
    assert change.previous["title"] == "first" and change.doc["n"] == 0 and change.collection == "tasks"
    tasks.delete(second["_id"])
    await until(lambda: len(sub.docs()) == 1, "the removal")
    assert [e.doc["title"] for e in events if e.kind == "removed"] == ["second"]
    tasks.create({"title": "other", "tag": name + "-not"})  # not in the list
    await maybe(c.auth.logout())
    await until(lambda: sub.end_reason == "logged-out", "the end of the list")
    assert kinds(events)[-1] == "end" and events[-1].reason == "logged-out"
    assert all(e.doc["tag"] == name for e in events if e.doc)
    writer.close()


async def test_a_live_publication(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    events: list[LiveEvent[Any]] = []
    sub = c.subscribe("widgets", sort={"createdAt": -1}, on_event=events.append)
    await maybe(sub.wait_ready(10))
    widgets = c.collection_write("widgets")
    wid = await maybe(widgets.insert({"name": "gear", "ownerId": c.auth.user["id"], "secret": "s3"}))
    await until(lambda: sub.get(wid, "widgets"), "the widget")
    await maybe(widgets.update(wid, {"name": "big gear"}))
    await until(lambda: sub.get(wid)["name"] == "big gear", "the change")
    assert "secret" not in sub.get(wid) and sub.docs("widgets")[0]["_id"] == wid
    await maybe(sub.stop())
    assert sub.end_reason == "stopped" and events[-1].kind == "end"


async def test_a_refused_list_ends_and_says_why(make: Callable[..., Any]) -> None:
    sub = make().collection("notes").subscribe()
    with pytest.raises(PorticoError) as refused:
        await maybe(sub.wait_ready(10))
    assert refused.value.status == 401 and sub.end_reason == "refused"


def test_sync_iteration(server: Server, name: str) -> None:
    server.add_user(name, "iter-password")
    with Portico(server.url) as c:
        c.auth.login(username=name, password="iter-password")
        sub = c.collection("tasks").subscribe(where={"tag": name})
        seen: list[str] = []
        writer = threading.Timer(0.3, lambda: c.collection("tasks").create({"title": "it", "tag": name}))
        writer.start()
        for event in sub:
            seen.append(event.kind)
            if event.kind == "added":
                sub.stop()
        writer.join()
        assert seen == ["ready", "added", "end"]


async def test_async_iteration(server: Server, name: str) -> None:
    server.add_user(name, "iter-password")
    async with AsyncPortico(server.url) as c:
        await c.auth.login(username=name, password="iter-password")
        seen: list[str] = []
        async with c.collection("tasks").subscribe(where={"tag": name}) as sub:
            async def write() -> None:
                await sub.wait_ready(10)
                await c.collection("tasks").create({"title": "it", "tag": name})

            task = asyncio.create_task(write())
            async for event in sub:
                seen.append(event.kind)
                if event.kind == "added":
                    break
            await task
        assert seen == ["ready", "added"] and sub.end_reason == "stopped"


RESTART = """
database = "sqlite:DB"
shutdown_grace_seconds = 1

[[api]]
use_default_auth = true
auth_failure_delay_ms = 0

[[api.collection]]
name = "tasks"

[live]
ping_secs = 1
"""


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_live_list_survives_a_server_restart_and_catches_up(kind: str) -> None:
    srv = Server(RESTART)
    try:
        srv.add_user("w", "writer-password")
        srv.start()
        with Portico(srv.url) as w:
            w.auth.login(username="w", password="writer-password")
            ids = [w.collection("tasks").create({"title": t})["_id"] for t in ("keep", "change", "remove")]
        c: Any = Portico(srv.url) if kind == "sync" else AsyncPortico(srv.url)
        events: list[LiveEvent[Any]] = []
        sub = c.collection("tasks").subscribe(sort="title", on_event=events.append, min_delay=0.1, max_delay=0.5, idle_timeout=3)
        await maybe(sub.wait_ready(10))
        assert sorted(t["title"] for t in sub.docs()) == ["change", "keep", "remove"]
        srv.stop()
        await until(lambda: any(e.kind == "error" for e in events), "the lost connection")
        # Meanwhile another instance on the same database changes the list ...
        url, srv.listen = srv.url, "127.0.0.1:0"
        srv.start()
        with Portico(srv.url) as w:
            w.auth.login(username="w", password="writer-password")
            w.collection("tasks").update(ids[1], {"title": "changed"})
            w.collection("tasks").delete(ids[2])
            added = w.collection("tasks").create({"title": "added"})
        srv.stop()
        # ... and the server comes back on its port: the list reconnects and catches up.
        srv.listen = url.removeprefix("http://")
        srv.start()
        await until(lambda: [t["title"] for t in sub.docs()] == ["added", "changed", "keep"], "the cache to catch up", 20)
        after = events[[e.kind for e in events].index("error"):]
        told = sorted((e.kind, e.doc["title"]) for e in after if e.kind in ("added", "changed", "removed"))
        assert told == [("added", "added"), ("changed", "changed"), ("removed", "remove")]
        assert sub.get(added["_id"])["title"] == "added" and sub.end_reason is None
        await maybe(sub.stop())
        await maybe(c.aclose() if kind == "async" else c.close())
    finally:
        srv.remove()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_overloaded_server_is_tried_again_until_it_has_room(kind: str) -> None:
    srv = Server(RESTART.replace("ping_secs = 1", "ping_secs = 1\nmax_streams = 1"))
    try:
        srv.start()
        first = Portico(srv.url)
        holder = first.collection("tasks").subscribe()
        holder.wait_ready(10)
        c: Any = Portico(srv.url) if kind == "sync" else AsyncPortico(srv.url)
        events: list[LiveEvent[Any]] = []
        sub = c.collection("tasks").subscribe(on_event=events.append, min_delay=0.1, max_delay=0.3)
        await until(lambda: any(e.kind == "error" for e in events), "a 503")
        busy = next(e for e in events if e.kind == "error")
        assert busy.error is not None and busy.error.status == 503 and sub.end_reason is None
        holder.stop()
        await maybe(sub.wait_ready(10))
        assert sub.end_reason is None and [e.kind for e in events if e.kind != "error"] == ["ready"]
        await maybe(sub.stop())
        await maybe(c.aclose() if kind == "async" else c.close())
        first.close()
    finally:
        srv.remove()
