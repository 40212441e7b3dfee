#!/usr/bin/env python3
"""What three sorted indexes cost an insert in SQLite itself, without Portico or HTTP.

The same layout as Portico's SQLite store: documents in a WITHOUT ROWID table keyed by a random
17-character id, a one-row count updated by every insert, and three index tables
(k0, k1, id) WITHOUT ROWID whose keys tie (as the yardstick's fixed insert body makes them tie:
every new entry then sorts by its random id, into a random leaf). One transaction per insert,
WAL with synchronous=NORMAL, a passive checkpoint every 32 inserts (as Portico's checkpoint
thread does). Prints, per round, microseconds per insert without indexes, with the three tied
indexes, and with three indexes of growing keys (entries appended at one end), and the median
ratio: the floor under `bench/lists.sh`'s "insert with three indexes / without".

Usage: python3 bench/index-floor.py [--rounds 7] [--inserts 3000] [--dir /tmp]
"""
import argparse
import json
import os
import random
import sqlite3
import time

ALPHABET = "23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz"
DOC = json.dumps({"name": "New item", "email": "new@example.com", "age": 33,
                  "active": True, "city": "Oslo", "score": 12.5})


def new_id():
    return "".join(random.choice(ALPHABET) for _ in range(17))


def run(path, indexes, inserts, growing=False):
    for f in (path, path + "-wal", path + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("pragma journal_mode=wal")
    c.execute("pragma synchronous=normal")
    c.execute("pragma wal_autocheckpoint=0")
    c.execute("create table d(id text primary key not null, doc text not null) without rowid")
    c.execute("create table counts(name text primary key, n int) without rowid")
    c.execute("insert into counts values('d', 0)")
    for i in range(indexes):
        c.execute(f"create table x{i}(k0 blob not null, k1 blob not null, id text not null, "
                  f"primary key(k0, k1, id)) without rowid")
    # 10,000 documents first, with random keys, as the benchmark's seeded items.
    c.execute("begin")
    for _ in range(10_000):
        i_ = new_id()
        c.execute("insert into d values(?, ?)", (i_, DOC))
        for i in range(indexes):
            c.execute(f"insert into x{i} values(?, ?, ?)", (os.urandom(9), os.urandom(9), i_))
    c.execute("commit")
    c.execute("pragma wal_checkpoint(truncate)")
    start = time.perf_counter()
    for j in range(inserts):
        i_ = new_id()
        c.execute("begin")
        c.execute("insert into d values(?, ?)", (i_, DOC))
        c.execute("update counts set n = n + 1 where name = 'd'")
        key = b"\xff" + j.to_bytes(8, "big") if growing else b"\x01tie"
        for i in range(indexes):
            c.execute(f"insert into x{i} values(?, ?, ?)", (key, b"\x02tie", i_))
        c.execute("commit")
        if j % 32 == 31:
            c.execute("pragma wal_checkpoint(passive)")
    c.close()
    return (time.perf_counter() - start) / inserts * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--inserts", type=int, default=3000)
    parser.add_argument("--dir", default="/tmp")
    args = parser.parse_args()
    path = os.path.join(args.dir, f"index-floor-{os.getpid()}.db")
    tied, grown = [], []
    for _ in range(args.rounds):
        plain = run(path, 0, args.inserts)
        three = run(path, 3, args.inserts)
        growing = run(path, 3, args.inserts, growing=True)
        tied.append(plain / three)
        grown.append(plain / growing)
        print(f"plain {plain:.1f} us, three tied indexes {three:.1f} us ({plain / three:.2f}x), "
              f"three growing {growing:.1f} us ({plain / growing:.2f}x)")
    for f in (path, path + "-wal", path + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    tied.sort()
    grown.sort()
    print(f"median: three tied indexes {tied[len(tied) // 2]:.2f}x, "
          f"three growing {grown[len(grown) // 2]:.2f}x of an insert without")


if __name__ == "__main__":
    main()
