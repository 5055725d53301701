"""A file server on loopback for the download tests: serves one folder, honours (or, asked
to, ignores) HTTP range requests, and records each request's path and Range header."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server name)
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        path = (server.root / self.path.lstrip("/")).resolve()
        if not path.is_file() or server.root not in path.parents:
            self.send_error(404)
            return
        body = path.read_bytes()
        asked = self.headers.get("Range")
        if asked and server.ranges:
            start = int(asked.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            body = body[start:]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


@contextmanager
def serving(root: Path, ranges: bool = True):
    """A server on 127.0.0.1 serving ``root``; yields (base URL, the server: ``.requests``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.root, server.ranges, server.requests = Path(root).resolve(), ranges, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", server
    finally:
        server.shutdown()
        server.server_close()
