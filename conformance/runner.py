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
from typing import Any

from conformance.registry import (
    PROFILES,
    Check,
    CheckError,
    Failed,
    Skipped,
    all_checks,
)
from conformance.results import Report, Result, Status

__all__ = [
    "Options",
    "ProfileContext",
    "Progress",
    "RunContext",
    "profile_setup",
    "run",
    "select_checks",
]

Progress = Callable[[str, Check, "Result | None"], None]

#: The weight-transfer conventions a client under test may declare (--client-conventions).
CLIENT_CONVENTIONS = ("prime-nccl", "vllm-native-nccl", "nixl")


@dataclass(frozen=True)
class Options:
    """Everything that decides what a run does (recorded in the JSON report)."""

    url: str | None = None  # RL listener base URL; None: stand up the embedded default target
    profiles: tuple[str, ...] = ()  # empty: frontend+workers with a URL, every profile without
    strict: bool = False  # SHOULD failures fail the run instead of warning
    requirements: tuple[str, ...] = ()  # only checks of these requirement IDs
    checks: tuple[str, ...] = ()  # only these check IDs
    seed: int | None = None  # None: random, printed and recorded
    client: str | None = None  # client under test, "module:function"
    client_cmd: str | None = None  # client under test, a shell command
    target: str = "auto"  # without a URL: "auto" (dynamo if importable), "dynamo" or "reference"
    discovery: str = "file"  # discovery backend of real Dynamo fleets: "file" or "etcd"
    timeout: float = 10.0  # per HTTP request, seconds
    polls: int = 5  # repeated polls for HTTP-6
    load_clients: int = 32  # concurrent pollers for HTTP-7
    load_requests: int = 20  # requests per poller
    load_budget: float = 30.0  # seconds the load may take before it is cut short
    topologies: int = 3  # generated topologies per client / roundtrip run (plus the pinned one)
    client_timeout: float = 60.0  # seconds a client under test may take per topology
    client_conventions: tuple[str, ...] = ()  # what the client implements; empty: all three

    def __post_init__(self) -> None:
        if self.topologies < 1:
            raise ValueError(f"topologies must be at least 1, got {self.topologies}")
        unknown = [c for c in self.client_conventions if c not in CLIENT_CONVENTIONS]
        if unknown:
            raise ValueError(
                f"unknown client convention(s) {', '.join(unknown)}; expected "
                f"{', '.join(CLIENT_CONVENTIONS)}"
            )

    def resolved_profiles(self) -> tuple[str, ...]:
        """The profiles this run executes, in execution order."""
        if self.profiles:
            unknown = [p for p in self.profiles if p not in PROFILES]
            if unknown:
                raise ValueError(
                    f"unknown profile(s) {', '.join(unknown)}; expected {', '.join(PROFILES)}"
                )
            return tuple(p for p in PROFILES if p in self.profiles)
        return ("frontend", "workers") if self.url else PROFILES


