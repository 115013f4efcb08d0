"""Shared test configuration: hypothesis profiles (deterministic under CI=true), and the guard that
keeps every test without a server marker from starting a server or a process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from _report_support import CiReports, fresh_reports
from hypothesis import HealthCheck, settings

# hypothesis keeps its state (example database, constants) under the user's cache directory, not
# in the checkout, for these tests and for every process they start; a value set by the caller wins.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "prime-rl-dynamo"
        / "hypothesis-tests"
    ),
)

# pytest-xdist's workers start with COLUMNS=80 (a serial run has none): the commands under test
# would then wrap their output at 80 columns in a worker and at their own width otherwise.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("COLUMNS") == "80":
    del os.environ["COLUMNS"]

# A shell starts a background job (`make test &`, nohup, a CI step's `&`) with SIGINT ignored, and
# every process it starts inherits that: the Ctrl-C tests' runs would never see their SIGINT and
# would play out to their last timeout. Python's own handler is reset to the default on exec.
if (
    signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    and threading.current_thread() is threading.main_thread()
):
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


# --- unmarked tests start nothing ------------------------------------------------------------
#: The markers of a test that may start a server or a process. Every other test starts neither,
#: and ``make check`` runs exactly those; the guard below makes that selection a checked fact.
STARTS = ("integration", "dynamo", "etcd", "nats", "slow", "real_engines")


def _refuse(what: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"an unmarked test {what}; mark it integration (or dynamo/etcd/nats/slow), "
            "or keep it in-process (make check runs only tests that start nothing)"
        )

    return refused


_GUARDED: tuple[tuple[object, str, str], ...] = (
    (subprocess.Popen, "_execute_child", "started a process"),
    (os, "fork", "forked"),
    (os, "posix_spawn", "started a process"),
    (os, "posix_spawnp", "started a process"),
    (socket.socket, "bind", "bound a socket"),
    (socket.socket, "listen", "listened on a socket"),
)


@contextmanager
def _nothing_starts() -> Iterator[None]:
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in _GUARDED]
    for owner, name, what in _GUARDED:
        setattr(owner, name, _refuse(what))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _guard(item: pytest.Item) -> AbstractContextManager[None]:
    """Nothing for a test marked to start things; the refusal of servers and processes otherwise."""
    if any(item.get_closest_marker(name) is not None for name in STARTS):
        return nullcontext()
    return _nothing_starts()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _guard(item):  # fixtures too: a fleet fixture is a server
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _guard(item):
        return (yield)


#: Markers of the tests that run real Dynamo, etcd or NATS. They share one xdist group, so under
#: ``pytest -n 4 --dist loadgroup`` (make test) they run one at a time on one worker: two real
#: fleets never compete for the two cores, while the other workers run everything else.
SERIAL = ("dynamo", "etcd", "nats")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) is not None for name in SERIAL):
            item.add_marker(pytest.mark.xdist_group("real-fleets"))
    # The tests that read the conformance runs' reports go last (xdist hands out tests in this
    # order), so under `make test`, whose runs write them while the tests run, they rarely wait.
    items.sort(key=lambda item: "ci_reports" in getattr(item, "fixturenames", ()))


#: Set by ``make test``, which runs the four conformance runs (ci-conformance) beside the tests:
#: the file it writes once they have all ended, whatever their status (their exit status).
CI_REPORTS_DONE = "CI_REPORTS_DONE"

#: When this test session began (``time.time()``), set by the first process of the session and
#: inherited by xdist's workers: a report older than this was left by an earlier run.
SESSION_START = "PRIME_RL_DYNAMO_TEST_SESSION_START"


@pytest.fixture
def ci_reports() -> CiReports:
    """The reports ``make test``'s conformance lane wrote during this session, once it has ended.

    Outside ``make test`` no lane runs beside the session and the test is skipped: reports/
    then holds only what earlier runs left, which this session cannot vouch for.
    """
    done = os.environ.get(CI_REPORTS_DONE)
    if not done:
        pytest.skip(
            "no conformance lane runs beside this session (`make test` runs one): only the "
            "reports a session's own lane wrote are read"
        )
    root = Path(__file__).resolve().parent.parent
    deadline = time.monotonic() + 1200
    while not (root / done).exists():  # the runs end when they end: a readiness wait
        assert time.monotonic() < deadline, f"{done} never appeared: the conformance runs hung"
        time.sleep(0.5)
    status = (root / done).read_text(encoding="utf-8").strip()
    since = float(os.environ[SESSION_START])
    return CiReports(int(status) if status.isdigit() else 1, fresh_reports(root / "reports", since))


class _XdistGroups:
    """Make ``--dist loadgroup`` group again under pytest 9.2: xdist 3.8 marks a grouped test by
    setting ``item._nodeid`` to ``NODEID@GROUP``, which pytest 9.2 no longer reads (the node id
    lives in ``item._id``), so no test was grouped and two real fleets could overlap."""

    @pytest.hookimpl(trylast=True)  # after xdist's worker has named each grouped test
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from _pytest.nodeid import coerce_node_id

        for item in items:
            grouped = item.__dict__.get("_nodeid")
            if isinstance(grouped, str) and grouped != item.nodeid:
                item._id = coerce_node_id(grouped)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(SESSION_START, repr(time.time()))
    config.pluginmanager.register(_XdistGroups(), "xdist-groups-under-pytest-9-2")
