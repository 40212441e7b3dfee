"""Files (uploads from bytes, a file object and an iterator, with progress; download URLs with a
download token; thumbnails; removal), the auto API (methods, publications, collection writes),
errors of each door, and retries; each with the sync and the async client."""

from __future__ import annotations

import io
from typing import Any, Callable, Iterator

import httpx
import pytest

from helpers import account, maybe
from portico_client import AsyncPortico, Portico, PorticoError
from support import PNG, Server, free_port


async def test_uploads_with_progress_download_urls_and_removal(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    posts = c.collection("posts")
    post = await maybe(posts.create({"title": "with files"}))
    big = bytes(range(256)) * 1024  # 256 KiB: several chunks
    seen: list[tuple[int, int | None]] = []
    meta = await maybe(posts.upload(post, "attachments", big, name="data.bin", progress=lambda s, t: seen.append((s, t))))
    assert meta["name"] == "data.bin" and meta["size"] == len(big)
    assert seen[-1] == (len(big), len(big)) and len(seen) >= 4
    assert [s for s, _ in seen] == sorted(s for s, _ in seen)

    meta = await maybe(posts.upload(post["_id"], "attachments", io.BytesIO(b"hello file"), name="hello.txt"))
    assert (meta["size"], meta["type"]) == (10, "text/plain")

    def parts() -> Iterator[bytes]:
        yield b"one,"
        yield b"two"

    streamed: list[tuple[int, int | None]] = []
    meta = await maybe(posts.upload(post, "attachments", parts(), name="parts.csv", progress=lambda s, t: streamed.append((s, t))))
    assert meta["size"] == 7 and streamed == [(4, None), (7, None)]
    assert await maybe(posts.download(post, "attachments", "parts.csv")) == b"one,two"

    cover = await maybe(posts.upload(post, "cover", PNG, name="c.png"))
    assert cover["type"] == "image/png"
    url = await maybe(posts.file_url(post, "cover", "c.png", thumb="2x2"))
    assert c.auth.token not in url and "token=" in url
    thumb = httpx.get(url)  # no header: the URL's download token is enough
    assert thumb.status_code == 200 and thumb.content.startswith(b"\x89PNG")
    url = await maybe(posts.file_url(post, "attachments", "hello.txt"))
    assert httpx.get(url).content == b"hello file"
    assert httpx.get(url.split("?")[0]).status_code in (401, 404)  # the file needs its owner

    await maybe(posts.remove_file(post, "attachments", "hello.txt"))
    assert httpx.get(url).status_code == 404
    names = [f["name"] for f in (await maybe(posts.get(post["_id"])))["attachments"]]
    assert names == ["data.bin", "parts.csv"]
    with pytest.raises(PorticoError) as wrong_type:
        await maybe(posts.upload(post, "cover", b"not an image", name="x.png"))
    assert wrong_type.value.status == 415


async def test_a_public_files_url_needs_no_token(make: Callable[..., Any], server: Server, name: str) -> None:
    owner = await account(make, server, name)
    album = await maybe(owner.collection("albums").create({"title": "public"}))
    await maybe(owner.collection("albums").upload(album, "photo", b"open to all", name="note.txt"))
    anonymous = make()
    url = await maybe(anonymous.collection("albums").file_url(album, "photo", "note.txt"))
    assert "token=" not in url and httpx.get(url).content == b"open to all"
    assert await maybe(anonymous.collection("albums").download(album["_id"], "photo", "note.txt")) == b"open to all"


async def test_async_uploads_take_async_iterators(server: Server, name: str) -> None:
    server.add_user(name, "a-password-1")
    async with AsyncPortico(server.url) as c:
        await c.auth.login(username=name, password="a-password-1")
        post = await c.collection("posts").create({"title": "async"})

        async def parts() -> Any:
            for part in (b"a" * 1000, b"b" * 24):
                yield part

        seen: list[int] = []
        meta = await c.collection("posts").upload(post, "attachments", parts(), name="ab.txt", progress=lambda s, t: seen.append(s))
        assert meta["size"] == 1024 and seen == [1000, 1024]


async def test_methods_publications_and_collection_writes(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    assert await maybe(c.call("add", 2, 3)) == 5
    assert await maybe(c.call("whoami")) == c.auth.user["id"]
    widgets = c.collection_write("widgets")
    wid = await maybe(widgets.insert({"name": "gear", "ownerId": c.auth.user["id"], "secret": "s"}))
    assert isinstance(wid, str)
    assert await maybe(widgets.update(wid, {"name": "big gear"})) == 1
    published = await maybe(c.publication("widgets"))
    mine = [w for w in published["widgets"] if w["_id"] == wid]
    assert mine[0]["name"] == "big gear" and "secret" not in mine[0]
    with pytest.raises(PorticoError) as denied:
        await maybe(widgets.insert({"name": "theirs", "ownerId": "someone-else"}))
    assert (denied.value.status, denied.value.error, denied.value.reason) == (403, "access-denied", "Access denied")
    assert await maybe(widgets.remove(wid)) == 1
    assert await maybe(widgets.remove(wid)) == 0


async def test_a_methods_error_has_its_code_reason_and_details(make: Callable[..., Any]) -> None:
    c = make()
    with pytest.raises(PorticoError) as failed:
        await maybe(c.call("fail", "my-code"))
    e = failed.value
    assert (e.status, e.error, e.reason, e.details) == (409, "my-code", "It failed on purpose", {"why": "test"})
    with pytest.raises(PorticoError) as missing:
        await maybe(c.call("no-such-method"))
    assert missing.value.status == 404


async def test_no_reply_is_a_network_error_and_only_reads_are_retried(make: Callable[..., Any]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    sent: list[str] = []
    sync = isinstance(make(), Portico)
    if sync:
        http: Any = httpx.Client(base_url=url + "/", event_hooks={"request": [lambda r: sent.append(r.method)]})
        c: Any = Portico(url, retries=2, http=http)
    else:
        async def hook(r: httpx.Request) -> None:
            sent.append(r.method)

        http = httpx.AsyncClient(base_url=url + "/", event_hooks={"request": [hook]})
        c = AsyncPortico(url, retries=2, http=http)
    with pytest.raises(PorticoError) as read:
        await maybe(c.collection("tasks").list())
    assert (read.value.status, read.value.error) == (0, "network-error")
    assert sent == ["GET", "GET", "GET"]
    sent.clear()
    with pytest.raises(PorticoError) as write:
        await maybe(c.collection("tasks").create({"title": "once"}))
    assert write.value.error == "network-error" and sent == ["POST"]
    await maybe(http.aclose() if not sync else http.close())
