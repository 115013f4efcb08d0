"""The options of a conformance run, defined once: each field of ``Options`` carries its flag, help,
default and validation, and the CLI's arguments, the pytest plugin's ``--rl-*`` options and the
reproduce command are all generated from those fields, so the three cannot drift apart.

Only the standard library is imported at module level: the pytest plugin, which every pytest run
loads, registers its options from here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = [
    "DEFAULT_CLIENT",
    "GATEWAY_OPTIONS",
    "Flag",
    "Options",
    "add_gateway_arguments",
    "arguments",
    "from_flags",
    "given",
    "pytest_spelling",
    "rerun_arguments",
]

#: How the pytest plugin spells a CLI flag: ``--timeout`` is ``--rl-timeout``.
PYTEST_PREFIX = "--rl-"


@dataclass(frozen=True)
class Flag:
    """How one option is spelled on a command line, read from it and shown in a reproduce line.

    ``name`` is the CLI's flag (a name without dashes is the positional argument); pytest spells
    it ``--rl-`` and the name without its dashes. ``read`` turns the raw command-line value into
    field values and ``show`` turns field values back into command-line values, for a flag that is
    not one plain value (``--load 32x20`` sets two fields); ``covers`` names the further fields it
    sets.
    """

    name: str
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] = str
    repeat: bool = False  # repeatable: the field holds one item per use
    switch: bool = False  # given or not
    short: str | None = None
    pytest: bool = True  # also a --rl-* option of the pytest plugin
    read: Callable[[Any], dict[str, Any]] | None = None
    show: Callable[[Mapping[str, Any]], list[str]] | None = None
    covers: tuple[str, ...] = ()

    @property
    def positional(self) -> bool:
        """Whether the CLI takes this one as a positional argument."""
        return not self.name.startswith("-")

    @property
    def dest(self) -> str:
        """The attribute an argparse namespace keeps the raw value under (``rl_`` + it in pytest)."""
        return self.name.lstrip("-").replace("-", "_")

    @property
    def pytest_name(self) -> str:
        """The pytest plugin's spelling of this flag."""
        return PYTEST_PREFIX + self.dest.replace("_", "-")


def _option(
    default: Any,
    flag: Flag | None = None,
    *,
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None,
    noun: str | None = None,
    minimum: int | None = None,
    positive: bool = False,
) -> Any:
    # A field of Options: its default, its flag and what a valid value is (checked on every
    # Options, whichever surface built it). Lazy choices keep this module's imports cheap.
    meta = {
        "flag": flag,
        "choices": choices,
        "noun": noun,
        "minimum": minimum,
        "positive": positive,
    }
    return field(default=default, metadata=meta)


def _text(name: str, help: str, metavar: str | None = None) -> Any:
    """An optional text (None when not given)."""
    return _option(None, Flag(name, help, metavar=metavar))


def _ids(name: str, help: str, metavar: str = "ID", **flag: Any) -> Any:
    """A repeatable flag: a tuple of IDs or names."""
    return _option((), Flag(name, help, metavar=metavar, repeat=True, **flag))


#: The client under test when neither ``--client`` nor ``--client-cmd`` names one: the project's own.
DEFAULT_CLIENT = "conformance.examples.project_client:run"


def _switch(name: str, help: str) -> Any:
    return _option(False, Flag(name, help, switch=True))


def _seconds(default: float, name: str, help: str) -> Any:
    """A positive finite number of seconds."""
    return _option(default, Flag(name, help, metavar="S", type=float), positive=True)


def _count(default: int, name: str, help: str) -> Any:
    """A whole number, at least 1."""
    return _option(default, Flag(name, help, metavar="N", type=int), minimum=1)


def _choice(
    default: str,
    name: str,
    help: str,
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]],
    noun: str,
) -> Any:
    return _option(default, Flag(name, help), choices=choices, noun=noun)


def _profiles() -> tuple[str, ...]:
    from conformance.registry import PROFILES

    return PROFILES


def _listing_profiles() -> tuple[str, ...]:
    from conformance.registry import LISTING_PROFILES

    return LISTING_PROFILES


def _discovery_backends() -> tuple[str, ...]:
    from prime_rl_dynamo.wire import DISCOVERY_BACKENDS

    return DISCOVERY_BACKENDS


def _request_planes() -> tuple[str, ...]:
    from prime_rl_dynamo.wire import REQUEST_PLANES

    return REQUEST_PLANES


def _conventions() -> tuple[str, ...]:
    from prime_rl_dynamo.plan import Convention

    return Convention.names()


