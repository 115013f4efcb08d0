"""Run conformance checks against a target and build the report: the one engine behind the CLI,
the pytest plugin and ``conformance.run``, so all three give the same results.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform
import random
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from conformance._storage import tool_state_in_cache
from conformance.options import DEFAULT_CLIENT, Options
from conformance.registry import (
    LISTENER_PROFILES,
    LISTING_PROFILES,
    Check,
    CheckError,
    Failed,
    Skipped,
    all_checks,
)
from conformance.results import Report, Result, Status
from prime_rl_dynamo.wire import DISCOVERY_PATH

if TYPE_CHECKING:
    import httpx

    from prime_rl_dynamo.suite.fleet import Fleet

__all__ = [
    "ListenerContext",
    "Options",
    "ProfileContext",
    "Progress",
    "RunContext",
    "listener_profile",
    "profile_setup",
    "run",
    "select_checks",
]

Progress = Callable[[str, Check, "Result | None"], None]


@dataclass
class RunContext:
    """What every profile sees: the options, the seed, the target and a place to leave notes."""

    options: Options
    seed: int
    target: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # RL listener base URL of the target (frontend/workers profiles)
    fleet: Fleet | None = None  # the embedded fleet, when the suite stood one up
    notes: list[str] = field(default_factory=list)
    # the probe's GET of the listing (or how it broke off): the frontend profile's first GET
    first_get: Any = None
    # what the client under test logged (warnings and worse), per run: the report's client_log
    client_log: list[dict[str, Any]] = field(default_factory=list)

    def observe(self, headers: dict[str, str], parsed: Any) -> None:
        """Record what the target says about itself (first listing reply only): its Server
        header, a version header if any, and the listing's protocol_version."""
        if "server" in self.target:
            return
        self.target["server"] = headers.get("server")
        version = next(
            (
                headers[h]
                for h in ("x-dynamo-version", "x-version", "x-server-version")
                if h in headers
            ),
            None,
        )
        self.target["reported_version"] = version
        if isinstance(parsed, dict) and "protocol_version" in parsed:
            self.target["protocol_version"] = parsed["protocol_version"]

    def rng(self, salt: str) -> random.Random:
        """A random generator derived from the run's seed (same seed, same choices)."""
        return random.Random(f"{self.seed}:{salt}")


# profile name -> factory(RunContext) -> context manager yielding the profile's context object
_SETUPS: dict[str, Callable[[RunContext], contextlib.AbstractContextManager[Any]]] = {}


def profile_setup(
    name: str,
) -> Callable[
    [Callable[[RunContext], contextlib.AbstractContextManager[Any]]],
    Callable[[RunContext], contextlib.AbstractContextManager[Any]],
]:
    """Register the context-manager factory that prepares a profile's shared state."""

    def register(
        factory: Callable[[RunContext], contextlib.AbstractContextManager[Any]],
    ) -> Callable[[RunContext], contextlib.AbstractContextManager[Any]]:
        _SETUPS[name] = factory
        return factory

    return register


def select_checks(options: Options) -> list[Check]:
    """The checks a run with these options executes, in order (--skip-requirement excluded)."""
    chosen = all_checks(options.resolved_profiles())
    if options.requirements:
        chosen = [c for c in chosen if c.requirement in options.requirements]
    if options.checks:
        wanted = set(options.checks)
        chosen = [c for c in chosen if c.id in wanted]
    return [c for c in chosen if c.requirement not in options.skip_requirements]


