"""The requests of a routes-door collection, of the auto API's collection writes and of files,
shared by the sync and the async client."""

from __future__ import annotations

import mimetypes
import os
from typing import IO, Any, AsyncIterable, AsyncIterator, Callable, Generic, Iterable, Iterator, Mapping, Sequence, TypedDict, TypeVar, Union

from ._core import Fields, Page, Req, Sort, aggregate_query, batch_request, if_match_header, jreq, list_query, seg
from ._errors import PorticoError
from ._ops import Op, body_op, data_op, doc_op, none

T = TypeVar("T")

Progress = Callable[[int, Union[int, None]], None]
"""Told ``(bytes sent so far, total or None)`` as an upload goes."""

FileData = Union[bytes, bytearray, memoryview, IO[bytes], Iterable[bytes]]
"""What an upload sends: bytes, a binary file object, or an iterator of chunks."""

AsyncFileData = Union[FileData, AsyncIterable[bytes]]

CHUNK = 64 * 1024


class FileMeta(TypedDict):
    """A stored file's metadata, as its document's file field holds it."""

    name: str
    size: int
    type: str
    sha256: str
    createdAt: str


class BatchOp(TypedDict, total=False):
    """One write of a batch: ``op`` (``create``, ``update``, ``replace``, ``remove``), the
    ``collection`` (filled in by ``collection(name).batch``), ``id`` (all but ``create``),
    ``doc`` (``create``, ``replace``) or ``patch`` (``update``)."""

    op: str
    collection: str
    id: str
    doc: Mapping[str, Any]
    patch: Mapping[str, Any]


def size_of(data: Any, size: int | None) -> int | None:
    """The byte count of an upload's data, when it can be known without reading it."""
    if size is not None:
        return size
    if isinstance(data, (bytes, bytearray, memoryview)):
        return len(data)
    fileno = getattr(data, "fileno", None)
    if fileno is not None:
        try:
            st = os.fstat(fileno())
            return st.st_size - data.tell() if hasattr(data, "tell") else st.st_size
        except (OSError, ValueError):
            return None
    return None