@dataclass
class RunContext:
    """What every profile sees: the options, the seed, the target and a place to leave notes."""

    options: Options
    seed: int
    target: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # RL listener base URL of the target (frontend/workers profiles)
    fleet: Any = None  # the embedded fleet, when the suite stood one up
    notes: list[str] = field(default_factory=list)

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
    """The checks a run with these options executes, in order."""
    chosen = all_checks(options.resolved_profiles())
    if options.requirements:
        from prime_rl_dynamo.requirements import all_requirements

        unknown = [r for r in options.requirements if r not in all_requirements()]
        if unknown:
            raise ValueError(f"unknown requirement ID(s): {', '.join(unknown)}")
        chosen = [c for c in chosen if c.requirement in options.requirements]
    if options.checks:
        wanted = set(options.checks)
        chosen = [c for c in chosen if c.id in wanted]
    return chosen


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("prime-rl-dynamo", "schemathesis", "hypothesis", "httpx", "ai-dynamo-runtime"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def dynamo_available() -> bool:
    """Whether the real Dynamo runtime and the project's harness can be imported."""
    try:
        import dynamo.runtime  # noqa: F401

        import prime_rl_dynamo.harness  # noqa: F401
    except Exception:
        return False
    return True


@contextlib.contextmanager
def _target(run: RunContext, profiles: tuple[str, ...]) -> Iterator[None]:
    """Point the run at its target, standing up the embedded default when no URL was given."""
    opts = run.options
    if opts.url:
        run.url = opts.url.rstrip("/")
        run.target = {"kind": "url", "url": run.url}
        yield
        return
    if not {"frontend", "workers"} & set(profiles):
        run.target = {"kind": "none", "description": "profiles stand up their own fleets"}
        yield
        return
    use_dynamo = opts.target == "dynamo" or (opts.target == "auto" and dynamo_available())
    if use_dynamo:
        from prime_rl_dynamo.harness import start_dynamo_fleet  # type: ignore[attr-defined,unused-ignore]

        with start_dynamo_fleet(discovery=opts.discovery) as fleet:
            run.fleet = fleet
            run.url = fleet.frontend_url.rstrip("/")
            run.target = {
                "kind": "dynamo",
                "url": run.url,
                "description": "real Dynamo fleet from the harness "
                f"(default topology, {opts.discovery} discovery)",
            }
            _wait_listed(fleet)
            yield
        return
    from prime_rl_dynamo.reference import start_reference_fleet

    with start_reference_fleet(seed=run.seed) as fleet:
        run.fleet = fleet
        run.url = fleet.frontend_url.rstrip("/")
        why = "" if opts.target == "reference" else " (the dynamo extra is not importable)"
        run.target = {
            "kind": "reference",
            "url": run.url,
            "description": f"embedded reference frontend (default topology){why}",
        }
        yield


def _wait_listed(fleet: Any) -> None:
    # The real frontend lists workers only once they registered: wait for all of them.
    wait = getattr(fleet, "wait_ready", None)
    if wait is not None:
        wait(len(fleet.engines), timeout=60)


def _run_one(item: Check, ctx: Any, strict: bool) -> Result:
    started = time.perf_counter()
    details: dict[str, Any] = {}
    try:
        note = item.func(ctx)
        status, message = Status.PASS, note or ""
        if isinstance(ctx, ProfileContext):
            details = ctx.take_details(item.id)
    except Failed as exc:
        details = exc.details
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
    return Result(
        check=item.id,
        requirement=item.requirement,
        level=item.level,
        profile=item.profile,
        title=item.title,
        status=status,
        message=message,
        details=details,
        duration=round(time.perf_counter() - started, 4),
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


def _whole_profile(checks: list[Check], status: Status, message: str, strict: bool) -> list[Result]:
    return [
        Result(
            check=c.id,
            requirement=c.requirement,
            level=c.level,
            profile=c.profile,
            title=c.title,
            status=status,
            message=message,
        )
        for c in checks
    ]


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
    field of ``Options`` may be given as a keyword.
    """
    opts = options or Options()
    if url is not None:
        opts = replace(opts, url=url)
    if profiles:
        opts = replace(opts, profiles=tuple(profiles))
    if overrides:
        opts = replace(opts, **overrides)
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
    wanted_profiles = tuple(dict.fromkeys(c.profile for c in chosen))
    try:
        with _target(run_ctx, wanted_profiles):
            report.target = dict(run_ctx.target)
            for name in wanted_profiles:
                report.extend(
                    _run_profile(name, [c for c in chosen if c.profile == name], run_ctx, progress)
                )
    except Exception as exc:  # the embedded target could not be stood up
        done = {r.check for r in report.results}
        rest = [c for c in chosen if c.id not in done]
        report.target = report.target or {"kind": "unavailable"}
        report.extend(
            _whole_profile(
                rest,
                Status.ERROR,
                f"the target could not be stood up: {type(exc).__name__}: {exc}",
                opts.strict,
            )
        )
    report.target.setdefault("notes", []).extend(run_ctx.notes)
    report.finished = time.time()
    return report


def _run_profile(
    name: str, checks: list[Check], run_ctx: RunContext, progress: Progress | None
) -> list[Result]:
    strict = run_ctx.options.strict
    factory = _SETUPS.get(name)
    if factory is None:
        return _whole_profile(checks, Status.ERROR, f"profile {name!r} has no setup", strict)
    results: list[Result] = []
    reported = 0
    try:
        with factory(run_ctx) as ctx:
            for item in checks:
                if progress:
                    progress("start", item, None)
                result = _run_one(item, ctx, strict)
                results.append(result)
                reported += 1
                if progress:
                    progress("done", item, result)
    except Skipped as exc:
        rest = [c for c in checks if c.id not in {r.check for r in results}]
        results.extend(_whole_profile(rest, Status.SKIP, str(exc), strict))
    except Exception as exc:
        rest = [c for c in checks if c.id not in {r.check for r in results}]
        msg = str(exc) if isinstance(exc, CheckError) else f"{type(exc).__name__}: {exc}"
        results.extend(
            _whole_profile(rest, Status.ERROR, f"profile {name} could not run: {msg}", strict)
        )
    if progress:
        for r in results[reported:]:
            progress("done", next(c for c in checks if c.id == r.check), r)
    return results
