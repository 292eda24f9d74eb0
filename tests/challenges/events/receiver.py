"""A local HTTP receiver for webhook tests: a real server on port 0, in a thread, that
keeps every request and answers with the next planned status (and delay)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    plan: list[int] = field(default_factory=list)  # statuses to answer, then 200
    delay_s: float = 0.0

    def next_status(self) -> int:
        return self.plan.pop(0) if self.plan else 200


def start() -> tuple[Receiver, ThreadingHTTPServer]:
    receiver = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            receiver.requests.append(
                Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            if receiver.delay_s:
                time.sleep(receiver.delay_s)
            status = receiver.next_status()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(f"answer {status}".encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
