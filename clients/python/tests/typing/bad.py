"""Typed mistakes mypy --strict must refuse: each line whose comment says error is one."""

from __future__ import annotations

from typing import TypedDict

from portico_client import AsyncPortico, Portico


class Tasks(TypedDict, total=False):
    _id: str
    title: str
    done: bool


def sync_misuse(pc: Portico) -> None:
    tasks = pc.collection("tasks", Tasks)
    tasks.create({"titel": "typo"})  # error: a key the document type does not have
    task = tasks.get("id")
    print(task["titel"])  # error: a key the document type does not have
    flag: str = task["done"]  # error: a bool is not a str
    tasks.list(limt=5)  # error: no such option


async def async_misuse(pc: AsyncPortico) -> None:
    tasks = pc.collection("tasks", Tasks)
    task = await tasks.get("id")
    print(task["titel"])  # error: a key the document type does not have
