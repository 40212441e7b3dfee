"""Typed use of the client, as `portico types --python` output would be used: mypy --strict
must accept it."""

from __future__ import annotations

from typing import TypedDict

from portico_client import AsyncPortico, Collection, Page, Portico


class Tasks(TypedDict, total=False):
    _id: str
    title: str
    done: bool


def sync_use(pc: Portico) -> str:
    tasks: Collection[Tasks] = pc.collection("tasks", Tasks)
    made = tasks.create({"title": "typed", "done": False})
    page: Page[Tasks] = tasks.list(where={"done": False}, limit=5)
    first = page.items[0]
    done: bool = first.get("done", False)
    sub = tasks.subscribe(sort="title")
    titles = [t.get("title", "") for t in sub.docs()]
    sub.stop()
    return made.get("title", "") + str(done) + ",".join(titles)


async def async_use(pc: AsyncPortico) -> bool:
    tasks = pc.collection("tasks", Tasks)
    got = await tasks.get("id")
    async for task in tasks.iterate(limit=10):
        return task.get("done", False)
    return got.get("done", False)
