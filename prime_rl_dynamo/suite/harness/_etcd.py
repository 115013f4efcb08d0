"""A throw-away etcd server for the ``etcd`` discovery backend: loopback ports, temporary data dir.

Uses the ``etcd`` binary on PATH (Debian package ``etcd-server``; scripts/install-system-deps.sh
installs it in CI).
"""

from __future__ import annotations

import httpx

from prime_rl_dynamo.suite.harness._loopback import LoopbackServer
from prime_rl_dynamo.suite.harness._process import ManagedProcess, free_port

__all__ = ["EtcdServer", "find_etcd"]


class EtcdServer(LoopbackServer):
    """One single-member etcd cluster on 127.0.0.1."""

    label = "etcd"
    package = "etcd-server"
    purpose = "the etcd discovery backend"
    fallbacks = ("/usr/bin/etcd",)

    def _configure(self) -> None:
        self.client_port = free_port()
        self.peer_port = free_port()
        self.url = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        data = self.workdir / f"etcd-data-{self.attempt}"
        argv = [
            self.binary,
            "--name=harness",
            f"--data-dir={data}",
            f"--listen-client-urls={self.url}",
            f"--advertise-client-urls={self.url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=harness={peer}",
            "--initial-cluster-state=new",
            "--logger=zap",
            "--log-level=warn",
        ]
        self.process = ManagedProcess(
            "etcd", argv, self.env, self.workdir / f"etcd-{self.attempt}.log", native=True
        )

    def _probe(self) -> str | None:
        try:
            response = httpx.get(f"{self.url}/health", timeout=1.0)
            if response.status_code == 200 and response.json().get("health") == "true":
                return None
            return f"{response.status_code} {response.text[:200]}"
        except (httpx.HTTPError, ValueError) as exc:
            return repr(exc)

    def _unready(self, timeout: float, last: str) -> str:
        return f"was not healthy after {timeout:.0f} s (last: {last})"


#: Path of the etcd binary, or None.
find_etcd = EtcdServer.find
