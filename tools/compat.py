"""The Dynamo release compatibility matrix: one cell per ``ai-dynamo-runtime`` release, and
``docs/compat.md`` generated from the committed cells.

``python -m tools.compat cell`` runs inside a venv holding one release (``nox -s dynamo-1.5.1``
makes one): the whole suite against real Dynamo (``prime-rl-dynamo conformance -q --seed 1
--target dynamo``, its JSON report kept), then the project's client and the drop-in pool against
that release's real listing (the client profile's real-Dynamo topology). It writes
``docs/compat/dynamo-RELEASE.json`` (the report) and ``dynamo-RELEASE.cell.json`` (what ran, its
exit status, how long it took, the clients' outcomes). ``python -m tools.compat docs`` writes
docs/compat.md from them; ``--check`` (and tests/test_compat_docs.py) fails when the page drifts.
``python -m tools.compat binary`` says which names the installed runtime binary carries;
``python -m tools.compat matrix begin|end`` records how long ``nox -s matrix`` took
(``docs/compat/matrix.json``, shown on the page).
"""

from __future__ import annotations

import argparse
import ipaddress
import itertools
import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tools import REPO

__all__ = [
    "CELLS",
    "CI_RELEASE",
    "CI_WAIVERS",
    "MATRIX",
    "MATRIX_RUN",
    "PAGE",
    "RELEASES",
    "matrix_run",
    "render_page",
    "run_cell",
    "transport_form",
]

#: The releases of the matrix, oldest first: the newest patch of every minor line that has the
#: RL listener, and 1.2.1 (the last release without it: its cell is the one-line refusal).
MATRIX = ("1.2.1", "1.3.1", "1.4.2", "1.5.1", "1.6.0", "1.6.1")
#: Every release a nox session exists for: the matrix and the other releases with the listener.
RELEASES = (
    "1.2.1",
    "1.3.0.post1",
    "1.3.1",
    "1.4.0",
    "1.4.1",
    "1.4.2",
    "1.5.0",
    "1.5.1",
    "1.6.0",
    "1.6.1",
)
#: The oldest release the harness runs a fleet on: CI's roundtrip keeps its adaptations alive.
CI_RELEASE = "1.3.0.post1"
#: Its known deviations (docs/findings.md, R3), a waiver file shipped in conformance/deviations/.
CI_WAIVERS = "dynamo-1.4.2"
#: Where the committed cells and reports live, and the page generated from them.
CELLS = Path("docs/compat")
PAGE = Path("docs/compat.md")
#: The suite's command for one cell (the JSON report's path is appended).
SUITE = ("prime-rl-dynamo", "conformance", "-q", "--seed", "1", "--target", "dynamo")
#: The clients judged against each release's real listing: name -> the contract function.
CLIENTS = {
    "project client": "conformance.examples.project_client:run",
    "drop-in pool": "conformance.examples.prime_rl_pool_client:run",
}
_CLIENT_TIMEOUT = 20.0


# --- one cell (inside the release's venv) ------------------------------------------------------


def _tail(text: str, lines: int = 1) -> str:
    return "\n".join(line for line in text.strip().splitlines()[-lines:])


def _suite(release: str, out: Path) -> dict[str, Any]:
    report = out / f"dynamo-{release}.json"
    report.unlink(missing_ok=True)
    command = [*SUITE, "--json-report", str(report)]
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = round(time.monotonic() - began, 1)
    shown = [*SUITE, "--json-report", f"{CELLS}/dynamo-{release}.json"]
    cell: dict[str, Any] = {
        "command": shlex.join(shown),
        "exit_code": done.returncode,
        "seconds": seconds,
        "report": report.name if report.exists() else None,
    }
    if done.returncode == 2:  # the one-line refusal: this release cannot host the fleet
        cell["cannot_host"] = _tail(done.stderr)
    elif not report.exists():
        cell["error"] = _tail(done.stderr or done.stdout, 5)
    return cell


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client_outcome(name: str, target: str, fleet: Any, topology: Any) -> dict[str, Any]:
    """Run one contract client against the real fleet; what it did, as the engines saw it."""
    import importlib

    from conformance.client_call import Credentials

    module, _, function = target.partition(":")
    client = getattr(importlib.import_module(module), function)
    # W as Prime-RL would be configured: the engines of the model (or of none) with an admin API.
    serving = (None, topology.model)
    width = sum(
        e.world_size for e in fleet.engines if e.spec.model in serving and e.spec.publishes_admin
    )
    fleet.recorder.clear()
    began = time.monotonic()
    outcome: dict[str, Any] = {"client": target, "inference_world_size": width}
    try:
        client(
            fleet.discovery_url,
            width,
            "prime-nccl",
            Credentials(),
            model=topology.model,
            master_address="127.0.0.1",
            master_port=_free_port(),
            timeout=_CLIENT_TIMEOUT,
        )
        outcome["outcome"] = "ready"
    except Exception as exc:  # the client's refusal or its deadline: the cell's finding
        outcome["outcome"] = "not ready"
        outcome["error"] = type(exc).__name__
        requirement = getattr(exc, "requirement", None)
        if requirement:
            outcome["requirement"] = requirement
        outcome["message"] = (str(exc).splitlines() or [""])[0][:300]
    outcome["seconds"] = round(time.monotonic() - began, 1)
    # Wire evidence: which engines received admin calls (a client calls them only once ready).
    called = sorted({r.engine for r in fleet.recorder.requests(server="admin")})
    outcome["engines_called"] = called
    return outcome


