"""Models from the Hugging Face Hub, fetched once, for every family alike: which models llmviz offers
(:data:`MODELS`), where their files are cached, whether this machine can reach the Hub, fetching the files a family
needs (:class:`HubFiles`), and a download that runs in a child process, reports its bytes and can be cancelled
(:class:`BackgroundDownload`). :mod:`llmviz.hub.gpt2` and :mod:`llmviz.hub.llama` keep only what differs: which files
their checkpoints need, the config mapping and the weight renaming.

huggingface_hub does the fetching: it caches (``HF_HUB_CACHE``, by default ~/.cache/huggingface/hub) and verifies
what it got. llmviz adds a quick "offline?" answer before anything waits on the network, one message saying how to get
a model that is missing, the free disk space checked before a byte of the weights is written, and progress.

A background download, as the app starts one::

    download = start_download(MODELS["gpt2"], gpt2.FILES, owner=session_id, liveness=is_connected)
    download.status()   # DownloadStatus(state='downloading', done_bytes=…, total_bytes=548105171, …)
    download.release(session_id)   # the last owner gone (or disconnected): the child process is stopped
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from tqdm.std import tqdm

from llmviz.errors import CheckpointError, LlmvizError

CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"

Family = Literal["gpt2", "llama"]
DownloadState = Literal["starting", "downloading", "done", "failed", "cancelled"]


class HubUnavailable(LlmvizError):
    """A model's files are neither on disk nor downloadable now (offline, the Hub unreachable, too little disk space,
    a cancelled download)."""


@dataclass(frozen=True)
class HubModel:
    """A pretrained model llmviz offers from the Hub.

    ``name`` is llmviz's short name for it (in the picker's keys and in links: ``hub:<name>``), ``repo_id`` its
    Hub id, ``maker`` who trained it, ``download`` the size of its weights as a person reads it, ``offered`` whether
    the picker and the pages offer it in one click (the others are listed once they are in the cache).
    """

    name: str
    repo_id: str
    title: str
    maker: str
    family: Family
    download: str
    offered: bool = False


MODELS: dict[str, HubModel] = {
    model.name: model
    for model in (
        HubModel("gpt2", "gpt2", "GPT-2 small (124M)", "OpenAI", "gpt2", "548 MB", offered=True),
        HubModel("gpt2-medium", "gpt2-medium", "GPT-2 medium (355M)", "OpenAI", "gpt2", "1.5 GB"),
        HubModel("gpt2-large", "gpt2-large", "GPT-2 large (774M)", "OpenAI", "gpt2", "3.2 GB"),
        HubModel("gpt2-xl", "gpt2-xl", "GPT-2 XL (1.5B)", "OpenAI", "gpt2", "6.4 GB"),
        HubModel("distilgpt2", "distilgpt2", "DistilGPT-2 (82M)", "Hugging Face", "gpt2", "353 MB"),
        HubModel(
            "smollm2-135m",
            "HuggingFaceTB/SmolLM2-135M",
            "SmolLM2 135M",
            "Hugging Face",
            "llama",
            "269 MB",
            offered=True,
        ),
        HubModel("smollm2-360m", "HuggingFaceTB/SmolLM2-360M", "SmolLM2 360M", "Hugging Face", "llama", "724 MB"),
        HubModel("qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B", "Qwen2.5 0.5B", "Alibaba's Qwen team", "llama", "988 MB"),
    )
}


def by_repo_id(repo_id: str) -> HubModel | None:
    """The offered model with this Hub id, if any.

    >>> by_repo_id("HuggingFaceTB/SmolLM2-135M").name, by_repo_id("someone/else")
    ('smollm2-135m', None)
    """
    return next((model for model in MODELS.values() if model.repo_id == repo_id), None)


def models_table() -> str:
    """:data:`MODELS` as a Markdown table (``docs/models.md`` holds it; a test keeps the two the same).

    >>> models_table().splitlines()[2]
    '| `hub:gpt2` | `gpt2` | OpenAI | GPT-2 small (124M) | GPT-2 | 548 MB | in one click |'
    """
    rows = [
        "| picker key | Hub id | maker | model | family | download | offered |",
        "| --- | --- | --- | --- | --- | ---: | --- |",
    ]
    for model in MODELS.values():
        family = "GPT-2" if model.family == "gpt2" else "Llama family"
        offered = "in one click" if model.offered else "once in the cache"
        rows.append(
            f"| `hub:{model.name}` | `{model.repo_id}` | {model.maker} | {model.title} | {family} | {model.download} | "
            f"{offered} |"
        )
    return "\n".join(rows)


# ---------------------------------------------------------------------------- the cache and the network


def cache_dir() -> str:
    """Where huggingface_hub keeps downloads (``HF_HUB_CACHE``, by default ~/.cache/huggingface/hub)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set: nothing will be downloaded, only the cache is read."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    if value is not None:
        return value.strip().upper() in {"1", "ON", "YES", "TRUE"}
    return bool(constants.HF_HUB_OFFLINE)


