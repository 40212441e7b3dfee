"""Runs one test body against both clients: a sync call's result is used as it is, an async
call's is awaited."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Callable


async def maybe(value: Any) -> Any:
    """`value`, awaited when it is awaitable (the async client's calls)."""
    return await value if inspect.isawaitable(value) else value


async def collect(iterable: Any) -> list[Any]:
    """Every item of a sync or async iterator."""
    if hasattr(iterable, "__aiter__"):
        return [item async for item in iterable]
    return list(iterable)


async def until(check: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    """Polls `check` (letting the loop run) until it returns something true; fails after `timeout`."""
    end = time.time() + timeout
    while time.time() < end:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def account(make: Callable[..., Any], server: Any, name: str, email: str | None = None, *roles: str) -> Any:
    """A client of the test's kind logged in as a new account `name` (made by `portico users
    add`: the auto API's sign-ups are limited to 10 a minute per address)."""
    server.add_user(name, f"{name}-password", *roles, email=email)
    client = make()
    await maybe(client.auth.login(username=name, password=f"{name}-password"))
    return client