def _clients() -> dict[str, Any]:
    from conformance.client_scenarios import DYNAMO_TOPOLOGY
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(DYNAMO_TOPOLOGY, source="the client profile's real Dynamo")
    began = time.monotonic()
    with start_dynamo_fleet(topology) as fleet:
        listing = fleet.listing()
        outcomes = {
            name: _client_outcome(name, target, fleet, topology) for name, target in CLIENTS.items()
        }
    members = sorted({k for w in listing.get("workers", []) for k in w})
    first = (listing.get("workers") or [{}])[0]
    return {
        "topology": "the client profile's real-Dynamo topology (engine-a 2, engine-b 4 without "
        "a model, engine-c 1, judge 2 of another model)",
        "listed_members": members,
        # The first listed worker's identity and transport, as the release listed them
        # (docs/findings.md R5: the tcp transport's form differs between releases).
        "first_worker": {k: first[k] for k in (*_IDENTITY, "transport") if k in first},
        "seconds": round(time.monotonic() - began, 1),
        "outcomes": outcomes,
    }


_IDENTITY = ("namespace", "component", "endpoint", "instance_id")
#: Set by the nox session: how long it took to make the venv and install the release into it.
INSTALL_SECONDS = "PRIME_RL_DYNAMO_INSTALL_SECONDS"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def run_cell(out: Path) -> dict[str, Any]:
    """Run this venv's release through the suite and the clients; write and return its cell."""
    from prime_rl_dynamo.errors import HarnessError
    from prime_rl_dynamo.suite.harness import installed_release

    release = installed_release()
    if release is None:
        raise SystemExit("tools.compat cell: ai-dynamo-runtime is not installed in this venv")
    out.mkdir(parents=True, exist_ok=True)
    cell: dict[str, Any] = {
        "release": release.version,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": round(os.getloadavg()[0], 1),
        },
        "when": time.strftime("%Y-%m-%d", time.gmtime()),
        "began": _now(),
    }
    if os.environ.get(INSTALL_SECONDS):
        cell["install_seconds"] = round(float(os.environ[INSTALL_SECONDS]), 1)
    cell["suite"] = _suite(release.version, out)
    if "cannot_host" not in cell["suite"]:
        try:
            cell["clients"] = _clients()
        except HarnessError as exc:
            cell["clients"] = {"error": (str(exc).splitlines() or [""])[0]}
    cell["machine"]["load_after"] = round(os.getloadavg()[0], 1)
    cell["finished"] = _now()
    path = out / f"dynamo-{release.version}.cell.json"
    path.write_text(json.dumps(cell, indent=1) + "\n", encoding="utf-8")
    return cell


# --- the whole matrix's wall time (nox -s matrix) ---------------------------------------------

#: What the last ``nox -s matrix`` took, written by its first and last steps.
MATRIX_RUN = CELLS / "matrix.json"


