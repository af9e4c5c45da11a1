"""A scripted HTTP site on 127.0.0.1 for the fetch server's tests (stdlib, in a thread)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARTICLE = """<!doctype html><html><head><title>T</title><style>body{color:red}</style>
<script>document.write('tracking')</script></head><body>
<h1>Guarded  fetch</h1><p>A paragraph with <a href="/next">a link</a> and <strong>bold</strong> text.</p>
<ul><li>first</li><li>second</li></ul><pre><code>print("hi")</code></pre></body></html>"""
ROBOTS = "User-agent: *\nDisallow: /private\n"


@dataclass
class Site:
    """Routes: path → (status, headers, body); `requests` records (path, Host header)."""

    routes: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def default_routes(site: Site) -> None:
    html = {"Content-Type": "text/html; charset=utf-8"}
    site.routes.update({
        "/robots.txt": (200, {"Content-Type": "text/plain"}, ROBOTS.encode()),
        "/article": (200, html, ARTICLE.encode()),
        "/long": (200, {"Content-Type": "text/plain"}, ("0123456789" * 100).encode()),
        "/private/page": (200, html, b"<p>secret</p>"),
        "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
        "/to-ten": (301, {"Location": "http://10.0.0.1/admin"}, b""),
        "/to-localhost": (302, {"Location": f"http://localhost:{site.port}/article"}, b""),
        "/to-article": (302, {"Location": "/article"}, b""),
        "/loop": (302, {"Location": "/loop"}, b""),
        "/missing": (404, {"Content-Type": "text/plain"}, b"not here"),
        "/json": (200, {"Content-Type": "application/json"}, b'{"a": 1}'),
    })  # fmt: skip


@contextmanager
def serve_site() -> Iterator[Site]:
    """A site on an ephemeral 127.0.0.1 port, shut down on exit."""
    site = Site()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.requests.append((self.path, self.headers.get("Host", "")))
            status, headers, body = site.routes.get(self.path, (404, {}, b"no route"))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    site.port = server.server_address[1]
    default_routes(site)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
