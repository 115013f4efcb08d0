"""The ``workers`` profile: every worker the frontend lists is asked directly.

Its system server (health, each advertised engine route) and its admin API's health must answer.
Replies are parsed as JSON whatever their Content-Type; the Content-Type is judged on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from conformance._http import Reply, is_http_url, json_media, request, unreachable
from conformance.registry import CheckError, Failed, Skipped, check
from conformance.runner import ListenerContext, RunContext, listener_profile
from prime_rl_dynamo.text import plural
from prime_rl_dynamo.validate import PATTERNS
from prime_rl_dynamo.wire import entry_label

__all__ = ["ListedWorker", "WorkersContext"]

_ADMIN_BASE_URL = re.compile(PATTERNS["Worker.admin_base_url"]).search


@dataclass(frozen=True)
class ListedWorker:
    """The parts of one listed worker the profile probes."""

    label: str  # namespace.component.endpoint#instance_id
    routes: tuple[str, ...]
    system_url: str | None
    admin_base_url: str | None


@listener_profile("workers")
class WorkersContext(ListenerContext):
    """The listing, fetched once, and a cache of the probes (shared URLs are asked once)."""

    def __init__(self, run: RunContext, client: httpx.Client) -> None:
        super().__init__(run, client)
        self._workers: list[ListedWorker] | None = None
        self.unprobed: list[str] = []  # why some workers were left out
        self._replies: dict[tuple[str, str], Reply | str] = {}

    def workers(self) -> list[ListedWorker]:
        """Healthy listed workers (error workers are not expected to answer)."""
        if self._workers is not None:
            return self._workers
        try:
            reply = request(self.client, "GET", self.url)
        except httpx.ConnectError as exc:
            raise CheckError(unreachable("GET", self.url, exc, self.client)) from exc
        except httpx.HTTPError as exc:
            raise Skipped(
                f"no listing to probe: GET {self.url} broke off: {type(exc).__name__} (see HTTP-1)"
            ) from exc
        body = reply.parsed
        self.run.observe(reply.headers, body)
        # Only a conformant 500 (HTTP-5) is an error here; a malformed one already fails HTTP-5.
        if (
            reply.status == 500
            and isinstance(body, dict)
            and body.get("error") == "discovery_failed"
            and isinstance(body.get("message"), str)
        ):
            raise CheckError(
                f"no listing to probe: the frontend answered 500 discovery_failed "
                f"({body.get('message')!r}); the fleet behind it could not be listed"
            )
        if reply.status != 200 or reply.parse_error:
            raise Skipped(f"no listing to probe: {reply.describe()} (see the frontend profile)")
        if not isinstance(body, dict) or not isinstance(body.get("workers"), list):
            raise Skipped("no listing to probe: the body has no workers array (see BODY-1, BODY-4)")
        out = []
        for w in body["workers"]:
            if not isinstance(w, dict):
                continue
            label = str(entry_label(w))
            if "error" in w:
                self.unprobed.append(f"{label}: listed with error {w.get('error')!r}")
                continue
            routes = w.get("routes")
            out.append(
                ListedWorker(
                    label=label,
                    routes=tuple(r for r in routes if isinstance(r, str) and r)
                    if isinstance(routes, list)
                    else (),
                    system_url=w.get("system_url") if is_http_url(w.get("system_url")) else None,
                    admin_base_url=w.get("admin_base_url")
                    if _usable_admin(w.get("admin_base_url"))
                    else None,
                )
            )
            if "system_url" in w and not is_http_url(w["system_url"]):
                self.unprobed.append(
                    f"{label}: system_url {w['system_url']!r} is not a URL (see WORKER-7)"
                )
            if "admin_base_url" in w and not _usable_admin(w["admin_base_url"]):
                self.unprobed.append(
                    f"{label}: admin_base_url {w['admin_base_url']!r} is not one the admin pool "
                    "can use (see WORKER-8)"
                )
        self._workers = out
        return out

    def ask(self, method: str, url: str, **kwargs: Any) -> Reply | str:
        """One probe (cached by method and URL); a transport failure comes back as its text."""
        key = (method, url)
        if key not in self._replies:
            try:
                self._replies[key] = request(self.client, method, url, **kwargs)
            except httpx.HTTPError as exc:
                self._replies[key] = f"{method} {url}: {type(exc).__name__}: {exc}"
        return self._replies[key]


def _usable_admin(url: object) -> bool:
    """Whether an admin_base_url is one WORKER-8 accepts: a URL with a query, a fragment or user
    info is already refused there, and probing it would report that one defect twice."""
    return is_http_url(url) and _ADMIN_BASE_URL(str(url)) is not None


def _join(base: str, path: str) -> str:
    return base.rstrip("/") + path


def _engine_targets(ctx: WorkersContext) -> list[tuple[str, str]]:
    """(worker label, engine route URL) for every advertised route, each URL once."""
    seen: set[str] = set()
    out = []
    for w in ctx.workers():
        if w.system_url is None:
            continue
        for route in w.routes:
            url = _join(w.system_url, f"/engine/{route}")
            if url not in seen:
                seen.add(url)
                out.append((w.label, url))
    if not out:
        raise Skipped("no listed worker advertises both a system_url and routes")
    return out


def _engine_replies(ctx: WorkersContext) -> list[tuple[str, str, Reply | str]]:
    """(worker label, engine route URL, its reply to ``POST {}``) for every advertised route:
    each route is posted to once however many checks judge its reply."""
    return [(label, url, ctx.ask("POST", url, json={})) for label, url in _engine_targets(ctx)]


def _health(ctx: WorkersContext, key: str, what: str, judge: Callable[[Reply], str | None]) -> int:
    """GET {url}/health of every listed ``key`` URL (each once), judged by ``judge`` (None: fine);
    how many were asked, or Failed naming each that was not fine."""
    urls: dict[str, str] = {}
    for w in ctx.workers():
        base = getattr(w, key)
        if base is not None:
            urls.setdefault(_join(base, "/health"), w.label)
    if not urls:
        raise Skipped(f"no listed worker advertises a {key}")
    problems = []
    for url, label in urls.items():
        reply = ctx.ask("GET", url)
        problem = reply if isinstance(reply, str) else judge(reply)
        if problem is not None:
            problems.append(f"[{label}] {problem}")
    if problems:
        raise Failed(f"{len(problems)} of {len(urls)} {what}:\n  " + "\n  ".join(problems))
    return len(urls)


@check("workers", "ENGINE-3", "system-health", "GET {system_url}/health answers a JSON object")
def check_system_health(ctx: WorkersContext) -> str | None:
    def judge(reply: Reply) -> str | None:
        ok = isinstance(reply.parsed, dict)
        return None if ok else f"expected a JSON object, found {reply.describe()}"

    return f"{_health(ctx, 'system_url', 'system servers', judge)} system servers answered"


@check(
    "workers",
    "ENGINE-1",
    "engine-routes",
    "Every advertised route answers POST {system_url}/engine/{route} with a JSON object",
)
def check_engine_routes(ctx: WorkersContext) -> str | None:
    replies = _engine_replies(ctx)
    problems = []
    for label, _, reply in replies:
        if isinstance(reply, str):
            problems.append(f"[{label}] {reply}")
        elif not 200 <= reply.status < 300:
            problems.append(f"[{label}] expected 2xx, found {reply.describe()}")
        elif not isinstance(reply.parsed, dict):
            why = reply.parse_error or f"a JSON {type(reply.parsed).__name__}"
            problems.append(f"[{label}] expected a JSON object, found {why}: {reply.describe()}")
    if problems:
        raise Failed(
            f"{len(problems)} of {len(replies)} engine routes:\n  " + "\n  ".join(problems)
        )
    return f"{len(replies)} engine routes answered a JSON object"


@check(
    "workers",
    "ENGINE-2",
    "engine-content-type",
    "Engine route replies carry Content-Type application/json",
)
def check_engine_content_type(ctx: WorkersContext) -> str | None:
    wrong: dict[str, list[str]] = {}
    answered = 0
    for label, url, reply in _engine_replies(ctx):
        if isinstance(reply, str) or not 200 <= reply.status < 300:
            continue  # ENGINE-1 reports routes that do not answer
        answered += 1
        if not json_media(reply.content_type):
            wrong.setdefault(reply.content_type or "no Content-Type", []).append(f"{label} {url}")
    if answered == 0:
        raise Skipped("no engine route answered 2xx (see ENGINE-1)")
    if wrong:
        lines = [f"{ct!r} on {len(urls)} route(s), e.g. {urls[0]}" for ct, urls in wrong.items()]
        raise Failed("expected Content-Type application/json, found " + "; ".join(lines))
    return f"{plural(answered, 'reply', 'replies')} with application/json"


@check("workers", "ADMIN-1", "admin-health", "GET {admin_base_url}/health answers 2xx")
def check_admin_health(ctx: WorkersContext) -> str | None:
    def judge(reply: Reply) -> str | None:
        ok = 200 <= reply.status < 300
        return None if ok else f"expected 2xx, found {reply.describe()}"

    note = f"{_health(ctx, 'admin_base_url', 'admin APIs', judge)} admin APIs healthy"
    if ctx.unprobed:
        note += f"; not probed: {len(ctx.unprobed)} ({ctx.unprobed[0]}...)"
    return note
