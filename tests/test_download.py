"""The downloader against a real HTTP server on 127.0.0.1."""

import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llmviz import corpus
from llmviz.errors import CorpusUnavailable

BODY = ("To be, or not to be, that is the question.\n" * 200).encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        if self.path == "/good.txt":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        elif self.path == "/cut.txt":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[: len(BODY) // 3])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self.send_response(404)
            self.end_headers()


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture()
def pinned(monkeypatch):
    entry = corpus.REGISTRY["tinyshakespeare"]
    fake = corpus.CorpusInfo(**{**entry.__dict__, "sha256": hashlib.sha256(BODY).hexdigest()})
    monkeypatch.setitem(corpus.REGISTRY, "tinyshakespeare", fake)
    return fake


def _leftovers(tmp_path):
    folder = tmp_path / "corpora"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_good_file_is_cached_and_loaded(server, pinned, tmp_path):
    path = corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=tmp_path)
    assert path.read_bytes() == BODY
    assert _leftovers(tmp_path) == ["tinyshakespeare.txt"]
    assert corpus.load("tinyshakespeare", directory=tmp_path, download_if_missing=False) == BODY.decode()


def test_wrong_checksum_caches_nothing(server, tmp_path):
    # the real pinned checksum of Tiny Shakespeare cannot match this body
    with pytest.raises(CorpusUnavailable, match="checksum"):
        corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=tmp_path)
    assert _leftovers(tmp_path) == []


def test_connection_cut_mid_file_caches_nothing(server, pinned, tmp_path):
    with pytest.raises(CorpusUnavailable):
        corpus.download("tinyshakespeare", url=f"{server}/cut.txt", directory=tmp_path)
    assert _leftovers(tmp_path) == []


def test_http_error_is_clear(server, pinned, tmp_path):
    with pytest.raises(CorpusUnavailable, match="404"):
        corpus.download("tinyshakespeare", url=f"{server}/missing.txt", directory=tmp_path)
    assert _leftovers(tmp_path) == []


def test_offline_gives_a_clear_message(tmp_path):
    # a port on loopback that nothing listens on: connection refused, as when offline
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(CorpusUnavailable, match="offline"):
        corpus.download("tinyshakespeare", url=f"http://127.0.0.1:{port}/x.txt", directory=tmp_path, timeout=2)
    assert _leftovers(tmp_path) == []


def test_unpinned_corpus_records_checksum_on_first_download(server, tmp_path, monkeypatch):
    path = corpus.download("the-verdict", url=f"{server}/good.txt", directory=tmp_path)
    recorded = path.with_suffix(".sha256").read_text().strip()
    assert recorded == hashlib.sha256(BODY).hexdigest()


def test_damaged_cache_is_detected(server, pinned, tmp_path):
    path = corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=tmp_path)
    path.write_bytes(b"tampered")
    with pytest.raises(CorpusUnavailable, match="damaged"):
        corpus.load("tinyshakespeare", directory=tmp_path, download_if_missing=False)
    assert not path.exists()


def test_not_downloaded_yet(tmp_path):
    with pytest.raises(CorpusUnavailable, match="not downloaded"):
        corpus.load("tinyshakespeare", directory=tmp_path, download_if_missing=False)