_REACHABLE: dict[str, tuple[float, bool]] = {}  # endpoint → (when checked, answer)


def hub_reachable(timeout: float = 2.0, max_age_s: float = 300.0) -> bool:
    """Can this machine open a connection to the Hugging Face Hub? (remembered for ``max_age_s``)

    A quick TCP connection, so that an offline server says "offline" at once instead of letting huggingface_hub
    retry for half a minute. Behind an HTTP proxy the answer is left to the download itself (True).
    """
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if hub_offline():
        return False
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    endpoint = urlparse(constants.ENDPOINT)
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (443 if endpoint.scheme == "https" else 80)
    checked = _REACHABLE.get(f"{host}:{port}")
    if checked is not None and time.monotonic() - checked[0] < max_age_s:
        return checked[1]
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        answer = True
    except OSError:
        answer = False
    _REACHABLE[f"{host}:{port}"] = (time.monotonic(), answer)
    return answer


def human_bytes(count: float) -> str:
    """A byte count as a person reads it (decimal units, as the Hub shows sizes).

    >>> human_bytes(548_105_171), human_bytes(12_345), human_bytes(1_520_000_000), human_bytes(512)
    ('548 MB', '12 kB', '1.5 GB', '512 bytes')
    """
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            value = count / size
            return f"{value:.2g} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(count)} bytes"


# ---------------------------------------------------------------------------- the files a family needs


def shard_names(index_file: Path) -> set[str]:
    """The shard files a ``model.safetensors.index.json`` lists."""
    try:
        index = json.loads(index_file.read_text(encoding="utf-8"))
        return {str(name) for name in index["weight_map"].values()}
    except (ValueError, KeyError, AttributeError, TypeError) as error:
        raise CheckpointError(f"{index_file.name} in {index_file.parent} is damaged: {error}") from None