def explain_empty(options: Options) -> str:
    """Why a selection holds no check: which profiles check the requested requirements."""
    profiles = options.resolved_profiles()
    every = all_checks()
    parts = []
    for req in options.requirements:
        where = sorted({c.profile for c in every if c.requirement == req})
        if not where:
            parts.append(f"{req} has no live check (see docs/conformance-matrix.md, 'enforced by')")
        elif not set(where) & set(profiles):
            parts.append(
                f"{req} is checked only by the {', '.join(where)} profile, not selected "
                f"(this run: {', '.join(profiles)}; add --profile {where[0]})"
            )
        elif req in options.skip_requirements:
            parts.append(f"{req} is also given to --skip-requirement")
    return "no check was selected: " + ("; ".join(parts) or "the selection matches no check")


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("prime-rl-dynamo", "schemathesis", "hypothesis", "httpx", "ai-dynamo-runtime"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


#: What to do when real Dynamo is asked for and the dynamo extra is missing.
DYNAMO_EXTRA = (
    "real Dynamo needs the dynamo extra: pip install 'prime-rl-dynamo[dynamo]' "
    "(from a checkout: pip install -e '.[dynamo]')"
)


def dynamo_unavailable() -> str | None:
    """Why the suite cannot stand up real Dynamo here (one line), or None when it can: the
    runtime and the harness import, and the installed release can host a stub fleet."""
    try:
        import dynamo.runtime  # noqa: F401

        from prime_rl_dynamo.errors import UnsupportedReleaseError
        from prime_rl_dynamo.suite.harness import require_release
    except Exception:
        return "the dynamo extra is not importable"
    try:
        require_release()
    except UnsupportedReleaseError as exc:
        return str(exc)
    return None


def dynamo_hint(reason: str) -> str:
    """What to do about ``dynamo_unavailable()``'s reason: the extra to install, when missing."""
    return DYNAMO_EXTRA if reason == "the dynamo extra is not importable" else reason


def dynamo_available() -> bool:
    """Whether the real Dynamo runtime and the project's harness can be imported, and the
    installed release can host a stub fleet (``dynamo_unavailable`` says why not)."""
    return dynamo_unavailable() is None


def dynamo_release() -> str | None:
    """The installed ``ai-dynamo-runtime`` release (``1.5.1``), or None."""
    from prime_rl_dynamo.suite.harness import installed_release

    release = installed_release()
    return release.version if release is not None else None


@contextlib.contextmanager
def _target(run: RunContext, profiles: tuple[str, ...]) -> Iterator[None]:
    """Point the run at its target, standing up the embedded default when no URL was given."""
    opts = run.options
    if opts.url:
        run.url = opts.base_url()
        run.target = {"kind": "url", "url": run.url}
        if run.url and set(LISTING_PROFILES) & set(profiles):
            _preflight(run.url, opts.timeout)
            _looks_like_a_listener(run, run.url)
        yield
        return
    if not set(LISTENER_PROFILES) & set(profiles):
        run.target = {"kind": "none", "description": "the fleets each profile stands up itself"}
        if "roundtrip" in profiles and opts.target != "reference" and dynamo_available():
            run.target["dynamo_release"] = dynamo_release()
        yield
        return
    missing = dynamo_unavailable() if opts.target == "dynamo" else None
    if missing is not None:
        run.target = {"kind": "dynamo", "description": f"real Dynamo ({missing})"}
        raise TargetUnreachable(f"--target dynamo: {dynamo_hint(missing)}")
    use_dynamo = opts.target == "dynamo" or (opts.target == "auto" and dynamo_available())
    if use_dynamo:
        from prime_rl_dynamo.suite.harness import start_dynamo_fleet  # type: ignore[attr-defined,unused-ignore]

        with start_dynamo_fleet(
            discovery=opts.discovery, request_plane=opts.request_plane
        ) as fleet:
            run.fleet = fleet
            run.url = fleet.frontend_url.rstrip("/")
            run.target = {
                "kind": "dynamo",
                "url": run.url,
                "dynamo_release": fleet.release.version,
                "description": f"real {fleet.release.label} fleet from the harness "
                f"(default topology, {opts.discovery} discovery, "
                f"{opts.request_plane} request plane)",
            }
            _wait_listed(fleet)
            yield
        return
    from prime_rl_dynamo.suite.reference import start_reference_fleet

    with start_reference_fleet(seed=run.seed) as fleet:
        run.fleet = fleet
        run.url = fleet.frontend_url.rstrip("/")
        why = "" if opts.target == "reference" else f" ({dynamo_unavailable()})"
        run.target = {
            "kind": "reference",
            "url": run.url,
            "description": f"embedded reference frontend (default topology){why}",
        }
        yield


class TargetUnreachable(Exception):
    """Nothing listens at the target URL, or nothing there looks like an RL listener (SPEC §14.4):
    no check can decide anything (the run is inconclusive)."""


def _preflight(base: str, timeout: float) -> None:
    # One TCP connect before any check: an unreachable target is one clear line, not N errors.
    import socket

    import httpx

    url = httpx.URL(base)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.host, port), timeout=min(timeout, 10.0)).close()
    except ConnectionRefusedError:
        raise TargetUnreachable(f"nothing listening at {base}: connection refused") from None
    except socket.gaierror as exc:
        raise TargetUnreachable(f"cannot resolve the host of {base}: {exc.strerror}") from None
    except TimeoutError:
        raise TargetUnreachable(
            f"nothing answers at {base}: connect timed out after {min(timeout, 10.0):g} s"
        ) from None
    except OSError as exc:
        raise TargetUnreachable(f"cannot connect to {base}: {exc.strerror or exc}") from None


