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


# --- Across releases: R5, the tcp transport's form per release --------------------------------

R5 = DOC[DOC.index("### R5.") : DOC.index("### R6.")]
#: R5's table: (first release, last release or None for "on", the form it lists).
R5_ROWS = [
    (first, last or None, form)
    for first, last, form in re.findall(
        r"^\s*\| ([\d.post]+)(?: to ([\d.post]+)| on) \| .* \| `([^`]+)` \|$", R5, re.M
    )
]


def _r5_form(release: str) -> str:
    from prime_rl_dynamo.suite.harness import DynamoRelease

    key = DynamoRelease(release).key
    forms = [
        form
        for first, last, form in R5_ROWS
        if DynamoRelease(first).key <= key and (last is None or key <= DynamoRelease(last).key)
    ]
    assert len(forms) == 1, f"R5 gives {len(forms)} transport forms for {release}: {R5_ROWS}"
    return forms[0]


def test_r5_gives_one_transport_form_for_every_release_with_the_listener() -> None:
    from tools.compat import RELEASES

    assert len(R5_ROWS) >= 2 and len({form for *_, form in R5_ROWS}) == len(R5_ROWS)
    for release in RELEASES[1:]:  # 1.2.1 has no listener
        _r5_form(release)


def test_transport_form_names_the_values_a_worker_lists() -> None:
    from tools.compat import transport_form

    worker = {"namespace": "dynamo", "component": "decode", "endpoint": "rl", "instance_id": 255}
    new = {**worker, "transport": {"tcp": "127.0.0.1:33331/ff/dynamo/decode/rl"}}
    assert transport_form(new) == "tcp HOST:PORT/ID/NAMESPACE/COMPONENT/ENDPOINT"
    old = {**worker, "transport": {"tcp": "127.0.0.1:44899/ff/rl"}}
    assert transport_form(old) == "tcp HOST:PORT/ID/ENDPOINT"
    # The counterpart: a segment that is not this worker's id or name stays as listed.
    other = {**worker, "transport": {"nats_tcp": "nats://h/fe/x"}}
    assert transport_form(other) == "nats_tcp nats://h/fe/x"


def test_r5_is_what_every_committed_matrix_cell_listed() -> None:
    """The wire evidence of the committed cells (docs/compat/*.cell.json, nox -s matrix) shows
    R5's form for its release; a release whose listing changed form fails here."""
    from tools.compat import load_cells, transport_form

    judged = 0
    for cell in load_cells(ROOT):
        first = (cell.get("clients") or {}).get("first_worker")
        if first is None:
            assert cell["suite"]["exit_code"] == 2, cell["release"]  # only a refusal lists none
            continue
        assert transport_form(first) == _r5_form(cell["release"]), cell["release"]
        judged += 1
    assert judged >= 2


@pytest.mark.integration
@pytest.mark.dynamo
def test_r5_reproduction_on_the_installed_release() -> None:
    """`nox -s dynamo-R -- probe` runs `python -m tools.compat probe` in R's venv: here, on the
    release installed in this venv, its first listed worker has R5's form for that release."""
    import json

    pytest.importorskip("dynamo.runtime", reason="needs the dynamo extra (ai-dynamo-runtime)")
    from prime_rl_dynamo.suite.harness import installed_release
    from tools.compat import transport_form

    release = installed_release()
    assert release is not None
    done = subprocess.run(
        [sys.executable, "-m", "tools.compat", "probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    worker = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert transport_form(worker) == _r5_form(release.version), done.stdout
