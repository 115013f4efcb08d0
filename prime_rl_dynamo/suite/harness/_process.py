"""Child processes of the harness: each in its own process group, logged to a file, never orphaned.

Python children arm ``PR_SET_PDEATHSIG`` themselves (``die_with_parent``); other binaries (etcd)
get it from a ``preexec_fn``. Stopping is SIGTERM to the group, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

__all__ = ["ManagedProcess", "die_with_parent", "free_port", "free_system_port", "stop_all"]

PARENT_ENV = "PRIME_RL_DYNAMO_PARENT_PID"
_PR_SET_PDEATHSIG = 1
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback TCP port free right now, never one this process handed out before."""
    for _ in range(64):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError("no free loopback port found in 64 attempts")


# Dynamo 1.6.1 parses DYN_SYSTEM_PORT as a signed 16-bit integer: ports above 32767 (the whole
# Linux ephemeral range) are refused, so system ports come from below it.
_SYSTEM_PORTS = range(10000, 32768)


def free_system_port() -> int:
    """A loopback TCP port below 32768 free right now, for a Dynamo system server."""
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.choice(_SYSTEM_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError("no free system port below 32768 in 200 attempts")


def _prctl_pdeathsig() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - non-glibc systems
        return None

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return arm


def die_with_parent() -> None:
    """In a child started by the harness: get SIGKILLed when the harness process dies."""
    parent = os.environ.get(PARENT_ENV)
    arm = _prctl_pdeathsig()
    if parent is None or arm is None:
        return
    arm()
    if os.getppid() != int(parent):  # the parent died before the signal was armed
        os._exit(1)


class ManagedProcess:
    """One child process in its own session, with its output in ``log``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        log: Path,
        *,
        native: bool = False,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = {**env, PARENT_ENV: str(os.getpid())}
        self.log = log
        self.native = native  # not a Python child: arm the death signal before exec
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Spawn the process."""
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: signals reach its children too
                preexec_fn=_prctl_pdeathsig() if self.native else None,
            )

    @property
    def pid(self) -> int | None:
        """Process id, once started."""
        return self.popen.pid if self.popen is not None else None

    def alive(self) -> bool:
        """Whether the process is running."""
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        """Exit status once it exited (negative: killed by that signal)."""
        return self.popen.poll() if self.popen is not None else None

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the whole process group (ignored when already gone)."""
        if self.popen is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL the group and reap the process."""
        self.signal_group(signal.SIGKILL)
        if self.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=10)

    def rss_bytes(self) -> int:
        """Resident memory of the process (0 when gone)."""
        if not self.alive() or self.popen is None:
            return 0
        try:
            status = Path(f"/proc/{self.popen.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def tail(self, lines: int = 12) -> str:
        """The last lines of the log, without colour codes."""
        try:
            with self.log.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 16384))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        kept = [_ANSI.sub("", line) for line in text.splitlines()[-lines:]]
        return "\n".join(kept) or "(empty log)"

    def trim_log(self, max_bytes: int) -> bool:
        """Keep only the last half of the log once it exceeds ``max_bytes``; True if trimmed.

        The child appends (O_APPEND), so its next line lands after the kept tail; a line written
        while trimming may be lost, which is acceptable for a log.
        """
        try:
            if self.log.stat().st_size <= max_bytes:
                return False
            with self.log.open("r+b") as fh:
                fh.seek(-(max_bytes // 2), os.SEEK_END)
                tail = fh.read()
                fh.seek(0)
                fh.truncate()
                fh.write(b"[... log trimmed by the harness ...]\n" + tail)
        except OSError:
            return False
        return True

    def describe(self) -> str:
        """Name, pid and state, for error messages."""
        code = self.returncode
        state = "running" if self.alive() else f"exited with {code}"
        return f"{self.name} (pid {self.pid}, {state}, log {self.log})"


def stop_all(processes: Iterable[ManagedProcess], *, grace: float = 3.0) -> None:
    """SIGTERM every group at once, wait up to ``grace`` seconds in all, then SIGKILL the rest."""
    procs = [p for p in processes if p.popen is not None]
    for proc in procs:
        if proc.alive():
            proc.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        assert proc.popen is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:
        # Also SIGKILL groups whose leader exited: a grandchild could still hold a port.
        proc.kill()
