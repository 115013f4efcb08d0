"""The Dynamo release matrix on nox: one session per ``ai-dynamo-runtime`` release.

``nox -s matrix`` runs every release's cell (``nox -s dynamo-1.5.1`` one of them), then records
how long it took (docs/compat/matrix.json) and writes docs/compat.md from the cells
(``nox -s compat-docs`` writes the page alone). Each cell's venv holds that release
beside the project (``.[reference,conformance]``: the ``dynamo`` extra pins the newest release);
uv makes the venvs when it is installed (the ``dev`` extra brings it), else virtualenv.
``nox -s dynamo-1.5.1 -- --profile frontend`` runs the suite with those options in that venv
instead of the whole cell; ``nox -s dynamo-1.5.1 -- binary`` says which settings and messages
that release's runtime binary carries. ``nox -s ci-oldest`` is CI's roundtrip on the oldest release the
harness runs (Makefile ``ci-conformance``). See docs/compat.md.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tools.compat import CI_RELEASE, CI_WAIVERS, INSTALL_SECONDS, MATRIX, RELEASES

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["matrix"]

_PROJECT = ("-e", ".[reference,conformance]")


def _install(session: nox.Session, release: str) -> float:
    """Install the release beside the project into the session's venv; the seconds it took."""
    began = time.monotonic()
    session.install(f"ai-dynamo-runtime=={release}", *_PROJECT)
    return time.monotonic() - began


def _cell_session(release: str) -> None:
    def cell(session: nox.Session) -> None:
        installed = _install(session, release)
        if session.posargs[:1] in (["binary"], ["probe"]):  # tools.compat's reproductions
            session.run("python", "-m", "tools.compat", *session.posargs, success_codes=[0, 1])
            return
        if session.posargs:  # the suite with the caller's options, in this release's venv
            session.run(
                "prime-rl-dynamo",
                "conformance",
                "-q",
                "--seed",
                "1",
                "--target",
                "dynamo",
                *session.posargs,
                success_codes=[0, 1, 2, 3, 4],
            )
            return
        session.run(
            "python", "-m", "tools.compat", "cell", env={INSTALL_SECONDS: f"{installed:.1f}"}
        )

    cell.__doc__ = f"ai-dynamo-runtime {release}: the suite on real Dynamo, then Prime-RL's clients"
    nox.session(name=f"dynamo-{release}", tags=["matrix"] if release in MATRIX else [])(cell)


for _release in RELEASES:
    _cell_session(_release)


@nox.session(name="compat-docs", python=False, tags=["matrix"])
def compat_docs(session: nox.Session) -> None:
    """Write docs/compat.md from the committed cells in docs/compat/."""
    session.run(sys.executable, "-m", "tools.compat", "docs", external=True)


@nox.session(python=False)
def matrix(session: nox.Session) -> None:
    """Every release's cell, then docs/compat.md (with how long it all took)."""
    session.run(sys.executable, "-m", "tools.compat", "matrix", "begin", external=True)
    for release in MATRIX:
        session.notify(f"dynamo-{release}")
    session.notify("matrix-end")


@nox.session(name="matrix-end", python=False)
def matrix_end(session: nox.Session) -> None:
    """The end of ``nox -s matrix``: record how long it took, then write docs/compat.md."""
    session.run(sys.executable, "-m", "tools.compat", "matrix", "end", external=True)
    session.run(sys.executable, "-m", "tools.compat", "docs", external=True)


@nox.session(name="ci-oldest")
def ci_oldest(session: nox.Session) -> None:
    """CI: the roundtrip profile on the oldest release the harness runs, JUnit in reports/.

    Its known deviations (docs/findings.md, R3) are waived by ``dynamo-1.4.2``; anything else
    fails (a new failure, an error, a fleet that does not come up, an expired waiver).
    """
    _install(session, CI_RELEASE)
    name = f"conformance-dynamo-{CI_RELEASE}-roundtrip"
    session.run(
        *("prime-rl-dynamo", "conformance", "-q", "--seed", "1", "--profile", "roundtrip"),
        *("--topologies", "1", "--waivers", CI_WAIVERS),
        *("--junit-xml", f"reports/{name}.xml", "--json-report", f"reports/{name}.json"),
    )
