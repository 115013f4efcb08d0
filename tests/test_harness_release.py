"""The harness across Dynamo releases, without starting Dynamo: which release is installed, what
the harness adapts for it, and the one-line refusal (exit 2) of a release that cannot host it.

The real runs on each release are the matrix (``nox -s matrix``, docs/compat.md) and CI's
roundtrip on the oldest release (``nox -s ci-oldest``).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from prime_rl_dynamo.errors import HarnessError, UnsupportedReleaseError
from prime_rl_dynamo.suite.harness import _release
from prime_rl_dynamo.suite.harness._environment import FleetEnvironment
from prime_rl_dynamo.suite.harness._release import (
    FIRST_LISTENER_RELEASE,
    DynamoRelease,
    installed_release,
    require_release,
)


def _pretend_installed(monkeypatch: pytest.MonkeyPatch, version: str | None) -> None:
    real = importlib.metadata.version

    def version_of(name: str) -> str:
        if name != _release.DISTRIBUTION:
            return real(name)
        if version is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return version

    monkeypatch.setattr(_release.importlib.metadata, "version", version_of)


def test_versions_order_with_post_releases() -> None:
    assert DynamoRelease("1.3.0.post1").key == (1, 3, 0, 1)
    assert DynamoRelease("1.3.0.post1").at_least("1.3.0")
    assert not DynamoRelease("1.3.0").at_least(FIRST_LISTENER_RELEASE)
    assert DynamoRelease("1.10.0").at_least("1.6.1")  # numeric, not text, order
    with pytest.raises(UnsupportedReleaseError, match="not a release version"):
        _ = DynamoRelease("nightly").key


@pytest.mark.parametrize(
    ("version", "listener", "host", "scopes", "admin"),
    [
        ("1.2.1", False, "lo", ("exact",), False),
        ("1.3.0.post1", True, "lo", ("exact",), False),
        ("1.4.2", True, "lo", ("exact",), False),
        ("1.5.1", True, "lo", ("exact", "prefix", "suffix"), True),
        ("1.6.0", True, "127.0.0.1", ("exact", "prefix", "suffix", "prefix-strict"), True),
        ("1.6.1", True, "127.0.0.1", ("exact", "prefix", "suffix", "prefix-strict"), True),
    ],
)
def test_what_each_release_needs(
    version: str, listener: bool, host: str, scopes: tuple[str, ...], admin: bool
) -> None:
    release = DynamoRelease(version)
    assert release.has_listener is listener
    assert release.response_stream_host == host
    assert release.scopes == scopes
    assert release.lists_admin is admin
    assert release.sends_protocol_version is admin  # both from 1.5.0
    assert (release.cannot_host() is None) is listener


def test_environment_follows_the_release(tmp_path: Path) -> None:
    old = FleetEnvironment(tmp_path, "dynamo", release=DynamoRelease("1.5.1")).base()
    new = FleetEnvironment(tmp_path, "dynamo", release=DynamoRelease("1.6.1")).base()
    assert old["DYN_TCP_RESPONSE_STREAM_HOST"] == "lo"  # an interface name before 1.6.0
    assert new["DYN_TCP_RESPONSE_STREAM_HOST"] == "127.0.0.1"
    for name in ("DYN_TCP_RPC_HOST", "DYN_SYSTEM_HOST", "DYN_EVENT_PLANE_HOST"):
        assert old[name] == new[name] == "127.0.0.1"


@pytest.mark.parametrize(
    ("variable", "version", "scope"),
    [
        ("DYN_NAMESPACE_PREFIX", "1.4.2", "prefix"),
        ("DYN_NAMESPACE_WORKER_SUFFIX", "1.3.1", "suffix"),
        ("DYN_NAMESPACE_PREFIX_STRICT", "1.5.1", "prefix-strict"),
    ],
)
def test_a_scope_the_release_lacks_is_refused(
    tmp_path: Path, variable: str, version: str, scope: str
) -> None:
    extra = {variable: "x"}
    with pytest.raises(UnsupportedReleaseError, match=f"Dynamo {version} has no {scope} "):
        FleetEnvironment(tmp_path, "dynamo", extra=extra, release=DynamoRelease(version))
    # The counterpart: the newest release has every scope.
    FleetEnvironment(tmp_path, "dynamo", extra=extra, release=DynamoRelease("1.6.1"))


def test_require_release_names_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_installed(monkeypatch, "1.2.1")
    with pytest.raises(UnsupportedReleaseError) as info:
        require_release()
    assert str(info.value) == (
        "ai-dynamo-runtime 1.2.1 has no RL listener (no DYN_ENABLE_RL, no /v1/rl/workers in "
        "its runtime); the first release with one is 1.3.0.post1"
    )
    assert isinstance(info.value, HarnessError)
    _pretend_installed(monkeypatch, None)
    with pytest.raises(UnsupportedReleaseError, match="is not installed"):
        require_release()
    assert installed_release() is None
    _pretend_installed(monkeypatch, "1.3.1")
    assert require_release() == DynamoRelease("1.3.1")


@pytest.mark.integration  # runs a (fake) interpreter
def test_release_of_another_interpreter(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 1.4.2\n")
    fake.chmod(0o755)
    assert installed_release(str(fake)) == DynamoRelease("1.4.2")
    fake.write_text("#!/bin/sh\nexit 1\n")
    assert installed_release(str(fake)) is None


def test_dynamo_up_on_a_release_without_the_listener_exits_2_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from prime_rl_dynamo.cli import main

    _pretend_installed(monkeypatch, "1.2.1")
    assert main(["dynamo", "up", "--engines", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "1.2.1 has no RL listener" in err
    assert err.startswith("prime-rl-dynamo dynamo up: cannot host a fleet: ")
    # A scope the release lacks: refused before anything starts, in one line too.
    _pretend_installed(monkeypatch, "1.4.2")
    assert main(["dynamo", "up", "--engines", "1", "--namespace-prefix", "p"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Dynamo 1.4.2 has no prefix namespace scope" in err


def test_conformance_target_dynamo_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from prime_rl_dynamo.cli import main

    _pretend_installed(monkeypatch, "1.2.1")
    report = tmp_path / "r.json"
    code = main(["conformance", "-q", "--target", "dynamo", "--json-report", str(report)])
    assert code == 2 and not report.exists()  # a usage error, never an inconclusive report
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--target dynamo: cannot host a fleet" in err
    _pretend_installed(monkeypatch, "1.4.2")
    code = main(["conformance", "-q", "--profile", "roundtrip", "--namespace-scope", "suffix"])
    assert code == 2
    assert "Dynamo 1.4.2 has no suffix namespace scope" in capsys.readouterr().err


def test_help_names_the_installed_release(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from prime_rl_dynamo.cli import main

    _pretend_installed(monkeypatch, "1.4.2")
    with pytest.raises(SystemExit):
        main(["dynamo", "up", "--help"])
    out = capsys.readouterr().out
    assert "Installed here: Dynamo 1.4.2." in " ".join(out.split())
    assert "1.6.1" not in out


@pytest.mark.parametrize("release", ["1.4.2", None])
def test_every_report_medium_names_the_release(release: str | None, tmp_path: Path) -> None:
    """The target block's dynamo_release reaches the terminal header, JUnit and HTML; a run that
    stood up no real Dynamo names none (the counterpart)."""
    import xml.etree.ElementTree as ET

    from conformance.html_report import render_html
    from conformance.reporting import header, write_junit
    from conformance.results import Report

    target = {"kind": "none", "description": "the fleets each profile stands up itself"}
    if release is not None:
        target["dynamo_release"] = release
    report = Report(target=target, options={}, seed=1, versions={})
    junit = ET.parse(write_junit(report, tmp_path / "r.xml"))
    names = {p.get("name"): p.get("value") for p in junit.iter("property")}
    html = render_html(report)
    if release is None:
        assert "Dynamo" not in header(report) and "target.dynamo_release" not in names
        assert "Dynamo release" not in html
        return
    assert header(report).endswith("(Dynamo 1.4.2)")
    assert names.get("target.dynamo_release") == "1.4.2"
    assert "<tr><td>Dynamo release</td><td>1.4.2</td></tr>" in html