def _uv_cache() -> str:
    """``warm`` when uv's cache already holds packages (the venvs install from it), else
    ``cold`` (every wheel is downloaded); ``no uv`` when nox falls back to virtualenv."""
    import shutil

    uv = shutil.which("uv")
    if uv is None:
        return "no uv"
    done = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, check=False)
    root = Path(done.stdout.strip()) if done.returncode == 0 else None
    entries = [p for p in root.iterdir() if p.is_dir()] if root and root.is_dir() else []
    return "warm" if entries else "cold"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def matrix_run(step: str, root: Path = REPO) -> dict[str, Any]:
    """``begin``: record when the matrix started, the load and uv's cache; ``end``: add when it
    finished and how long it took. Returns the record (docs/compat/matrix.json)."""
    import calendar

    path = root / MATRIX_RUN
    if step == "begin":
        run: dict[str, Any] = {
            "command": "nox -s matrix",
            "began": _now(),
            "uv_cache": _uv_cache(),
            "cpus": os.cpu_count(),
            "load_before": _load(),
        }
    else:
        run = json.loads(path.read_text(encoding="utf-8"))
        began = calendar.timegm(time.strptime(run["began"], "%Y-%m-%dT%H:%M:%SZ"))
        run["finished"] = _now()
        run["seconds"] = round(time.time() - began)
        run["load_after"] = _load()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    return run


# --- what a release's runtime binary carries ---------------------------------------------------

#: Names whose presence in a runtime binary (``dynamo/_core.abi3.so``) tells what the release can
#: do: the listener and its settings, the scope variables, the listing's members, the host
#: settings and the messages that differ between releases (docs/findings.md, "Across releases").
BINARY_NAMES = (
    "DYN_ENABLE_RL",
    "DYN_RL_PORT",
    "/v1/rl/workers",
    "DYN_NAMESPACE_PREFIX",
    "DYN_NAMESPACE_PREFIX_STRICT",
    "DYN_NAMESPACE_WORKER_SUFFIX",
    "admin_base_url",
    "world_size",
    "DYN_SYSTEM_HOST",
    "DYN_EVENT_PLANE_HOST",
    "DYN_HTTP_RPC_HOST",
    "Interface not found: ",
    "Decode WorkerSet already registered",
    "Invalid request plane mode",
    "DYN_SYSTEM_ENABLED is deprecated",
)


def binary_names(so: Path | None = None) -> dict[str, bool]:
    """Which of ``BINARY_NAMES`` the installed runtime binary (or ``so``) contains."""
    if so is None:
        import importlib.util

        spec = importlib.util.find_spec("dynamo")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("tools.compat binary: the dynamo package is not installed")
        so = next(Path(spec.submodule_search_locations[0]).glob("_core*.so"))
    data = so.read_bytes()
    return {name: name.encode() in data for name in BINARY_NAMES}


def listening_addresses(pids: Iterable[int]) -> list[str]:
    """Every TCP address the processes ``pids`` listen on (``127.0.0.1:PORT``), from /proc:
    the evidence that a fleet binds loopback only."""
    inodes: set[str] = set()
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        for fd in fds.iterdir() if fds.exists() else ():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            host, port = fields[1].split(":")
            if width == 8:
                address = ".".join(str(int(host[i : i + 2], 16)) for i in (6, 4, 2, 0))
            else:  # four little-endian 32-bit words
                raw = bytes.fromhex(host)
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                address = f"[{ipaddress.IPv6Address(words)}]"
            found.append(f"{address}:{int(port, 16)}")
    return sorted(found)


def probe(assignments: Sequence[str], timeout: float = 30.0) -> int:
    """Start the default fleet on the installed release with extra ``NAME=VALUE`` variables and
    print its first listing's first worker (or the harness's error): the reproduction of a
    host-setting finding. Exit 0 when every engine was listed without an error, 1 otherwise."""
    from prime_rl_dynamo.errors import HarnessError
    from prime_rl_dynamo.suite.harness import DynamoFleet

    env = dict(a.split("=", 1) for a in assignments)
    fleet = DynamoFleet(env=env, startup_timeout=timeout)
    print(f"{fleet.release.label}, extra variables {env}")
    try:
        fleet.start()
        workers = fleet.listing()["workers"]
        print(f"listed {len(workers)} engines in {fleet.startup_seconds:.1f} s; the first:")
        print(json.dumps(workers[0]))
        bound = listening_addresses(p.pid for p in fleet.processes if p.pid is not None)
        elsewhere = [a for a in bound if not a.startswith(("127.0.0.1:", "[::1]:"))]
        print(f"{len(bound)} listening sockets, off loopback: {elsewhere or 'none'}")
    except HarnessError as exc:
        print("not listed:", str(exc).splitlines()[0])
        for line in str(exc).splitlines()[1:]:
            if "rror" in line or "Interface" in line or "WorkerSet" in line:
                print("  log:", line.strip()[:300])
        return 1
    finally:
        fleet.stop()
    return 0


