"""pytest plugin of the conformance suite: ``pytest --pyargs conformance --rl-url URL``.

Registered as a pytest11 entry point, so it is imported by every pytest run: it must stay cheap
(only pytest and the standard library at import time). Each check becomes one test item named by
its check ID (``<REQUIREMENT>::<slug>``); the suite runs once per session, before the first
item (so no item carries the whole suite's time: each reports its check's own duration), and
items report its results: pass, fail, skip (with the reason), waived (xfail, with the waiver's
reason), warn (a pytest warning; a failure with --rl-strict) and error (the suite or the
target's harness broke). Exit status: pytest's own, except 3 when the run is inconclusive
(nothing listening at the URL: one line, no per-item tracebacks) and 5 when nothing was checked.
Its options are generated from ``conformance.options.Options``: each CLI flag, spelled ``--rl-*``.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import pytest

__all__ = ["ConformanceWarning"]

_CHECK_PARAM = "rl_check"
_REPORT = pytest.StashKey[Any]()
_EMPTY = pytest.StashKey[str]()
_LAST = pytest.StashKey[list[str]]()  # lines that stand after pytest's own summary
_GIVEN = pytest.StashKey[bool]()  # some --rl-* option was given
INCONCLUSIVE = 3  # like the CLI's; pytest itself uses 3 for an internal error
NOTHING_CHECKED = 5  # pytest's "no tests collected"


class ConformanceWarning(UserWarning):
    """A SHOULD-level requirement is not met (a failure under --rl-strict)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    from conformance.options import arguments

    group = parser.getgroup("rl-conformance", "prime-rl-dynamo conformance suite")
    for names, keywords in arguments(pytest=True):  # every option of a run, from Options
        group.addoption(*names, **keywords)
    group.addoption("--rl-json-report", default=None, help="write the suite's JSON report here")
    group.addoption("--rl-html-report", default=None, help="write the suite's HTML report here")


def pytest_configure(config: pytest.Config) -> None:
    # Refuse bad conformance options up front (pytest's usage error, exit 4), not as a
    # collection error; only when some are given, so other pytest runs pay nothing.
    from conformance.options import arguments, given

    config.stash[_LAST] = []
    if any(given(config.getoption(keywords["dest"])) for _, keywords in arguments(pytest=True)):
        config.stash[_GIVEN] = True
        _options(config)


def _options(config: pytest.Config) -> Any:
    from conformance.options import from_flags, pytest_spelling

    try:
        options = from_flags(lambda dest: config.getoption("rl_" + dest), pytest=True)
        options.check_usable()
    except ValueError as exc:  # an unknown requirement ID, a URL the client refuses, ...
        raise pytest.UsageError(pytest_spelling(str(exc))) from None
    return options


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if _CHECK_PARAM not in metafunc.fixturenames:
        return
    from conformance.runner import select_checks

    options = _options(metafunc.config)
    ids = [c.id for c in select_checks(options)]
    if not ids:
        from conformance.options import pytest_spelling
        from conformance.runner import explain_empty

        metafunc.config.stash[_EMPTY] = pytest_spelling(explain_empty(options))
    metafunc.parametrize(_CHECK_PARAM, ids, ids=ids, indirect=True)


def _selected(session: pytest.Session) -> list[str]:
    selected = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and _CHECK_PARAM in callspec.params:
            selected.append(callspec.params[_CHECK_PARAM])
    return list(dict.fromkeys(selected))


def _run_suite(session: pytest.Session) -> Any:
    from dataclasses import replace

    from conformance.reporting import header, write_json
    from conformance.runner import run, select_checks

    config = session.config
    options = _options(config)
    selected = _selected(session)
    if set(selected) != {c.id for c in select_checks(options)}:  # -k, a node ID: a narrower run
        options = replace(options, checks=tuple(selected))
    report = run(options=options)
    config.stash[_REPORT] = report
    path = config.getoption("rl_json_report")
    if path:
        write_json(report, path)
    if config.getoption("rl_html_report"):
        from conformance.html_report import write_html

        write_html(report, config.getoption("rl_html_report"))
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.write_line(f"{header(report)} (seed {report.seed})")
    if report.inconclusive or report.incomplete:
        _junit_before_exit(session, report)
    if report.inconclusive:
        pytest.exit(f"{report.inconclusive} (inconclusive)", returncode=INCONCLUSIVE)
    if report.incomplete:
        pytest.exit("interrupted: the conformance report is incomplete", returncode=2)
    return report


def _junit_before_exit(session: pytest.Session, report: Any) -> None:
    """Give pytest's JUnit file (``--junitxml``) one case per selected check although the session
    stops before its items run: each error, fail, skip or pass as the suite decided, a check an
    interrupt left out skipped as "not run". Only the JUnit writer sees these (the terminal
    stays one line)."""
    from _pytest.junitxml import xml_key
    from _pytest.reports import TestReport

    xml = session.config.stash.get(xml_key, None)
    if xml is None:
        return
    results = {r.check: r for r in report.results}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or _CHECK_PARAM not in callspec.params:
            continue
        result = results.get(callspec.params[_CHECK_PARAM])
        status = result.status.value if result is not None else "not run"
        when: Literal["setup", "call", "teardown"] = "call"
        outcome: Literal["passed", "failed", "skipped"] = "passed"
        longrepr: Any = None
        if status == "error":
            when, outcome = "setup", "failed"
            longrepr = f"{result.check}: {result.message}"  # type: ignore[union-attr]
        elif status == "fail":
            outcome, longrepr = "failed", f"{result.check}: {result.message}"  # type: ignore[union-attr]
        elif status in ("skip", "waived", "not run"):
            why = (
                "not run: the run was interrupted (Ctrl-C); the report is incomplete"
                if result is None
                else result.message.splitlines()[0]
            )
            when, outcome = "setup", "skipped"
            longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {why}")
        rep = TestReport(
            item.nodeid,
            item.location,
            {},
            outcome,
            longrepr,
            when,
            duration=result.duration if result is not None else 0.0,
        )
        xml.pytest_runtest_logreport(rep)
        if when != "teardown":
            xml.pytest_runtest_logreport(
                TestReport(item.nodeid, item.location, {}, "passed", None, "teardown")
            )


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    # The suite runs here, before any item, so no item's time includes the whole suite.
    if _selected(session) and not session.config.option.collectonly:
        _run_suite(session)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    callspec = getattr(item, "callspec", None)
    report = item.config.stash.get(_REPORT, None)
    if callspec is None or _CHECK_PARAM not in callspec.params or report is None:
        return
    rep = outcome.get_result()
    check_id = callspec.params[_CHECK_PARAM]
    own = next((r.duration for r in report.results if r.check == check_id), 0.0)
    rep.duration = own if rep.when == "call" else 0.0  # the check's own duration, once


