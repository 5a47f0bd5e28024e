"""Fetching a model from the Hub, for every family alike (llmviz.hub.download), against a fake Hub on 127.0.0.1
(tests/support/fake_hub.py: the test suite forbids the network): the bytes are reported, the disk is checked first,
and a background download runs in a child process that is cancelled by its owner, or when its owners' sessions end,
and resumes from where it stopped."""

from __future__ import annotations

import time

import pytest
import torch

from llmviz.hub import download, gpt2
from llmviz.hub.download import MODELS, BackgroundDownload, DownloadStatus, HubUnavailable, start_download
from tests.support.fake_hub import FakeHub
from tests.support.gpt2 import make_hf_gpt2


def wait_for(condition, what: str, timeout_s: float = 180.0) -> None:
    """Wait until ``condition()`` holds (a state, never a fixed sleep); the deadline only ends a hung test."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A random GPT-2 with GPT-2's vocabulary and d_model 128: its model.safetensors (~27 MB) arrives in three of
    huggingface_hub's 10 MB chunks, so its progress has steps in between."""
    folder = tmp_path_factory.mktemp("repo")
    reference = make_hf_gpt2(vocab_size=50257, n_layer=1, n_embd=128, n_head=2, n_positions=64, seed=7)
    reference.save_pretrained(folder)
    return folder, reference