def transport_form(worker: dict[str, Any]) -> str:
    """A listed worker's transport with its values named: ``tcp HOST:PORT/ID/ENDPOINT`` for
    ``{"tcp": "127.0.0.1:42245/25fd07ce2985b9ae/rl"}`` of instance 0x25fd07ce2985b9ae. ID is the
    instance id in hex; NAMESPACE, COMPONENT and ENDPOINT are the worker's own; anything else
    stays as listed."""
    names = {"NAMESPACE": "namespace", "COMPONENT": "component", "ENDPOINT": "endpoint"}
    forms = []
    for kind, value in sorted((worker.get("transport") or {}).items()):
        parts = str(value).split("/")
        shown = ["HOST:PORT" if _is_host_port(parts[0]) else parts[0]]
        for part in parts[1:]:
            if _is_hex_id(part, worker.get("instance_id")):
                shown.append("ID")
                continue
            shown.append(next((n for n, k in names.items() if worker.get(k) == part), part))
        forms.append(f"{kind} {'/'.join(shown)}")
    return ", ".join(forms) or "none listed"


def _is_host_port(text: str) -> bool:
    """Whether ``text`` is ``host:port``."""
    host, sep, port = text.rpartition(":")
    return bool(sep and host and port.isdigit())


def _is_hex_id(text: str, instance_id: Any) -> bool:
    try:
        return isinstance(instance_id, int) and int(text, 16) == instance_id
    except ValueError:
        return False


# --- the page -----------------------------------------------------------------------------------


def _release_key(version: str) -> tuple[int, ...]:
    from prime_rl_dynamo.suite.harness import DynamoRelease

    return DynamoRelease(version).key


def load_cells(root: Path) -> list[dict[str, Any]]:
    """Every committed cell, oldest release first, each with its report (``None`` if none)."""
    cells = []
    for path in (root / CELLS).glob("dynamo-*.cell.json"):
        cell = json.loads(path.read_text(encoding="utf-8"))
        name = cell["suite"].get("report")
        cell["_report"] = (
            json.loads((root / CELLS / name).read_text(encoding="utf-8")) if name else None
        )
        cells.append(cell)
    return sorted(cells, key=lambda c: _release_key(c["release"]))


_RANK = {"pass": 0, "skip": 1, "waived": 2, "warn": 3, "fail": 4, "error": 5}


def _requirements(report: dict[str, Any] | None) -> dict[str, str]:
    """Requirement -> its worst status in the report."""
    out: dict[str, str] = {}
    for result in (report or {}).get("results", []):
        req, status = result["requirement"], result["status"]
        if req not in out or _RANK[status] > _RANK[out[req]]:
            out[req] = status
    return out


def _verdict(cell: dict[str, Any]) -> str:
    suite = cell["suite"]
    if "cannot_host" in suite:
        return "cannot host (exit 2)"
    report = cell["_report"]
    if report is None:
        return f"no report (exit {suite['exit_code']})"
    verdict = str(report["verdict"]).replace("-", " ").upper()
    failed = report.get("failed_requirements") or []
    return f"{verdict}: {', '.join(failed)}" if failed else verdict


def _counts(report: dict[str, Any] | None) -> str:
    if not report:
        return "-"
    counts = report.get("counts", {})
    return ", ".join(f"{counts[k]} {k}" for k in _RANK if counts.get(k))


def _cell_command(release: str, check: str | None = None) -> str:
    base = f"nox -s dynamo-{release}"
    if check is None:
        return base
    return (
        f"{base} -- --check {check}  # or, in that venv: prime-rl-dynamo conformance -q "
        f"--seed 1 --target dynamo --check {check}"
    )


def _outcome(outcome: dict[str, Any]) -> str:
    if outcome["outcome"] == "ready":
        return f"ready ({len(outcome['engines_called'])} engines driven)"
    why = outcome.get("requirement") or outcome.get("error", "")
    message = str(outcome.get("message", ""))
    message = message if len(message) <= 140 else message[:139] + "…"
    driven = len(outcome["engines_called"])
    text = f"not ready, {driven} engines driven: {why} ({outcome.get('error', '')}): {message}"
    return text.replace("|", "\\|")