@dataclass(frozen=True)
class HubFiles:
    """The files a family's checkpoints consist of, and everything done with them: is a model cached (and where),
    fetch it, find the folder to load, say how to get it.

    ``needs``: files besides ``config.json`` that every checkpoint of the family must have (``tokenizer.json`` for
    the Llama family, whose tokenizers differ); ``weights``: the weight files to look for, in order of preference
    (a safetensors index brings its shards); ``command``: the command line that downloads one; ``example``: a Hub id
    to show in messages.
    """

    needs: tuple[str, ...]
    weights: tuple[str, ...]
    command: str
    example: str

    def how_to_get(self, repo_id: str) -> str:
        """What a person does to get the weights (said wherever they are missing)."""
        model = by_repo_id(repo_id)
        size = f" ({model.download})" if model else ""
        return (
            f"To get it, connect to the internet once and run `{self.command} {repo_id}`{size}: huggingface_hub "
            f"keeps it in its cache ({cache_dir()}), and from then on it loads offline."
        )

    def offline_note(self, repo_id: str) -> str:
        """What to do when ``HF_HUB_OFFLINE`` stops a download."""
        return (
            f"{repo_id} is not in the cache and HF_HUB_OFFLINE is set, which forbids every download: unset it "
            f"(`unset HF_HUB_OFFLINE`, or run `HF_HUB_OFFLINE=0 {self.command} {repo_id}`) while online; once "
            "the weights are cached, they load with it set."
        )

    def check_repo_id(self, repo_id: str) -> None:
        """A :class:`HubUnavailable` for a text that is no Hub id (before the cache or the network is asked)."""
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        try:
            validate_repo_id(repo_id)
        except HFValidationError:
            raise HubUnavailable(
                f"{repo_id!r} is neither a folder on this computer nor a Hugging Face Hub id (such as {self.example})."
            ) from None

    def cached_folder(self, repo_id: str) -> Path | None:
        """The cache's snapshot folder holding ``config.json``, the needed files and the weights of ``repo_id``, or
        None. Only the cache is read (``try_to_load_from_cache``): no network, so it is cheap to ask on every page run.
        """
        from huggingface_hub import try_to_load_from_cache

        self.check_repo_id(repo_id)
        found = [try_to_load_from_cache(repo_id, name) for name in (CONFIG_FILE, *self.needs)]
        if not all(isinstance(path, str) for path in found):
            return None
        folder = Path(str(found[0])).parent
        for name in self.weights:
            weights = try_to_load_from_cache(repo_id, name)
            if not isinstance(weights, str):
                continue
            if name == SAFETENSORS_INDEX and not all((folder / shard).exists() for shard in shard_names(Path(weights))):
                continue  # an interrupted download: some shards are missing
            return folder
        return None

    def is_cached(self, repo_id: str) -> bool:
        return self.cached_folder(repo_id) is not None

    def download(self, repo_id: str, on_bytes: Callable[[int, int], None] | None = None) -> Path:
        """Fetch ``config.json``, the needed files and the weights of ``repo_id`` into the cache (once), return the
        folder. ``on_bytes(done, total)`` hears the weights' progress. The first weight file of :attr:`weights` that
        the repository has is fetched (a safetensors index with its shards).
        """
        from huggingface_hub.errors import OfflineModeIsEnabled

        folder = self.cached_folder(repo_id)
        if folder is not None:
            return folder
        if hub_offline():
            raise HubUnavailable(self.offline_note(repo_id))
        if not hub_reachable():
            raise HubUnavailable(
                f"{repo_id} is not in the cache and the Hugging Face Hub cannot be reached from here (offline?). "
                f"{self.how_to_get(repo_id)}"
            )
        try:
            return self._fetch(repo_id, _ByteCounter(on_bytes))
        except OfflineModeIsEnabled:
            raise HubUnavailable(self.offline_note(repo_id)) from None
        except HubUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - HTTP errors, OSError, a bad index: each said in one line
            raise HubUnavailable(
                f"Could not download {repo_id} from the Hugging Face Hub ({type(error).__name__}: {error}). "
                f"{self.how_to_get(repo_id)}"
            ) from None

    def _fetch(self, repo_id: str, counter: _ByteCounter) -> Path:
        import huggingface_hub
        from huggingface_hub.errors import EntryNotFoundError

        def fetch(name: str, counted: bool = False) -> Path:
            bar = counter.bar_class() if counted else None
            return Path(str(huggingface_hub.hf_hub_download(repo_id, name, tqdm_class=bar)))

        config = fetch(CONFIG_FILE)
        for name in self.needs:
            fetch(name)
        for name in self.weights:
            try:
                path = fetch(name, counted=True)
            except EntryNotFoundError:
                continue
            if name == SAFETENSORS_INDEX:
                for shard in sorted(shard_names(path)):
                    fetch(shard, counted=True)
            return config.parent
        raise HubUnavailable(f"{repo_id} on the Hub has none of {', '.join(self.weights)}.")

    def resolve(self, source: str | Path, allow_download: bool = False) -> Path:
        """The folder to load: ``source`` itself when it is a local folder, else the Hub cache's copy (downloaded
        first when ``allow_download``)."""
        path = Path(source)
        if path.is_dir():
            return path
        folder = self.cached_folder(str(source))
        if folder is not None:
            return folder
        if not allow_download:
            raise HubUnavailable(f"{source} is not downloaded yet. {self.how_to_get(str(source))}")
        return self.download(str(source))


def free_bytes(folder: str) -> int:
    """Free disk space where ``folder`` is (or would be created)."""
    path = Path(folder)
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


