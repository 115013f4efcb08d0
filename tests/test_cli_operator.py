"""What an operator sees from the commands: progress on a terminal, quiet pipes, gateways.

Every test here runs the real ``prime-rl-dynamo`` console script in a child process, against the
reference fleet over real HTTP (and a TLS gateway on 127.0.0.1), on a real pty or a real pipe.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from _gateway_support import TOKEN_HEADER, tls_gateway
from _parallel_support import side_by_side

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import start_reference_fleet

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("prime-rl-dynamo"))
SAMPLE = str(ROOT / "tests" / "data" / "samples" / "dynamo-1.6.1-pd-fleet.json")
SECRET = "s3cr3t-gateway-token-4f9a"
WRONG = "wr0ng-gateway-token-77c1"


def _on_pty(
    argv: Sequence[str], *, stderr_pipe: bool = False, timeout: float = 60
) -> tuple[int, str, str]:
    """Run the CLI with stdout (and stderr, unless ``stderr_pipe``) on a real 100-column pty."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    proc = subprocess.Popen(
        [CLI, *argv],
        stdout=slave,
        stderr=subprocess.PIPE if stderr_pipe else slave,
        stdin=subprocess.DEVNULL,
        close_fds=True,
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the pty
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = proc.wait(timeout=10)
    return code, out.decode("utf-8", "replace"), err


# --- 1. discover shows what it waits for, on a terminal only ------------------------------------


def test_discover_on_a_terminal_shows_what_the_last_snapshot_lacked_then_clears_it() -> None:
    # The first 4 listings carry an error worker (READY-1): pending for about 1.5 s, then ready.
    # v1-only: protocol 1 polling, where READY-4's second identical poll is a poll of its own
    # (under the protocol 2 draft a conditional GET can settle it without a status line).
    with start_reference_fleet(faults=["error-workers=1:4", "v1-only"], seed=1) as fleet:
        code, out, _ = _on_pty(
            [
                "discover",
                fleet.frontend_url,
                "-W",
                "16",
                "--poll-interval",
                "0.4",
                "--timeout",
                "30",
            ]
        )
    assert code == 0, out
    status_lines = [part for part in out.split("\r") if part.startswith("not ready after")]
    assert len(status_lines) >= 3, out  # refreshed in place, once per poll
    assert any("READY-1: dynamo.prefill.rl#" in line for line in status_lines), out
    assert "READY-4:" in status_lines[-1]  # the first complete snapshot, waiting for its twin
    assert all(len(line.replace("\x1b[K", "")) < 100 for line in status_lines)  # fits the width
    # Erased before the plan is printed: the table starts on a clean line.
    plan = out.rsplit("\r\x1b[K", 1)[1]
    assert plan.startswith("engine ") and "group_world_size 17" in plan


@pytest.mark.parametrize("how", ["-q", "stderr-not-a-terminal"])
def test_discover_is_quiet_with_q_or_off_a_terminal(how: str) -> None:
    with start_reference_fleet(faults=["error-workers=1:3"], seed=1) as fleet:
        argv = ["discover", fleet.frontend_url, "-W", "16", "--poll-interval", "0.3"]
        code, out, err = _on_pty([*argv, "-q"] if how == "-q" else argv, stderr_pipe=how != "-q")
    assert code == 0, out + err
    assert "not ready after" not in out and "not ready after" not in err
    assert "READY-1" not in out + err
    assert out.startswith("engine ")


def test_library_wait_reports_each_pending_poll_to_a_callable() -> None:
    from prime_rl_dynamo import PollingPolicy, ReadinessPolicy, discover_sync

    seen = []
    with start_reference_fleet(faults=["error-workers=1:2"], seed=2) as fleet:
        ready = discover_sync(
            fleet.frontend_url,
            ReadinessPolicy(16),
            PollingPolicy(poll_interval=0.1),
            progress=seen.append,
        )
    assert ready.world_size_sum == 16
    assert [s.polls for s in seen] == list(range(1, len(seen) + 1))
    assert seen[0].reasons and seen[0].reasons[0].requirement == "READY-1"
    assert seen[-1].reasons[0].requirement == "READY-4"
    assert seen[0].url.endswith("/v1/rl/workers") and seen[0].timeout == 1800