def _release_facts(version: str) -> dict[str, str]:
    from prime_rl_dynamo.suite.harness import DynamoRelease

    release = DynamoRelease(version)
    return {
        "RL listener": "yes" if release.has_listener else "no",
        "DYN_TCP_RESPONSE_STREAM_HOST": (
            f"`{release.response_stream_host}`" if release.has_listener else "-"
        ),
        "namespace scopes": ", ".join(release.scopes) if release.has_listener else "-",
        "protocol_version in the body": "yes" if release.sends_protocol_version else "no",
        "admin_base_url / world_size listed": "yes" if release.lists_admin else "no",
    }


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    old, new = _requirements(before["_report"]), _requirements(after["_report"])
    lines = []
    worse = sorted(r for r in new if r in old and _RANK[new[r]] > _RANK[old[r]])
    better = sorted(r for r in new if r in old and _RANK[new[r]] < _RANK[old[r]])
    for name, items in (("newly worse", worse), ("newly better", better)):
        if items:
            lines.append(f"{name}: " + ", ".join(f"{r} ({old[r]} → {new[r]})" for r in items))
    if not before["_report"] and after["_report"]:
        lines.append(f"first release the suite can run on ({_verdict(after)})")
    facts_old, facts_new = _release_facts(before["release"]), _release_facts(after["release"])
    for fact, value in facts_new.items():
        if facts_old[fact] != value:
            where = _FINDING.get(fact)
            see = f" ([findings {where}](findings.md#{_ANCHORS[where]}))" if where else ""
            lines.append(f"{fact}: {facts_old[fact]} → {value}{see}")
    for name in CLIENTS:
        was, now = _client_state(before, name), _client_state(after, name)
        if was != now:
            lines.append(f"{name}: {was} → {now}")
    return lines or [
        "no change in any requirement's verdict, the clients or what the harness adapts"
    ]


#: Which finding of docs/findings.md ("Across releases") explains a change of a release fact.
_FINDING = {
    "RL listener": "R1",
    "DYN_TCP_RESPONSE_STREAM_HOST": "R2",
    "protocol_version in the body": "R3",
    "admin_base_url / world_size listed": "R3",
    "namespace scopes": "R4",
}
_ANCHORS = {
    "R1": "r1-the-rl-listener-first-appears-in-130post1",
    "R2": "r2-before-160-dyn_tcp_response_stream_host-names-a-network-interface",
    "R3": "r3-130post1-to-142-list-neither-admin_base_url-nor-world_size",
    "R4": "r4-namespace-scopes-prefix-and-suffix-from-150-strict-from-160",
}


