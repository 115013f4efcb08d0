"""The HTML report of a run: one self-contained page (inline CSS, no script, no fetch), so it
opens from a CI artifact with no network. A requirement table with status colours, every failure
in full with the command that reproduces it, the waivers and the run's options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.reporting import _expired_message, header, reproduce_command
from conformance.results import Report, Result, Status, Verdict, iso_time
from prime_rl_dynamo.escaping import for_html
from prime_rl_dynamo.redaction import scrub
from prime_rl_dynamo.text import plural

__all__ = ["render_html", "write_html"]

_COLOUR = {
    Status.PASS: "#1a7f37",
    Status.SKIP: "#6e7781",
    Status.WAIVED: "#0969da",
    Status.WARN: "#9a6700",
    Status.FAIL: "#cf222e",
    Status.ERROR: "#8250df",
}
_VERDICT_COLOUR = {
    Verdict.CONFORMANT: "#1a7f37",
    Verdict.NOT_CONFORMANT: "#cf222e",
    Verdict.INCONCLUSIVE: "#8250df",
    Verdict.NOTHING_CHECKED: "#9a6700",
}
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 76em; color: #1f2328; }
h1 { font-size: 1.5em; margin: 0 0 .2em; } h2 { font-size: 1.15em; margin: 1.6em 0 .5em; }
.verdict { display: inline-block; color: #fff; padding: .25em .8em; border-radius: 4px;
  font-weight: 600; letter-spacing: .03em; }
.banner { border: 2px solid #8250df; padding: .5em .8em; margin: .6em 0; font-weight: 600; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3em .6em;
  border-bottom: 1px solid #d0d7de; vertical-align: top; } th { background: #f6f8fa; }
.status { color: #fff; border-radius: 3px; padding: .05em .5em; font-weight: 600;
  font-size: .85em; white-space: nowrap; }
pre { background: #f6f8fa; padding: .6em .8em; overflow-x: auto; white-space: pre-wrap;
  word-break: break-word; margin: .3em 0; }
code { font-family: ui-monospace, monospace; font-size: .92em; }
.result { border-left: 4px solid; padding: .2em .9em; margin: .9em 0; }
.meta td:first-child { width: 14em; color: #57606a; }
.counts span { margin-right: 1.2em; }
"""


def _e(value: Any) -> str:
    return for_html(str(scrub(value)))


def _badge(status: Status) -> str:
    return (
        f'<span class="status" style="background:{_COLOUR[status]}">{status.value.upper()}</span>'
    )


def _link(req_id: str, worst: Status) -> str:
    # Only requirements with a result in full below get a link to it.
    if worst in (Status.PASS, Status.SKIP):
        return f"<code>{_e(req_id)}</code>"
    return f'<a href="#{_e(req_id)}"><code>{_e(req_id)}</code></a>'


def _worst(results: list[Result]) -> Status:
    return max((r.status for r in results), key=lambda s: s.rank)


