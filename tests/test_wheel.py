"""The installed wheel carries the contract and nothing else: built from the repo, it holds only the
``prime_rl_dynamo`` and ``conformance`` packages (no benchmarks, no generators); installed into a
fresh virtualenv, ``prime-rl-dynamo validate`` works on a real sample with the checkout out of reach,
and the console script has no ``bench`` (the benchmarks are the checkout's ``python -m tools.bench``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from prime_rl_dynamo.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "samples"

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The only top-level names the wheel installs (next to its .dist-info).
TOP_LEVEL = {"prime_rl_dynamo", "conformance"}
#: What lives in the repository's tools/ and must not ship: benchmarks, generators, templates.
_BUILD_TOOL = re.compile(
    r"(^|/)(bench/|tools/|openapi-templates/|_?openapi(_v2)?\.py$|_?codegen\.py$|compat\.py$"
    r"|conformance_examples\.py$)|^prime_rl_dynamo/kill_matrix\.py$"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (built,) = out.glob("prime_rl_dynamo-*.whl")
    return built


def test_wheel_carries_schema_and_suite(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "prime_rl_dynamo/_schema/requirements.v1.json",
        "prime_rl_dynamo/_schema/rl-workers.v1.schema.json",
        "prime_rl_dynamo/_schema/SPEC.md",
        "prime_rl_dynamo/_schema/openapi/rl-frontend.openapi.json",
        "prime_rl_dynamo/_schema/vectors/discovery.v1.json",
        "prime_rl_dynamo/topologies/default.yaml",
        "prime_rl_dynamo/py.typed",
        "conformance/__init__.py",
        "conformance/plugin.py",
    }
    missing = sorted(expected - names)
    assert not missing, f"wheel {wheel.name} lacks {missing}"


def test_the_wheel_is_pure_python(wheel: Path) -> None:
    # No compiled code whatever the build machine has: one wheel for every platform.
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    compiled = [n for n in names if n.endswith((".so", ".pyd", ".c", ".dylib"))]
    assert not compiled, compiled
    assert (
        "Root-Is-Purelib: true"
        in zipfile.ZipFile(wheel)
        .read(next(n for n in names if n.endswith(".dist-info/WHEEL")))
        .decode()
    )


def test_wheel_ships_the_library_and_the_suite_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == TOP_LEVEL, f"wheel {wheel.name} installs {sorted(top - TOP_LEVEL)} at top level"
    tools = [name for name in names if _BUILD_TOOL.search(name)]
    assert not tools, f"wheel {wheel.name} ships build tools: {tools}"
    # The pattern is live: moved into the package, every file of tools/ would be caught.
    moved = [
        f"prime_rl_dynamo/{path.relative_to(ROOT / 'tools')}"
        for path in (ROOT / "tools").rglob("*")
        if path.is_file()
        and path != ROOT / "tools" / "__init__.py"
        and "__pycache__" not in path.parts
    ]
    assert moved and all(_BUILD_TOOL.search(name) for name in moved), moved


def test_installed_wheel_validates_a_sample_without_the_checkout(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    sample = tmp_path / "pd-fleet.json"
    shutil.copy(SAMPLES / "dynamo-1.6.1-pd-fleet.json", sample)
    # Run from an unrelated directory with a clean environment: nothing may come from ROOT.
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    script = env_dir / "bin" / "prime-rl-dynamo"

    def run(program: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(program), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )

    ok = run(script, "validate", str(sample))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "3 workers" in ok.stdout, ok.stdout
    where = run(python, "-c", "import prime_rl_dynamo.resources as r; print(r.schema_dir())")
    assert where.returncode == 0, where.stderr
    assert str(ROOT) not in where.stdout and "_schema" in where.stdout, where.stdout
    located = run(script, "schema", "path", "rl-frontend")
    assert located.returncode == 0, located.stderr
    assert located.stdout.strip().endswith("_schema/openapi/rl-frontend.openapi.json")
    assert Path(located.stdout.strip()).is_file() and str(ROOT) not in located.stdout
    broken = tmp_path / "broken.json"
    broken.write_text('{"protocol_version": 2, "namespace": "dynamo", "workers": []}')
    bad = run(script, "validate", str(broken))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "BODY-2" in bad.stdout + bad.stderr
    # Without extras every subcommand still parses, and one that needs an extra says which.
    for command in SUBCOMMANDS:
        helped = run(script, command, "--help")
        assert helped.returncode == 0, f"{command} --help: {helped.stderr}"
    serve = run(script, "serve")
    assert serve.returncode == 2, serve.stdout + serve.stderr
    assert "pip install 'prime-rl-dynamo[reference]'" in serve.stderr, serve.stderr
    # The benchmarks are not in the wheel, and the installed command never looks for them.
    bench = run(script, "bench", "--quick")
    assert bench.returncode == 2, bench.stdout + bench.stderr
    assert "invalid choice" in bench.stderr and "Traceback" not in bench.stderr, bench.stderr
    generators = run(python, "-c", "import prime_rl_dynamo._openapi")
    assert "ModuleNotFoundError" in generators.stderr, generators.stderr