def _client_state(cell: dict[str, Any], name: str) -> str:
    outcome = ((cell.get("clients") or {}).get("outcomes") or {}).get(name)
    return "-" if outcome is None else str(outcome["outcome"])


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def render_page(root: Path = REPO) -> str:
    """docs/compat.md from the committed cells (no clock, no machine: the same cells, the same
    page)."""
    cells = load_cells(root)
    releases = [c["release"] for c in cells]
    lines = [
        "# Dynamo releases against the contract",
        "",
        "<!-- Generated by `python -m tools.compat docs` from docs/compat/*.json; do not edit. -->",
        "",
        "Every `ai-dynamo-runtime` release of the matrix, judged by the whole suite on real Dynamo",
        "(the harness's stub fleet on that release) and by Prime-RL's two ways in: the project's",
        "client and the drop-in pool against that release's real listing. The RL listener first",
        "appears in **1.3.0.post1** (`DYN_ENABLE_RL`, `DYN_RL_PORT` and `/v1/rl/workers` are in its",
        "runtime binary, not in 1.2.1 or earlier); the matrix takes the newest patch of each minor",
        "line. `nox -s matrix` reruns every cell and this page (one venv per release, uv when",
        "installed); `nox -s dynamo-1.5.1` reruns one. How each release differs is in",
        "[findings.md](findings.md#across-releases).",
        "",
        "## Verdicts",
        "",
    ]
    rows: list[tuple[str, ...]] = []
    for cell in cells:
        suite = cell["suite"]
        rows.append(
            (
                cell["release"],
                _verdict(cell).replace("|", "\\|"),
                _counts(cell["_report"]),
                str(suite["exit_code"]),
                f"{suite['seconds']:.0f} s",
                f"`{_cell_command(cell['release'])}`",
            )
        )
    lines += _table(("release", "verdict", "results", "exit", "suite took", "reproduce"), rows)
    refusals = [c for c in cells if "cannot_host" in c["suite"]]
    for cell in refusals:
        lines += ["", f"{cell['release']}: `{cell['suite']['cannot_host']}`"]
    lines += ["", "## Prime-RL against each release's real listing", ""]
    lines += [
        "The client profile's real-Dynamo topology (three engines of the model summing to W = 7,",
        "one without a model, one of another model) on each release; each client runs its whole",
        "start-up (discover, plan, broadcast init, one weight update) with a 20 s deadline.",
        "*Engines driven* are the engines whose admin API received calls (recorded by the stubs).",
        "",
    ]
    rows = []
    for cell in cells:
        clients = cell.get("clients")
        if not clients:
            rows.append((cell["release"], "-", "-", "-"))
            continue
        if "error" in clients:
            rows.append((cell["release"], clients["error"], "-", "-"))
            continue
        outcomes = clients["outcomes"]
        members = ", ".join(m for m in clients["listed_members"] if m in _LISTING_MEMBERS)
        rows.append(
            (
                cell["release"],
                _outcome(outcomes["project client"]),
                _outcome(outcomes["drop-in pool"]),
                members,
            )
        )
    lines += _table(("release", "project client", "drop-in pool", "optional members listed"), rows)
    lines += [
        "",
        "The first worker each release listed, its transport with the values named",
        "([findings R5](findings.md#r5-transports-and-request-planes-tcp-and-nats-never-http)):",
        "",
    ]
    rows = [
        (c["release"], f"`{transport_form(c['clients']['first_worker'])}`")
        for c in cells
        if (c.get("clients") or {}).get("first_worker")
    ]
    lines += _table(("release", "transport listed"), rows)
    lines += ["", "## What the harness adapts per release", ""]
    facts = [_release_facts(r) for r in releases]
    names = list(facts[0]) if facts else []
    lines += _table(("", *releases), [(n, *(f[n] for f in facts)) for n in names])
    lines += ["", "## From one release to the next", ""]
    for before, after in itertools.pairwise(cells):
        lines.append(f"**{before['release']} → {after['release']}**")
        lines.append("")
        lines += [f"- {line}" for line in _changes(before, after)]
        lines.append("")
    lines += ["## Requirement by release", ""]
    lines += [
        "The worst result of each requirement's checks in that release's report. A cell is",
        "reproduced by the release's session with the check selected, e.g.",
        f"`{_cell_command('1.5.1', 'LIST-6::body')}`.",
        "",
    ]
    by_release = [_requirements(c["_report"]) for c in cells]
    every = sorted({r for reqs in by_release for r in reqs}, key=_requirement_key)
    rows = []
    same: list[str] = []
    for req in every:
        row = [
            reqs.get(req, "-") for c, reqs in zip(cells, by_release, strict=True) if c["_report"]
        ]
        if len(set(row)) == 1:
            same.append(f"{req} ({row[0]})")
            continue
        shown = (
            reqs.get(req, "-") if c["_report"] else "n/a"
            for c, reqs in zip(cells, by_release, strict=True)
        )
        rows.append((req, *shown))
    lines += ["Requirements whose result differs between releases:", ""]
    lines += _table(("requirement", *releases), rows)
    lines += ["", "The same on every release that ran the suite: " + ", ".join(same) + ".", ""]
    lines += _timing(root, cells)
    return "\n".join(lines) + "\n"


def _roundtrip_seconds(report: dict[str, Any] | None) -> float | None:
    """How long the report's roundtrip profile took: from the end of the check before its first
    check (its fleets run in between) to the end of the run."""
    import datetime

    def at(stamp: str) -> float:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    results = sorted(
        (r for r in (report or {}).get("results", []) if r.get("started")),
        key=lambda r: at(r["started"]),
    )
    first = next((i for i, r in enumerate(results) if r["profile"] == "roundtrip"), None)
    if not first or report is None:
        return None
    before = results[first - 1]
    return at(report["finished"]) - at(before["started"]) - float(before.get("duration") or 0)