@pytest.hookimpl(tryfirst=True)  # before pytest's JUnit writer closes its file
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from conformance.options import pytest_spelling

    report = session.config.stash.get(_REPORT, None)
    empty = session.config.stash.get(_EMPTY, None)
    why = None
    if report is not None and report.verdict.value == "nothing-checked":
        why = pytest_spelling(report.why_nothing_checked())
    elif report is None and empty is not None:
        why = empty
    elif report is None and session.config.stash.get(_GIVEN, False) and not _selected(session):
        # --rl-* options, yet no item of the suite was collected: the suite's items live in the
        # conformance package, which pytest collects only when asked to
        why = (
            "--rl-* options were given, but no item of the conformance suite was collected: "
            "add --pyargs conformance (pytest --pyargs conformance --rl-url URL)"
        )
    _fail_run_cases(session, report, why)
    expired = report.expired_waivers() if report is not None else []
    if expired:  # a stale waiver fails the run, as on the CLI
        from conformance.waivers import expired_line

        session.config.stash[_LAST].extend(expired_line(w) for w in expired)
        if exitstatus in (0, 5):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    if why is not None and exitstatus in (0, 5):
        session.config.stash[_LAST].append(f"nothing was checked: {why}")
        session.exitstatus = NOTHING_CHECKED


def _fail_run_cases(session: pytest.Session, report: Any, why: str | None) -> None:
    """Give pytest's JUnit file (``--junitxml``) one failing case for each cause of a run that is
    not ok that no item carries (``reporting.run_cases``: an expired waiver, interrupted,
    inconclusive, nothing checked), as the CLI's JUnit has: ``conformance/waivers::waiver ID``,
    ``conformance/run::KIND``. ``why``: why nothing was checked when the suite never ran."""
    from _pytest.junitxml import xml_key
    from _pytest.reports import TestReport

    from conformance.options import pytest_spelling
    from conformance.reporting import RunCase, run_cases

    xml = session.config.stash.get(xml_key, None)
    if xml is None:
        return
    if report is not None:
        cases = [c._replace(message=pytest_spelling(c.message)) for c in run_cases(report)]
    elif why is not None:
        cases = [RunCase("run", "nothing checked", "nothing checked", f"nothing checked: {why}")]
    else:
        cases = []
    for case in cases:
        nodeid = f"conformance/{case.suite}::{case.name}"
        where = (f"conformance/{case.suite}", None, case.name)
        for when, outcome, text in (("call", "failed", case.message), ("teardown", "passed", None)):
            xml.pytest_runtest_logreport(
                TestReport(nodeid, where, {}, outcome, text, when)  # type: ignore[arg-type]
            )


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # After pytest's own summary line, on a line of their own: what the run's outcome means.
    lines = config.stash.get(_LAST, [])
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if not lines or terminal is None:
        return
    terminal.ensure_newline()
    for line in lines:
        terminal.write_line(line)


@pytest.fixture(scope="session")
def rl_report(request: pytest.FixtureRequest) -> Any:
    """The suite's report, run once for every check item selected in this session."""
    report = request.config.stash.get(_REPORT, None)
    return report if report is not None else _run_suite(request.session)


class SuiteError(Exception):
    """The suite or the target's harness broke while running this check."""


@pytest.fixture
def rl_check(request: pytest.FixtureRequest, rl_report: Any) -> Any:
    """The result of one check (an error result errors the test item, as pytest reports it)."""
    check_id = request.param
    for result in rl_report.results:
        if result.check == check_id:
            if result.status.value == "error":
                # The message says it all: no fixture traceback.
                pytest.fail(f"{check_id}: {result.message}", pytrace=False)
            # pytest's JUnit has no warning outcome either: a warned item passes with its
            # testcase properties saying so (the CLI's --junit-xml writes <skipped type="warning">).
            request.node.user_properties.append(("conformance.status", result.status.value))
            if result.status.value == "warn":
                first = (result.message.splitlines() or [""])[0]
                request.node.user_properties.append(
                    ("warning", f"{result.level} requirement {result.requirement} not met: {first}")
                )
            return result
    pytest.fail(f"{check_id} was selected but the suite produced no result for it", pytrace=False)


def assert_result(result: Any) -> None:
    """Turn one result into the pytest outcome (used by conformance/test_conformance.py)."""
    status = result.status.value
    where = f"{result.check} ({result.level}): {result.title}\n{result.message}"
    if status == "skip":
        pytest.skip(f"{result.check}: {result.message}")
    if status == "waived":
        pytest.xfail(f"{result.check}: {result.message.splitlines()[0]}")
    if status == "fail":
        pytest.fail(where, pytrace=False)
    if status == "warn":
        warnings.warn(ConformanceWarning(where), stacklevel=2)