def _looks_like_a_listener(run: RunContext, base: str) -> None:
    # A wrong port or path is the operator's mistake, not the target's (SPEC §14.4).
    from conformance._http import target_client
    from conformance.listener import not_a_listener

    with target_client(run.options, base) as client:
        problem, run.first_get = not_a_listener(client, base)
    if problem is not None:
        run.notes.extend(problem.notes)
        raise TargetUnreachable(problem.line)


def _profile_target(name: str, run: RunContext) -> str:
    """What a profile really checks in this run (the header names it per profile)."""
    opts = run.options
    if name in LISTING_PROFILES:
        where = run.target.get("description") or run.target.get("url") or "no target"
        return where if name == "frontend" else f"the workers listed by {where}"
    if name == "client":
        under_test = opts.client or (f"command {opts.client_cmd!r}" if opts.client_cmd else None)
        return (
            f"client {under_test or DEFAULT_CLIENT + ' (default)'}, driving reference fleets "
            "the suite stands up (the fleet is the instrument, the client is under test)"
        )
    if opts.target == "reference":
        return "not run: --target reference (the roundtrip checks real Dynamo end to end)"
    release = dynamo_release()
    label = f"Dynamo {release}" if release else "Dynamo"
    return f"real {label} fleets from the harness ({opts.discovery} discovery)"


def _wait_listed(fleet: Fleet) -> None:
    # The real frontend lists workers only once they registered: wait for all of them.
    fleet.wait_ready(len(fleet.engines), timeout=60)


def _run_one(item: Check, ctx: Any, strict: bool) -> Result:
    began = time.time()
    started = time.perf_counter()
    details: dict[str, Any] = {}
    violations: tuple[dict[str, Any], ...] = ()
    try:
        note = item.func(ctx)
        status, message = Status.PASS, note or ""
        if isinstance(ctx, ProfileContext):
            details = ctx.take_details(item.id)
    except Failed as exc:
        details = exc.details
        violations = tuple(exc.violations)
        failing = item.level == "MUST" or strict
        status, message = (Status.FAIL if failing else Status.WARN), str(exc)
    except Skipped as exc:
        status, message = Status.SKIP, str(exc)
    except CheckError as exc:
        status, message = Status.ERROR, str(exc)
    except Exception as exc:  # a bug in the suite, or a target the suite could not talk to
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
        status, message = Status.ERROR, f"{type(exc).__name__}: {exc}\n" + "".join(tb)
    if isinstance(ctx, ProfileContext) and status != Status.PASS:
        details = {**ctx.take_details(item.id), **details}
    return _result(
        item,
        status,
        message,
        details=details,
        duration=round(time.perf_counter() - started, 6),
        started=began,
        violations=violations,
    )