def _timing(root: Path, cells: list[dict[str, Any]]) -> list[str]:
    """The section on how long the matrix takes: the last whole run, and each cell's parts."""
    lines = ["## How long the matrix takes", ""]
    path = root / MATRIX_RUN
    run = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    if run and "seconds" in run:
        before, after = run["load_before"], run["load_after"]
        lines += [
            f"The last `{run['command']}` ({run['began']}) took **{run['seconds'] / 60:.1f} min** "
            f"wall, from a checkout with uv's cache {run['uv_cache']} (nox makes every venv "
            f"afresh), on {run['cpus']} CPUs with the load average (1, 5, 15 min) at "
            f"{', '.join(map(str, before))} before and {', '.join(map(str, after))} after. "
            "Each cell's parts:",
            "",
        ]
    rows = []
    for cell in cells:
        suite = cell["suite"]["seconds"]
        clients = (cell.get("clients") or {}).get("seconds")
        roundtrip = _roundtrip_seconds(cell["_report"])
        install = cell.get("install_seconds")
        rows.append(
            (
                cell["release"],
                "-" if install is None else f"{install:.0f} s",
                f"{suite:.0f} s",
                "-" if roundtrip is None else f"{roundtrip:.0f} s",
                "-" if clients is None else f"{clients:.0f} s",
                f"{cell['machine']['load_before']:g} → {cell['machine']['load_after']:g}",
            )
        )
    total = sum(
        c["suite"]["seconds"]
        + (c.get("clients") or {}).get("seconds", 0)
        + c.get("install_seconds", 0)
        for c in cells
    )
    lines += _table(
        ("release", "venv and install", "suite", "of which roundtrip", "clients", "load (1 min)"),
        rows,
    )
    lines += ["", f"Install, suite and clients of the {len(cells)} cells: {total / 60:.1f} min."]
    lines += [
        "",
        "The suite's other parts are the frontend fleet's start and the listener's load run, the",
        "client profile's reference fleets and the workers profile. A roundtrip listing that",
        "differs from the fleet only in listed values, unchanged for "
        f"{_settled_seconds():g} s, is decided then (1.3.1 and",
        "1.4.2 never list `admin_base_url`), not after the 30 s deadline.",
    ]
    return lines


def _settled_seconds() -> float:
    from conformance.roundtrip import SETTLED_S

    return SETTLED_S


_LISTING_MEMBERS = ("system_url", "admin_base_url", "world_size", "model", "error")


def _requirement_key(req: str) -> tuple[str, int]:
    prefix, _, number = req.rpartition("-")
    return prefix, int(number) if number.isdigit() else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.compat cell|docs [--check]``."""
    parser = argparse.ArgumentParser(prog="python -m tools.compat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    cell = sub.add_parser("cell", help="run this venv's release (inside a nox session)")
    cell.add_argument("--out", type=Path, default=REPO / CELLS, help="where the cell goes")
    sub.add_parser("binary", help="which names the installed runtime binary carries")
    one = sub.add_parser("probe", help="a one-engine fleet with extra variables: listed or not")
    one.add_argument("assignments", nargs="*", metavar="NAME=VALUE")
    timed = sub.add_parser("matrix", help="record the start or the end of `nox -s matrix`")
    timed.add_argument("step", choices=("begin", "end"))
    docs = sub.add_parser("docs", help="write docs/compat.md from the committed cells")
    docs.add_argument("--check", action="store_true", help="exit 1 when the page drifted")
    args = parser.parse_args(argv)
    if args.command == "cell":
        cell_data = run_cell(args.out)
        print(json.dumps({k: v for k, v in cell_data.items() if k != "_report"}, indent=1))
        return 0
    if args.command == "matrix":
        print(json.dumps(matrix_run(args.step)))
        return 0
    if args.command == "probe":
        return probe(args.assignments)
    if args.command == "binary":
        from prime_rl_dynamo.suite.harness import installed_release

        release = installed_release()
        print(f"ai-dynamo-runtime {release.version if release else None}:")
        for name, present in binary_names().items():
            print(f"  {name!r}: {'present' if present else 'absent'}")
        return 0
    text = render_page(REPO)
    page = REPO / PAGE
    if args.check:
        if not page.exists() or page.read_text(encoding="utf-8") != text:
            print(f"{PAGE} drifted from {CELLS}/; run python -m tools.compat docs", file=sys.stderr)
            return 1
        return 0
    page.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
