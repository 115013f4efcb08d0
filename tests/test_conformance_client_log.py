"""What the client under test logs goes into the report, not onto the terminal before the summary:
the pool's expected CRED-3 warnings (engines outside the allow-list driven without credentials)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance.client_logs import captured
from conformance.examples import project_client

CLI = Path(sys.executable).parent / "prime-rl-dynamo"


@pytest.mark.integration
def test_the_pools_cred3_warnings_are_captured_into_the_report(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [
            str(CLI),
            "conformance",
            "--profile",
            "client",
            "--target",
            "reference",
            "-q",
            "--seed",
            "1",
            "--requirement",
            "CRED-3",
            "--client",
            "conformance.examples.prime_rl_pool_client:run",
            "--json-report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "CRED-3: driving engine" not in proc.stderr + proc.stdout
    data = json.loads(report.read_text())
    cred3 = [r for r in data["client_log"] if r["message"].startswith("CRED-3: driving engine")]
    assert cred3 and all(r["level"] == "WARNING" for r in cred3)
    assert {r["logger"] for r in cred3} == {"prime_rl_dynamo.admin"}
    assert all(r["run"] for r in cred3)
    assert f"client log: {len(data['client_log'])} records (WARNING) captured" in proc.stdout


def test_the_suites_own_records_pass_through_and_the_clients_are_held(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # with no handler configured, a record of the suite's own thread still reaches stderr
    root = logging.getLogger()
    saved, root.handlers = root.handlers[:], []
    try:
        with captured() as held:
            logging.getLogger("suite").warning("the suite's own")
            worker = threading.Thread(
                target=lambda: logging.getLogger("client").warning("the client's"),
                name="client-under-test",
            )
            worker.start()
            worker.join()
    finally:
        root.handlers = saved
    err = capsys.readouterr().err
    assert "the suite's own" in err and "the client's" not in err
    assert [(r["logger"], r["message"], r["thread"]) for r in held] == [
        ("client", "the client's", "client-under-test")
    ]


#: every credential value the leaky client was given
GIVEN: list[str] = []


def leaky_client(*args: Any, **kwargs: Any) -> None:
    """The project's client, logging every credential it was given first (a careless client)."""
    creds = args[3]
    given = [v for v in (creds.api_key, *creds.headers.values()) if v and v != "EMPTY"]
    GIVEN.extend(given)
    logging.getLogger("leaky").warning("my credentials: %s", " ".join(given) or "(none)")
    project_client.run(*args, **kwargs)


@pytest.mark.integration
def test_a_credential_the_client_logs_never_reaches_the_report(tmp_path: Path) -> None:
    import importlib

    # the suite imports the client by its dotted name: that module's GIVEN is the one it fills
    given = importlib.import_module("tests.test_conformance_client_log").GIVEN
    given.clear()
    report = conformance.run(
        profiles=["client"],
        target="reference",
        client="tests.test_conformance_client_log:leaky_client",
        requirements=["CRED-3"],
        seed=1,
        client_poll_interval=0.1,
    )
    leaked = [r["message"] for r in report.client_log if r["logger"] == "leaky"]
    assert given and leaked, (given, leaked)
    assert all("<redacted>" in message for message in leaked)
    for secret in set(given):
        assert all(secret not in message for message in leaked), secret
