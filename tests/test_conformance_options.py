"""Conformance options are defined once (``conformance.options.Options``): the CLI's arguments, the
pytest plugin's ``--rl-*`` options and the reproduce line are generated from its fields, so every
option set on one surface reads back the same on the others."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import pytest

from conformance.options import Options, arguments, from_flags, pytest_spelling, rerun_arguments
from conformance.reporting import reproduce_command
from conformance.results import Report

ROOT = Path(__file__).resolve().parent.parent

#: A value other than the default for every field (a new field without one fails the first test).
NOT_DEFAULT: dict[str, Any] = {
    "url": "http://127.0.0.1:9/v1",
    "profiles": ("frontend", "client"),
    "strict": True,
    "requirements": ("LIST-6", "HTTP-7"),
    "checks": ("LIST-6::body",),
    "seed": 11,
    "client": "conformance.examples.spec_client:run",
    "client_cmd": "python -m conformance.examples.prime_rl_pool_client --flag 'a b'",
    "target": "reference",
    "discovery": "etcd",
    "request_plane": "nats",
    "namespace_scope": "suffix",
    "timeout": 2.5,
    "max_body_bytes": 4096,
    "polls": 2,
    "load_clients": 3,
    "load_requests": 7,
    "load_budget": 4.5,
    "topologies": 1,
    "client_timeout": 12.0,
    "client_poll_interval": 0.25,
    "client_whole_seconds": True,
    "skip_requirements": ("HTTP-6",),
    "waivers": "dynamo-1.6.1",
    "target_version": "1.6.1 rc",
    "headers": (("X-Token", "s3cret"),),
    "cacert": "/etc/ssl/ca.pem",
    "insecure": True,
    "client_conventions": ("prime-nccl", "nixl"),
}
#: Fields that exclude each other, and the one with a URL: set in separate rounds.
ROUNDS = (
    {"client_cmd", "cacert", "target"},
    {"client", "insecure", "url"},
)


def _parser(*, pytest_style: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    for names, keywords in arguments(pytest=pytest_style):
        parser.add_argument(*names, **keywords)
    return parser


def _report_options(options: Options) -> dict[str, Any]:
    return {k: v for k, v in asdict(options).items() if k != "seed"}


def test_every_field_has_a_non_default_value_here() -> None:
    assert set(NOT_DEFAULT) == {f.name for f in fields(Options)}
    for f in fields(Options):
        assert NOT_DEFAULT[f.name] != f.default, f.name


@pytest.mark.parametrize("excluded", ROUNDS, ids=["with-url", "embedded"])
def test_a_reproduce_line_reads_back_as_the_same_options(excluded: set[str]) -> None:
    chosen = {k: v for k, v in NOT_DEFAULT.items() if k not in excluded}
    original = Options(**chosen)
    line = reproduce_command(
        Report(target={}, options=_report_options(original), seed=chosen["seed"], versions={})
    )
    argv = shlex.split(line)
    assert argv[:2] == ["prime-rl-dynamo", "conformance"]
    assert "s3cret" not in line and "-H 'X-Token: <redacted>'" in line  # never the value
    args = _parser().parse_args(argv[2:])
    again = from_flags(lambda dest: getattr(args, dest))
    # Everything comes back but the header value, which no output carries.
    assert again == replace(original, headers=(("X-Token", "<redacted>"),))
    assert argv[-2:] == ["--seed", str(chosen["seed"])]


def test_defaults_give_a_bare_line_and_a_json_report_reads_like_options() -> None:
    assert rerun_arguments(_report_options(Options()), seed=3) == ["--seed", "3"]
    # A JSON report holds lists; an older report may lack a key: both read as the default.
    assert rerun_arguments({"profiles": ["frontend"], "headers": []}) == ["--profile", "frontend"]


def test_pytest_options_are_the_cli_flags_spelled_rl() -> None:
    cli = {names[-1] for names, _ in arguments()}
    pytest_names = {names[0] for names, _ in arguments(pytest=True)}
    expected = {"--rl-url"} | {
        "--rl-" + name.removeprefix("--") for name in cli if name.startswith("--")
    }
    assert pytest_names == expected - {"--rl-check"}  # pytest selects items itself (-k)
    argv = shlex.split(
        "--rl-url http://127.0.0.1:9 --rl-load 2x3 --rl-timeout 4 --rl-profile frontend "
        "--rl-header 'A: b' --rl-client-conventions nixl"
    )
    ns = _parser(pytest_style=True).parse_args(argv)
    options = from_flags(lambda dest: getattr(ns, "rl_" + dest), pytest=True)
    assert (options.load_clients, options.load_requests, options.timeout) == (2, 3, 4.0)
    assert options.headers == (("A", "b"),) and options.client_conventions == ("nixl",)


#: Refused values, with the message both surfaces give: numbers out of bounds, ...
BOUNDS = [
    (["--timeout", "0"], "timeout must be a positive number of seconds; found 0.0 (--timeout)"),
    (["--timeout", "inf"], "timeout must be a positive number"),
    (["--load-budget", "nan"], "load_budget must be a positive number"),
    (["--polls", "0"], "polls must be at least 1, found 0 (--polls)"),
    (["--topologies", "0"], "topologies must be at least 1"),
]
LOADS = [
    (["--load", "0x3"], "load_clients must be at least 1, found 0 (--load)"),
    (["--load", "3x0"], "load_requests must be at least 1, found 0 (--load)"),
    (["--load", "lots"], "--load: expected CLIENTSxREQUESTS such as 32x20, got 'lots'"),
]
#: ... names that are not known, ...
NAMES = [
    (["--profile", "nope"], "unknown profile(s) nope; expected frontend, frontend-v2"),
    (["--client-conventions", "gloo"], "unknown client convention(s) gloo"),
    (["--header", "no colon"], "--header: header: expected NAME: VALUE"),
    (["--requirement", "LIST-66"], "--requirement: unknown requirement ID 'LIST-66'"),
]
#: ... and options that exclude each other.
CLASHES = [
    (["--client", "a:b", "--client-cmd", "c"], "--client and --client-cmd exclude each other"),
    (["--cacert", "ca.pem", "--insecure"], "--cacert and --insecure exclude each other"),
    (["http://x", "--target", "reference"], "--target reference chooses an embedded target"),
]


@pytest.mark.parametrize(("argv", "message"), [*BOUNDS, *LOADS, *NAMES, *CLASHES])
def test_both_surfaces_refuse_the_same_values_with_the_same_message(
    argv: list[str], message: str
) -> None:
    args = _parser().parse_args(argv)
    with pytest.raises(ValueError) as cli:
        from_flags(lambda dest: getattr(args, dest))
    assert message in str(cli.value)
    spelled: list[str] = []
    for arg in argv:  # the same command line as pytest options
        if arg.startswith("http"):
            spelled += ["--rl-url", arg]
        else:
            spelled.append(pytest_spelling(arg) if arg.startswith("--") else arg)
    ns = _parser(pytest_style=True).parse_args(spelled)
    with pytest.raises(ValueError) as plugin:
        from_flags(lambda dest: getattr(ns, "rl_" + dest), pytest=True)
    assert str(plugin.value) == str(cli.value)


def test_pytest_spelling_renames_only_the_suites_flags() -> None:
    text = "--skip-requirement: unknown ID (prime-rl-dynamo conformance --list shows every ID)"
    assert pytest_spelling(text) == (
        "--rl-skip-requirement: unknown ID (prime-rl-dynamo conformance --list shows every ID)"
    )
    assert pytest_spelling("--client and --client-cmd") == "--rl-client and --rl-client-cmd"


def test_the_docs_list_every_option() -> None:
    docs = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in docs.splitlines() if line.startswith("| `"))
    for names, _ in arguments():
        if names[-1].startswith("--"):
            assert re.search(rf"(?<![\w-]){re.escape(names[-1])}(?![\w-])", table), names[-1]
    for names, _ in arguments(pytest=True):
        assert f"`{names[0]}`" in docs, names[0]


@pytest.mark.integration
def test_registering_the_pytest_options_imports_nothing_heavy() -> None:
    # Every pytest run registers them (the plugin is a pytest11 entry point).
    code = (
        "import sys; from conformance.options import arguments; list(arguments(pytest=True)); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx', 'schemathesis', 'hypothesis', 'rich', 'prime_rl_dynamo', 'starlette')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_long_reproduce_line_wraps_as_the_shell_reads_it() -> None:
    from conformance.reporting import shell_lines

    words = ["  reproduce:", "prime-rl-dynamo", "conformance", *["--requirement", "WORKER-10"] * 6]
    text = shell_lines(words, 40)
    lines = text.splitlines()
    assert len(lines) > 1 and all(len(line) <= 40 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    assert shlex.split(text.replace(" \\\n", " ")) == [w.strip() for w in words]
    assert shell_lines(["a", "b"], 40) == "a b"


def test_the_suites_body_cap_is_the_clients() -> None:
    """options.py spells the cap itself (it imports only the standard library); it is the one
    value of prime_rl_dynamo.defaults."""
    from prime_rl_dynamo.defaults import MAX_BODY_BYTES

    assert Options().max_body_bytes == MAX_BODY_BYTES


def test_the_suites_backends_and_planes_are_the_harness_ones() -> None:
    from prime_rl_dynamo.wire import DISCOVERY_BACKENDS, REQUEST_PLANES

    for backend in DISCOVERY_BACKENDS:
        assert Options(discovery=backend).discovery == backend
    for plane in REQUEST_PLANES:
        assert Options(request_plane=plane).request_plane == plane
    # One list each (wire's): anything else is refused, naming that list and the flag.
    with pytest.raises(ValueError, match=r"expected file, etcd \(--discovery\)"):
        Options(discovery="consul")
    with pytest.raises(ValueError, match=r"expected tcp, nats, http \(--request-plane\)"):
        Options(request_plane="udp")
