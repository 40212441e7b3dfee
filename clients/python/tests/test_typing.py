"""`mypy --strict` on typed uses of the client: `Collection` is generic over a TypedDict, so a
wrong key, a wrong type or an unknown option is an error, and the package itself is clean."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parent / "src" / "portico_client"


def mypy(*paths: Path) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as cache:
        return subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache, *map(str, paths)],
            capture_output=True, text=True, cwd=HERE.parent,
        )


def test_the_package_and_a_typed_use_pass_mypy_strict() -> None:
    out = mypy(SRC, HERE / "typing" / "good.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout


def test_mistakes_are_type_errors_on_exactly_their_lines() -> None:
    bad = HERE / "typing" / "bad.py"
    expected = {n for n, line in enumerate(bad.read_text().splitlines(), 1) if "# error:" in line}
    out = mypy(bad)
    assert out.returncode == 1, out.stdout + out.stderr
    found = {int(m.group(1)) for m in re.finditer(r"bad\.py:(\d+): error:", out.stdout)}
    assert found == expected and len(expected) == 5, out.stdout


APP = """
[[api]]
api_path = "api/"
use_default_auth = true

[[api.collection]]
name = "tasks"
schema = "tasks.schema.json"
owner_field = "ownerId"
relations = { project = "projects" }

[[api.collection]]
name = "projects"
files = { photo = { max = 1 } }
"""

TASKS_SCHEMA = """{"type": "object", "required": ["title"], "properties": {
  "title": {"type": "string"}, "done": {"type": "boolean"}, "hours": {"type": "number"},
  "project": {"type": "string"}, "status": {"enum": ["open", "closed"]}}}"""

USE = """
from portico_client import Portico
from app_types import Projects, Tasks


def use(pc: Portico) -> str:
    tasks = pc.collection("tasks", Tasks)
    made = tasks.create({"title": "typed", "done": False, "status": "open"})
    first = tasks.list(where={"done": False}, expand="project").items[0]
    title: str = first["title"]
    related = first.get("expand", {}).get("project")
    photo = related.get("photo") if related is not None else None
    size: int = photo["size"] if photo is not None else 0
    projects = pc.collection("projects", Projects)
    projects.create({"name": "any field goes without a schema"})
    return made.get("title", "") + title + str(size)
"""

BAD = """
from portico_client import Portico
from app_types import Tasks


def use(pc: Portico) -> None:
    tasks = pc.collection("tasks", Tasks)
    first = tasks.list().items[0]
    print(first["titel"])  # error: no such key
    tasks.create({"done": True})  # error: title is required
    tasks.create({"title": "x", "status": "done"})  # error: not one of the enum
    hours: str = first.get("hours", 0.0)  # error: hours are a number
"""


def test_the_types_portico_writes_for_an_app_type_its_documents(tmp_path: Path) -> None:
    from support import binary

    (tmp_path / "portico.toml").write_text(APP)
    (tmp_path / "tasks.schema.json").write_text(TASKS_SCHEMA)
    written = subprocess.run(
        [binary(), "types", "--python", "--config", str(tmp_path / "portico.toml")],
        capture_output=True, text=True,
    )
    assert written.returncode == 0, written.stderr
    (tmp_path / "app_types.py").write_text(written.stdout)
    (tmp_path / "use.py").write_text(USE)
    (tmp_path / "bad.py").write_text(BAD)
    with tempfile.TemporaryDirectory() as cache:
        def check(name: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache, name, "app_types.py"],
                capture_output=True, text=True, cwd=tmp_path,
            )

        good = check("use.py")
        assert good.returncode == 0, good.stdout + good.stderr
        bad = check("bad.py")
        expected = {n for n, line in enumerate(BAD.splitlines(), 1) if "# error:" in line}
        found = {int(m.group(1)) for m in re.finditer(r"bad\.py:(\d+): error:", bad.stdout)}
        assert found == expected and len(expected) == 4, bad.stdout