def _result(item: Check, status: Status, message: str, **measured: Any) -> Result:
    return Result(
        item.id, item.requirement, item.level, item.profile, item.title, status, message, **measured
    )


class ProfileContext:
    """Base of profile contexts: lets checks attach measured figures to their result."""

    def __init__(self) -> None:
        self._details: dict[str, dict[str, Any]] = {}

    def add_details(self, check_id: str, **values: Any) -> None:
        """Attach figures (latency, counts) to the result of ``check_id``."""
        self._details.setdefault(check_id, {}).update(values)

    def take_details(self, check_id: str) -> dict[str, Any]:
        """The figures attached to ``check_id`` (removed from the context)."""
        return self._details.pop(check_id, {})


class ListenerContext(ProfileContext):
    """Base of the profiles that probe an RL listener: the run, the suite's HTTP client for it,
    the listener's base URL and its listing URL. A run naming no listener is a CheckError."""

    #: The profile's name (set by :func:`listener_profile`).
    profile: ClassVar[str]
    #: Seconds a check asks the server to hold a request (its client waits that much longer).
    hold: ClassVar[float] = 0.0

    def __init__(self, run: RunContext, client: httpx.Client) -> None:
        super().__init__()
        if not run.url:
            raise CheckError(f"the {self.profile} profile needs an RL listener URL")
        self.run = run
        self.client = client
        self.base = run.url
        self.url = run.url + DISCOVERY_PATH


_L = TypeVar("_L", bound=ListenerContext)


def listener_profile(name: str) -> Callable[[type[_L]], type[_L]]:
    """Register a ``ListenerContext`` subclass as profile ``name``'s shared state, built over the
    suite's HTTP client for the target for the length of the profile (-H, --cacert/--insecure
    and --max-body-bytes as every profile)."""

    def register(context: type[_L]) -> type[_L]:
        context.profile = name

        @contextlib.contextmanager
        def setup(run: RunContext) -> Iterator[_L]:
            from conformance._http import target_client

            timeout = max(run.options.timeout, context.hold + 10) if context.hold else None
            with target_client(run.options, run.url, timeout=timeout) as client:
                yield context(run, client)

        profile_setup(name)(setup)
        return context

    return register


def _whole_profile(checks: list[Check], status: Status, message: str) -> list[Result]:
    return [_result(c, status, message) for c in checks]


def run(
    url: str | None = None,
    profiles: list[str] | tuple[str, ...] | None = None,
    *,
    options: Options | None = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> Report:
    """Run the conformance suite and return its report (it never raises for a failing target).

    ``conformance.run(url="http://127.0.0.1:8001", profiles=["frontend"], strict=True)``; any
    field of ``Options`` may be given as a keyword. Ctrl-C ends the run early: the report holds
    the results so far and ``incomplete`` is set (the fleets started are stopped first).
    """
    opts = options or Options()
    if url is not None:
        opts = replace(opts, url=url)
    if profiles:
        opts = replace(opts, profiles=tuple(profiles))
    if overrides:
        opts = replace(opts, **overrides)
    from conformance.waivers import apply_waivers, load_waivers

    waivers = load_waivers(opts.waivers) if opts.waivers else []
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**32)
    chosen = select_checks(opts)
    run_ctx = RunContext(options=opts, seed=seed)
    report = Report(
        target={},
        options={k: v for k, v in asdict(opts).items() if k != "seed"},
        seed=seed,
        versions=_versions(),
        started=time.time(),
    )
    if not chosen:
        report.nothing_checked = explain_empty(opts)
    wanted_profiles = tuple(dict.fromkeys(c.profile for c in chosen))
    try:
        with tool_state_in_cache(), _target(run_ctx, wanted_profiles):
            report.target = run_ctx.target  # shared: profiles add what the target reports
            for name in wanted_profiles:
                report.target.setdefault("profiles", {})[name] = _profile_target(name, run_ctx)
                _run_profile(
                    name, [c for c in chosen if c.profile == name], run_ctx, progress, report
                )
    except KeyboardInterrupt:
        report.incomplete = True
        done = {r.check for r in report.results}
        report.not_run = [c.id for c in chosen if c.id not in done]
    except TargetUnreachable as exc:
        report.inconclusive = str(exc)
        report.target = run_ctx.target
        report.extend(_whole_profile(chosen, Status.ERROR, f"not run: {exc}"))
    except Exception as exc:  # the embedded target could not be stood up
        done = {r.check for r in report.results}
        rest = [c for c in chosen if c.id not in done]
        report.target = report.target or {
            "kind": "unavailable",
            "description": "the embedded target (it could not be stood up)",
        }
        why = f"the target could not be stood up: {type(exc).__name__}: {exc}"
        report.inconclusive = why.splitlines()[0]
        report.extend(_whole_profile(rest, Status.ERROR, why))
    skipped = [
        c for c in all_checks(opts.resolved_profiles()) if c.requirement in opts.skip_requirements
    ]
    report.extend(_whole_profile(skipped, Status.SKIP, "not run: --skip-requirement"))
    if waivers:
        report.results[:], report.waivers = apply_waivers(report.results, waivers)
    report.target.setdefault("notes", []).extend(run_ctx.notes)
    report.client_log = run_ctx.client_log
    if opts.target_version:
        report.target["target_version"] = opts.target_version
    report.finished = time.time()
    _redact(report, opts)
    return report


