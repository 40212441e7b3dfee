"""Passkeys against `portico serve` without a browser: a software authenticator built on
Yubico's python-fido2 (its WebAuthn data structures parse the server's options and encode what
an authenticator and a client return) and `cryptography` (P-256 keys, ECDSA signatures).

Usage: soft_authenticator.py SCENARIO JSON_ARGS. Each scenario asserts as it goes and prints one
`ok: ...` line per step; it exits non-zero (with the reason) on the first failure.

- `register_and_login` (args: a, b, origin, token, username, api): registers a passkey through
  `a` with the login token, logs in through `b` without a username and with one, checks the
  login token on `b`'s `api` path, and that a replayed assertion, an assertion for another
  origin, a registration for another origin and a removed passkey are refused.
- `guest_and_totp` (args: a, origin, token, username, password): a guest registers a passkey
  and is a guest no more (same id); the account of `token` turns two-factor codes on, after
  which a password login asks for a code and a passkey login does not.
"""
import base64
import hmac
import json
import os
import struct
import time
import sys
import urllib.error
import urllib.request
from hashlib import sha256

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.cose import ES256
from fido2.webauthn import (
    AttestationObject,
    AttestedCredentialData,
    AuthenticationResponse,
    AuthenticatorAssertionResponse,
    AuthenticatorAttestationResponse,
    AuthenticatorData,
    CollectedClientData,
    CredentialCreationOptions,
    CredentialRequestOptions,
    RegistrationResponse,
    UserVerificationRequirement,
)


class SoftAuthenticator:
    """A platform authenticator keeping discoverable credentials in memory, with user
    verification and a signature counter per credential."""

    def __init__(self):
        self.credentials = {}  # credential id -> dict(key, rp_id, user_handle, counter)

    def create(self, options, origin):
        """What navigator.credentials.create() would give for `options` ({"publicKey": ...})."""
        public_key = CredentialCreationOptions.from_dict(options).public_key
        selection = public_key.authenticator_selection
        assert selection is not None and selection.resident_key == "required", selection
        assert selection.user_verification == UserVerificationRequirement.REQUIRED, selection
        excluded = {c.id for c in (public_key.exclude_credentials or [])}
        assert not excluded & set(self.credentials), "an excluded credential is on this device"
        rp_id = public_key.rp.id
        key = ec.generate_private_key(ec.SECP256R1())
        credential_id = os.urandom(32)
        self.credentials[credential_id] = {
            "key": key,
            "rp_id": rp_id,
            "user_handle": public_key.user.id,
            "counter": 0,
        }
        client_data = CollectedClientData.create(
            type="webauthn.create", challenge=public_key.challenge, origin=origin
        )
        attested = AttestedCredentialData.create(
            b"\0" * 16, credential_id, ES256.from_cryptography_key(key.public_key())
        )
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV | AuthenticatorData.FLAG.AT
        auth_data = AuthenticatorData.create(sha256(rp_id.encode()).digest(), flags, 0, attested)
        response = RegistrationResponse(
            raw_id=credential_id,
            response=AuthenticatorAttestationResponse(
                client_data=client_data,
                attestation_object=AttestationObject.create("none", auth_data, {}),
            ),
        )
        return json.loads(json.dumps(dict(response)))

    def get(self, options, origin, rp_id=None):
        """What navigator.credentials.get() would give for `options`: an allowed credential, or
        (none listed) a discoverable one of the relying party."""
        public_key = CredentialRequestOptions.from_dict(options).public_key
        rp_id = rp_id or public_key.rp_id
        allowed = [c.id for c in (public_key.allow_credentials or [])]
        candidates = [
            cid
            for cid, c in self.credentials.items()
            if c["rp_id"] == rp_id and (not allowed or cid in allowed)
        ]
        assert candidates, f"no credential of {rp_id} on this device (allowed: {allowed})"
        credential_id = candidates[-1]
        credential = self.credentials[credential_id]
        credential["counter"] += 1
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV
        auth_data = AuthenticatorData.create(
            sha256(rp_id.encode()).digest(), flags, credential["counter"]
        )
        client_data = CollectedClientData.create(
            type="webauthn.get", challenge=public_key.challenge, origin=origin
        )
        signature = credential["key"].sign(
            bytes(auth_data) + client_data.hash, ec.ECDSA(hashes.SHA256())
        )
        response = AuthenticationResponse(
            raw_id=credential_id,
            response=AuthenticatorAssertionResponse(
                client_data=client_data,
                authenticator_data=auth_data,
                signature=signature,
                user_handle=credential["user_handle"],
            ),
        )
        return json.loads(json.dumps(dict(response)))