class _ByteCounter:
    """Adds up the bytes huggingface_hub's progress bars report while the weights arrive, and checks the disk before
    a file's bytes are written. huggingface_hub makes one bar per file over HTTP, and two with Xet (the bytes written,
    "reconstructing file", and the bytes received, "downloading bytes": only the first is counted)."""

    MARGIN = 64 * 2**20  # room left on the disk beyond the file

    def __init__(self, on_bytes: Callable[[int, int], None] | None):
        self.on_bytes = on_bytes
        self.done: dict[int, int] = {}
        self.total: dict[int, int] = {}

    def bar_class(self) -> type:
        counter = self

        class CountingBar(tqdm):
            def __init__(self, *args, **kwargs):
                kwargs.update(disable=True)
                kwargs.pop("name", None)
                super().__init__(*args, **kwargs)
                self.counted = "downloading bytes" not in str(kwargs.get("desc", "")).lower()
                if self.counted:
                    counter.opened(id(self), self.total, kwargs.get("initial") or 0)

            def update(self, n: float | None = 1) -> bool | None:
                self.n += n or 0
                if self.counted:
                    counter.grew(id(self), int(self.n), self.total)
                return None

        return CountingBar

    def opened(self, bar: int, total: int | None, initial: int) -> None:
        if total:
            missing = total - initial
            free = free_bytes(cache_dir())
            if missing + self.MARGIN > free:
                raise HubUnavailable(
                    f"Too little disk space for the download: it needs {human_bytes(missing)} and "
                    f"{human_bytes(free)} are free where huggingface_hub keeps its cache ({cache_dir()})."
                )
        self.grew(bar, initial, total)

    def grew(self, bar: int, done: int, total: float | None) -> None:
        self.done[bar] = done
        if total:
            self.total[bar] = int(total)
        if self.on_bytes is not None:
            self.on_bytes(sum(self.done.values()), sum(self.total.values()))


# ---------------------------------------------------------------------------- a download in a child process


@dataclass(frozen=True)
class DownloadStatus:
    """Where a background download stands; ``message`` says why it failed (or was cancelled)."""

    state: DownloadState
    done_bytes: int = 0
    total_bytes: int = 0
    message: str = ""
    folder: str | None = None

    @property
    def fraction(self) -> float:
        return min(1.0, self.done_bytes / self.total_bytes) if self.total_bytes else 0.0

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    def describe(self, model: HubModel) -> str:
        """One line for a progress bar.

        >>> DownloadStatus("downloading", 137_000_000, 548_000_000).describe(MODELS["gpt2"])
        'Downloading GPT-2 small (124M): 137 MB of 548 MB (25%)'
        """
        if self.state == "starting":
            return f"Starting the download of {model.title} ({model.download})…"
        if self.state == "downloading":
            total = human_bytes(self.total_bytes) if self.total_bytes else model.download
            return (
                f"Downloading {model.title}: {human_bytes(self.done_bytes)} of {total} ({self.fraction:.0%})"
                if self.total_bytes
                else f"Downloading {model.title} ({total})…"
            )
        if self.state == "done":
            return f"{model.title} is downloaded."
        return self.message