@pytest.fixture
def hub(repo, tmp_path, monkeypatch):
    """The fake Hub serving the model as ``gpt2``, an empty cache, no remembered answers or downloads."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(download, "_REACHABLE", {})
    monkeypatch.setattr(download, "_DOWNLOADS", {})
    with FakeHub({"gpt2": repo[0]}) as fake:
        fake.point(monkeypatch)
        yield fake


def weights_size(repo) -> int:
    return (repo[0] / "model.safetensors").stat().st_size


def same_model(reference) -> bool:
    model, tokenizer, _ = gpt2.load("gpt2")
    ids = torch.tensor([tokenizer.encode("Every effort moves you")])
    with torch.no_grad():
        return torch.allclose(model(ids)[0], reference(ids).logits, atol=1e-5)


def test_a_download_reports_its_bytes_and_loads(hub, repo):
    heard = []
    folder = gpt2.FILES.download("gpt2", on_bytes=lambda done, total: heard.append((done, total)))
    assert folder == gpt2.FILES.cached_folder("gpt2")
    total = weights_size(repo)
    assert heard[0] == (0, total) and heard[-1] == (total, total)
    assert len(heard) >= 4 and [done for done, _ in heard] == sorted(done for done, _ in heard)  # chunk by chunk
    assert same_model(repo[1])


def test_too_little_disk_space_is_said_before_the_weights_are_written(hub, repo, monkeypatch, tmp_path):
    monkeypatch.setattr(download, "free_bytes", lambda folder: weights_size(repo) // 2)
    with pytest.raises(HubUnavailable, match="Too little disk space for the download: it needs 2[0-9] MB"):
        gpt2.FILES.download("gpt2")
    assert not gpt2.FILES.is_cached("gpt2")
    written = {path.name: path.stat().st_size for path in (tmp_path / "cache").rglob("*") if path.is_file()}
    assert written and max(written.values()) < 10_000, written  # config.json; not one byte of the weights


@pytest.mark.processes
def test_a_background_download_runs_in_a_child_process(hub, repo):
    running = start_download(MODELS["gpt2"], gpt2.FILES, owner="alice")
    assert start_download(MODELS["gpt2"], gpt2.FILES, owner="bob") is running  # one download per model
    wait_for(lambda: running.status().finished, "the download to end")
    status = running.status()
    assert status.state == "done", status.message
    assert status.done_bytes == status.total_bytes == weights_size(repo) and status.fraction == 1.0
    assert status.folder == str(gpt2.FILES.cached_folder("gpt2"))
    assert same_model(repo[1])


@pytest.mark.processes
def test_cancelled_by_its_last_owner_it_stops_and_leaves_nothing_behind(hub, repo, tmp_path):
    hub.bytes_per_s = 2e6  # ~14 s for the weights: time to cancel on the way
    first = start_download(MODELS["gpt2"], gpt2.FILES, owner="alice")
    first.want("bob")
    total = weights_size(repo)
    wait_for(lambda: 0 < first.status().done_bytes < total, "some of the weights")
    first.release("alice")
    assert first.status().state == "downloading"  # bob still waits for it
    first.release("bob")
    assert first.status().state == "cancelled"
    assert first._process is not None and first._process.poll() is not None  # the child has ended
    assert not gpt2.FILES.is_cached("gpt2")
    assert not list((tmp_path / "cache").rglob("*.incomplete"))  # its unfinished weights are deleted

    hub.bytes_per_s = None
    second = start_download(MODELS["gpt2"], gpt2.FILES, owner="alice")
    assert second is not first  # a cancelled download is not handed out again: a new one starts
    wait_for(lambda: second.status().finished, "the second download to end")
    assert second.status().state == "done", second.status().message
    assert same_model(repo[1])


@pytest.mark.processes
def test_a_download_whose_sessions_have_ended_is_cancelled(hub, repo):
    hub.bytes_per_s = 1e6
    ended: set[str] = set()
    running = BackgroundDownload(MODELS["gpt2"], gpt2.FILES, liveness=lambda owner: owner not in ended, poll_s=0.05)
    running.want("alice")
    running.start()
    wait_for(lambda: running.status().state == "downloading", "the download to start")
    ended.add("alice")
    wait_for(lambda: running.status().finished, "the watcher to notice")
    assert running.status().state == "cancelled" and "ended" in running.status().message


@pytest.mark.processes
def test_offline_the_child_says_how_to_get_it(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    running = start_download(
        MODELS["smollm2-135m"],
        download.HubFiles(("tokenizer.json",), ("model.safetensors",), "python -m llmviz hf download", "x"),
        owner="alice",
    )
    wait_for(lambda: running.status().finished, "the child to answer")
    status = running.status()
    assert status.state == "failed" and "HF_HUB_OFFLINE" in status.message
    assert "python -m llmviz hf download HuggingFaceTB/SmolLM2-135M" in status.message


def test_status_lines():
    model = MODELS["smollm2-135m"]
    assert DownloadStatus("downloading", 0, 0).describe(model) == "Downloading SmolLM2 135M (269 MB)…"
    half = DownloadStatus("downloading", 134_530_276, 269_060_552)
    assert half.describe(model) == "Downloading SmolLM2 135M: 135 MB of 269 MB (50%)" and half.fraction == 0.5


def test_docs_hold_the_table_of_hub_models():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[3] / "docs" / "models.md"
    assert download.models_table() in docs.read_text(encoding="utf-8")


def test_a_xet_download_counts_the_bytes_written_once():
    """The Hub sends large files through Xet, whose reporter keeps two bars (bytes written, bytes received): the
    progress is the bytes written, counted once. Fed here with the reports hf_xet gives, as huggingface_hub does."""
    import logging
    from types import SimpleNamespace

    from huggingface_hub.utils._xet_progress_reporting import XetDownloadProgressReporter

    heard = []
    counter = download._ByteCounter(lambda done, total: heard.append((done, total)))
    with XetDownloadProgressReporter(
        reconstruction_desc="model.safetensors: reconstructing file",
        transfer_desc="model.safetensors: downloading bytes",
        total=1000,
        log_level=logging.WARNING,
        tqdm_class=counter.bar_class(),
    ) as reporter:
        for written, received in ((0, 300), (400, 700), (1000, 1000)):
            report = SimpleNamespace(
                total_bytes_completed=written,
                total_transfer_bytes_completed=received,
                total_bytes=1000,
                total_bytes_completion_rate=None,
                total_transfer_bytes_completion_rate=None,
            )
            reporter.update_progress(report)
    assert heard[0] == (0, 1000) and heard[-1] == (1000, 1000)
    assert [done for done, _ in heard] == [0, 400, 1000]