def test_library_wait_shows_the_status_line_when_stderr_is_a_terminal() -> None:
    # The README's client path: DynamoClientConfig.discovery_client().wait_ready(), no option set.
    with start_reference_fleet(faults=["error-workers=1:3"], seed=3) as fleet:
        script = (
            "import asyncio\n"
            "from prime_rl_dynamo import DynamoClientConfig\n"
            f"config = DynamoClientConfig(dynamo_discovery_url={fleet.frontend_url!r}, "
            "inference_world_size=16, poll_interval=0.3)\n"
            "async def main():\n"
            "    async with config.discovery_client() as d:\n"
            "        ready = await d.wait_ready()\n"
            "    print('ready', ready.world_size_sum)\n"
            "asyncio.run(main())\n"
        )
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=slave, close_fds=True
        )
        os.close(slave)
        out_bytes, _ = proc.communicate(timeout=60)
        err = bytearray()
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        os.close(master)
    assert proc.returncode == 0
    assert out_bytes.decode().strip() == "ready 16"
    text = err.decode()
    assert "not ready after" in text and "READY-1:" in text
    assert text.endswith("\r\x1b[K")  # erased at the end


# --- 2. a reader that goes away early is no error -----------------------------------------------


def _closed_pipe_run(
    argv: Sequence[str],
    timeout: float = 120,
    program: Sequence[str] = (CLI,),
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run with stdout on a real pipe whose reading end is already closed (``| head`` gone)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*program, *argv],
            cwd=cwd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=timeout,
        )
    finally:
        os.close(write_end)


def _assert_quiet_pipe(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["validate", SAMPLE],
        ["validate", SAMPLE, "--json"],
        ["plan", SAMPLE, "-W", "8", "--json"],
        ["conformance", "--list"],
        ["conformance", "--list", "--markdown"],
        ["serve", "--help"],
        ["dynamo", "up", "--help"],
        ["discover", "--help"],
        ["schema", "list"],
        ["schema", "path", "openapi/rl-frontend.openapi.json"],
    ],
    ids=lambda a: " ".join(a)[:40],
)
def test_offline_commands_end_quietly_on_a_closed_pipe(argv: list[str]) -> None:
    proc = _closed_pipe_run(argv)
    _assert_quiet_pipe(proc)
    assert proc.returncode in (0, 141), proc.stderr


def test_discover_json_on_a_closed_pipe_exits_141_without_a_traceback() -> None:
    with start_reference_fleet(seed=1) as fleet:
        proc = _closed_pipe_run(["discover", fleet.frontend_url, "-W", "16", "--json"])
    _assert_quiet_pipe(proc)
    assert proc.returncode == 141


def test_serve_on_a_closed_pipe_stops_its_fleet_and_exits_141() -> None:
    proc = _closed_pipe_run(["serve", "--port", "0"], timeout=60)
    _assert_quiet_pipe(proc)
    assert proc.returncode == 141


def test_conformance_on_a_closed_pipe_still_writes_its_reports(tmp_path: Path) -> None:
    with start_reference_fleet(seed=1) as fleet:
        proc = _closed_pipe_run(
            [
                "conformance",
                fleet.frontend_url,
                "--profile",
                "frontend",
                "--load",
                "4x5",
                "--seed",
                "1",
                "--junit-xml",
                str(tmp_path / "junit.xml"),
                "--json-report",
                str(tmp_path / "report.json"),
            ]
        )
    _assert_quiet_pipe(proc)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["results"] and (tmp_path / "junit.xml").read_text().startswith("<?xml")
    assert proc.returncode == (0 if report["ok"] else 1)


