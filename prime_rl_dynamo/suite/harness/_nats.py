"""A throw-away NATS server for the ``nats`` request plane: a loopback port, no other listener.

Uses the ``nats-server`` binary on PATH (Debian package ``nats-server``;
scripts/install-system-deps.sh installs it in CI). Dynamo reaches it through ``NATS_SERVER``.
"""

from __future__ import annotations

import socket

from prime_rl_dynamo.suite.harness._loopback import LoopbackServer
from prime_rl_dynamo.suite.harness._process import ManagedProcess, free_port

__all__ = ["NatsServer", "find_nats_server"]


def _greets(port: int) -> bool:
    """Whether a NATS server answers on 127.0.0.1:port (it sends an INFO line on connect)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            return sock.recv(5) == b"INFO "
    except OSError:
        return False


class NatsServer(LoopbackServer):
    """One nats-server on 127.0.0.1 (no cluster, no monitoring port, JetStream in the workdir)."""

    label = "nats-server"
    package = "nats-server"
    purpose = "the nats request plane"
    fallbacks = ("/usr/sbin/nats-server", "/usr/bin/nats-server")

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

    def _probe(self) -> str | None:
        return None if _greets(self.port) else "no answer yet"

    def _unready(self, timeout: float, last: str) -> str:
        return f"did not answer after {timeout:.0f} s"


#: Path of the nats-server binary, or None.
find_nats_server = NatsServer.find
