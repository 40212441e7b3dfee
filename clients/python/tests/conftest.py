"""Fixtures: one SMTP server and one `portico serve` for the session (each test makes its own
accounts and documents), and fresh clients per test."""

from __future__ import annotations

import itertools
from typing import Any, AsyncIterator, Iterator

import pytest

from portico_client import AsyncPortico, Portico
from support import SCRIPT, Mailbox, Server, config

_names = itertools.count()


@pytest.fixture(scope="session")
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    yield box
    box.stop()


@pytest.fixture(scope="session")
def server(mailbox: Mailbox) -> Iterator[Server]:
    srv = Server(config(mailbox.url), {"main.js": SCRIPT})
    srv.add_user("ed", "ed-secret-1", "editor", email="ed@example.com")
    srv.start()
    yield srv
    srv.remove()


@pytest.fixture
def name() -> str:
    """A fresh username for this test."""
    return f"user{next(_names)}"


@pytest.fixture
def pc(server: Server) -> Iterator[Portico]:
    with Portico(server.url) as client:
        yield client


@pytest.fixture
async def apc(server: Server) -> AsyncIterator[AsyncPortico]:
    async with AsyncPortico(server.url) as client:
        yield client


def fresh(server: Server, name: str, **kw: Any) -> Portico:
    """A sync client logged in as a new account `name` (registered on the auto API)."""
    client = Portico(server.url)
    client.auth.register(username=name, password=f"{name}-password", **kw)
    return client


@pytest.fixture(params=["sync", "async"])
async def make(request: pytest.FixtureRequest, server: Server) -> AsyncIterator[Any]:
    """Makes clients of the kind this run of the test is for (each test runs with both): sync
    `Portico` and async `AsyncPortico`, closed after the test."""
    made: list[Any] = []

    def new(**kw: Any) -> Any:
        client = (Portico if request.param == "sync" else AsyncPortico)(server.url, **kw)
        made.append(client)
        return client

    yield new
    for client in made:
        if isinstance(client, AsyncPortico):
            await client.aclose()
        else:
            client.close()
