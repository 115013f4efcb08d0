"""The installed wheel carries the contract: built from the repo, installed into a fresh virtualenv,
``prime-rl-dynamo validate`` works on a real sample with the checkout out of reach."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "samples"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


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
    ok = subprocess.run(
        [str(script), "validate", str(sample)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "3 workers" in ok.stdout, ok.stdout
    where = subprocess.run(
        [str(python), "-c", "import prime_rl_dynamo._resources as r; print(r.schema_dir())"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(ROOT) not in where.stdout and "_schema" in where.stdout, where.stdout
    located = subprocess.run(
        [str(script), "schema", "path", "rl-frontend"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert located.returncode == 0, located.stderr
    assert located.stdout.strip().endswith("_schema/openapi/rl-frontend.openapi.json")
    assert Path(located.stdout.strip()).is_file() and str(ROOT) not in located.stdout
    broken = tmp_path / "broken.json"
    broken.write_text('{"protocol_version": 2, "namespace": "dynamo", "workers": []}')
    bad = subprocess.run(
        [str(script), "validate", str(broken)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "BODY-2" in bad.stdout + bad.stderr
    # Without extras every subcommand still parses, and one that needs an extra says which.
    for command in (
        "validate",
        "plan",
        "discover",
        "serve",
        "dynamo",
        "conformance",
        "bench",
        "schema",
    ):
        helped = subprocess.run(
            [str(script), command, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert helped.returncode == 0, f"{command} --help: {helped.stderr}"
    serve = subprocess.run(
        [str(script), "serve"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert serve.returncode == 2, serve.stdout + serve.stderr
    assert "pip install 'prime-rl-dynamo[reference]'" in serve.stderr, serve.stderr
