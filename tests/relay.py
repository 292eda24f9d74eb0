"""A TCP relay the tests own, in front of a server they must not stop (Redis, PostgreSQL):
cutting the relay makes the server look unreachable to whoever goes through it."""

from __future__ import annotations

import select
import socket
import threading


class Relay:
    """A TCP relay to Redis that the test can cut (listener and every connection) and
    restore on the same port: the broker looks unreachable to whoever uses it."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        # The port stays bound for the relay's whole life, listening or not: while the
        # relay is down a connect is refused at once, and no other socket can take the
        # port (another test's server, or a client's own ephemeral port connecting to
        # itself), which would make a cut broker answer.
        self._hold = socket.socket()
        self._hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._hold.bind(("127.0.0.1", 0))
        self.port = self._hold.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self.lock:
            if self.listener is not None:
                # shutdown() wakes the thread blocked in accept(); close() alone leaves
                # the socket listening until that accept() returns.
                try:
                    self.listener.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self.listener.close()
                self.listener = None
            for conn in self.conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()
            self.conns.clear()

    def close(self) -> None:
        """Down for good: the port is given back."""
        self.down()
        self._hold.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self.conns += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for src in ready:
                    data = src.recv(65536)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass
