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
