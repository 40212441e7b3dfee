"""Logins, logout, registration and the account lifecycle under /auth/ (mail read from a real
SMTP server, two-factor codes computed here), each with the sync and the async client."""

from __future__ import annotations

import re
import time
from typing import Any, Callable

import httpx
import pytest

from helpers import account, maybe
from portico_client import PorticoError
from support import Mailbox, Server, totp


async def test_login_keeps_the_token_in_a_header_and_logout_ends_the_session(make: Callable[..., Any], server: Server) -> None:
    c = make()
    seen: list[Any] = []
    c.auth.on_change(seen.append)
    user = await maybe(c.auth.login(username="ed", password="ed-secret-1"))
    assert user["username"] == "ed" and isinstance(user["id"], str)
    token = c.auth.token
    assert isinstance(token, str) and c.auth.user == user
    note = await maybe(c.collection("notes").create({"text": "mine"}))
    assert note["ownerId"] == user["id"]
    await maybe(c.auth.logout())
    assert c.auth.token is None and c.auth.user is None
    assert seen == [user, None]
    refused = httpx.get(server.url + "/api/notes", headers={"X-Auth-Token": token})
    assert refused.status_code == 401
    await maybe(c.auth.logout())  # logged out already: nothing to do


async def test_a_wrong_password_is_an_error_of_the_door_that_answered(make: Callable[..., Any]) -> None:
    c = make()
    with pytest.raises(PorticoError) as routes:
        await maybe(c.auth.login(username="ed", password="wrong"))
    assert (routes.value.status, routes.value.error, routes.value.reason) == (401, "error", "Unauthorized")
    with pytest.raises(PorticoError) as auto:
        await maybe(c.auth.login(username="ed", password="wrong", via="auto"))
    assert (auto.value.status, auto.value.error) == (401, "unauthorized")
    assert c.auth.token is None
    user = await maybe(c.auth.login(username="ed", password="ed-secret-1", via="auto"))
    assert user["tokenExpires"] > "2026" and c.auth.token


async def test_register_logs_in_and_a_taken_name_is_refused(make: Callable[..., Any], server: Server, name: str) -> None:
    c = make()
    user = await maybe(c.auth.register(username=name, password="long-password", profile={"name": "N"}))
    assert user["username"] == name and c.auth.token
    assert await maybe(c.call("whoami")) == user["id"]
    with pytest.raises(PorticoError) as taken:
        await maybe(make().auth.register(username=name, password="long-password"))
    assert (taken.value.status, taken.value.error) == (400, "invalid-user")


async def test_password_reset_by_mail(make: Callable[..., Any], server: Server, mailbox: Mailbox, name: str) -> None:
    address = f"{name}@example.com"
    c = await account(make, server, name, address)
    await maybe(c.auth.request_password_reset(address))
    token = mailbox.link_token(address, "reset-password")
    await maybe(make().auth.confirm_password_reset(token, "a-second-password"))
    # Every login token of the account stops working: the routes door's 401 ends the session here.
    with pytest.raises(PorticoError) as gone:
        await maybe(c.collection("notes").list())
    assert gone.value.status == 401 and c.auth.token is None
    with pytest.raises(PorticoError) as used:
        await maybe(c.auth.confirm_password_reset(token, "a-third-password"))
    assert (used.value.status, used.value.error) == (400, "invalid-token")
    user = await maybe(c.auth.login(username=name, password="a-second-password"))
    assert user["username"] == name


async def test_email_verification_and_change(make: Callable[..., Any], server: Server, mailbox: Mailbox, name: str) -> None:
    address, new = f"{name}@example.com", f"{name}@new.example.com"
    c = await account(make, server, name, address)
    await maybe(c.auth.request_email_verification(address))
    assert await maybe(c.auth.confirm_email_verification(mailbox.link_token(address, "verify-email"))) == address
    await maybe(c.auth.request_email_change(new))
    token = _any_link(mailbox, new)
    assert await maybe(c.auth.confirm_email_change(token)) == new
    again = make()
    assert (await maybe(again.auth.login(email=new, password=f"{name}-password")))["email"] == new


