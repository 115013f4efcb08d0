"""pytest plugin of the conformance suite: ``pytest --pyargs conformance --rl-url URL``.

Registered as a pytest11 entry point, so it is imported by every pytest run: it must stay cheap
(only pytest and the standard library at import time). Each check becomes one test item named by
its check ID (``<REQUIREMENT>::<slug>``); the suite runs once per session and items report its
results: pass, fail, skip (with the reason), warn (a pytest warning; a failure with --rl-strict)
and error (the suite or the target's harness broke).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

__all__ = ["ConformanceWarning"]

_CHECK_PARAM = "rl_check"


class ConformanceWarning(UserWarning):
    """A SHOULD-level requirement is not met (a failure under --rl-strict)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rl-conformance", "prime-rl-dynamo conformance suite")
    group.addoption("--rl-url", default=None, help="RL listener base URL (default: embedded fleet)")
    group.addoption(
        "--rl-profile",
        action="append",
        default=[],
        choices=("frontend", "workers", "client", "roundtrip"),
        help="profile to run (repeatable)",
    )
    group.addoption("--rl-strict", action="store_true", help="SHOULD failures fail")
    group.addoption(
        "--rl-requirement", action="append", default=[], help="only this requirement ID"
    )
    group.addoption("--rl-seed", type=int, default=None, help="seed of generated topologies")
    group.addoption("--rl-client", default=None, help="client under test, module:function")
    group.addoption("--rl-client-cmd", default=None, help="client under test, shell command")
    group.addoption(
        "--rl-client-conventions",
        default="",
        help="conventions the client under test implements, comma-separated (default: all)",
    )
    group.addoption(
        "--rl-target",
        default="auto",
        choices=("auto", "dynamo", "reference"),
        help="without --rl-url: which embedded fleet to stand up",
    )
    group.addoption(
        "--rl-discovery",
        default="file",
        choices=("file", "etcd"),
        help="discovery backend of the real Dynamo fleets the suite stands up",
    )
    group.addoption("--rl-topologies", type=int, default=3, help="generated topologies per run")
    group.addoption("--rl-load", default="32x20", help="concurrent polling load CLIENTSxREQUESTS")
    group.addoption("--rl-json-report", default=None, help="write the suite's JSON report here")


def _options(config: pytest.Config, checks: tuple[str, ...] = ()) -> Any:
    from conformance.runner import Options

    clients, requests = (int(x) for x in str(config.getoption("rl_load")).lower().split("x", 1))
    return Options(
        url=config.getoption("rl_url"),
        profiles=tuple(config.getoption("rl_profile")),
        strict=bool(config.getoption("rl_strict")),
        requirements=tuple(config.getoption("rl_requirement")),
        checks=checks,
        seed=config.getoption("rl_seed"),
        client=config.getoption("rl_client"),
        client_cmd=config.getoption("rl_client_cmd"),
        target=config.getoption("rl_target"),
        discovery=config.getoption("rl_discovery"),
        topologies=config.getoption("rl_topologies"),
        client_conventions=tuple(
            c.strip() for c in str(config.getoption("rl_client_conventions")).split(",") if c
        ),
        load_clients=clients,
        load_requests=requests,
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if _CHECK_PARAM not in metafunc.fixturenames:
        return
    from conformance.runner import select_checks

    ids = [c.id for c in select_checks(_options(metafunc.config))]
    metafunc.parametrize(_CHECK_PARAM, ids, ids=ids, indirect=True)


@pytest.fixture(scope="session")
def rl_report(request: pytest.FixtureRequest) -> Any:
    """The suite's report, run once for every check item selected in this session."""
    from conformance.runner import run

    selected = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and _CHECK_PARAM in callspec.params:
            selected.append(callspec.params[_CHECK_PARAM])
    report = run(options=_options(request.config, tuple(dict.fromkeys(selected))))
    path = request.config.getoption("rl_json_report")
    if path:
        from conformance.reporting import write_json

        write_json(report, path)
    target = report.target.get("description") or report.target.get("url")
    terminal = request.config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.write_line(f"conformance target: {target} (seed {report.seed})")
    return report


class SuiteError(Exception):
    """The suite or the target's harness broke while running this check."""


@pytest.fixture
def rl_check(request: pytest.FixtureRequest, rl_report: Any) -> Any:
    """The result of one check (an error result errors the test item, as pytest reports it)."""
    check_id = request.param
    for result in rl_report.results:
        if result.check == check_id:
            if result.status.value == "error":
                raise SuiteError(f"{check_id}: {result.message}")
            return result
    raise SuiteError(f"{check_id} was selected but the suite produced no result for it")


def assert_result(result: Any) -> None:
    """Turn one result into the pytest outcome (used by conformance/test_conformance.py)."""
    status = result.status.value
    where = f"{result.check} ({result.level}): {result.title}\n{result.message}"
    if status == "skip":
        pytest.skip(f"{result.check}: {result.message}")
    if status == "fail":
        pytest.fail(where, pytrace=False)
    if status == "warn":
        warnings.warn(ConformanceWarning(where), stacklevel=2)