def _read_load(text: str) -> dict[str, Any]:
    try:
        clients, requests = (int(x) for x in str(text).lower().split("x", 1))
    except ValueError:
        raise ValueError(f"expected CLIENTSxREQUESTS such as 32x20, got {text!r}") from None
    return {"load_clients": clients, "load_requests": requests}


def _show_load(values: Mapping[str, Any]) -> list[str]:
    return [f"{values['load_clients']}x{values['load_requests']}"]


def _read_conventions(text: str) -> dict[str, Any]:
    return {"client_conventions": tuple(c.strip() for c in str(text).split(",") if c.strip())}


def _show_conventions(values: Mapping[str, Any]) -> list[str]:
    return [",".join(values["client_conventions"])]


def _read_headers(texts: list[str]) -> dict[str, Any]:
    from prime_rl_dynamo.http import parse_headers

    return {"headers": parse_headers(texts)}


def _show_headers(values: Mapping[str, Any]) -> list[str]:
    # A report holds "Name: <redacted>" already; a header pair is redacted here: never a value.
    from prime_rl_dynamo.redaction import redacted_headers

    return redacted_headers(values["headers"])


@dataclass(frozen=True)
class Options:
    """Everything that decides what a run does (recorded in the JSON report)."""

    url: str | None = _text(
        "url",
        "RL listener base URL, e.g. http://127.0.0.1:8001; without it, an embedded target",
        "URL",
    )
    profiles: tuple[str, ...] = _option(
        (),
        Flag(
            "--profile",
            "profile to run (repeatable); default: frontend+workers with a URL, all without",
            metavar="PROFILE",
            repeat=True,
        ),
        choices=_profiles,
        noun="profile",
    )
    strict: bool = _switch("--strict", "SHOULD failures fail the run")
    requirements: tuple[str, ...] = _ids(
        "--requirement", "only checks of this requirement ID (repeatable)"
    )
    checks: tuple[str, ...] = _ids(
        "--check",
        "only this check, by its ID such as LIST-6::body (repeatable; pytest selects its items)",
        metavar="CHECK",
        pytest=False,
    )
    seed: int | None = _option(
        None,
        Flag(
            "--seed",
            "seed of generated topologies, a whole number >= 0 (default: random)",
            type=int,
        ),
        minimum=0,
    )
    client: str | None = _text(
        "--client", "client under test, a Python callable", metavar="MODULE:FUNCTION"
    )
    client_cmd: str | None = _text("--client-cmd", "client under test, a shell command", "CMD")
    target: str = _choice(
        "auto",
        "--target",
        "without URL: the server implementation under test for every profile that stands one "
        "up (frontend, workers, roundtrip; roundtrip needs dynamo); auto: dynamo if importable",
        ("auto", "dynamo", "reference"),
        "target",
    )
    discovery: str = _choice(
        "file",
        "--discovery",
        "discovery backend of the real Dynamo fleets the suite stands up",
        _discovery_backends,
        "discovery backend",
    )
    request_plane: str = _choice(
        "tcp",
        "--request-plane",
        "request plane of the real Dynamo fleets the suite stands up (nats starts a "
        "nats-server; every Dynamo release with the RL listener refuses http)",
        _request_planes,
        "request plane",
    )
    namespace_scope: str = _choice(
        "exact",
        "--namespace-scope",
        "namespace scope of the roundtrip profile's fleets: exact (DYN_NAMESPACE), prefix "
        "(workers in several namespaces under DYN_NAMESPACE_PREFIX) or suffix "
        "(DYN_NAMESPACE_WORKER_SUFFIX)",
        ("exact", "prefix", "suffix"),
        "namespace scope",
    )
    timeout: float = _seconds(
        10.0, "--timeout", "deadline of each whole HTTP exchange with the target, seconds"
    )
    max_body_bytes: int = _count(
        8
        * 1024
        * 1024,  # defaults.MAX_BODY_BYTES (standard library only here; a test holds them equal)
        "--max-body-bytes",
        "body size cap of each reply, like the client's; past it HTTP-1 fails",
    )
    polls: int = _count(5, "--polls", "repeated polls of the listing for HTTP-6")
    load_clients: int = _option(
        32,
        Flag(
            "--load",
            "concurrent polling load for HTTP-7: pollers x requests each",
            metavar="CLIENTSxREQUESTS",
            read=_read_load,
            show=_show_load,
            covers=("load_requests",),
        ),
        minimum=1,
    )
    load_requests: int = _option(20, minimum=1)  # set by --load
    load_budget: float = _seconds(
        30.0, "--load-budget", "seconds the HTTP-7 load may take before it is cut short"
    )
    topologies: int = _count(
        3, "--topologies", "generated topologies per client/roundtrip run (plus the pinned one)"
    )
    client_timeout: float = _seconds(
        60.0, "--client-timeout", "seconds a client under test may take per topology"
    )
    client_poll_interval: float = _seconds(
        1.0,
        "--client-poll-interval",
        "the poll interval the client under test really has, seconds (default 1: this package's "
        "pool and Prime-RL's); every deadline and schedule of the client profile derives from it, "
        "and a client that can follow it gets it as CONFORMANCE_POLL_INTERVAL",
    )
    client_whole_seconds: bool = _switch(
        "--client-whole-seconds",
        "the client under test takes its timeouts in whole seconds (Prime-RL's "
        "wait_for_ready_timeout): every deadline it is given is rounded up to one",
    )
    skip_requirements: tuple[str, ...] = _ids(
        "--skip-requirement",
        "do not run the checks of this requirement ID (repeatable; reported as skipped)",
    )
    waivers: str | None = _text(
        "--waivers",
        "waiver file of known deviations (YAML or JSON): matched failures are reported as waived; a "
        "bare name picks a file shipped in conformance/deviations/ (an unknown name lists them)",
        "FILE",
    )
    target_version: str | None = _text(
        "--target-version", "the target's version as CI knows it, recorded in the reports", "TEXT"
    )
    # Reaching a target behind a gateway: headers sent to the target's origin only (values never
    # recorded), and TLS verification: a CA bundle path, or insecure (no certificate check).
    headers: tuple[tuple[str, str], ...] = _ids(
        "--header",
        "send this header to the target (repeatable), e.g. 'Authorization: Bearer ...'; "
        "values are redacted in every output",
        metavar="'NAME: VALUE'",
        short="-H",
        read=_read_headers,
        show=_show_headers,
    )
    cacert: str | None = _text(
        "--cacert", "verify the target's TLS certificate against this CA bundle (PEM)", "FILE"
    )
    insecure: bool = _switch(
        "--insecure", "do not verify the target's TLS certificate (test setups only)"
    )
    client_conventions: tuple[str, ...] = _option(
        (),
        Flag(
            "--client-conventions",
            "conventions the client under test implements, comma-separated (default: all); the "
            "others' requirements are skipped",
            metavar="LIST",
            read=_read_conventions,
            show=_show_conventions,
        ),
        choices=_conventions,
        noun="client convention",
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            _validate(f, getattr(self, f.name))
        if self.headers:  # however built (CLI, pytest, keywords): one parser judges every header
            from prime_rl_dynamo.http import parse_headers

            object.__setattr__(self, "headers", parse_headers(self.headers))
        for first, second in (("client", "client_cmd"), ("cacert", "insecure")):
            if getattr(self, first) and getattr(self, second):
                raise ValueError(
                    f"{_flag_text(first)} and {_flag_text(second)} exclude each other; give one"
                )
        # IDs are matched case-insensitively and stored as the catalog spells them.
        from prime_rl_dynamo.requirements import resolve_requirements

        if self.requirements:
            object.__setattr__(self, "requirements", resolve_requirements(self.requirements))
        if self.skip_requirements:
            object.__setattr__(
                self,
                "skip_requirements",
                resolve_requirements(self.skip_requirements, "--skip-requirement"),
            )
        if self.url is not None and self.target != "auto":
            raise ValueError(
                f"--target {self.target} chooses an embedded target; with a URL the target is "
                "that URL (drop --target, or drop the URL)"
            )

    @property
    def verify(self) -> bool | str:
        """httpx's ``verify`` for the target: False (--insecure), a CA bundle, or True."""
        return False if self.insecure else (self.cacert or True)

    def resolved_profiles(self) -> tuple[str, ...]:
        """The profiles this run executes, in execution order."""
        every = _profiles()
        if self.profiles:
            return tuple(p for p in every if p in self.profiles)
        return _listing_profiles() if self.url else every

    def base_url(self) -> str | None:
        """The target's RL listener base URL, normalised like the client's discovery URL.

        ``BASE``, ``BASE/v1`` and ``BASE/v1/rl/workers`` name the same target; a URL the client
        would refuse (another scheme, user info: CRED-1, a query) is a ValueError (a usage error).
        """
        if self.url is None:
            return None
        from prime_rl_dynamo.client import normalize_discovery_url
        from prime_rl_dynamo.wire import DISCOVERY_PATH

        try:
            workers = normalize_discovery_url(self.url)
        except ValueError as exc:
            raise ValueError(f"target URL: {exc}") from None
        return workers[: -len(DISCOVERY_PATH)].rstrip("/")

    def check_usable(self) -> None:
        """Refuse, before anything runs, what only the outside world can refuse: a URL the client
        would not use, an unreadable CA bundle or waiver file, an unknown check ID (ValueError)."""
        self.base_url()
        if self.cacert and self.insecure:  # as discover refuses them together
            raise ValueError(
                "--cacert and --insecure exclude each other: verify against the CA bundle, or "
                "do not verify at all"
            )
        self._check_release()
        if self.cacert:
            from prime_rl_dynamo.http import verify_setting

            verify_setting(self.cacert, self.insecure)
        if self.waivers:
            from conformance.waivers import load_waivers

            load_waivers(self.waivers)
        if self.checks:
            import difflib

            from conformance.registry import all_checks

            known = [c.id for c in all_checks()]
            for wanted in self.checks:
                if wanted not in known:
                    near = difflib.get_close_matches(wanted, known, n=1, cutoff=0.6)
                    hint = f"; did you mean {near[0]}?" if near else ""
                    raise ValueError(f"--check: unknown check ID {wanted!r}{hint}")

    def _check_release(self) -> None:
        """``--target dynamo`` on a release that cannot host the harness's fleet, or a roundtrip
        scope the installed release lacks: one line naming the release (ValueError)."""
        if self.url or self.target == "reference":
            return
        roundtrip = "roundtrip" in self.resolved_profiles()
        if self.target != "dynamo" and not roundtrip:
            return
        try:
            from prime_rl_dynamo.errors import UnsupportedReleaseError
            from prime_rl_dynamo.suite.harness import require_release
        except ImportError:  # pragma: no cover - the harness ships with the package
            return
        try:
            release = require_release()
        except UnsupportedReleaseError as exc:
            if self.target == "dynamo":
                raise ValueError(f"--target dynamo: cannot host a fleet: {exc}") from None
            return  # auto: the roundtrip profile is skipped, saying why
        wanted = {"prefix": "prefix", "suffix": "suffix"}.get(self.namespace_scope)
        if roundtrip and wanted is not None and wanted not in release.scopes:
            raise ValueError(
                f"--namespace-scope {self.namespace_scope}: {release.label} has no {wanted} "
                f"namespace scope (scopes it has: {', '.join(release.scopes)})"
            )


def _validate(f: Field[Any], value: Any) -> None:
    meta = f.metadata
    where = f" ({_flag_text(f.name)})"
    choices = meta.get("choices")
    if choices is not None and value is not None:
        allowed = choices() if callable(choices) else choices
        given = value if isinstance(value, tuple) else (value,)
        unknown = [v for v in given if v not in allowed]
        if unknown:
            raise ValueError(
                f"unknown {meta['noun']}(s) {', '.join(map(str, unknown))}; expected "
                f"{', '.join(allowed)}{where}"
            )
    if meta.get("minimum") is not None and value is not None and value < meta["minimum"]:
        raise ValueError(f"{f.name} must be at least {meta['minimum']}, found {value}{where}")
    if meta.get("positive") and not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{f.name} must be a positive number of seconds; found {value}{where}")


def _flags() -> Iterator[tuple[Field[Any], Flag]]:
    for f in fields(Options):
        flag = f.metadata.get("flag")
        if flag is not None:
            yield f, flag


def _flag_text(name: str) -> str:
    """The flag that sets field ``name`` (``--load`` for load_requests)."""
    for f, flag in _flags():
        if name == f.name or name in flag.covers:
            return flag.name
    return name


def _default_text(f: Field[Any], flag: Flag) -> str | None:
    if flag.switch or flag.repeat:
        return None
    if flag.show is not None:
        shown = flag.show({n.name: n.default for n in fields(Options)})
        return shown[0] if shown and shown[0] else None
    if f.default is None:
        return None
    return f"{f.default:g}" if isinstance(f.default, float) else str(f.default)


#: The options that reach a target behind a gateway (headers for its origin, TLS trust); every
#: command that talks to a frontend takes them as ``Options`` declares them (``discover`` too).
GATEWAY_OPTIONS: tuple[str, ...] = ("headers", "cacert", "insecure")


def add_gateway_arguments(parser: argparse.ArgumentParser) -> None:
    """``-H/--header``, ``--cacert`` and ``--insecure`` on another command's parser, declared by
    ``Options`` (one flag, help and default each); ``--cacert`` and ``--insecure`` exclude each
    other there as here. Read them with ``prime_rl_dynamo.http.parse_headers`` and
    ``verify_setting``."""
    tls = parser.add_mutually_exclusive_group()
    for names, keywords in arguments(only=GATEWAY_OPTIONS):
        (parser if "--header" in names else tls).add_argument(*names, **keywords)


def arguments(
    *, pytest: bool = False, only: tuple[str, ...] | None = None
) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """``(names, keywords)`` for argparse's ``add_argument`` (the CLI) or pytest's ``addoption``
    (``pytest=True``: every flag spelled ``--rl-*``), one per option flag (``only``: of these
    fields).

    A value left out is None (a repeatable flag's is []), so reading keeps the field's default.
    Fixed choices are argparse's; every value is also checked by ``Options`` itself, so both
    surfaces refuse the same values with the same message.
    """
    for f, flag in _flags():
        if (pytest and not flag.pytest) or (only is not None and f.name not in only):
            continue
        text = flag.help
        choices = f.metadata.get("choices")
        if callable(choices) and not pytest:  # the CLI may import what names them
            text += f"; one of {', '.join(choices())}"
        default = _default_text(f, flag)
        keywords: dict[str, Any] = {
            "help": text if default is None else f"{text} (default: {default})"
        }
        if isinstance(choices, tuple):
            keywords["choices"] = choices
        if flag.switch:
            keywords["action"] = "store_true"
        elif flag.repeat:
            keywords.update(action="append", default=[])
        else:
            keywords["default"] = None
            if flag.type is not str:
                keywords["type"] = flag.type
        if flag.metavar and not flag.switch:
            keywords["metavar"] = flag.metavar
        if pytest:
            yield (flag.pytest_name,), {**keywords, "dest": "rl_" + flag.dest}
        elif flag.positional:
            yield (flag.name,), {**keywords, "nargs": "?"}
        else:
            names = (flag.short, flag.name) if flag.short else (flag.name,)
            yield names, {**keywords, "dest": flag.dest}


def given(raw: Any) -> bool:
    """Whether a flag's raw value was given (left out: None, [] or False; 0 is a value)."""
    return raw is not None and raw is not False and raw != []


def from_flags(get: Callable[[str], Any], *, pytest: bool = False) -> Options:
    """The Options a command line asks for: ``get(dest)`` is each flag's raw value (None, [] or
    False when left out), of the pytest plugin's flags with ``pytest``. ValueError names the
    flag."""
    values: dict[str, Any] = {}
    for f, flag in _flags():
        if pytest and not flag.pytest:
            continue
        raw = get(flag.dest)
        if not given(raw):
            continue
        try:
            if flag.read is not None:
                values.update(flag.read(raw))
            else:
                values[f.name] = tuple(raw) if flag.repeat else raw
        except ValueError as exc:
            raise ValueError(f"{flag.name}: {exc}") from None
    return Options(**values)


def pytest_spelling(message: str) -> str:
    """``message`` with every CLI flag it names spelled as the pytest plugin spells it."""
    spelled = {flag.name: flag.pytest_name for _, flag in _flags() if not flag.positional}
    return re.sub(r"(?<![\w-])--[a-z][a-z-]*", lambda m: spelled.get(m[0], m[0]), message)


def _plain(value: Any) -> Any:
    # A JSON report holds lists where Options holds tuples.
    return tuple(_plain(v) for v in value) if isinstance(value, list | tuple) else value


def rerun_arguments(options: Mapping[str, Any], seed: int | None = None) -> list[str]:
    """The ``prime-rl-dynamo conformance`` arguments that rerun a run with these options (a
    report's ``options``): every option that differs from its default, then ``--seed``. Header
    values are never shown (``Name: <redacted>``); a key a report lacks is its default."""
    defaults = {f.name: f.default for f in fields(Options)}
    current = {name: _plain(options.get(name, default)) for name, default in defaults.items()}
    out: list[str] = []
    for f, flag in _flags():
        names = (f.name, *flag.covers)
        if f.name == "seed" or all(current[n] == _plain(defaults[n]) for n in names):
            continue
        if flag.show is not None:
            shown = flag.show(current)
        else:
            value = current[f.name]
            shown = [str(v) for v in value] if flag.repeat else [str(value)]
        if flag.positional:
            out[:0] = shown
        elif flag.switch:
            out.append(flag.name)
        else:
            for value in shown:
                out += [flag.short or flag.name, value]
    if seed is not None:
        out += ["--seed", str(seed)]
    return out
