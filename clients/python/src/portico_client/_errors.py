"""The one exception every failure of a call raises."""

from __future__ import annotations

from typing import Any, Mapping


class PorticoError(Exception):
    """Every failure of a call, whichever door answered (or none did).

    - ``status``: the HTTP status of the reply; 0 when there was no reply (network, timeout).
    - ``error``: what kind of failure: the auto API's and ``/auth/``'s ``error``
      (``access-denied``, ``invalid-token``, a method's own code, ...), the routes door's JSend
      ``status`` (``error`` or ``fail``), or, without a reply, ``network-error`` or ``timeout``;
      ``invalid-reply`` for a reply that is not the door's JSON, ``no-etag`` for an
      ``if_match`` document the client holds no tag for.
    - ``reason``: the server's ``reason`` or ``message``, or what went wrong.
    - ``details``: the auto API's ``details``, when the reply has them.
    - ``data``: the reply's ``data`` (a failed batch's ``{"index": n}``), when it has one.
    - ``retry_after``: seconds, from a ``Retry-After`` header (429, 503).
    """

    def __init__(
        self,
        status: int,
        error: str,
        reason: str,
        *,
        details: Any = None,
        data: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {error}: {reason}" if status else f"{error}: {reason}")
        self.status = status
        self.error = error
        self.reason = reason
        self.details = details
        self.data = data
        self.retry_after = retry_after


def retry_after_of(headers: Mapping[str, str]) -> float | None:
    """The seconds of a ``Retry-After`` header, when it holds a number."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def reply_error(status: int, body: Any, headers: Mapping[str, str]) -> PorticoError:
    """The error an error reply stands for: ``{error, reason}`` (auto API, ``/auth/``) or JSend's
    ``{status, message}`` (routes door)."""
    retry = retry_after_of(headers)
    if isinstance(body, dict):
        data = body.get("data")
        if isinstance(body.get("error"), str):
            reason = body.get("reason")
            return PorticoError(
                status,
                body["error"],
                reason if isinstance(reason, str) else body["error"],
                details=body.get("details"),
                data=data,
                retry_after=retry,
            )
        if isinstance(body.get("status"), str) and isinstance(body.get("message"), str):
            return PorticoError(status, body["status"], body["message"], data=data, retry_after=retry)
    text = body if isinstance(body, str) and body else f"HTTP {status}"
    return PorticoError(status, "error", text, retry_after=retry)