def chunks(data: FileData) -> Iterator[bytes]:
    """The data as chunks of at most ``CHUNK`` bytes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start : start + CHUNK])
        return
    read = getattr(data, "read", None)
    if read is not None:
        while True:
            chunk = read(CHUNK)
            if not chunk:
                return
            yield bytes(chunk)
    for chunk in data:
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise PorticoError(0, "error", "An upload's iterator must give bytes")
        yield bytes(chunk)


def counted(source: Iterator[bytes], total: int | None, progress: Progress | None) -> Iterator[bytes]:
    """The chunks of ``source``, telling ``progress`` as each one goes."""
    sent = 0
    for chunk in source:
        yield chunk
        sent += len(chunk)
        if progress is not None:
            progress(sent, total)


async def async_counted(data: AsyncFileData, total: int | None, progress: Progress | None) -> AsyncIterator[bytes]:
    """The chunks of ``data`` (bytes, a file object, an iterator or an async iterator), telling
    ``progress`` as each one goes (an async client sends only async bodies)."""
    sent = 0
    if hasattr(data, "__aiter__"):
        async for chunk in data:
            yield bytes(chunk)
            sent += len(chunk)
            if progress is not None:
                progress(sent, total)
        return
    for chunk in counted(chunks(data), total, progress):
        yield chunk


def upload_headers(name: str, content_type: str | None, total: int | None) -> dict[str, str]:
    kind = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    headers = {"Content-Type": kind}
    if total is not None:
        headers["Content-Length"] = str(total)
    return headers


class CollectionRequests(Generic[T]):
    """The requests of the routes door's collection ``{api}<name>``."""

    def __init__(self, api: str, name: str) -> None:
        self.name = name
        self._api = api
        self._path = api + seg(name)

    def _id(self, doc_id: str) -> str:
        return self._path + "/" + seg(doc_id)

    def _list_req(self, where: Mapping[str, Any] | None, sort: Sort | None, limit: int | None, skip: int | None,
                  fields: Fields | None, expand: str | Sequence[str] | None, search: str | None, total: bool) -> Req:
        query = list_query(where, sort, limit, skip, fields, expand, search, total)
        return Req("routes", "GET", self._path, query=query)

    def _get(self, doc_id: str, expand: str | Sequence[str] | None) -> Op[T]:
        query = {"expand": expand if isinstance(expand, str) or expand is None else ",".join(expand)}
        return doc_op(Req("routes", "GET", self._id(doc_id), query=query))

    def _create(self, doc: Any) -> Op[T]:
        return doc_op(jreq("routes", "POST", self._path, dict(doc)))

    def _write(self, method: str, doc_id: str, body: Any, if_match: Any) -> Op[T]:
        return doc_op(jreq("routes", method, self._id(doc_id), dict(body), headers=if_match_header(if_match)))

    def _delete(self, doc_id: str, if_match: Any) -> Op[None]:
        return Op(Req("routes", "DELETE", self._id(doc_id), headers=if_match_header(if_match)), none)

    def _count(self, where: Mapping[str, Any] | None, search: str | None) -> Op[int]:
        query = list_query(where, None, 0, None, "_id", None, search, True)

        def read(reply: Any) -> int:
            total = reply.headers.get("x-total-count")
            if total is None:
                raise PorticoError(reply.status, "invalid-reply", "The list reply has no X-Total-Count")
            return int(total)

        return Op(Req("routes", "GET", self._path, query=query), read)

    def _aggregate(self, query: dict[str, Any]) -> Op[list[dict[str, Any]]]:
        return data_op(Req("routes", "GET", self._path, query=query))

    def _batch(self, ops: Sequence[BatchOp]) -> Op[Any]:
        return data_op(batch_request(self._api, ops, self.name))

    def _file_path(self, doc_id: str, field: str, name: str | None = None) -> str:
        path = self._id(doc_id) + "/files/" + seg(field)
        return path if name is None else path + "/" + seg(name)

    def _upload(self, doc_id: str, field: str, name: str, content: Any, headers: dict[str, str]) -> Op[FileMeta]:
        req = Req("routes", "POST", self._file_path(doc_id, field), query={"name": name}, content=content, headers=headers)
        return data_op(req)

    def _download(self, doc_id: str, field: str, name: str, thumb: str | None) -> Op[bytes]:
        req = Req("routes", "GET", self._file_path(doc_id, field, name), query={"thumb": thumb}, raw=True)
        return Op(req, lambda reply: reply.body)

    def _remove_file(self, doc_id: str, field: str, name: str) -> Op[None]:
        return Op(Req("routes", "DELETE", self._file_path(doc_id, field, name)), none)

    def _aggregate_query(self, group: str | None, count: bool, sum: Any, avg: Any, min: Any, max: Any,
                         where: Mapping[str, Any] | None, sort: Sort | None, skip: int | None, limit: int | None) -> dict[str, Any]:
        return aggregate_query(group, count, sum, avg, min, max, where, sort, skip, limit)


def doc_id_of(doc: Any) -> str:
    """The ``_id`` of a document, or the id itself."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, Mapping) and isinstance(doc.get("_id"), str):
        return str(doc["_id"])
    raise PorticoError(0, "error", "A document with an _id, or its id, is needed here")


class WriteRequests:
    """The auto API's writes of a collection (``POST /<name>``, ``PATCH``/``DELETE /<name>/<_id>``)."""

    def __init__(self, auto: str, name: str) -> None:
        self._path = auto + seg(name)

    def _insert(self, doc: Any) -> Op[Any]:
        return body_op(jreq("auto", "POST", self._path, dict(doc)))

    def _update(self, doc_id: str, patch: Any, if_match: Any) -> Op[Any]:
        return body_op(jreq("auto", "PATCH", self._path + "/" + seg(doc_id), dict(patch), headers=if_match_header(if_match)))

    def _remove(self, doc_id: str, if_match: Any) -> Op[Any]:
        return body_op(Req("auto", "DELETE", self._path + "/" + seg(doc_id), headers=if_match_header(if_match)))