def call(base, method, path, body=None, token=None):
    """(status, JSON body) of a request to `base`."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("x-auth-token", token)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            raw = reply.read()
            return reply.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


def expect(reply, status, what):
    assert reply[0] == status, f"{what}: expected {status}, got {reply}"
    print(f"ok: {what} ({status})", flush=True)
    return reply[1]


def options_of(begin):
    """The options a page hands to navigator.credentials: the begin reply less its ceremony."""
    return {k: v for k, v in begin.items() if k != "ceremony"}


def register_and_login(a, b, origin, token, username, api):
    device = SoftAuthenticator()
    begin = expect(
        call(a, "POST", "/auth/passkey/register/begin", {"name": "soft key"}, token),
        200,
        "register/begin",
    )
    assert len(begin["ceremony"]) == 43, begin
    # A registration made for another origin is refused (and uses the ceremony up).
    foreign = SoftAuthenticator().create(options_of(begin), "https://evil.example")
    expect(
        call(a, "POST", "/auth/passkey/register/finish",
             {"ceremony": begin["ceremony"], "credential": foreign}, token),
        401,
        "a registration for another origin is refused",
    )
    begin = expect(
        call(a, "POST", "/auth/passkey/register/begin", {"name": "soft key"}, token),
        200,
        "register/begin again",
    )
    credential = device.create(options_of(begin), origin)
    expect(
        call(a, "POST", "/auth/passkey/register/finish",
             {"ceremony": begin["ceremony"], "credential": credential}),
        401,
        "register/finish without the login token",
    )
    # The ceremony is single use: the refused finish above (not logged in) did not reach it,
    # so it still works once.
    added = expect(
        call(a, "POST", "/auth/passkey/register/finish",
             {"ceremony": begin["ceremony"], "credential": credential}, token),
        200,
        "register/finish",
    )
    assert added["name"] == "soft key" and added["lastUsed"] is None, added
    expect(
        call(a, "POST", "/auth/passkey/register/finish",
             {"ceremony": begin["ceremony"], "credential": credential}, token),
        400,
        "the same registration again (ceremony used)",
    )
    listed = expect(call(b, "GET", "/auth/passkeys", None, token), 200, "list on the other instance")
    assert [p["id"] for p in listed["passkeys"]] == [added["id"]], listed

    # Username-less login through the other instance.
    begin = expect(call(b, "POST", "/auth/passkey/login/begin"), 200, "login/begin, no username")
    assert begin["publicKey"].get("allowCredentials", []) == [], begin
    assertion = device.get(options_of(begin), origin)
    login = expect(
        call(b, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": assertion}),
        200,
        "login/finish, discoverable",
    )
    assert len(login["token"]) == 43 and login["tokenExpires"], login
    expect(call(b, api[0], api[1], None, login["token"]), 200, "the login token on " + api[1])
    # The same assertion again: its ceremony is used up.
    expect(
        call(a, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": assertion}),
        400,
        "a replayed assertion (same ceremony) is refused",
    )
    # The same assertion with a fresh ceremony: its challenge is not the new one.
    fresh = expect(call(a, "POST", "/auth/passkey/login/begin"), 200, "login/begin again")
    expect(
        call(a, "POST", "/auth/passkey/login/finish",
             {"ceremony": fresh["ceremony"], "credential": assertion}),
        401,
        "a replayed assertion (new ceremony) is refused",
    )

    # With a username: the options are those of a login naming nobody, or an account that does
    # not exist (no oracle: they list no credential); the login finishes only as that account.
    begin = expect(
        call(a, "POST", "/auth/passkey/login/begin", {"username": username}),
        200,
        "login/begin with a username",
    )
    unknown = expect(
        call(a, "POST", "/auth/passkey/login/begin", {"username": "nobody-" + username}),
        200,
        "login/begin with an unknown username",
    )
    shape = lambda b: sorted((k, type(v).__name__) for k, v in b["publicKey"].items() if k != "challenge")
    assert shape(begin) == shape(unknown), (begin, unknown)
    assert begin["publicKey"].get("allowCredentials", []) == [], begin
    assert unknown["publicKey"].get("allowCredentials", []) == [], unknown
    assertion = device.get(options_of(begin), origin)
    login = expect(
        call(a, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": assertion}),
        200,
        "login/finish with a username",
    )
    # This account's passkey, in a login that named another account: refused.
    assertion = device.get(options_of(unknown), origin)
    expect(
        call(a, "POST", "/auth/passkey/login/finish",
             {"ceremony": unknown["ceremony"], "credential": assertion}),
        401,
        "a passkey of another account than the one named is refused",
    )

    # An assertion whose client data names another origin is refused.
    begin = expect(call(b, "POST", "/auth/passkey/login/begin"), 200, "login/begin (cross-origin)")
    cross = device.get(options_of(begin), "https://evil.example")
    expect(
        call(b, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": cross}),
        401,
        "a cross-origin assertion is refused",
    )
    # A forged signature is refused.
    begin = expect(call(b, "POST", "/auth/passkey/login/begin"), 200, "login/begin (forged)")
    forged = device.get(options_of(begin), origin)
    forged["response"]["signature"] = device.get(
        options_of(expect(call(b, "POST", "/auth/passkey/login/begin"), 200, "another begin")),
        origin,
    )["response"]["signature"]
    expect(
        call(b, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": forged}),
        401,
        "an assertion with another challenge's signature is refused",
    )

    # Removed on one instance: refused on the other.
    expect(
        call(b, "DELETE", f"/auth/passkeys/{added['id']}", None, login["token"]),
        200,
        "remove the passkey",
    )
    expect(
        call(a, "DELETE", f"/auth/passkeys/{added['id']}", None, login["token"]),
        404,
        "remove it again",
    )
    begin = expect(call(a, "POST", "/auth/passkey/login/begin"), 200, "login/begin (removed)")
    expect(
        call(a, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": device.get(options_of(begin), origin)}),
        401,
        "a removed passkey is refused",
    )
    print("ok: all", flush=True)


def websafe(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def totp(secret):
    """The current 6-digit code of a base32 secret (RFC 6238, SHA-1, 30 s)."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    digest = hmac.new(key, struct.pack(">Q", int(time.time()) // 30), "sha1").digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1000000)


