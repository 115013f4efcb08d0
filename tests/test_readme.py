"""The README's promises hold: its client example uses real names, its commands exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_client_example_builds_a_valid_config() -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    # Everything but the final run against a deployment that does not exist here.
    assert block.rstrip().endswith("asyncio.run(train(config, steps=3))")
    namespace: dict[str, object] = {}
    exec(
        compile(block.replace("asyncio.run(train(config, steps=3))", ""), "README", "exec"),
        namespace,
    )
    config = namespace["config"]
    assert type(config).__name__ == "DynamoClientConfig"
    assert config.inference_world_size == 16  # type: ignore[attr-defined]
    assert config.convention is not None and config.convention.value == "prime-nccl"  # type: ignore[attr-defined]


def test_setup_commands_are_make_targets_and_ci_runs_the_test_one() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("conformance", "test"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # exactly two set-up commands; `make setup` is named, as their first step, not as a third
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    block = setup.split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.strip().splitlines()] == [
        ["make", "conformance"],
        ["make", "test"],
    ]
    assert "`make setup`" in setup and re.search(r"^setup:", makefile, flags=re.M)
    assert re.search(r"^(conformance|test): setup\b", makefile, flags=re.M)


@pytest.mark.integration
def test_every_documented_subcommand_exists() -> None:
    documented = set(re.findall(r"`prime-rl-dynamo (\w+)", README))
    helped = subprocess.run(
        [sys.executable, "-m", "prime_rl_dynamo.cli", "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0
    missing = sorted(c for c in documented if c not in helped.stdout)
    assert not missing, f"README documents subcommands the CLI lacks: {missing}"


def test_the_reports_the_readme_lists_are_what_make_test_writes() -> None:
    import re

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # What `make test` runs: the conformance runs and the test suite, then the real-engine lane.
    lane = makefile[makefile.index("\nreal-engines:") :]
    ci = makefile[makefile.index("\nci-conformance:") :] + lane[: lane.index("\n\n")]
    written = set(re.findall(r"reports/[\w.-]+\.xml", ci))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("the JUnit files land in") :][:500]
    assert set(re.findall(r"reports/[\w.-]+\.xml", section)) == written
