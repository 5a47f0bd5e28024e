"""The downloader against a real HTTP server on 127.0.0.1."""

import hashlib
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llmviz.data import corpus
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
        elif self.path == "/cut-no-length.txt":  # HTTP/1.0 style: the body ends when the connection closes
            self.send_response(200)
            self.end_headers()
            self.wfile.write(BODY[: len(BODY) // 3])
            self.wfile.flush()
            self.close_connection = True
        elif self.path == "/trickle.txt":  # one byte every 0.3 s: each read is quick, the whole never ends
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            try:
                for byte in BODY[:40]:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass  # the client gave up, as it should
        elif self.path == "/slow-headers.txt":  # the status line and headers at ~20 bytes/s, then it stops
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\nX-Padding: {'x' * 200}\r\n\r\n".encode()
            try:
                for byte in head[:120]:  # bounded: the server gives up by itself after ~6 s
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            self.close_connection = True
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
    fake = corpus.CorpusInfo(**{**entry.__dict__, "sha256": hashlib.sha256(BODY).hexdigest(), "size_bytes": len(BODY)})
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


def test_wrong_checksum_caches_nothing(server, monkeypatch, tmp_path):
    entry = corpus.REGISTRY["tinyshakespeare"]  # the right size, but the real checksum cannot match this body
    monkeypatch.setitem(
        corpus.REGISTRY, "tinyshakespeare", corpus.CorpusInfo(**{**entry.__dict__, "size_bytes": len(BODY)})
    )
    with pytest.raises(CorpusUnavailable, match="checksum"):
        corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=tmp_path)
    assert _leftovers(tmp_path) == []


def test_a_body_larger_than_pinned_is_refused(server, monkeypatch, tmp_path):
    entry = corpus.REGISTRY["the-verdict"]
    monkeypatch.setitem(corpus.REGISTRY, "the-verdict", corpus.CorpusInfo(**{**entry.__dict__, "size_bytes": 100}))
    with pytest.raises(CorpusUnavailable, match="larger than the pinned"):
        corpus.download("the-verdict", url=f"{server}/good.txt", directory=tmp_path)
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


def test_every_downloadable_corpus_is_pinned():
    downloadable = [entry for entry in corpus.list_corpora() if entry.downloadable]
    assert {entry.name for entry in downloadable} >= {"tinyshakespeare", "the-verdict"}
    for entry in downloadable:
        assert len(entry.sha256) == 64 and entry.size_bytes > 0, entry.name
    with pytest.raises(ValueError, match="pinned"):
        corpus.CorpusInfo(name="x", title="x", description="", source="", licence="", url="http://127.0.0.1/x")


def test_cut_body_without_content_length_is_refused_and_does_not_lock_out_the_good_file(server, pinned, tmp_path):
    with pytest.raises(CorpusUnavailable, match="cut off"):
        corpus.download("tinyshakespeare", url=f"{server}/cut-no-length.txt", directory=tmp_path)
    assert _leftovers(tmp_path) == []  # nothing cached, no checksum recorded
    path = corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=tmp_path)
    assert path.read_bytes() == BODY
    assert _leftovers(tmp_path) == ["tinyshakespeare.txt"]


def test_a_trickling_server_is_given_up_on_in_bounded_time(server, pinned, tmp_path):
    started = time.monotonic()
    with pytest.raises(CorpusUnavailable, match="too slow"):
        corpus.download("tinyshakespeare", url=f"{server}/trickle.txt", directory=tmp_path, deadline_s=1.5)
    assert time.monotonic() - started < 10
    assert _leftovers(tmp_path) == []


def test_progress_is_reported_and_a_cancel_saves_nothing(server, pinned, tmp_path):
    seen = []
    corpus.download(
        "tinyshakespeare",
        url=f"{server}/good.txt",
        directory=tmp_path,
        progress=lambda received, total: seen.append((received, total)),
    )
    assert seen and seen[-1] == (len(BODY), len(BODY))
    assert [r for r, _ in seen] == sorted(r for r, _ in seen)

    def cancel(received, total):
        raise corpus.DownloadCancelled("Download cancelled.")

    other = tmp_path / "other"
    with pytest.raises(corpus.DownloadCancelled):
        corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=other, progress=cancel)
    assert _leftovers(other) == []


def test_damaged_cache_is_detected(server, pinned, tmp_path):
    path = corpus.download("tinyshakespeare", url=f"{server}/good.txt", directory=tmp_path)
    path.write_bytes(b"tampered")
    with pytest.raises(CorpusUnavailable, match="damaged"):
        corpus.load("tinyshakespeare", directory=tmp_path, download_if_missing=False)
    assert not path.exists()


def test_not_downloaded_yet(tmp_path):
    with pytest.raises(CorpusUnavailable, match="not downloaded"):
        corpus.load("tinyshakespeare", directory=tmp_path, download_if_missing=False)


def test_a_server_trickling_its_headers_is_given_up_on_at_the_deadline(server, pinned, tmp_path):
    # each header byte arrives well within the per-read timeout, so only a deadline from the first byte stops it
    # (the old code waited as long as the server kept trickling: here ~6 s, on a hostile server for ever)
    started = time.monotonic()
    with pytest.raises(CorpusUnavailable, match="too slow"):
        corpus.download(
            "tinyshakespeare", url=f"{server}/slow-headers.txt", directory=tmp_path, timeout=1.0, deadline_s=1.0
        )
    assert time.monotonic() - started < 2.5
    assert _leftovers(tmp_path) == []


def test_cancel_works_while_waiting_for_the_headers(server, pinned, tmp_path):
    calls = []

    def cancel(received, total):
        calls.append((received, total))
        raise corpus.DownloadCancelled("Download cancelled.")

    started = time.monotonic()
    with pytest.raises(corpus.DownloadCancelled):
        corpus.download(
            "tinyshakespeare", url=f"{server}/slow-headers.txt", directory=tmp_path, deadline_s=30, progress=cancel
        )
    assert time.monotonic() - started < 2.0
    assert calls == [(0, len(BODY))]  # asked before any body byte arrived
    assert _leftovers(tmp_path) == []
