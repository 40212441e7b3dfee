"""What sync and async live lists share: the server-sent events parser, the local cache with its
reconciliation after a reconnect, the order of ``docs()``, and the reconnect rules. No I/O here."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, Callable, Generic, cast, Literal, Mapping, Sequence, TypeVar, Union

from ._errors import PorticoError

D = TypeVar("D")

EventKind = Literal["added", "changed", "removed", "ready", "error", "end"]


@dataclass
class LiveEvent(Generic[D]):
    """One thing a live list tells: ``added`` / ``changed`` / ``removed`` (``doc``, and
    ``previous`` for a change; ``collection``), ``ready`` (the first initial set is in the cache),
    ``error`` (a connection failed or dropped: ``error``, and the next try in ``delay`` seconds),
    ``end`` (for good: ``reason`` is ``stopped``, ``logged-out``, ``expired`` or ``refused``,
    with ``error`` for a refusal)."""

    kind: EventKind
    doc: D | None = None
    previous: D | None = None
    collection: str = ""
    reason: str | None = None
    error: PorticoError | None = None
    delay: float | None = None


class SseParser:
    """Server-sent events from a stream's text as it comes: ``feed(text)`` returns the events
    completed so far as ``(event, data)`` (comments, ids and retries skipped)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event = "message"
        self._data: list[str] = []

    def feed(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._buffer += text.replace("\r\n", "\n")
        lines = self._buffer.split("\n")
        self._buffer = lines.pop()
        for line in (ln.rstrip("\r") for ln in lines):
            if line == "":
                if self._data:
                    out.append((self._event, "\n".join(self._data)))
                self._event, self._data = "message", []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                self._event = value
            elif name == "data":
                self._data.append(value)
        return out


# --- the order of docs() --------------------------------------------------------------------


def _at(doc: Any, path: str) -> Any:
    value = doc
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _rank(v: Any) -> int:
    if v is None:
        return 0
    if isinstance(v, bool):
        return 5
    if isinstance(v, (int, float)):
        return 1
    if isinstance(v, str):
        return 2
    if isinstance(v, list):
        return 4
    return 3


def compare(a: Any, b: Any) -> int:
    """Compares two JSON values the way the store sorts them: missing and null, numbers,
    strings, objects, arrays, booleans."""
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return ra - rb
    if ra == 0:
        return 0
    if ra in (1, 2, 5):
        return int((a > b) - (a < b))
    x = a if ra == 4 else [e for kv in a.items() for e in kv]
    y = b if ra == 4 else [e for kv in b.items() for e in kv]
    for p, q in zip(x, y):
        c = compare(p, q)
        if c:
            return c
    return len(x) - len(y)


SortSpec = Union[str, Sequence[str], Mapping[str, int]]


def sort_key(spec: SortSpec) -> Callable[[Any], Any]:
    """The key function of a sort (ties broken by ``_id``)."""
    if isinstance(spec, Mapping):
        keys = [(k, -1 if d < 0 else 1) for k, d in spec.items()]
    else:
        names = spec.split(",") if isinstance(spec, str) else list(spec)
        keys = []
        for name in (n.strip() for n in names):
            if name:
                keys.append((name[1:], -1) if name.startswith("-") else (name.lstrip("+"), 1))

    def cmp(a: Any, b: Any) -> int:
        for key, direction in keys:
            c = compare(_at(a, key), _at(b, key))
            if c:
                return c * direction
        return compare(a.get("_id"), b.get("_id"))

    return cmp_to_key(cmp)


# --- the cache ------------------------------------------------------------------------------


class LiveCore(Generic[D]):
    """The documents of a live list, per collection, and what each event of a connection does
    to them. ``connect()`` before a connection's events: its initial set is gathered, then
    compared with the cache at ``ready``, so after a reconnect only real differences are told."""

    def __init__(self, sort: SortSpec | None) -> None:
        self.cache: dict[str, dict[str, Any]] = {}
        self._fresh: dict[str, dict[str, Any]] | None = None
        self._key = None if sort is None else sort_key(sort)
        self.was_ready = False
        self.healthy = False

    def docs(self, collection: str | None = None) -> list[D]:
        maps = list(self.cache.values()) if collection is None else [self.cache.get(collection, {})]
        out = [doc for m in maps for doc in m.values()]
        return cast("list[D]", sorted(out, key=self._key) if self._key else out)

    def get(self, doc_id: str, collection: str | None = None) -> D | None:
        for name, docs in self.cache.items():
            if collection is None or name == collection:
                if doc_id in docs:
                    return docs[doc_id]  # type: ignore[no-any-return]
        return None

    def connect(self) -> None:
        self._fresh = {}
        self.healthy = False

    def on(self, event: str, data: str) -> tuple[list[LiveEvent[D]], str | None]:
        """The events one server event makes, and the reason when it ends the stream."""
        try:
            e = json.loads(data) if data else {}
        except ValueError:
            raise PorticoError(200, "invalid-reply", f"A live event is not JSON: {data[:80]}") from None
        if event == "end":
            return [], str(e.get("reason") or "error")
        if event == "ready":
            out = self._reconcile() if self._fresh is not None else []
            self._fresh = None
            self.healthy = True
            if not self.was_ready:
                self.was_ready = True
                out.append(LiveEvent("ready"))
            return out, None
        collection, doc_id = str(e.get("collection", "")), str(e.get("id", ""))
        fields = e.get("fields") or {}
        if self._fresh is not None:
            if event == "added":
                self._fresh.setdefault(collection, {})[doc_id] = {"_id": doc_id, **fields}
            return [], None
        return self._apply(event, collection, doc_id, fields, e.get("cleared") or []), None

    def _apply(self, event: str, collection: str, doc_id: str, fields: dict[str, Any], cleared: list[str]) -> list[LiveEvent[D]]:
        docs = self.cache.setdefault(collection, {})
        before = docs.get(doc_id)
        if event == "added":
            doc = {"_id": doc_id, **fields}
            docs[doc_id] = doc
            if before is not None:
                return [LiveEvent("changed", cast(D, doc), cast(D, before), collection)]
            return [LiveEvent("added", cast(D, doc), None, collection)]
        if event == "changed" and before is not None:
            doc = {k: v for k, v in before.items() if k not in cleared}
            doc.update(fields)
            docs[doc_id] = doc
            return [LiveEvent("changed", cast(D, doc), cast(D, before), collection)]
        if event == "removed" and before is not None:
            del docs[doc_id]
            return [LiveEvent("removed", cast(D, before), None, collection)]
        return []

    def _reconcile(self) -> list[LiveEvent[D]]:
        fresh = self._fresh or {}
        out: list[LiveEvent[D]] = []
        for collection, docs in self.cache.items():
            now = fresh.get(collection, {})
            for doc_id in [i for i in docs if i not in now]:
                out.append(LiveEvent("removed", cast(D, docs.pop(doc_id)), None, collection))
        for collection, now in fresh.items():
            docs = self.cache.setdefault(collection, {})
            for doc_id, doc in now.items():
                before = docs.get(doc_id)
                if before == doc:
                    continue
                docs[doc_id] = doc
                if before is not None:
                    out.append(LiveEvent("changed", cast(D, doc), cast(D, before), collection))
                else:
                    out.append(LiveEvent("added", cast(D, doc), None, collection))
        return out


def refusal(status: int) -> bool:
    """A reply status that ends a live list for good: trying again would get the same answer.
    Overload, timeouts and server errors are worth another try."""
    return 400 <= status < 500 and status not in (408, 429)


def backoff(failures: int, min_delay: float, max_delay: float) -> float:
    """Seconds before the next try: ``min_delay`` doubled per failure up to ``max_delay``, with
    jitter (between half and all of it)."""
    base = min(max_delay, min_delay * (2**failures))
    return float(base / 2 + random.random() * base / 2)


Handler = Callable[[LiveEvent[Any]], None]
