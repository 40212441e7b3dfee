"""The synchronous client: ``Portico``, its ``auth``, collections, collection writes and live
lists (each in a thread of its own)."""

from __future__ import annotations

import codecs
import logging
import queue
import socket
import threading
import time
from typing import Any, Dict, List, Callable, Generic, Iterator, Mapping, Sequence, TypeVar, overload

import httpx

from ._base import BatchOp, CollectionRequests, FileData, FileMeta, Progress, WriteRequests, chunks, counted, doc_id_of, size_of, upload_headers
from ._core import (
    AuthUser, BatchResult, Fields, Page, Reply, Req, Session, Sort, directory, page_of, publication_target,
    read_reply, retry_delay, retryable, seg, token_headers, transport_error,
)
from ._errors import PorticoError, reply_error
from ._live import Handler, LiveCore, LiveEvent, SortSpec, backoff, refusal, SseParser
from ._ops import AuthOps, Op, body_op, data_op, none

T = TypeVar("T")
R = TypeVar("R")
log = logging.getLogger("portico_client")


class Auth:
    """Logging in and out, who is logged in, and the account lifecycle under ``/auth/``. The
    token is kept in the client and sent in a header on every call, never in a URL."""

    def __init__(self, pc: Portico, ops: AuthOps) -> None:
        self._pc, self._ops = pc, ops

    @property
    def user(self) -> AuthUser | None:
        """The logged-in user, or None."""
        return self._ops.session.user

    @property
    def token(self) -> str | None:
        """The login token, or None."""
        return self._ops.session.token

    def on_change(self, fn: Callable[[AuthUser | None], None]) -> Callable[[], None]:
        """Calls ``fn(user or None)`` on every login and logout; returns the function that stops it."""
        return self._ops.session.on_change(fn)

    def login(self, *, username: str | None = None, email: str | None = None, password: str,
              totp: str | None = None, via: str | None = None) -> AuthUser:
        """Logs in with a username or an email and a password (and ``totp``, a two-factor code,
        where the account has them on): ``POST {api}login``, or the auto API's ``/users/login``
        with ``via="auto"``."""
        return self._pc._run(self._ops.login(username, email, password, totp, via))

    def register(self, *, username: str | None = None, email: str | None = None, password: str,
                 profile: Mapping[str, Any] | None = None) -> AuthUser:
        """Creates an account (the auto API's ``/users/register``) and logs in as it."""
        return self._pc._run(self._ops.register(username, email, password, profile))

    def logout(self) -> None:
        """Ends the session on the server (``POST {api}logout``: every live list of it ends too)
        and forgets the token, even when the server cannot be reached (the call then raises)."""
        session = self._ops.session
        token = session.token
        if token is None:
            return
        try:
            self._pc._run(self._ops.logout())
        except PorticoError as e:
            if e.status != 401:
                raise
        finally:
            session.ended(token)

    def methods(self) -> dict[str, Any]:
        """``GET /auth/methods``: which sign-in methods the server has on."""
        return self._pc._run(body_op(Req("auto", "GET", "auth/methods", anonymous=True)))

    def request_email_verification(self, email: str) -> None:
        """Mails a verification link to ``email`` (202 whether or not an account has it)."""
        self._pc._run(self._ops.account("verify-email", {"email": email}, none))

    def confirm_email_verification(self, token: str) -> str:
        """Confirms the link's ``token``; returns the verified address."""
        return self._pc._run(self._ops.account("verify-email/confirm", {"token": token}, self._ops.email_of))

    def request_password_reset(self, email: str) -> None:
        """Mails a password-reset link to ``email`` (202 whether or not an account has it)."""
        self._pc._run(self._ops.account("password-reset", {"email": email}, none))

    def confirm_password_reset(self, token: str, password: str) -> None:
        """Sets ``password`` with the link's ``token``; every login token of the account stops working."""
        self._pc._run(self._ops.account("password-reset/confirm", {"token": token, "password": password}, none))

    def request_email_change(self, email: str) -> None:
        """Logged in: mails a link to the new address ``email``."""
        self._pc._run(self._ops.account("email-change", {"email": email}, none, anonymous=False))

    def confirm_email_change(self, token: str) -> str:
        """Confirms the new address with the link's ``token``; returns it."""
        return self._pc._run(self._ops.account("email-change/confirm", {"token": token}, self._ops.email_of))

    def totp_setup(self) -> dict[str, str]:
        """Logged in: a new two-factor secret, ``{"secret", "uri"}`` (the ``otpauth://`` URI)."""
        return self._pc._run(self._ops.account("totp/setup", None, lambda r: dict(r.body), anonymous=False))

    def totp_enable(self, code: str) -> list[str]:
        """Turns two-factor codes on with a current ``code``; returns the recovery codes."""
        read: Callable[[Reply], list[str]] = lambda r: list(r.body.get("recoveryCodes", []))
        return self._pc._run(self._ops.account("totp/enable", {"code": code}, read, anonymous=False))

    def totp_disable(self, code: str) -> None:
        """Turns two-factor codes off with a current code or a recovery code."""
        self._pc._run(self._ops.account("totp/disable", {"code": code}, none, anonymous=False))

    def request_email_code(self, email: str) -> None:
        """Mails a sign-in code and link to ``email`` (a guest's token goes along: it may take the address)."""
        self._pc._run(self._ops.account("email-code", {"email": email}, none, anonymous=False))

    def confirm_email_code(self, *, email: str | None = None, code: str | None = None,
                           token: str | None = None, totp: str | None = None) -> AuthUser:
        """Signs in with the mailed ``code`` (and ``email``) or the link's ``token``."""
        return self._pc._run(self._ops.email_code_confirm(email, code, token, totp))

    def guest(self) -> AuthUser:
        """Makes a guest account and logs in as it (``user["guest"]`` is True)."""
        return self._pc._run(self._ops.guest())

    def upgrade_guest(self, *, username: str | None = None, email: str | None = None, password: str) -> str:
        """Gives the logged-in guest credentials; the account keeps its id (returned)."""
        return self._pc._run(self._ops.guest_upgrade(username, email, password))

    def logout_everywhere(self) -> int:
        """Ends every session of the logged-in account (``POST /auth/logout-everywhere``), this
        one included; returns how many ended."""
        return self._pc._run(self._ops.logout_everywhere())