@dataclass
class BackgroundDownload:
    """One model's files fetched by a child process (``python -m llmviz.hub.download``): huggingface_hub's downloads
    cannot be stopped from a thread, but a process can: :meth:`cancel` ends it and deletes the part of the weights it
    had written (huggingface_hub writes each download to a file of its own and starts a new one from the beginning).

    The child reads the cache folder and the Hub address this process has (``HF_HUB_CACHE``, ``HF_ENDPOINT``), reports
    its bytes as JSON lines on its stdout and stops on its own when this process ends (its stdin closes).

    ``owners`` are the browser sessions that want it; :meth:`release` drops one, and with ``liveness(owner)`` (False
    for a session that has ended) a watcher drops the ended ones: with no owner left the download is cancelled.
    """

    model: HubModel
    files: HubFiles
    liveness: Callable[[str], bool | None] | None = None
    owners: set[str] = field(default_factory=set)
    poll_s: float = 1.0
    _status: DownloadStatus = field(default_factory=lambda: DownloadStatus("starting"))
    _process: subprocess.Popen | None = None
    _started: float = 0.0  # time.time() when the child started
    _cache: str = ""  # the cache folder the child writes to
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> BackgroundDownload:
        from huggingface_hub import constants

        self._started, self._cache = time.time(), cache_dir()
        package_root = str(Path(__file__).resolve().parents[2])
        environment = {
            **os.environ,
            "HF_HUB_CACHE": cache_dir(),
            "HF_ENDPOINT": constants.ENDPOINT,
            "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
        }
        layout = json.dumps({"needs": self.files.needs, "weights": self.files.weights, "command": self.files.command})
        self._process = subprocess.Popen(
            [sys.executable, "-m", "llmviz.hub.download", self.model.repo_id, layout],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            text=True,
        )
        threading.Thread(target=self._read, name=f"download {self.model.name}", daemon=True).start()
        threading.Thread(target=self._watch, name=f"download {self.model.name} owners", daemon=True).start()
        return self

    def status(self) -> DownloadStatus:
        with self._lock:
            return self._status

    def want(self, owner: str) -> None:
        with self._lock:
            self.owners.add(owner)

    def release(self, owner: str) -> None:
        """``owner`` no longer wants it; the last one gone cancels the download."""
        with self._lock:
            self.owners.discard(owner)
            nobody = not self.owners
        if nobody:
            self.cancel("Cancelled: nobody waits for it any more.")

    def cancel(self, message: str = "The download was cancelled.") -> None:
        with self._lock:
            if self._status.finished:
                return
            self._status = replace(self._status, state="cancelled", message=message)
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait()
            self._remove_partial_files()

    def _remove_partial_files(self) -> None:
        """Delete the unfinished files the stopped child wrote (``blobs/<etag>.<id>.incomplete``, written since it
        started): nothing else would ever read them."""
        blobs = Path(self._cache) / ("models--" + self.model.repo_id.replace("/", "--")) / "blobs"
        for partial in blobs.glob("*.incomplete"):
            try:
                if partial.stat().st_mtime >= self._started - 1.0:
                    partial.unlink()
            except OSError:
                pass  # gone already

    def _set(self, **changes) -> None:
        with self._lock:
            if not self._status.finished:  # a cancelled download stays cancelled
                self._status = replace(self._status, **changes)

    def _read(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        for line in process.stdout:
            try:
                report = json.loads(line)
            except ValueError:
                continue
            if "error" in report:
                self._set(state="failed", message=str(report["error"]))
            elif "folder" in report:
                self._set(state="done", folder=str(report["folder"]), done_bytes=self.status().total_bytes)
            else:
                self._set(state="downloading", done_bytes=int(report["done"]), total_bytes=int(report["total"]))
        code = process.wait()
        if not self.status().finished:
            self._set(state="failed", message=f"The download of {self.model.title} stopped (exit status {code}).")

    def _watch(self) -> None:
        while not self.status().finished:
            time.sleep(self.poll_s)
            if self.liveness is None:
                continue
            with self._lock:
                gone = {owner for owner in self.owners if self.liveness(owner) is False}
                self.owners -= gone
                nobody = bool(gone) and not self.owners
            if nobody:
                self.cancel("Cancelled: the browser sessions that asked for it have ended.")


_DOWNLOADS: dict[str, BackgroundDownload] = {}
_DOWNLOADS_LOCK = threading.Lock()


def start_download(
    model: HubModel, files: HubFiles, owner: str, liveness: Callable[[str], bool | None] | None = None
) -> BackgroundDownload:
    """The server's download of ``model`` with ``owner`` among those who want it: the one under way (or finished), or a
    new one when there is none or the last one failed or was cancelled. One per model: two sessions that ask share it
    (the cache it fills is shared, and depends on nothing but the model)."""
    with _DOWNLOADS_LOCK:
        download = _DOWNLOADS.get(model.name)
        if download is None or download.status().state in ("failed", "cancelled"):
            download = BackgroundDownload(model, files, liveness)
            download.want(owner)
            _DOWNLOADS[model.name] = download.start()
        else:
            download.want(owner)
        return download


def running_download(model: HubModel) -> BackgroundDownload | None:
    """The server's download of ``model`` (under way or finished), if one was started."""
    with _DOWNLOADS_LOCK:
        return _DOWNLOADS.get(model.name)


def _child(repo_id: str, layout: str) -> int:
    """The child process of :class:`BackgroundDownload`: fetch, print progress as JSON lines, exit 0 or 1."""
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(1)), daemon=True).start()  # the parent ended: stop
    described = json.loads(layout)
    files = HubFiles(tuple(described["needs"]), tuple(described["weights"]), str(described["command"]), repo_id)
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.2 or (total and done >= total):
            last[0] = now
            print(json.dumps({"done": done, "total": total}), flush=True)

    try:
        folder = files.download(repo_id, on_bytes=report)
    except LlmvizError as error:
        print(json.dumps({"error": str(error)}), flush=True)
        return 1
    print(json.dumps({"folder": str(folder)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
