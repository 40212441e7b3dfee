#!/usr/bin/env python3
"""Memory a request makes `portico serve` hold: the resident peak (VmHWM) before and after.

Usage: bench/memory.py [--bin PATH] [--before PATH] [table|crowd|worst|all]

  table  each row on a fresh server (SQLite): one request, VmHWM before and after it
  crowd  16 clients each posting 6 documents of 650 KB and listing them (96 inserts)
  worst  8 clients sending the worst bodies at once (10 MiB and 30 MiB strings, POST and
         PUT, 100,000 small keys), 8 rounds each: the server's peak
  all    the three (default)

--bin is the binary measured (default target/release/portico); --before measures an older
binary too, in the same run, and prints both. Linux only (reads /proc/PID/status).
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1024 * 1024

CONFIG = """database = "sqlite:{db}"
[[api]]
api_path = "api/"
[[api.collection]]
name = "docs"
auth_required = false
"""


def status_of(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Server:
    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="portico-mem.")
        with open(os.path.join(self.dir, "portico.toml"), "w") as f:
            f.write(CONFIG.format(db=os.path.join(self.dir, "portico.db")))
        self.proc = subprocess.Popen(
            [binary, "serve", "--config", "portico.toml", "--listen", "127.0.0.1:0"],
            cwd=self.dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "warn"},
            text=True,
        )
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://([\d.]+):(\d+)", line)
        if not m:
            self.proc.kill()
            raise SystemExit(f"server did not start: {line!r}")
        self.addr = (m.group(1), int(m.group(2)))

    def hwm(self):
        return status_of(self.proc.pid, "VmHWM")

    def reset_peak(self):
        """Sets the resident peak back to what is resident now (Linux: `clear_refs` 5), so the
        next `hwm()` shows what came after, not start-up's own peak (the password hasher's
        19 MiB, made once at start)."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def rss(self):
        return status_of(self.proc.pid, "VmRSS")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        subprocess.run(["rm", "-rf", self.dir])


def request(addr, method, path, body=b"", content_type="application/json"):
    """One request on its own connection; the body is sent by a thread while the reply is
    read, as an HTTP client does. Returns (status, reply body)."""
    s = socket.create_connection(addr)
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()

    def send():
        try:
            s.sendall(head)
            view = memoryview(body)
            for i in range(0, len(body), 256 * 1024):
                s.sendall(view[i : i + 256 * 1024])
        except OSError:
            pass

    sender = threading.Thread(target=send)
    sender.start()
    chunks = []
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as e:
        sender.join()
        s.close()
        return (f"reset ({e.__class__.__name__})", b"")
    sender.join()
    s.close()
    reply = b"".join(chunks)
    if not reply:
        return ("no reply", b"")
    status = int(reply.split(b" ", 2)[1])
    return (status, reply.split(b"\r\n\r\n", 1)[-1])


def string_doc(size):
    return b'{"s":"' + b"a" * (size - 8) + b'"}'


def keys_doc(n):
    return ("{" + ",".join(f'"key{i:06d}":"v"' for i in range(n)) + "}").encode()


ROWS = [
    ("POST a document with one 10 MiB string", "POST", lambda: string_doc(10 * MIB)),
    ("PUT the same over an existing document", "PUT", lambda: string_doc(10 * MIB)),
    ("POST a 30 MiB string (over the 16 MiB document limit)", "POST", lambda: string_doc(30 * MIB)),
    ("PUT a 30 MiB string (refused the same way)", "PUT", lambda: string_doc(30 * MIB)),
    ("POST an object of 50,000 small keys", "POST", lambda: keys_doc(50_000)),
    ("PUT the same", "PUT", lambda: keys_doc(50_000)),
    ("PUT an object of 100,000 small keys", "PUT", lambda: keys_doc(100_000)),
    ("PATCH a 10 MiB string into an existing document", "PATCH", lambda: string_doc(10 * MIB)),
    ("PATCH 50,000 small keys into an existing document", "PATCH", lambda: keys_doc(50_000)),
]


