"""The Python client of a Portico server, sync (``Portico``) and async (``AsyncPortico``), on
httpx: login and the token, the routes door's collections and files, the auto API's methods,
collection writes and publications, and live lists with a local cache that survives reconnects.
Every failure raises ``PorticoError``."""

from ._async import AsyncAuth, AsyncCollection, AsyncCollectionWrite, AsyncPortico, AsyncSubscription
from ._base import BatchOp, FileMeta
from ._core import AuthUser, BatchResult, Page, etag_of
from ._errors import PorticoError
from ._live import LiveEvent
from ._sync import Auth, Collection, CollectionWrite, Portico, Subscription

__all__ = [
    "AsyncAuth", "AsyncCollection", "AsyncCollectionWrite", "AsyncPortico", "AsyncSubscription", "Auth",
    "AuthUser", "BatchOp", "BatchResult", "Collection", "CollectionWrite", "FileMeta", "LiveEvent", "Page",
    "Portico", "PorticoError", "Subscription", "etag_of",
]