def test_bench_on_a_closed_pipe_still_writes_its_report(tmp_path: Path) -> None:
    report, plot = tmp_path / "bench.json", tmp_path / "bench.png"
    proc = _closed_pipe_run(
        [
            *("--quick", "--only", "validation", "--no-progress"),
            *("--json", str(report), "--plot", str(plot)),
        ],
        program=(sys.executable, "-m", "tools.bench"),  # from the checkout: tools/ is not installed
        cwd=ROOT,
    )
    _assert_quiet_pipe(proc)
    assert proc.returncode == 0  # the run completed; only the tables were not read
    assert json.loads(report.read_text())["validation"]["status"] == "ok" and plot.stat().st_size


@pytest.mark.dynamo
@pytest.mark.slow
def test_dynamo_up_on_a_closed_pipe_stops_its_fleet_and_exits_141() -> None:
    pytest.importorskip("dynamo.runtime")
    proc = _closed_pipe_run(["dynamo", "up", "--json"], timeout=180)
    _assert_quiet_pipe(proc)
    assert proc.returncode == 141


# --- 3. a frontend behind a TLS gateway that wants a header -------------------------------------


def _run(argv: Sequence[str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *argv], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def test_discover_through_a_tls_gateway_with_header_and_cacert(tmp_path: Path) -> None:
    with (
        start_reference_fleet(seed=1) as fleet,
        tls_gateway(fleet.frontend_url, SECRET, tmp_path) as gw,
    ):
        header = f"{TOKEN_HEADER}: {SECRET}"
        discover = ("discover", gw.url, "-W", "16")
        wrong_header = f"{TOKEN_HEADER}: {WRONG}"
        ok, insecure, untrusted, no_header, wrong, bad_header, missing_ca = side_by_side(
            lambda: _run([*discover, "--json", "-H", header, "--cacert", str(gw.cacert)]),
            lambda: _run([*discover, "-H", header, "--insecure", "--json"]),
            lambda: _run([*discover, "-H", header, "--timeout", "1"]),
            lambda: _run([*discover, "--cacert", str(gw.cacert)]),
            # A wrong token is quoted back by the gateway in a 503 body (retried until the deadline).
            lambda: _run(
                [*discover, "--cacert", str(gw.cacert), "--timeout", "1.5", "-H", wrong_header]
            ),
            lambda: _run([*discover, "-H", "no colon here"]),
            lambda: _run([*discover, "--cacert", str(tmp_path / "nope.pem")]),
        )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["group_world_size"] == 17
    assert insecure.returncode == 0, insecure.stderr
    assert untrusted.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
    assert "pass its CA bundle with --cacert FILE" in untrusted.stderr
    assert wrong.returncode == 1 and "answered 503" in wrong.stderr
    assert '"token":"<redacted>"' in wrong.stderr.replace(" ", "")
    assert WRONG in gw.seen_tokens and WRONG not in wrong.stdout + wrong.stderr
    assert no_header.returncode == 1 and "answered 401" in no_header.stderr
    assert "--cacert FILE" not in no_header.stderr + wrong.stderr  # the hint only when untrusted
    assert bad_header.returncode == 2 and "expected NAME: VALUE" in bad_header.stderr
    assert missing_ca.returncode == 2 and "no such file" in missing_ca.stderr
    assert SECRET in gw.seen_tokens  # the header really travelled
    for proc in (ok, insecure, untrusted, no_header, bad_header, missing_ca):
        assert SECRET not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr


def test_conformance_through_a_tls_gateway_never_shows_the_header_value(tmp_path: Path) -> None:
    junit, report_path = tmp_path / "junit.xml", tmp_path / "report.json"
    with (
        start_reference_fleet(seed=1) as fleet,
        tls_gateway(fleet.frontend_url, SECRET, tmp_path) as gw,
    ):
        proc = _run(
            [
                "conformance",
                gw.url,
                "--profile",
                "frontend",
                "-H",
                f"{TOKEN_HEADER}: {SECRET}",
                "--cacert",
                str(gw.cacert),
                "--load",
                "4x5",
                "--seed",
                "1",
                "--junit-xml",
                str(junit),
                "--json-report",
                str(report_path),
            ]
        )
        seen = list(gw.seen_tokens)
    report = json.loads(report_path.read_text())
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report["ok"] and {r["status"] for r in report["results"]} <= {"pass", "skip"}
    assert seen and all(token == SECRET for token in seen)  # every request went with the header
    assert report["options"]["headers"] == [f"{TOKEN_HEADER}: <redacted>"]
    assert f"-H '{TOKEN_HEADER}: <redacted>'" in report["reproduce"]
    for text in (proc.stdout, proc.stderr, report_path.read_text(), junit.read_text()):
        assert SECRET not in text


def test_conformance_refuses_a_malformed_header_or_a_missing_ca_bundle(tmp_path: Path) -> None:
    bad_header = _run(["conformance", "https://127.0.0.1:9", "-H", "no colon"])
    missing_ca = _run(["conformance", "https://127.0.0.1:9", "--cacert", str(tmp_path / "x.pem")])
    assert bad_header.returncode == 2 and "expected NAME: VALUE" in bad_header.stderr
    assert missing_ca.returncode == 2 and "no such file" in missing_ca.stderr
    for proc in (bad_header, missing_ca):
        assert "Traceback" not in proc.stderr and "Conformance of" not in proc.stdout


@pytest.mark.parametrize(
    "header", ["Authorization Bearer tok-9f3a", "Authorization=Bearer tok-9f3a", "X Key: tok-9f3a"]
)
@pytest.mark.parametrize("command", [["discover", "-W", "4"], ["conformance"]])
def test_a_malformed_header_is_refused_without_quoting_its_token(
    header: str, command: list[str]
) -> None:
    proc = _run([command[0], "http://127.0.0.1:9", *command[1:], "-H", header], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "header:" in proc.stderr and "not shown" in proc.stderr
    assert "tok-9f3a" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_pytest_plugin_through_a_tls_gateway_never_shows_the_header_value(tmp_path: Path) -> None:
    junit, report_path = tmp_path / "junit.xml", tmp_path / "report.json"
    with (
        start_reference_fleet(seed=1) as fleet,
        tls_gateway(fleet.frontend_url, SECRET, tmp_path) as gw,
    ):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "--pyargs",
                "conformance",
                "--rl-url",
                gw.url,
                "--rl-profile",
                "frontend",
                "--rl-header",
                f"{TOKEN_HEADER}: {SECRET}",
                "--rl-cacert",
                str(gw.cacert),
                "--rl-load",
                "4x5",
                "--rl-seed",
                "1",
                f"--junitxml={junit}",
                "--rl-json-report",
                str(report_path),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        seen = list(gw.seen_tokens)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert seen and all(token == SECRET for token in seen)
    for text in (proc.stdout, proc.stderr, report_path.read_text(), junit.read_text()):
        assert SECRET not in text


# --- 6. runs leave nothing behind in the working directory --------------------------------------


def test_a_conformance_run_leaves_the_working_directory_as_it_found_it(tmp_path: Path) -> None:
    cwd, cache = tmp_path / "cwd", tmp_path / "cache"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env["XDG_CACHE_HOME"] = str(cache)
    common = ["--load", "4x5"]  # 3 generated topologies: enough for hypothesis to store state

    def run(*argv: str) -> Callable[[], subprocess.CompletedProcess[str]]:
        return lambda: subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300
        )

    # Both routes at once, in the same directory and cache, as two users' runs may be.
    cli, plugin = side_by_side(
        run(
            CLI,
            "conformance",
            "-q",
            "--target",
            "reference",
            "--seed",
            "1",
            "--profile",
            "frontend",
            "--profile",
            "client",
            *common,
            "--json-report",
            "report.json",
        ),
        run(
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--pyargs",
            "conformance",
            "--rl-target",
            "reference",
            "--rl-seed",
            "1",
            "--rl-profile",
            "frontend",
            "--rl-profile",
            "client",
            "--rl-load",
            "4x5",
        ),
    )
    assert cli.returncode == 0, cli.stdout[-3000:]
    assert plugin.returncode == 0, plugin.stdout[-3000:]
    assert sorted(p.name for p in cwd.iterdir()) == ["report.json"]  # only what was asked for
    assert (cache / "prime-rl-dynamo" / "hypothesis").is_dir()  # hypothesis' state went here


# --- 7. small text slips ------------------------------------------------------------------------


def test_counts_are_worded_with_the_right_plural(tmp_path: Path) -> None:
    from prime_rl_dynamo.text import plural

    assert [plural(1, "engine"), plural(2, "engine"), plural(0, "engine")] == [
        "1 engine",
        "2 engines",
        "0 engines",
    ]
    assert plural(1, "distinct body", "distinct bodies") == "1 distinct body"
    one = {
        "protocol_version": 1,
        "namespace": "dynamo",
        "workers": [json.loads(Path(SAMPLE).read_text())["workers"][0]],
    }
    body = tmp_path / "one.json"
    body.write_text(json.dumps(one))
    validated = _run(["validate", str(body)])
    planned = _run(["plan", str(body), "-W", str(one["workers"][0]["world_size"])])
    assert validated.returncode == 0 and "1 worker, 1 engine ready" in validated.stdout
    assert planned.returncode == 0 and "\n1 engine, inference_world_size" in planned.stdout


def test_piped_output_honours_columns_and_never_folds_a_url() -> None:
    env = {**os.environ, "COLUMNS": "50"}
    listing = subprocess.run(
        [CLI, "conformance", "--list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listing.returncode == 0
    assert max(len(line) for line in listing.stdout.splitlines()) <= 50
    wide = subprocess.run(
        [CLI, "conformance", "--list"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
        timeout=60,
    )
    assert max(len(line) for line in wide.stdout.splitlines()) > 50  # up to 160 without COLUMNS
    # A frontend answering 503: failures and skips whose messages name the listing's URL.
    env["COLUMNS"] = "80"
    with start_reference_fleet(faults=["unavailable"], seed=1) as fleet:
        url = fleet.frontend_url
        proc = subprocess.run(
            [CLI, "conformance", url, "-q", "--profile", "frontend", "--load", "1x1"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert rows and max(len(line) for line in proc.stdout.splitlines()) <= 80
    for row in rows:
        for shown in re.findall(r"http://\S*", row):
            assert shown.endswith("…") or shown.startswith(url), row  # cut visibly, or whole
    assert f"{url}/v1/rl/workers" in proc.stdout  # in full in the detail blocks


@pytest.mark.parametrize(
    ("name", "path"),
    [
        # The names the README and docs use: the working contract, not the frozen v1 copy.
        ("rl-frontend", "openapi/rl-frontend.openapi.json"),
        ("worker-system", "openapi/worker-system.openapi.json"),
        ("admin", "openapi/admin.openapi.json"),
        ("rl-workers.v1", "rl-workers.v1.schema.json"),
        ("rl-workers.v2", "rl-workers.v2.schema.json"),
        (
            "frozen/v1/openapi/rl-frontend.openapi.json",
            "frozen/v1/openapi/rl-frontend.openapi.json",
        ),
    ],
)
def test_schema_path_resolves_the_documented_short_names(
    name: str, path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from prime_rl_dynamo.resources import schema_dir

    assert main(["schema", "path", name]) == 0
    assert capsys.readouterr().out.strip() == str(schema_dir() / path)


def test_schema_path_suggestions_name_each_file_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "path", "rl-worker"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" in err
    hint = err.split("did you mean", 1)[1].split("?", 1)[0]
    names = [n.strip(" '") for n in hint.split(" or ")]
    assert len(names) == len(set(names)), err


def test_bench_says_where_the_benchmarks_are(capsys: pytest.CaptureFixture[str]) -> None:
    # The benchmarks live in the checkout's tools/ (the wheel never imports them): an operator
    # who types the command an issue names is told where they are, with the usage status.
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--only", "validation"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "python -m tools.bench" in err and "Traceback" not in err
