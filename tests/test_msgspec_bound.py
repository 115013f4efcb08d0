"""pyproject's lower bound on msgspec is the first release ``import prime_rl_dynamo`` works with:
at the bound the package imports and validates, one release below it does not import. Each
release is installed from PyPI into a throwaway directory (uv) that shadows the venv's msgspec."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
#: The release below the bound: 0.18.0-0.18.5 refuse the models' gc=False on a mixin (issue #37).
BELOW = "0.18.5"

#: What runs at each release: the import, then a valid body and a refused one.
PROGRAM = """
import msgspec, prime_rl_dynamo
from prime_rl_dynamo.validate import check_body
valid = b'{"protocol_version":1,"namespace":"d","workers":[{"namespace":"d","component":"c",' \\
    b'"endpoint":"e","instance_id":1,"transport":{"tcp":"a:1"},"request_plane_url":"dyn://d.c.e",' \\
    b'"routes":[],"admin_base_url":"http://h:1","world_size":1}]}'
assert check_body(valid) == [], check_body(valid)
assert [v.requirement for v in check_body(valid.replace(b'"world_size":1', b'"world_size":0'))] == ["WORKER-9"]
print(msgspec.__version__)
"""


def _bound() -> str:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in dependencies if d.startswith("msgspec")]
    match = re.fullmatch(r"msgspec>=([0-9.]+)", spec)
    assert match, f"msgspec's requirement is not a plain lower bound: {spec!r}"
    return match.group(1)


def _run_at(version: str, target: Path) -> subprocess.CompletedProcess[str]:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is in the dev extra"
    subprocess.run(
        [uv, "pip", "install", "-q", "--target", str(target), f"msgspec=={version}",
         "--python", sys.executable],
        check=True, timeout=300,
    )  # fmt: skip
    return subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env={"PYTHONPATH": f"{target}:{ROOT}", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.slow
def test_the_msgspec_bound_is_the_first_release_that_imports(tmp_path: Path) -> None:
    bound = _bound()
    at = _run_at(bound, tmp_path / "at")
    assert at.returncode == 0, at.stderr[-2000:]
    assert at.stdout.strip() == bound
    below = _run_at(BELOW, tmp_path / "below")
    assert below.returncode != 0, "the release below the bound imports: lower the bound"
    assert "gc=False" in below.stderr
