"""The start-up loop shared by the harness's throw-away servers (etcd, nats-server) on 127.0.0.1.

A subclass names its binary (``label``, with the Debian ``package`` that has it), picks its ports and builds its ``ManagedProcess`` in ``_configure`` and says in
``_probe`` whether the server answers yet; this class starts it, waits, and starts it again on new
ports (at most twice) when the log says one of them was taken meanwhile.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.suite.harness._process import ManagedProcess

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """A server binary on 127.0.0.1 that the harness starts, waits for and restarts on a port clash."""

    label: str  # the binary's name
    package: str  # the Debian package that installs it
    purpose: str  # what needs it, for the message when it is missing
    fallbacks: tuple[str, ...] = ()  # where else to look when it is not on PATH

    url: str
    process: ManagedProcess

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        binary = self.find()
        if binary is None:
            raise HarnessError(
                f"{self.purpose} needs the {self.label} binary and none was found on PATH; install "
                f"the Debian package {self.package} (scripts/install-system-deps.sh does it)"
            )
        self.binary = binary
        self.workdir = workdir
        self.env = env
        self.attempt = 0
        self._configure()

    @classmethod
    def find(cls) -> str | None:
        """Path of the binary: on PATH, else at one of ``fallbacks``; None when neither."""
        found = shutil.which(cls.label)
        return found or next((p for p in cls.fallbacks if Path(p).exists()), None)

    def _configure(self) -> None:
        """Pick fresh ports and build ``self.url`` and ``self.process`` for ``self.attempt``."""
        raise NotImplementedError

    def _probe(self) -> str | None:
        """None once the server answers, else what was seen (for the time-out message)."""
        raise NotImplementedError

    def _unready(self, timeout: float, last: str) -> str:
        """How the time-out message says the server never answered."""
        raise NotImplementedError

    def start(self, timeout: float) -> None:
        """Start the server and wait until ``_probe`` says it answers (new ports if one was taken)."""
        self.process.start()
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if not self.process.alive():
                if "address already in use" in self.process.tail(40).lower() and self.attempt < 2:
                    self.attempt += 1
                    self._configure()
                    self.process.start()
                    continue
                raise HarnessError(
                    f"{self.label} exited during start-up: {self.process.describe()}\n"
                    f"{self.process.tail()}"
                )
            seen = self._probe()
            if seen is None:
                return
            last = seen
            time.sleep(0.05)
        raise HarnessError(
            f"{self.label} at {self.url} {self._unready(timeout, last)}: "
            f"{self.process.describe()}\n{self.process.tail()}"
        )
