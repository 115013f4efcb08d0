"""Test support for the suite's HTTP bounds: a loopback TCP server that answers with raw bytes
(so it can lie about lengths and encodings) and an endless body."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

Writer = Callable[[socket.socket], None]


class RawServer:
    """A loopback TCP server answering every request with ``writer`` (raw bytes, so it can lie)."""

    def __init__(self, writer: Writer) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.writer = writer
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                if conn.recv(65536):  # not the suite's connect-only preflight
                    self.writer(conn)
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def endless_chunks(conn: socket.socket) -> None:
    """A chunked 200 whose body never ends (at most 4 GiB, far beyond any cap)."""
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    chunk = b"[" * 65536
    frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    for _ in range(1 << 16):  # at most 4 GiB, far more than any cap
        conn.sendall(frame)
