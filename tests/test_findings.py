"""docs/findings.md: every entry's reproduction command runs on real Dynamo 1.6.1 and shows what
the entry says was observed (the command exits 1 once the deviation is gone)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
#: The 1.6.1 entries (one command each); "Across releases" follows, reproduced by the matrix.
SINGLE_RELEASE = DOC.split("\n# Across releases", 1)[0]
FLAT = " ".join(DOC.split())
COMMANDS = re.findall(r"^Reproduce: `python (scripts/dynamo_findings\.py ([\w-]+))`$", DOC, re.M)

#: What each reproduction prints that the entry quotes (the rest has ports and ids in it).
OBSERVED = {
    "engine-2": "content-type: text/plain; charset=utf-8",
    "worker-7": "not a url",
    "http-7-probe-per-get": "3 GETs of a 16-engine fleet made",
    "system-port-i16": 'expected i16 for key "SYSTEM_PORT"',
    "worker-3-http-plane": "Invalid request plane mode: 'http'. Valid options are: 'nats', 'tcp'",
    "list-5-prefix-dynamo": "workers in ['dynamo', 'prod']",
    "list-5-prefix-boundary": "workers in ['rl-run-7', 'rl-run-7-prefill']",
    "list-5-prefix-strict": "workers in ['rl-run-7']",
    "list-7-model-from-cards": "{'multi': '<omitted>', 'said': '<omitted>'}",
}
#: Further claims of an entry that its reproduction shows (and the entry quotes) word for word.
ALSO_OBSERVED = {
    "worker-3-http-plane": [
        "DYN_REQUEST_PLANE=http with DistributedRuntime(loop, 'file', 'tcp') -> created",
        "native module: refusal lists only nats and tcp: True, HTTP request-plane settings [], "
        "TCP ones ['DYN_TCP_RPC_HOST', 'DYN_TCP_RPC_PORT']",
    ],
}


@pytest.mark.integration
def test_every_entry_has_a_command_and_every_reproduction_an_entry() -> None:
    listed = subprocess.run(
        [sys.executable, "scripts/dynamo_findings.py", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    names = [name for _, name in COMMANDS]
    assert sorted(names) == sorted(listed) == sorted(OBSERVED)
    assert len(names) == len(set(names)) == SINGLE_RELEASE.count("\n## ")
    for name, text in OBSERVED.items():
        assert text in FLAT, f"findings.md does not quote what {name} observes: {text}"
    for name, texts in ALSO_OBSERVED.items():
        for text in texts:
            assert text in FLAT, f"findings.md does not quote what {name} observes: {text}"


@pytest.mark.integration
@pytest.mark.dynamo
@pytest.mark.parametrize("name", [name for _, name in COMMANDS])
def test_reproduction_command_shows_the_finding(name: str) -> None:
    pytest.importorskip("dynamo.runtime", reason="needs the dynamo extra (ai-dynamo-runtime)")
    done = subprocess.run(
        [sys.executable, "scripts/dynamo_findings.py", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "REPRODUCED" in done.stdout
    assert OBSERVED[name] in done.stdout, done.stdout
    for text in ALSO_OBSERVED.get(name, []):
        assert text in done.stdout, done.stdout