def render_html(report: Report) -> str:
    """The report as one HTML document (no external resource of any kind)."""
    report = report.shown()
    verdict = report.verdict
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(header(report))}: {verdict.value}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(header(report))}</h1>",
        f'<p><span class="verdict" style="background:{_VERDICT_COLOUR[verdict]}">'
        f"{_e(verdict.value.upper().replace('-', ' '))}</span> exit code {report.exit_code}"
        f" &middot; seed {report.seed} &middot; strict={bool(report.options.get('strict'))}</p>",
    ]
    if report.inconclusive:
        parts.append(f'<p class="banner">{_e(report.inconclusive)}</p>')
    if report.incomplete:
        parts.append(
            f'<p class="banner">Incomplete: the run was interrupted; '
            f"{plural(len(report.results), 'check')} done, {len(report.not_run)} not run.</p>"
        )
    for waiver in report.expired_waivers():
        parts.append(f'<p class="banner">{_e(_expired_message(waiver))}</p>')
    if verdict is Verdict.NOTHING_CHECKED:
        parts.append(
            f'<p class="banner">Nothing was checked: {_e(report.why_nothing_checked())}</p>'
        )
    counts = report.counts()
    parts.append(
        '<p class="counts">'
        + "".join(
            f"<span>{_badge(Status(name))} {count}</span>"
            for name, count in counts.items()
            if count
        )
        + "</p>"
    )
    parts.append(_target_table(report))
    shown = report.by_status(Status.FAIL, Status.ERROR, Status.WARN, Status.WAIVED)
    if shown:
        parts.append("<h2>Failures, errors, warnings and waived results, in full</h2>")
    for r in shown:
        parts.append(
            f'<div class="result" id="{_e(r.requirement)}" style="border-color:{_COLOUR[r.status]}">'
            f"<p>{_badge(r.status)} <code>{_e(r.check)}</code> ({_e(r.level)}, {_e(r.profile)}): "
            f"{_e(r.title)}</p><pre>{_e(r.message)}</pre>"
        )
        if r.violations:
            parts.append(
                "<table><tr><th>pointer</th><th>worker</th><th>expected</th><th>found</th></tr>"
            )
            for v in r.violations[:50]:
                parts.append(
                    f"<tr><td><code>{_e(v.get('pointer') or '/')}</code></td>"
                    f"<td><code>{_e(v.get('worker') or '')}</code></td>"
                    f"<td>{_e(v.get('expected') or '')}</td><td>{_e(v.get('found') or '')}</td></tr>"
                )
            parts.append("</table>")
        if r.details:
            parts.append(f"<pre>{_e(json.dumps(r.details, indent=2, default=str))}</pre>")
        parts.append(
            f"<p>Reproduce: <code>{_e(reproduce_command(report, r.requirement))}</code></p></div>"
        )
    parts.append("<h2>Requirements</h2>")
    parts.append(
        "<table><tr><th>requirement</th><th>level</th><th>result</th><th>checks</th>"
        "<th>first line</th></tr>"
    )
    for req_id, results in report.by_requirement().items():
        worst = _worst(results)
        first = next((r for r in results if r.status == worst), results[0])
        line = (first.message.splitlines() or [""])[0]
        parts.append(
            f"<tr><td>{_link(req_id, worst)}</td>"
            f"<td>{_e(first.level)}</td><td>{_badge(worst)}</td>"
            f"<td>{'<br>'.join(f'<code>{_e(r.check)}</code>' for r in results)}</td>"
            f"<td>{_e(line)}</td></tr>"
        )
    parts.append("</table>")
    if report.waivers:
        parts.append("<h2>Waivers</h2><table><tr><th>requirement</th><th>state</th>")
        parts.append("<th>reason</th><th>expires</th></tr>")
        for w in report.waivers:
            parts.append(
                f"<tr><td><code>{_e(w['check'] or w['requirement'])}</code></td>"
                f"<td>{_e(w['state'])}</td><td>{_e(w['reason'])}</td>"
                f"<td>{_e(w['expires'] or 'never')}</td></tr>"
            )
        parts.append("</table>")
    parts.append('<h2>Options</h2><table class="meta">')
    for key, value in report.options.items():
        parts.append(f"<tr><td>{_e(key)}</td><td><code>{_e(value)}</code></td></tr>")
    parts.append(
        f"</table><p>Reproduce the whole run: <code>{_e(reproduce_command(report))}</code></p>"
    )
    parts.append('<h2>Harness versions</h2><table class="meta">')
    for key, value in report.versions.items():
        parts.append(f"<tr><td>{_e(key)}</td><td>{_e(value)}</td></tr>")
    parts.append("</table></body></html>")
    return "\n".join(parts) + "\n"


def _target_table(report: Report) -> str:
    t = report.target
    rows = [
        ("target", t.get("url") or t.get("kind")),
        ("Dynamo release", t.get("dynamo_release")),
        *((f"{name} profile", what) for name, what in (t.get("profiles") or {}).items()),
        ("Server header", t.get("server")),
        ("reported version", t.get("reported_version")),
        ("target version (CI)", t.get("target_version")),
        ("started", iso_time(report.started) if report.started else None),
        ("finished", iso_time(report.finished) if report.finished else None),
        *(("note", note) for note in t.get("notes", [])),
    ]
    body = "".join(
        f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows if v not in (None, "")
    )
    return f'<table class="meta">{body}</table>'


def write_html(report: Report, path: str | Path) -> Path:
    """Write the HTML report."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(report), encoding="utf-8")
    return out
