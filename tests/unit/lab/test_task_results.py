"""What a student's task made is kept (issue 56: a BPE tokenizer trained on the Tokens page, word vectors trained on
Embeddings lived only in the tab): the lab writes a task's result as its run's one kept file (safetensors, never
unpickled), within the student's quota, and gives the newest back after a restart, to its student only. The merges
are checked against the textbook BPE loop (``train_naive``, minbpe's), the vectors against the trained model itself.
Real SQLite and PostgreSQL (the ``database_url`` fixture), real worker processes."""

from __future__ import annotations

import functools
import subprocess
import sys
from pydoc_data.topics import topics

import pytest
import torch

from llmviz.jobs.manager import JobManager
from llmviz.lab.service import Lab, SnapshotDamaged
from llmviz.lessons import embeddings_word2vec, tokens
from llmviz.tokenizers.bpe.merging import train_naive
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.training import tasks
from llmviz.training.checkpoint import load_checkpoint
from tests.support.lab_process import submit
from tests.support.paths import ROOT

TEXT = "".join(topics[name] for name in sorted(topics))[:6000]  # the Python manual's first 6,000 characters
ORIGIN = {"pattern": "gpt2", "vocab_size": 300, "corpus": "<b>my text</b>.txt", "corpus_key": "k1"}


def _bpe(manager: JobManager, student: str, text: str = TEXT, origin: dict = ORIGIN):
    task, merges, footprint = tokens.bpe_training(text, origin["vocab_size"], origin["pattern"])
    job = manager.submit_task(
        student,
        task,
        label="BPE tokenizer · 300 tokens",
        total=merges,
        returns_when_stopped=True,
        footprint=footprint,
        keep=tokens.bpe_keeping(origin),
    )
    assert job.wait(120) and job.status().state == "finished", job.status().error
    return job


def test_a_trained_bpe_comes_back_after_a_restart_with_the_same_merges_to_its_student_only(tmp_path, database_url):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    _bpe(manager, "ada", text="an older text, an older tokenizer " * 30)
    job = _bpe(manager, "ada")
    manager.shutdown()  # a restart: what the page held is gone
    lab = Lab.at(tmp_path, url=database_url)
    view, tensors, meta = lab.kept_result("ada", "bpe")
    assert view.id == job.id and view.kind == "task" and view.config["task"] == "bpe"  # the newest of the two
    bpe, origin = tokens.bpe_from_kept(tensors, meta)
    reference = train_naive(TEXT, 300 - 1, "gpt2")  # minbpe's loop; one id is the <|endoftext|> special token
    assert bpe.merges == reference and len(bpe.merges) == 300 - 256 - 1
    assert bpe.merge_counts == [r.count for r in job.result]
    assert bpe.special_tokens == {"<|endoftext|>": 299} and bpe.decode(bpe.encode(TEXT)) == TEXT
    assert origin == ORIGIN  # the corpus's name as given (escaped where a page draws it)
    assert lab.kept_result("bo", "bpe") is None and lab.kept_result("ada", "word2vec") is None
    assert lab.disk("ada").used >= tensors["merges"].numel() * 8  # in the quota
    lab.delete_run("ada", job.id)  # Delete in the Kept runs table: the older one is the newest now
    older, *_ = lab.kept_result("ada", "bpe")
    assert older.id != job.id


def test_word_vectors_come_back_as_they_were_trained(tmp_path, database_url):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path, url=database_url))
    loop = functools.partial(tasks.word2vec_training, text=TEXT * 3, dim=8, window=2, steps=30, max_vocab=50, seed=3)
    job = manager.submit_task(
        "ada",
        loop,
        label="word2vec · 8 dimensions",
        total=30,
        keep=embeddings_word2vec.word2vec_keeping("the mats", 30),
    )
    assert job.wait(120) and job.result is not None
    manager.shutdown()
    _, tensors, meta = Lab.at(tmp_path, url=database_url).kept_result("ada", "word2vec")
    corpus, trained, asked = embeddings_word2vec.word2vec_from_kept(tensors, meta)
    assert (corpus, asked, trained.step) == ("the mats", 30, job.result.step)
    assert trained.vocabulary.words == job.result.vocabulary.words
    assert torch.equal(trained.model.center.weight, job.result.model.center.weight)
    assert torch.equal(trained.model.context.weight, job.result.model.context.weight)


