"""What the sync and the async client share: the requests each call sends, how replies are read,
the session (login token), and the query parameters of lists and aggregates. No I/O here."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Literal, Mapping, Sequence, TypedDict, TypeVar, Union
from urllib.parse import quote, urljoin

import httpx

from ._errors import PorticoError, reply_error

D = TypeVar("D")
Door = Literal["routes", "auto"]
Query = Mapping[str, Union[str, int, None]]
Sort = Union[str, Sequence[str], Mapping[str, int]]
Fields = Union[str, Sequence[str], Mapping[str, int]]


class AuthUser(TypedDict, total=False):
    """The logged-in user as the client knows it: ``id`` always, the rest when known."""

    id: str
    username: str
    email: str
    tokenExpires: str
    guest: bool


class BatchResult(TypedDict):
    """What one write of a batch answered: its status and body (the document written)."""

    status: int
    body: Any


@dataclass
class Page(Generic[D]):
    """One page of a list: its documents, the count of every match (``X-Total-Count``; ``None``
    with ``total=False``) and the next page's URL (``Link rel="next"``), or ``None``."""

    items: list[D]
    total: int | None
    next: str | None


@dataclass
class Req:
    """One request: which door, method, path (under the base URL, or absolute), query and body."""

    door: Door
    method: str
    path: str
    query: Query | None = None
    json: Any = None
    has_json: bool = False
    content: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    anonymous: bool = False
    raw: bool = False


@dataclass
class Reply:
    """A successful reply: its status, headers and parsed JSON body (bytes when ``raw``)."""

    status: int
    headers: httpx.Headers
    body: Any


def jreq(door: Door, method: str, path: str, body: Any, **kw: Any) -> Req:
    """A request with a JSON body."""
    return Req(door, method, path, json=body, has_json=True, **kw)


def token_headers(door: Door, token: str | None) -> dict[str, str]:
    """The header carrying ``token``: ``X-Auth-Token`` on the routes door, a bearer token on the
    auto API and ``/auth/``. Never a URL."""
    if not token:
        return {}
    return {"X-Auth-Token": token} if door == "routes" else {"Authorization": "Bearer " + token}


def directory(path: str) -> str:
    """``path`` without leading slashes and with one trailing slash (``""`` stays empty)."""
    path = path.lstrip("/")
    return path if not path or path.endswith("/") else path + "/"


def seg(value: str) -> str:
    """One path segment, percent-encoded."""
    return quote(str(value), safe="")


class Session:
    """The login token and user, shared by a client's calls and live lists, with the listeners
    told of every change. Thread-safe: a sync live list runs in a thread of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.token: str | None = None
        self.user: AuthUser | None = None
        self._listeners: list[Callable[[AuthUser | None], None]] = []

    def on_change(self, fn: Callable[[AuthUser | None], None]) -> Callable[[], None]:
        """Calls ``fn(user or None)`` on every login and logout; returns the function that stops it."""
        with self._lock:
            self._listeners.append(fn)

        def stop() -> None:
            with self._lock:
                if fn in self._listeners:
                    self._listeners.remove(fn)

        return stop

    def set(self, token: str | None, user: AuthUser | None) -> None:
        with self._lock:
            before = self.token
            self.token, self.user = token, user
            listeners = list(self._listeners)
        if before != token:
            for fn in listeners:
                fn(user)

    def ended(self, token: str) -> None:
        """The server refused ``token``: that session is over (a newer one is kept)."""
        if self.token == token:
            self.set(None, None)

    def start(self, token: Any, user_id: Any, known: AuthUser) -> AuthUser:
        if not isinstance(token, str) or not isinstance(user_id, str):
            raise PorticoError(200, "invalid-reply", "The login reply has no token")
        user: AuthUser = {"id": user_id}
        user.update(known)
        self.set(token, user)
        return user


def read_reply(req: Req, res: httpx.Response, token: str | None, session: Session) -> Reply:
    """The reply of ``res`` (already read), or the ``PorticoError`` it stands for. A 401 of the
    routes door to a call that carried the token ends the session here."""
    ok = 200 <= res.status_code < 300
    if req.raw and ok:
        return Reply(res.status_code, res.headers, res.content)
    body: Any = None
    if res.content:
        try:
            body = json.loads(res.content)
        except ValueError:
            if ok:
                raise PorticoError(res.status_code, "invalid-reply", "The reply is not JSON") from None
            body = res.text
    if not ok:
        if res.status_code == 401 and req.door == "routes" and token and not req.anonymous:
            session.ended(token)
        raise reply_error(res.status_code, body, res.headers)
    return Reply(res.status_code, res.headers, body)


def jsend(reply: Reply) -> Any:
    """The ``data`` of a JSend success reply."""
    body = reply.body
    if not isinstance(body, dict) or body.get("status") != "success":
        raise PorticoError(reply.status, "invalid-reply", "The reply is not a JSend success")
    return body.get("data")


def transport_error(error: httpx.HTTPError, timeout: float | None) -> PorticoError:
    """The error of a request that got no reply."""
    if isinstance(error, httpx.TimeoutException):
        return PorticoError(0, "timeout", f"No reply within {timeout} s ({error})")
    return PorticoError(0, "network-error", str(error) or type(error).__name__)


def retryable(error: httpx.HTTPError) -> bool:
    """A failure after which an idempotent request may be sent again: the request did not get
    through, or the connection broke before a reply (never a read that timed out)."""
    if isinstance(error, (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)):
        return False
    return isinstance(error, httpx.TransportError)


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds before retry ``attempt`` (0-based): ``Retry-After`` when given (at most 5 s), else
    0.2 s doubling."""
    if retry_after is not None:
        return float(max(0.0, min(retry_after, 5.0)))
    return 0.2 * float(2**attempt)