def create_small(addr):
    status, reply = request(addr, "POST", "/api/docs", b'{"a":1}')
    assert status == 201, (status, reply)
    return json.loads(reply)["data"]["_id"]


def table(binary):
    out = []
    for label, method, make in ROWS:
        body = make()
        server = Server(binary)
        try:
            # A small document first, for every row: the PUT replaces it, and the first write's
            # one-time work (the collection's table, statements, the page cache) is not counted
            # as the measured request's.
            path = "/api/docs"
            made = create_small(server.addr)
            if method in ("PUT", "PATCH"):
                path += "/" + made
            time.sleep(0.3)
            server.reset_peak()
            before = server.hwm()
            status, _ = request(server.addr, method, path, body)
            time.sleep(0.2)
            added = server.hwm() - before
        finally:
            server.stop()
        out.append((label, len(body), status, added))
    return out


def at_once(server, clients, client):
    """Runs `client(n)` for n in 0..clients on threads at once; returns (idle RSS, peak)."""
    idle = server.rss()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return idle, server.hwm()


def crowd(binary):
    """16 clients, each posting 6 documents of 650 KB and listing them."""
    server = Server(binary)
    doc = string_doc(650_000)
    errors = []

    def client(_n):
        for _ in range(6):
            status, _ = request(server.addr, "POST", "/api/docs", doc)
            if status != 201:
                errors.append(status)
            status, _ = request(server.addr, "GET", "/api/docs?limit=10", b"")
            if status != 200:
                errors.append(status)

    try:
        idle, peak = at_once(server, 16, client)
    finally:
        server.stop()
    return idle, peak, errors


def worst(binary):
    """8 clients at once, each sending the worst bodies of the table 8 times."""
    server = Server(binary)
    bodies = [
        ("POST", string_doc(10 * MIB)),
        ("PUT", string_doc(10 * MIB)),
        ("POST", string_doc(30 * MIB)),
        ("PUT", string_doc(30 * MIB)),
        ("PUT", keys_doc(100_000)),
    ]
    statuses = {}
    lock = threading.Lock()
    try:
        ids = [create_small(server.addr) for _ in range(8)]

        def client(n):
            for round_ in range(8):
                method, body = bodies[(n + round_) % len(bodies)]
                path = "/api/docs" + (f"/{ids[n]}" if method == "PUT" else "")
                status, _ = request(server.addr, method, path, body)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1

        idle, peak = at_once(server, 8, client)
    finally:
        server.stop()
    return idle, peak, statuses


def mib(n):
    return f"{n / MIB:.0f} MiB"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/release/portico")
    parser.add_argument("--before")
    parser.add_argument("what", nargs="?", default="all", choices=["table", "crowd", "worst", "all"])
    args = parser.parse_args()
    binaries = [("after", os.path.abspath(args.bin))]
    if args.before:
        binaries.insert(0, ("before", os.path.abspath(args.before)))
    for name, binary in binaries:
        print(f"## {name}: {binary}")
        if args.what in ("table", "all"):
            print("| request | body | status | peak memory added |")
            print("|---|---:|---:|---:|")
            for label, size, status, added in table(binary):
                ratio = added / size
                print(f"| {label} | {size / MIB:.2f} MiB | {status} | +{added / MIB:.1f} MiB ({ratio:.1f}x) |")
        if args.what in ("crowd", "all"):
            idle, peak, errors = crowd(binary)
            print(f"16 clients x 6 posts of 650 KB + lists: idle {mib(idle)}, peak {mib(peak)}, errors {errors}")
        if args.what in ("worst", "all"):
            idle, peak, statuses = worst(binary)
            print(f"8 clients x 8 worst bodies: idle {mib(idle)}, peak {mib(peak)}, statuses {statuses}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
