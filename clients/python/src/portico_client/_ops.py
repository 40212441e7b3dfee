"""Each call of the client as an operation: the request it sends and how its reply is read. The
sync and the async client run the same operations, each with its own I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, TypeVar

from ._core import AuthUser, Reply, Req, Session, jreq, jsend, seg, tagged

T = TypeVar("T")


@dataclass
class Op(Generic[T]):
    """A request, and what its reply gives."""

    req: Req
    read: Callable[[Reply], T]


def _none(_: Reply) -> None:
    return None


def _body(reply: Reply) -> Any:
    return reply.body


def _known(username: str | None, email: str | None) -> AuthUser:
    known: AuthUser = {}
    if username is not None:
        known["username"] = username
    if email is not None:
        known["email"] = email
    return known


def _login_reply(session: Session, known: AuthUser) -> Callable[[Reply], AuthUser]:
    """Reads a login reply of the auto API or ``/auth/`` (``{id, token, tokenExpires}``)."""

    def read(reply: Reply) -> AuthUser:
        data = reply.body if isinstance(reply.body, dict) else {}
        user: AuthUser = {**known}
        if isinstance(data.get("tokenExpires"), str):
            user["tokenExpires"] = data["tokenExpires"]
        if data.get("guest") is True:
            user["guest"] = True
        return session.start(data.get("token"), data.get("id"), user)

    return read


class AuthOps:
    """The requests of ``auth``: logins on either door, and the account lifecycle under ``/auth/``."""

    def __init__(self, session: Session, api: str, auto: str, via: str) -> None:
        self.session, self.api, self.auto, self.via = session, api, auto, via

    def login(self, username: str | None, email: str | None, password: str, totp: str | None, via: str | None) -> Op[AuthUser]:
        body: dict[str, Any] = {"password": password}
        for key, value in (("username", username), ("email", email), ("totp", totp)):
            if value is not None:
                body[key] = value
        known = _known(username, email)
        if (via or self.via) == "routes":

            def read(reply: Reply) -> AuthUser:
                data = jsend(reply) or {}
                return self.session.start(data.get("authToken"), data.get("userId"), known)

            return Op(jreq("routes", "POST", self.api + "login", body, anonymous=True), read)
        req = jreq("auto", "POST", self.auto + "users/login", body, anonymous=True)
        return Op(req, _login_reply(self.session, known))

    def register(self, username: str | None, email: str | None, password: str, profile: Mapping[str, Any] | None) -> Op[AuthUser]:
        body: dict[str, Any] = {"password": password}
        for key, value in (("username", username), ("email", email), ("profile", profile)):
            if value is not None:
                body[key] = value
        req = jreq("auto", "POST", self.auto + "users/register", body, anonymous=True)
        return Op(req, _login_reply(self.session, _known(username, email)))

    def logout(self) -> Op[None]:
        return Op(Req("routes", "POST", self.api + "logout"), _none)

    def account(self, path: str, body: Mapping[str, Any] | None, read: Callable[[Reply], T], anonymous: bool = True) -> Op[T]:
        """``POST /auth/<path>``; the login token goes along unless ``anonymous``. ``body`` None
        sends none (``totp/setup`` reads none, and one it leaves unread may cost the connection)."""
        if body is None:
            return Op(Req("auto", "POST", "auth/" + path, anonymous=anonymous), read)
        return Op(jreq("auto", "POST", "auth/" + path, dict(body), anonymous=anonymous), read)

    def email_of(self, reply: Reply) -> str:
        return str((reply.body or {}).get("email", ""))

    def email_code_confirm(self, email: str | None, code: str | None, token: str | None, totp: str | None) -> Op[AuthUser]:
        body = {k: v for k, v in (("email", email), ("code", code), ("token", token), ("totp", totp)) if v is not None}
        return self.account("email-code/confirm", body, _login_reply(self.session, _known(None, email)), anonymous=False)

    def guest(self) -> Op[AuthUser]:
        return Op(Req("auto", "POST", "auth/guest", anonymous=True), _login_reply(self.session, {}))

    def guest_upgrade(self, username: str | None, email: str | None, password: str) -> Op[str]:
        body = {k: v for k, v in (("username", username), ("email", email), ("password", password)) if v is not None}

        def read(reply: Reply) -> str:
            user = self.session.user
            if user is not None:
                upgraded: AuthUser = {**user, **_known(username, email)}
                upgraded.pop("guest", None)
                self.session.user = upgraded
            return str((reply.body or {}).get("id", ""))

        return self.account("guest/upgrade", body, read, anonymous=False)

    def logout_everywhere(self) -> Op[int]:
        token = self.session.token

        def read(reply: Reply) -> int:
            if token is not None:
                self.session.ended(token)
            return int((reply.body or {}).get("loggedOut", 0))

        return self.account("logout-everywhere", None, read, anonymous=False)


def doc_op(req: Req) -> Op[Any]:
    """A routes-door call answering one document (with its tag)."""
    return Op(req, lambda reply: tagged(reply, jsend(reply)))


def data_op(req: Req) -> Op[Any]:
    """A routes-door call answering JSend data."""
    return Op(req, jsend)


def body_op(req: Req) -> Op[Any]:
    """An auto API call answering its JSON body."""
    return Op(req, _body)


none = _none