def _redact(report: Report, opts: Options) -> None:
    """Header values never reach a report, a message or a terminal: names are kept, values not
    (a bare token the target echoes included: ``secret_values`` is the one definition)."""
    from prime_rl_dynamo.redaction import redacted_headers, scrub, secret_values

    if not opts.headers:
        return
    report.options["headers"] = redacted_headers(opts.headers)
    secrets = secret_values(opts.headers)
    report.target = scrub(report.target, secrets)
    report.options = scrub(report.options, secrets)
    report.inconclusive = scrub(report.inconclusive, secrets)
    report.nothing_checked = scrub(report.nothing_checked, secrets)
    report.waivers = scrub(report.waivers, secrets)
    report.results[:] = [
        replace(
            r,
            message=scrub(r.message, secrets),
            details=scrub(r.details, secrets),
            violations=scrub(tuple(r.violations), secrets),
        )
        for r in report.results
    ]


def _run_profile(
    name: str,
    checks: list[Check],
    run_ctx: RunContext,
    progress: Progress | None,
    report: Report,
) -> None:
    # Results go straight into the report, so an interrupt keeps every result so far.
    strict = run_ctx.options.strict
    factory = _SETUPS.get(name)
    if factory is None:
        report.extend(_whole_profile(checks, Status.ERROR, f"profile {name!r} has no setup"))
        return
    results: list[Result] = []
    try:
        with factory(run_ctx) as ctx:
            for item in checks:
                if progress:
                    progress("start", item, None)
                result = _run_one(item, ctx, strict)
                results.append(result)
                report.extend([result])
                if progress:
                    progress("done", item, result)
    except Skipped as exc:
        rest = [c for c in checks if c.id not in {r.check for r in results}]
        _report_rest(rest, Status.SKIP, str(exc), run_ctx, progress, report)
    except Exception as exc:
        rest = [c for c in checks if c.id not in {r.check for r in results}]
        msg = str(exc) if isinstance(exc, CheckError) else f"{type(exc).__name__}: {exc}"
        _report_rest(
            rest, Status.ERROR, f"profile {name} could not run: {msg}", run_ctx, progress, report
        )


def _report_rest(
    rest: list[Check],
    status: Status,
    message: str,
    run_ctx: RunContext,
    progress: Progress | None,
    report: Report,
) -> None:
    results = _whole_profile(rest, status, message)
    report.extend(results)
    if progress:
        for item, result in zip(rest, results, strict=True):
            progress("done", item, result)