def test_a_damaged_result_is_one_sentence_and_a_result_over_the_quota_is_not_kept(tmp_path):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    job = _bpe(manager, "ada")
    manager.shutdown()
    lab = Lab.at(tmp_path)
    [(_, path, _)] = lab.registry.records.snapshots(job.id)
    with open(path, "r+b") as kept:
        kept.write(b"\xff" * 64)  # its header broken
    with pytest.raises(SnapshotDamaged, match=r"^The kept BPE tokenizer · 300 tokens is damaged") as damaged:
        lab.kept_result("ada", "bpe")
    assert str(tmp_path) not in str(damaged.value)
    tight = JobManager(max_running=1, lab=Lab.at(tmp_path / "tight", quota=100))
    job = _bpe(tight, "bo")
    tight.shutdown()
    lab = Lab.at(tmp_path / "tight")
    assert lab.run("bo", job.id).state == "finished" and lab.kept_result("bo", "bpe") is None  # recorded, not kept


def _cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llmviz", *arguments], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


@pytest.mark.processes  # the lab command runs as python -m llmviz
def test_the_command_line_exports_a_kept_bpe_word_vectors_and_a_model_run(tmp_path):
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path))
    bpe = _bpe(manager, "ada")
    loop = functools.partial(tasks.word2vec_training, text=TEXT * 3, dim=4, window=2, steps=20, max_vocab=30, seed=3)
    vectors = manager.submit_task(
        "ada", loop, label="word2vec", total=20, keep=embeddings_word2vec.word2vec_keeping("m", 20)
    )
    model = submit(manager, "bo", 10)
    assert vectors.wait(120) and model.wait(300)
    manager.shutdown()
    runs = ("--runs-dir", str(tmp_path))

    done = _cli("lab", "export", bpe.id, str(tmp_path / "bpe.json"), *runs)
    assert done.returncode == 0 and "a BPE tokenizer, 43 merges" in done.stdout, done.stderr
    assert BPETokenizer.load(tmp_path / "bpe.json").merges == [(r.pair, r.new_id) for r in bpe.result]
    tokenized = _cli("tokenize", "class Foo:", "--tokenizer", str(tmp_path / "bpe.json"))
    assert tokenized.returncode == 0 and tokenized.stdout.strip(), tokenized.stderr

    done = _cli("lab", "export", vectors.id, str(tmp_path / "vectors.txt"), *runs)
    assert done.returncode == 0, done.stderr
    header, *rows = (tmp_path / "vectors.txt").read_text(encoding="utf-8").splitlines()
    words = vectors.result.vocabulary.words
    assert header == f"{len(words)} 4" and [row.split(" ")[0] for row in rows] == words
    read = torch.tensor([[float(value) for value in row.split(" ")[1:]] for row in rows])
    assert torch.allclose(read, vectors.result.model.center.weight, rtol=1e-6, atol=1e-7)  # 7 significant digits

    done = _cli("lab", "export", model.id, str(tmp_path / "model.safetensors"), *runs)
    assert done.returncode == 0 and "at step 10 (a checkpoint)" in done.stdout, done.stderr
    loaded, _, meta = load_checkpoint(tmp_path / "model.safetensors")
    assert meta["step"] == 10 and sum(p.numel() for p in loaded.parameters()) > 0

    for arguments in (["nothing-here", str(tmp_path / "x.json")], [bpe.id, str(tmp_path / "bpe.json")]):
        refused = _cli("lab", "export", *arguments, *runs)  # no such run; a file that exists already
        assert refused.returncode != 0 and refused.stdout == "" and len(refused.stderr.strip().splitlines()) == 1