# --- entity tags ----------------------------------------------------------------------------


class TaggedDoc(dict):  # type: ignore[type-arg]
    """A document as the server sent it with its entity tag (a plain ``dict`` otherwise)."""

    portico_etag: str | None = None


def tagged(reply: Reply, doc: Any) -> Any:
    """``doc`` carrying the reply's ``ETag``, for a later ``if_match=doc``."""
    tag = reply.headers.get("etag")
    if isinstance(doc, dict):
        doc = TaggedDoc(doc)
        doc.portico_etag = tag
    return doc


def etag_of(doc: Any) -> str | None:
    """The entity tag the server sent with ``doc`` (from ``get``, ``create``, ``update``,
    ``replace``), if any."""
    return getattr(doc, "portico_etag", None)


def if_match_header(if_match: Any) -> dict[str, str]:
    """``If-Match`` for a tag string, ``"*"``, or a document this client read."""
    if if_match is None:
        return {}
    tag = if_match if isinstance(if_match, str) else etag_of(if_match)
    if not tag:
        raise PorticoError(
            0, "no-etag", "No entity tag is known for this document: read it with get() first"
        )
    return {"If-Match": tag}


# --- lists ----------------------------------------------------------------------------------


def _joined(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    return ",".join(value)


def list_query(
    where: Mapping[str, Any] | None,
    sort: Sort | None,
    limit: int | None,
    skip: int | None,
    fields: Fields | None,
    expand: str | Sequence[str] | None,
    search: str | None,
    total: bool,
) -> dict[str, str | int | None]:
    """The query parameters of a list."""
    return {
        "where": None if where is None else json.dumps(dict(where)),
        "sort": _joined(sort),
        "limit": limit,
        "skip": skip,
        "fields": _joined(fields),
        "expand": _joined(expand),
        "search": search,
        "total": None if total else "false",
    }


def aggregate_query(
    group: str | None,
    count: bool,
    sum: str | Sequence[str] | None,
    avg: str | Sequence[str] | None,
    min: str | Sequence[str] | None,
    max: str | Sequence[str] | None,
    where: Mapping[str, Any] | None,
    sort: Sort | None,
    skip: int | None,
    limit: int | None,
) -> dict[str, str | int | None]:
    """The query parameters of an aggregate (docs/queries.md)."""
    if not (count or sum or avg or min or max):
        raise PorticoError(0, "invalid-aggregate", "An aggregate needs count, sum, avg, min or max")
    return {
        "group": group,
        "count": "true" if count else None,
        "sum": _joined(sum),
        "avg": _joined(avg),
        "min": _joined(min),
        "max": _joined(max),
        "where": None if where is None else json.dumps(dict(where)),
        "sort": _joined(sort),
        "skip": skip,
        "limit": limit,
    }


_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?([^",;]*)"?')


def page_of(reply: Reply, base: str, counted: bool) -> Page[Any]:
    """The page a list reply holds."""
    items = jsend(reply)
    if not isinstance(items, list):
        raise PorticoError(reply.status, "invalid-reply", "A list reply holds no array")
    header = reply.headers.get("x-total-count")
    total = int(header) if header is not None else (len(items) if counted else None)
    next_url = None
    for m in _LINK.finditer(reply.headers.get("link", "")):
        if m.group(2) == "next":
            next_url = urljoin(base, m.group(1))
    return Page(items, total, next_url)


def batch_request(api: str, ops: Sequence[Mapping[str, Any]], default: str | None) -> Req:
    """``POST {api}batch`` with the writes ``ops`` (each ``{"op", "collection"?, "id"?, "doc"?,
    "patch"?}``)."""
    methods = {"create": "POST", "update": "PATCH", "replace": "PUT", "remove": "DELETE"}
    requests = []
    for op in ops:
        name = op.get("collection", default)
        kind = op.get("op")
        if not name:
            raise PorticoError(0, "error", "A batch write names no collection")
        if kind not in methods:
            raise PorticoError(0, "error", f"A batch write's op is one of {', '.join(methods)}")
        url = "/" + api + seg(name)
        if kind != "create":
            url += "/" + seg(op["id"])
        item: dict[str, Any] = {"method": methods[kind], "url": url}
        body = op.get("patch") if kind == "update" else None if kind == "remove" else op.get("doc")
        if body is not None:
            item["body"] = body
        requests.append(item)
    return jreq("routes", "POST", api + "batch", {"requests": requests})


def publication_target(
    auto: str, name: str, args: Sequence[Any], path: str | None, method: str
) -> tuple[str, str, Any]:
    """A publication's path, method and body: ``:0``, ``:1`` in ``path`` take those arguments;
    the others go in the path (GET) or a JSON array body (POST)."""
    used: set[int] = set()

    def put(m: re.Match[str]) -> str:
        used.add(int(m.group(1)))
        return seg(str(args[int(m.group(1))]))

    target = re.sub(r":(\d+)", put, path if path is not None else auto + "publications/" + seg(name))
    rest = [a for i, a in enumerate(args) if i not in used]
    if method == "GET":
        for arg in rest:
            target += "/" + seg(str(arg))
        return target, method, None
    return target, method, rest if rest else None