class Subscription(Generic[T]):
    """A live list or publication: the server's stream of changes applied to a local cache
    (``docs()``), in a thread of its own, with reconnects (backoff; each reconnect gets a fresh
    initial set, compared with the cache, so only real changes are told). Its events go to
    ``on_event`` (in the subscription's thread) and to ``for event in sub`` (until ``end``)."""

    def __init__(self, pc: Portico, req: Req, sort: SortSpec | None, on_event: Handler | None,
                 min_delay: float, max_delay: float, idle_timeout: float, keep_events: bool) -> None:
        self._pc, self._req, self._on_event = pc, req, on_event
        self._core: LiveCore[T] = LiveCore(sort)
        self._delays = (min_delay, max_delay)
        self._idle = idle_timeout
        self._keep = keep_events
        self._queue: queue.Queue[LiveEvent[T]] = queue.Queue()
        self._lock = threading.Lock()
        self._ended: str | None = None
        self._ready = threading.Event()
        self._ready_error: PorticoError | None = None
        self._wake = threading.Event()
        self._response: httpx.Response | None = None
        self._token = pc._session.token
        self._drop_auth = pc._session.on_change(self._auth_changed)
        self._thread = threading.Thread(target=self._run, name="portico-live", daemon=True)
        self._thread.start()

    def docs(self, collection: str | None = None) -> list[T]:
        """The current documents (of one collection, or all), in the list's sort order."""
        with self._lock:
            return self._core.docs(collection)

    def get(self, doc_id: str, collection: str | None = None) -> T | None:
        """The current document with this ``_id``, if the result holds it."""
        with self._lock:
            return self._core.get(doc_id, collection)

    @property
    def end_reason(self) -> str | None:
        """Why the subscription ended, or None while it runs."""
        return self._ended

    def wait_ready(self, timeout: float | None = None) -> None:
        """Returns once the first initial set is in ``docs()``; raises the ``PorticoError`` that
        ended the subscription before that, or ``timeout`` after ``timeout`` seconds."""
        if not self._ready.wait(timeout):
            raise PorticoError(0, "timeout", f"The live list was not ready within {timeout} s")
        if self._ready_error is not None:
            raise self._ready_error

    def stop(self) -> None:
        """Closes the stream; ``end`` (reason ``stopped``) is the last event."""
        self._end("stopped")
        if threading.current_thread() is not self._thread:
            self._thread.join(10)

    def __iter__(self) -> Iterator[LiveEvent[T]]:
        while True:
            event = self._queue.get()
            yield event
            if event.kind == "end":
                return

    def __enter__(self) -> Subscription[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _emit(self, event: LiveEvent[T]) -> None:
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                log.exception("a live list's on_event raised")
        if self._keep:
            self._queue.put(event)

    def _auth_changed(self, _user: AuthUser | None) -> None:
        if self._token is not None and self._pc._session.token != self._token:
            self._end("logged-out")

    def _end(self, reason: str, error: PorticoError | None = None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = reason
        self._wake.set()
        self._drop_auth()
        self._shut()
        if not self._ready.is_set():
            self._ready_error = error or PorticoError(0, "aborted", f"The live list ended ({reason}) before it was ready")
            self._ready.set()
        self._emit(LiveEvent("end", reason=reason, error=error))

    def _shut(self) -> None:
        """Wakes a read blocked on the current stream's socket."""
        res = self._response
        stream = res.extensions.get("network_stream") if res is not None else None
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _run(self) -> None:
        failures = 0
        while not self._ended:
            failure = PorticoError(0, "network-error", "The live stream closed")
            try:
                self._connect()
            except PorticoError as e:
                failure = e
            except httpx.HTTPError as e:
                failure = transport_error(e, self._idle)
            except Exception as e:  # a bug must not leave the list silently dead
                log.exception("a live list's connection failed")
                failure = PorticoError(0, "error", repr(e))
            finally:
                self._response = None
            if self._core.healthy:
                failures = 0
            if self._ended:
                return
            delay = backoff(failures, *self._delays)
            failures += 1
            self._emit(LiveEvent("error", error=failure, delay=delay))
            self._wake.wait(delay)

    def _connect(self) -> None:
        req, pc = self._req, self._pc
        headers = {"Accept": "text/event-stream", **token_headers(req.door, self._token)}
        timeout = httpx.Timeout(pc._timeout, read=self._idle or None)
        with pc._http.stream(req.method, req.path, params=_params(req.query), headers=headers,
                             json=req.json if req.has_json else None, timeout=timeout) as res:
            self._response = res
            if self._ended:
                return
            if not 200 <= res.status_code < 300:
                res.read()
                self._refused(res)
            with self._lock:
                self._core.connect()
            parser, decoder = SseParser(), codecs.getincrementaldecoder("utf-8")()
            for chunk in res.iter_bytes():
                if self._ended:
                    return
                for name, data in parser.feed(decoder.decode(chunk)):
                    if self._on(name, data):
                        return

    def _refused(self, res: httpx.Response) -> None:
        try:
            body: Any = res.json()
        except ValueError:
            body = res.text
        error = reply_error(res.status_code, body, res.headers)
        if refusal(res.status_code):
            if res.status_code == 401 and self._token:
                self._pc._session.ended(self._token)
                self._end("logged-out", error)
            else:
                self._end("refused", error)
        raise error

    def _on(self, name: str, data: str) -> bool:
        """Applies one server event; True when the stream is over."""
        with self._lock:
            events, end = self._core.on(name, data)
        for event in events:
            if event.kind == "ready":
                self._ready.set()
            self._emit(event)
        if end is None:
            return False
        if end in ("logged-out", "expired"):
            if self._token:
                self._pc._session.ended(self._token)
            self._end(end)
        return True


def _params(query: Any) -> dict[str, Any] | None:
    if not query:
        return None
    return {k: v for k, v in query.items() if v is not None}


class Collection(CollectionRequests[T]):
    """A generated collection of the routes door (``{api}<name>``), typed by its documents."""

    def __init__(self, pc: Portico, api: str, name: str) -> None:
        super().__init__(api, name)
        self._pc = pc

    def list(self, *, where: Mapping[str, Any] | None = None, sort: Sort | None = None, limit: int | None = None,
             skip: int | None = None, fields: Fields | None = None, expand: str | Sequence[str] | None = None,
             search: str | None = None, total: bool = True) -> Page[T]:
        """One page of documents: ``items``, ``total`` (``X-Total-Count``; None with
        ``total=False``) and ``next`` (the next page's URL, or None)."""
        reply = self._pc._send(self._list_req(where, sort, limit, skip, fields, expand, search, total))
        return page_of(reply, self._pc.url, total)

    def pages(self, *, where: Mapping[str, Any] | None = None, sort: Sort | None = None, limit: int | None = None,
              skip: int | None = None, fields: Fields | None = None, expand: str | Sequence[str] | None = None,
              search: str | None = None, total: bool = True) -> Iterator[Page[T]]:
        """Every page of the list, following the ``Link`` headers."""
        page = self.list(where=where, sort=sort, limit=limit, skip=skip, fields=fields, expand=expand, search=search, total=total)
        while True:
            yield page
            if page.next is None:
                return
            page = page_of(self._pc._send(Req("routes", "GET", page.next)), self._pc.url, total)

    def iterate(self, *, where: Mapping[str, Any] | None = None, sort: Sort | None = None, limit: int | None = None,
                skip: int | None = None, fields: Fields | None = None, expand: str | Sequence[str] | None = None,
                search: str | None = None) -> Iterator[T]:
        """Every matching document, page after page (``limit`` documents a request)."""
        for page in self.pages(where=where, sort=sort, limit=limit, skip=skip, fields=fields, expand=expand, search=search):
            yield from page.items

    def get(self, doc_id: str, *, expand: str | Sequence[str] | None = None) -> T:
        """The document with this ``_id`` (404 ``fail`` when there is none); its tag is kept for ``if_match``."""
        return self._pc._run(self._get(doc_id, expand))

    def create(self, doc: T) -> T:
        """Creates a document; returns it as stored (with ``_id`` and timestamps)."""
        return self._pc._run(self._create(doc))

    def update(self, doc_id: str, patch: T | Mapping[str, Any], *, if_match: str | Mapping[str, Any] | None = None) -> T:
        """Sets the fields of ``patch`` (``"a.b"`` keys reach nested ones); returns the document
        after the change. ``if_match``: a document read before, a tag, or ``"*"`` (else 412)."""
        return self._pc._run(self._write("PATCH", doc_id, patch, if_match))

    def replace(self, doc_id: str, doc: T, *, if_match: str | Mapping[str, Any] | None = None) -> T:
        """Replaces the whole document (fields left out are removed); returns it after the change."""
        return self._pc._run(self._write("PUT", doc_id, doc, if_match))

    def delete(self, doc_id: str, *, if_match: str | Mapping[str, Any] | None = None) -> None:
        """Removes the document (404 ``fail`` when there is none), and its files."""
        self._pc._run(self._delete(doc_id, if_match))

    def count(self, *, where: Mapping[str, Any] | None = None, search: str | None = None) -> int:
        """How many documents match (the list's ``X-Total-Count``, no document sent)."""
        return self._pc._run(self._count(where, search))

    def aggregate(self, *, group: str | None = None, count: bool = False, sum: str | Sequence[str] | None = None,
                  avg: str | Sequence[str] | None = None, min: str | Sequence[str] | None = None,
                  max: str | Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
                  sort: Sort | None = None, skip: int | None = None, limit: int | None = None) -> List[Dict[str, Any]]:
        """Groups instead of documents: one row per ``group`` value (``_id``) with ``count``,
        ``sum_<path>``, ``avg_<path>``, ``min_<path>``, ``max_<path>`` (docs/queries.md)."""
        return self._pc._run(self._aggregate(self._aggregate_query(group, count, sum, avg, min, max, where, sort, skip, limit)))

    def batch(self, ops: Sequence[BatchOp]) -> List[BatchResult]:
        """Several writes, all in one transaction or none (see ``Portico.batch``)."""
        return self._pc._run(self._batch(ops))

    def upload(self, doc: str | Mapping[str, Any], field: str, data: FileData, *, name: str,
               content_type: str | None = None, size: int | None = None, progress: Progress | None = None) -> FileMeta:
        """Uploads a file into ``field`` of the document (its id, or the document): bytes, a
        binary file object, or an iterator of chunks, streamed. ``progress(sent, total)`` is
        told as it goes (``total`` None when the size is not known). Returns its metadata."""
        total = size_of(data, size)
        body = counted(chunks(data), total, progress)
        return self._pc._run(self._upload(doc_id_of(doc), field, name, body, upload_headers(name, content_type, total)))

    def download(self, doc: str | Mapping[str, Any], field: str, name: str, *, thumb: str | None = None) -> bytes:
        """A stored file's bytes (or a thumbnail's, ``thumb="100x100"``)."""
        return self._pc._run(self._download(doc_id_of(doc), field, name, thumb))

    def file_url(self, doc: str | Mapping[str, Any], field: str, name: str, *, thumb: str | None = None) -> str:
        """A download URL for a place that sends no header (``<img src>``): it carries a short
        download token (``POST {api}files/token``), never the login token."""
        params = {"thumb": thumb} if thumb else {}
        if self._pc._session.token is not None:  # anonymous: a public document's URL needs none
            params["token"] = self._pc._file_token()
        query = str(httpx.QueryParams(params))
        return self._pc.url + self._file_path(doc_id_of(doc), field, name) + ("?" + query if query else "")

    def remove_file(self, doc: str | Mapping[str, Any], field: str, name: str) -> None:
        """Deletes one file of the document."""
        self._pc._run(self._remove_file(doc_id_of(doc), field, name))

    def subscribe(self, *, where: Mapping[str, Any] | None = None, sort: Sort | None = None, limit: int | None = None,
                  skip: int | None = None, fields: Fields | None = None, on_event: Handler | None = None,
                  min_delay: float = 0.5, max_delay: float = 15.0, idle_timeout: float = 45.0,
                  keep_events: bool = True) -> Subscription[T]:
        """Follows the list live (see ``Subscription``); ``docs()`` keeps ``sort``'s order."""
        req = self._list_req(where, sort, limit, skip, fields, None, None, True)
        return Subscription(self._pc, req, sort, on_event, min_delay, max_delay, idle_timeout, keep_events)


class CollectionWrite(WriteRequests, Generic[T]):
    """A collection's write endpoints on the auto API, under its rules."""

    def __init__(self, pc: Portico, auto: str, name: str) -> None:
        super().__init__(auto, name)
        self._pc = pc

    def insert(self, doc: T) -> str:
        """Inserts a document; returns its new ``_id``."""
        return str(self._pc._run(self._insert(doc)))

    def update(self, doc_id: str, patch: T | Mapping[str, Any], *, if_match: str | None = None) -> int:
        """Sets the fields of ``patch``; returns how many documents changed (0 or 1)."""
        return int(self._pc._run(self._update(doc_id, patch, if_match)))

    def remove(self, doc_id: str, *, if_match: str | None = None) -> int:
        """Removes the document; returns how many were removed (0 or 1)."""
        return int(self._pc._run(self._remove(doc_id, if_match)))


class Portico:
    """A client of one Portico server: ``auth``, the routes door's collections, and the auto
    API's methods, collection writes and publications, live or once. Every failure raises
    ``PorticoError``. Idempotent reads are retried (``retries`` times) after a connection
    failure or a 503; writes never are."""

    def __init__(self, base_url: str, api: str = "api/", *, auto: str = "", login_via: str = "routes",
                 timeout: float = 30.0, retries: int = 2, http: httpx.Client | None = None) -> None:
        self.url = base_url.rstrip("/") + "/"
        self._api, self._auto = directory(api), directory(auto)
        self._timeout, self._retries = timeout, retries
        self._session = Session()
        self._http = http or httpx.Client(base_url=self.url, timeout=timeout)
        self._file_tokens: tuple[str | None, str, float] | None = None
        self.auth = Auth(self, AuthOps(self._session, self._api, self._auto, login_via))

    def close(self) -> None:
        """Closes the HTTP connections."""
        self._http.close()

    def __enter__(self) -> Portico:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @overload
    def collection(self, name: str) -> Collection[dict[str, Any]]: ...
    @overload
    def collection(self, name: str, doc_type: type[T]) -> Collection[T]: ...
    def collection(self, name: str, doc_type: type[Any] | None = None) -> Collection[Any]:
        """A generated collection of the routes door (``{api}<name>``); ``doc_type`` (a
        TypedDict) types its documents."""
        return Collection(self, self._api, name)

    @overload
    def collection_write(self, name: str) -> CollectionWrite[dict[str, Any]]: ...
    @overload
    def collection_write(self, name: str, doc_type: type[T]) -> CollectionWrite[T]: ...
    def collection_write(self, name: str, doc_type: type[Any] | None = None) -> CollectionWrite[Any]:
        """A collection's write endpoints on the auto API."""
        return CollectionWrite(self, self._auto, name)

    def call(self, method: str, *args: Any) -> Any:
        """Calls a method of the auto API (``POST /methods/<name>``, the arguments as a JSON array)."""
        return self._run(body_op(Req("auto", "POST", self._auto + "methods/" + seg(method), json=list(args), has_json=True)))

    def publication(self, name: str, *args: Any, path: str | None = None, method: str = "GET") -> dict[str, list[Any]]:
        """A publication's documents once: ``{collection: [documents]}``. ``path`` is its own url
        (``:0``, ``:1`` take those arguments), ``method`` its HTTP method."""
        target, verb, body = publication_target(self._auto, name, args, path, method)
        req = Req("auto", verb, target, json=body, has_json=body is not None)
        return self._run(body_op(req))

    def subscribe(self, name: str, *args: Any, path: str | None = None, method: str = "GET",
                  sort: SortSpec | None = None, on_event: Handler | None = None, min_delay: float = 0.5,
                  max_delay: float = 15.0, idle_timeout: float = 45.0, keep_events: bool = True) -> Subscription[Any]:
        """Follows a publication live (see ``Subscription``); ``sort`` orders ``docs()``."""
        target, verb, body = publication_target(self._auto, name, args, path, method)
        req = Req("auto", verb, target, json=body, has_json=body is not None)
        return Subscription(self, req, sort, on_event, min_delay, max_delay, idle_timeout, keep_events)

    def batch(self, ops: Sequence[BatchOp]) -> List[BatchResult]:
        """Writes to this API's collections (each op names its ``collection``), all in one
        transaction or none: a failure raises with that write's status and ``data["index"]``."""
        return self._run(CollectionRequests(self._api, "")._batch(ops))

    def _file_token(self) -> str:
        """A download token of the current login, reused until shortly before it expires."""
        now = time.time()
        cached = self._file_tokens
        if cached is not None and cached[0] == self._session.token and cached[2] - 15 > now:
            return cached[1]
        data = self._run(data_op(Req("routes", "POST", self._api + "files/token")))
        token, expires = str(data["token"]), float(data.get("expires", 0)) / 1000
        self._file_tokens = (self._session.token, token, expires)
        return token

    def _run(self, op: Op[R]) -> R:
        return op.read(self._send(op.req))

    def _send(self, req: Req) -> Reply:
        """Sends one request; GET and HEAD are tried again after a connection failure or a 503."""
        token = None if req.anonymous else self._session.token
        headers = {"Accept": "application/json", **token_headers(req.door, token), **req.headers}
        tries = 1 + (self._retries if req.method in ("GET", "HEAD") else 0)
        for attempt in range(tries):
            last = attempt == tries - 1
            try:
                res = self._http.request(req.method, req.path, params=_params(req.query), headers=headers,
                                         json=req.json if req.has_json else None, content=req.content)
            except httpx.HTTPError as e:
                if last or not retryable(e):
                    raise transport_error(e, self._timeout) from None
                time.sleep(retry_delay(attempt, None))
                continue
            if res.status_code == 503 and not last:
                time.sleep(retry_delay(attempt, _retry_after(res)))
                continue
            return read_reply(req, res, token, self._session)
        raise AssertionError("unreachable")


def _retry_after(res: httpx.Response) -> float | None:
    try:
        return float(res.headers.get("retry-after", ""))
    except ValueError:
        return None