def _any_link(mailbox: Mailbox, to: str) -> str:
    mail = mailbox.wait(to, lambda m: "?token=" in m["text"])
    found = re.search(r"\?token=([A-Za-z0-9_\-]+)", mail["text"])
    assert found, mail["text"]
    return found.group(1)


async def test_two_factor_codes(make: Callable[..., Any], server: Server, name: str) -> None:
    c = await account(make, server, name)
    setup = await maybe(c.auth.totp_setup())
    assert setup["uri"].startswith("otpauth://totp/") and setup["secret"] in setup["uri"]
    recovery = await maybe(c.auth.totp_enable(totp(setup["secret"])))
    assert len(recovery) == 8
    other = make()
    with pytest.raises(PorticoError) as needed:
        await maybe(other.auth.login(username=name, password=f"{name}-password"))
    assert needed.value.status == 401
    with pytest.raises(PorticoError) as auto:
        await maybe(other.auth.login(username=name, password=f"{name}-password", via="auto"))
    assert (auto.value.status, auto.value.error) == (401, "totp-required")
    # The code of the next step counts too (the current one was used to turn them on).
    user = await maybe(other.auth.login(username=name, password=f"{name}-password", totp=totp(setup["secret"], time.time() + 30)))
    assert user["username"] == name and other.auth.token
    await maybe(other.auth.totp_disable(recovery[0]))
    third = make()
    assert (await maybe(third.auth.login(username=name, password=f"{name}-password")))["username"] == name


async def test_sign_in_by_mailed_code_or_link(make: Callable[..., Any], server: Server, mailbox: Mailbox, name: str) -> None:
    address = f"{name}@example.com"
    owner = await account(make, server, name, address)
    c = make()
    await maybe(c.auth.request_email_code(address))
    mail = mailbox.wait(address, lambda m: "/email-code?token=" in m["text"])
    code = re.search(r"\b(\d{6})\b", mail["text"])
    assert code, mail["text"]
    with pytest.raises(PorticoError) as wrong:
        await maybe(c.auth.confirm_email_code(email=address, code="000000" if code.group(1) != "000000" else "111111"))
    assert (wrong.value.status, wrong.value.error) == (400, "invalid-code")
    user = await maybe(c.auth.confirm_email_code(email=address, code=code.group(1)))
    assert user["id"] == owner.auth.user["id"] and c.auth.token
    by_link = make()
    await maybe(by_link.auth.request_email_code(address))
    token = mailbox.link_token(address, "email-code")
    assert (await maybe(by_link.auth.confirm_email_code(token=token)))["id"] == user["id"]
    methods = await maybe(c.auth.methods())
    assert methods["emailCode"] is True and methods["guests"] is True


async def test_a_guest_writes_then_upgrades_keeping_its_id(make: Callable[..., Any], server: Server, name: str) -> None:
    c = make()
    guest = await maybe(c.auth.guest())
    assert guest["guest"] is True and c.auth.token
    note = await maybe(c.collection("notes").create({"text": "draft"}))
    assert note["ownerId"] == guest["id"]
    assert await maybe(c.auth.upgrade_guest(username=name, password="guest-password")) == guest["id"]
    assert "guest" not in c.auth.user and c.auth.user["username"] == name
    again = make()
    await maybe(again.auth.login(username=name, password="guest-password"))
    assert [n["_id"] for n in (await maybe(again.collection("notes").list())).items] == [note["_id"]]
    with pytest.raises(PorticoError) as not_guest:
        await maybe(again.auth.upgrade_guest(username=name + "x", password="guest-password"))
    assert not_guest.value.status == 400


async def test_an_account_logs_out_everywhere(make: Callable[..., Any], server: Server, name: str) -> None:
    first = await account(make, server, name)
    second = make()
    await maybe(second.auth.login(username=name, password=f"{name}-password"))
    assert await maybe(first.auth.logout_everywhere()) == 2
    assert first.auth.token is None
    with pytest.raises(PorticoError) as gone:
        await maybe(second.collection("notes").list())
    assert gone.value.status == 401 and second.auth.token is None
    with pytest.raises(PorticoError) as anonymous:
        await maybe(make().auth.logout_everywhere())
    assert anonymous.value.status == 401
