"""A Hugging Face Hub on 127.0.0.1, for tests that download (the test suite forbids the network): it serves files
from a folder per repository under the Hub's own addresses (``/<repo id>/resolve/<revision>/<file>``), answering
huggingface_hub's HEAD (commit, ETag, size) and GET (ranges too, to resume), and can send its bytes slowly so a test
can watch a download's progress and cancel it mid-way.

    with FakeHub({"gpt2": folder}) as hub:       # hub.endpoint: "http://127.0.0.1:<port>"
        hub.point(monkeypatch)   # huggingface_hub's addresses (and HF_ENDPOINT, for a child process) lead here
"""

from __future__ import annotations

import hashlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote


class FakeHub:
    """Serves ``repos`` (Hub id → folder of files); ``bytes_per_s`` slows the files bigger than 64 KiB down."""

    def __init__(self, repos: dict[str, Path], bytes_per_s: float | None = None):
        self.repos = {repo: Path(folder) for repo, folder in repos.items()}
        self.bytes_per_s = bytes_per_s
        self.requests: list[tuple[str, str, str]] = []  # (method, path, Range header), in order
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                hub.requests.append(("HEAD", self.path, self.headers.get("Range", "")))
                self._answer(body=False)

            def do_GET(self):
                hub.requests.append(("GET", self.path, self.headers.get("Range", "")))
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                found = hub.find(unquote(self.path.split("?", 1)[0]))
                if found is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("X-Error-Message", "Entry not found")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                commit, path = found
                data = path.read_bytes()
                start = 0
                ranged = self.headers.get("Range", "")
                if body and ranged.startswith("bytes="):
                    start = int(ranged[len("bytes=") :].split("-", 1)[0] or 0)
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                if body:
                    hub.send(self.wfile, data[start:])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def find(self, path: str) -> tuple[str, Path] | None:
        """(commit, file) for ``/<repo>/resolve/<revision>/<file>``, else None."""
        for repo, folder in self.repos.items():
            prefix = f"/{repo}/resolve/"
            if path.startswith(prefix):
                _, _, name = path[len(prefix) :].partition("/")
                file = folder / name
                if name and file.is_file():
                    return hashlib.sha1(repo.encode()).hexdigest(), file
        return None

    def send(self, out, data: bytes) -> None:
        if self.bytes_per_s is None or len(data) <= 64 * 1024:
            out.write(data)
            return
        chunk = 16 * 1024
        for start in range(0, len(data), chunk):
            try:
                out.write(data[start : start + chunk])
                out.flush()
            except OSError:  # the client went away (a cancelled download)
                return
            time.sleep(chunk / self.bytes_per_s)

    def point(self, monkeypatch) -> None:
        """Make huggingface_hub, in this process and in the child processes it starts, ask this hub: its endpoint and
        the file address built from it at import time."""
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "ENDPOINT", self.endpoint)
        monkeypatch.setattr(
            constants, "HUGGINGFACE_CO_URL_TEMPLATE", self.endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        )
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read once, when huggingface_hub was imported
        monkeypatch.setenv("HF_ENDPOINT", self.endpoint)
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
