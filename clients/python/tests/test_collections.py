"""The routes door's collections: lists and their options, paging, reads and conditional writes,
counts, aggregates, batches, expand and search; each with the sync and the async client."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from helpers import account, collect, maybe
from portico_client import PorticoError, etag_of
from support import Server


async def test_list_get_create_update_replace_delete(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    tasks = c.collection("tasks")
    tag = name
    made = [await maybe(tasks.create({"title": f"t{i}", "n": i, "tag": tag, "done": i % 2 == 0})) for i in range(5)]
    assert all(isinstance(t["_id"], str) and t["createdAt"] for t in made)
    page = await maybe(tasks.list(where={"tag": tag, "done": False}, sort="-n", limit=10))
    assert [t["n"] for t in page.items] == [3, 1] and page.total == 2 and page.next is None
    page = await maybe(tasks.list(where={"tag": tag}, sort={"n": 1}, skip=1, limit=2, fields="n"))
    assert [t["n"] for t in page.items] == [1, 2] and page.total == 5 and page.next is not None
    assert set(page.items[0]) == {"_id", "n"}
    page = await maybe(tasks.list(where={"tag": tag}, sort=["n"], limit=2, fields=["title"], total=False))
    assert page.total is None and [t["title"] for t in page.items] == ["t0", "t1"]
    # Every page, following the Link headers.
    pages = await collect(tasks.pages(where={"tag": tag}, sort="n", limit=2))
    assert [[t["n"] for t in p.items] for p in pages] == [[0, 1], [2, 3], [4]]
    every = await collect(tasks.iterate(where={"tag": tag}, sort="n", limit=2))
    assert [t["n"] for t in every] == [0, 1, 2, 3, 4]

    read = await maybe(tasks.get(made[0]["_id"]))
    assert read["title"] == "t0" and etag_of(read)
    changed = await maybe(tasks.update(read["_id"], {"title": "new", "meta.x": 1}, if_match=read))
    assert changed["title"] == "new" and changed["meta"] == {"x": 1}
    with pytest.raises(PorticoError) as stale:
        await maybe(tasks.update(read["_id"], {"title": "lost"}, if_match=read))
    assert stale.value.status == 412 and stale.value.error == "error"
    replaced = await maybe(tasks.replace(read["_id"], {"title": "whole"}, if_match=changed))
    assert "meta" not in replaced and replaced["title"] == "whole"
    await maybe(tasks.update(read["_id"], {"n": 9}, if_match="*"))
    with pytest.raises(PorticoError) as no_tag:
        await maybe(tasks.update(read["_id"], {"n": 1}, if_match={"_id": read["_id"]}))
    assert no_tag.value.error == "no-etag" and no_tag.value.status == 0
    await maybe(tasks.delete(read["_id"], if_match="*"))
    with pytest.raises(PorticoError) as gone:
        await maybe(tasks.get(read["_id"]))
    assert (gone.value.status, gone.value.error, gone.value.reason) == (404, "fail", "Item not found")
    assert await maybe(tasks.count(where={"tag": tag})) == 4
    assert await maybe(tasks.count(where={"tag": tag, "done": True})) == 2


async def test_an_unknown_option_is_refused_before_any_request(make: Callable[..., Any]) -> None:
    tasks = make().collection("tasks")
    with pytest.raises(TypeError, match="limt"):
        tasks.list(limt=5)
    with pytest.raises(TypeError, match="ifmatch"):
        tasks.update("x", {}, ifmatch="*")


async def test_aggregates(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    tasks = c.collection("tasks")
    for status, amount in (("open", 5), ("open", 10), ("paid", 7)):
        await maybe(tasks.create({"status": status, "amount": amount, "tag": name}))
    rows = await maybe(tasks.aggregate(group="status", count=True, sum="amount", avg="amount", where={"tag": name}, sort="-count"))
    assert rows == [
        {"_id": "open", "count": 2, "sum_amount": 15, "avg_amount": 7.5},
        {"_id": "paid", "count": 1, "sum_amount": 7, "avg_amount": 7.0},
    ]
    rows = await maybe(tasks.aggregate(min=["amount"], max="amount", where={"tag": name}))
    assert rows == [{"_id": None, "min_amount": 5, "max_amount": 10}]
    with pytest.raises(PorticoError) as empty:
        await maybe(tasks.aggregate(group="status"))
    assert empty.value.error == "invalid-aggregate"


async def test_batches_are_all_or_nothing(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    tasks = c.collection("tasks")
    results = await maybe(tasks.batch([
        {"op": "create", "doc": {"_id": name + "a", "title": "A"}},
        {"op": "update", "id": name + "a", "patch": {"title": "A2"}},
        {"op": "create", "collection": "projects", "doc": {"_id": name + "p", "title": "P"}},
    ]))
    assert [r["status"] for r in results] == [201, 200, 201] and results[1]["body"]["title"] == "A2"
    with pytest.raises(PorticoError) as failed:
        await maybe(c.batch([
            {"op": "create", "collection": "tasks", "doc": {"_id": name + "b", "title": "B"}},
            {"op": "remove", "collection": "tasks", "id": name + "nothing"},
        ]))
    assert failed.value.status == 404 and failed.value.data == {"index": 1}
    with pytest.raises(PorticoError):
        await maybe(tasks.get(name + "b"))
    results = await maybe(c.batch([
        {"op": "replace", "collection": "tasks", "id": name + "a", "doc": {"title": "A3"}},
        {"op": "remove", "collection": "projects", "id": name + "p"},
    ]))
    assert [r["status"] for r in results] == [200, 200]
    assert (await maybe(tasks.get(name + "a")))["title"] == "A3"


async def test_expand_and_search(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    projects, jobs = c.collection("projects"), c.collection("jobs")
    apple = await maybe(projects.create({"title": f"apple pie {name}"}))
    await maybe(projects.create({"title": f"cherry pie {name}"}))
    job = await maybe(jobs.create({"title": "bake", "project": apple["_id"], "tag": name}))
    got = await maybe(jobs.get(job["_id"], expand="project"))
    assert got["expand"]["project"]["title"] == apple["title"]
    page = await maybe(jobs.list(where={"tag": name}, expand=["project"]))
    assert page.items[0]["expand"]["project"]["_id"] == apple["_id"]
    found = await maybe(projects.list(search=f"pie {name}"))
    assert found.total == 2
    found = await maybe(projects.list(search=f"apple {name}", fields="title"))
    assert [p["title"] for p in found.items] == [apple["title"]]
    assert await maybe(projects.count(search=f"cherry {name}")) == 1
    with pytest.raises(PorticoError) as bad:
        await maybe(projects.list(search="pie", sort="title"))
    assert bad.value.status == 400


async def test_roles_and_owners_are_the_servers_rules(make: Callable[..., Any], server: Server, name: str) -> None:
    anon = make()
    with pytest.raises(PorticoError) as login:
        await maybe(anon.collection("notes").list())
    assert (login.value.status, login.value.reason) == (401, "You must be logged in to do this.")
    c = await account(make, server, name)
    with pytest.raises(PorticoError) as role:
        await maybe(c.collection("articles").create({"title": "x"}))
    assert role.value.status == 403
    editor = make()
    await maybe(editor.auth.login(username="ed", password="ed-secret-1"))
    article = await maybe(editor.collection("articles").create({"title": name}))
    assert (await maybe(anon.collection("articles").get(article["_id"])))["title"] == name
    mine = await maybe(c.collection("notes").create({"text": "private"}))
    with pytest.raises(PorticoError) as hidden:
        await maybe(editor.collection("notes").get(mine["_id"]))
    assert hidden.value.status == 404
