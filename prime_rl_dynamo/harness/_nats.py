"""A throw-away NATS server for the ``nats`` request plane: a loopback port, no other listener.

Uses the ``nats-server`` binary on PATH (Debian package ``nats-server``;
scripts/install-system-deps.sh installs it in CI). Dynamo reaches it through ``NATS_SERVER``.
"""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.harness._process import ManagedProcess, free_port

__all__ = ["NatsServer", "find_nats_server"]

_FALLBACKS = ("/usr/sbin/nats-server", "/usr/bin/nats-server")


def find_nats_server() -> str | None:
    """Path of the nats-server binary, or None."""
    found = shutil.which("nats-server")
    if found:
        return found
    return next((p for p in _FALLBACKS if Path(p).exists()), None)


def _greets(port: int) -> bool:
    """Whether a NATS server answers on 127.0.0.1:port (it sends an INFO line on connect)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            return sock.recv(5) == b"INFO "
    except OSError:
        return False


class NatsServer:
    """One nats-server on 127.0.0.1 (no cluster, no monitoring port, JetStream in the workdir)."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        binary = find_nats_server()
        if binary is None:
            raise HarnessError(
                "the nats request plane needs a nats-server binary and none was found on PATH; "
                "install the Debian package nats-server (scripts/install-system-deps.sh does it)"
            )
        self.binary = binary
        self.workdir = workdir
        self.env = env
        self.attempt = 0
        self._configure()

    def _configure(self) -> None:
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        store = self.workdir / f"nats-store-{self.attempt}"
        argv = [
            self.binary,
            "--addr=127.0.0.1",
            f"--port={self.port}",
            "--jetstream",
            f"--store_dir={store}",
            "--server_name=harness",
        ]
        self.process = ManagedProcess(
            "nats", argv, self.env, self.workdir / f"nats-{self.attempt}.log", native=True
        )

    def start(self, timeout: float) -> None:
        """Start nats-server and wait until it greets clients (new port if one was taken)."""
        self.process.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.process.alive():
                if "address already in use" in self.process.tail(40).lower() and self.attempt < 2:
                    self.attempt += 1
                    self._configure()
                    self.process.start()
                    continue
                raise HarnessError(
                    f"nats-server exited during start-up: {self.process.describe()}\n"
                    f"{self.process.tail()}"
                )
            if _greets(self.port):
                return
            time.sleep(0.05)
        raise HarnessError(
            f"nats-server at {self.url} did not answer after {timeout:.0f} s: "
            f"{self.process.describe()}\n{self.process.tail()}"
        )