def register(base, device, token, origin, name):
    begin = expect(
        call(base, "POST", "/auth/passkey/register/begin", {"name": name}, token),
        200,
        f"register/begin ({name})",
    )
    return expect(
        call(base, "POST", "/auth/passkey/register/finish",
             {"ceremony": begin["ceremony"], "credential": device.create(options_of(begin), origin)},
             token),
        200,
        f"register/finish ({name})",
    )


def discoverable_login(base, device, origin):
    begin = expect(call(base, "POST", "/auth/passkey/login/begin", {}), 200, "login/begin")
    return expect(
        call(base, "POST", "/auth/passkey/login/finish",
             {"ceremony": begin["ceremony"], "credential": device.get(options_of(begin), origin)}),
        200,
        "login/finish",
    )


def guest_and_totp(a, origin, token, username, password):
    methods = expect(call(a, "GET", "/auth/methods"), 200, "methods")
    assert methods["passkeys"] is True, methods
    # A guest upgrades with a passkey: same id, a guest no more.
    guest = expect(call(a, "POST", "/auth/guest", {}), 200, "a guest")
    device = SoftAuthenticator()
    register(a, device, guest["token"], origin, "guest key")
    login = discoverable_login(a, device, origin)
    assert login["id"] == guest["id"], (login, guest)
    expect(
        call(a, "POST", "/auth/guest/upgrade", {"username": "late", "password": "long-enough"},
             login["token"]),
        400,
        "an upgraded guest is a guest no more",
    )
    # Two-factor codes on: a password login needs one, a passkey login does not.
    setup = expect(call(a, "POST", "/auth/totp/setup", {}, token), 200, "totp/setup")
    expect(call(a, "POST", "/auth/totp/enable", {"code": totp(setup["secret"])}, token), 200,
           "totp/enable")
    refused = expect(
        call(a, "POST", "/api/login", {"username": username, "password": password}),
        401,
        "a password login without a code",
    )
    assert "totp" in json.dumps(refused), refused
    laptop = SoftAuthenticator()
    register(a, laptop, token, origin, "laptop")
    # A second registration excludes the account's passkeys (the laptop would refuse it).
    begin = expect(call(a, "POST", "/auth/passkey/register/begin", None, token), 200,
                   "register/begin, no body")
    excluded = [c["id"] for c in begin["publicKey"]["excludeCredentials"]]
    assert excluded == [websafe(c) for c in laptop.credentials], (excluded, begin)
    device = SoftAuthenticator()
    register(a, device, token, origin, "phone")
    listed = expect(call(a, "GET", "/auth/passkeys", None, token), 200, "list")
    assert [p["name"] for p in listed["passkeys"]] == ["laptop", "phone"], listed
    login = discoverable_login(a, device, origin)
    assert login["id"] != guest["id"], login
    expect(call(a, "GET", "/auth/passkeys", None, login["token"]), 200, "the passkey login's token")
    listed = expect(call(a, "GET", "/auth/passkeys", None, token), 200, "list after a login")
    assert sum(1 for p in listed["passkeys"] if p["lastUsed"]) == 1, listed
    print("ok: all", flush=True)


if __name__ == "__main__":
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    {"register_and_login": register_and_login, "guest_and_totp": guest_and_totp}[scenario](**args)
