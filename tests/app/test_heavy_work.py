"""A big upload is never tokenized in the server's script thread: the Tokens page reads bounded samples of it (and
says so), and the Training page hands its tokenizing to the run's worker (a job). A spy in this process (the
server's, as AppTest runs pages here; the workers are processes of their own) records every text the page's code
tokenizes or learns a vocabulary from; speed itself is never timed here."""

from __future__ import annotations

import random
import time

import pytest

from llmviz.tokenizers import char_word
from llmviz.training import dataset, trainer
from tests.support.pages import assert_clean, by_label, open_tab, run_app
from tests.support.waiting import wait_for

BIG = 3_000_000  # characters: far over every sample the pages read


@pytest.fixture()
def big_text():
    """3,000,000 characters of words, new for each test (nothing cached by an earlier run can answer)."""
    words = [f"w{random.randrange(10**9)}" for _ in range(2_000)]
    text = " ".join(random.choice(words) for _ in range(BIG // 6))
    return (text + " " * BIG)[:BIG]


@pytest.fixture()
def tokenized(monkeypatch):
    """The lengths of every text this process builds a tokenizer from or tokenizes for a run."""
    seen: list[int] = []

    def spy(owner, name):
        real = getattr(owner, name)

        def recorded(text, *args, **kwargs):
            seen.append(len(text))
            return real(text, *args, **kwargs)

        monkeypatch.setattr(owner, name, recorded if not isinstance(real, classmethod) else classmethod(recorded))

    for cls in (char_word.CharTokenizer, char_word.WordTokenizer):
        real_train = cls.train.__func__

        def train(cls_, text, *args, _real=real_train, **kwargs):
            seen.append(len(text))
            return _real(cls_, text, *args, **kwargs)

        monkeypatch.setattr(cls, "train", classmethod(train))
    for module in (trainer, dataset):  # build_trainer calls both by trainer's names; prepare_data by dataset's
        spy(module, "prepare_data")
        spy(module, "build_tokenizer")
    return seen


def test_the_tokens_page_reads_a_bounded_sample_of_a_big_upload_and_says_so(big_text, tokenized):
    at = run_app("stages/tokens.py", corpus="upload", uploaded_corpus=("big.txt", big_text))
    assert_clean(at)
    assert tokenized and max(tokenized) == 1_000_000  # the characters and the words of the first million
    at.multiselect(key="tokenizers").set_value(["characters", "words"]).run()
    table = next(d.value for d in at.dataframe if "tokenizer" in d.value.columns)
    assert list(table["tokenizer"])[0] == f"characters of big.txt (its first 1,000,000 of {BIG:,} characters)"


def test_the_training_page_tokenizes_a_big_upload_in_the_runs_worker(big_text, tokenized, fresh_session_jobs):
    from llmviz.jobs.default import default_manager

    at = run_app("stages/training.py", corpus="upload", uploaded_corpus=("big.txt", big_text))
    by_label(at.selectbox, "Model").set_value("mlp")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(10)
    at.run()
    at.button(key="train").click().run()
    assert_clean(at)
    assert all(length <= 2_000 for length in tokenized), tokenized  # nothing of the upload was tokenized here
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    deadline = time.monotonic() + 180
    while job.info is None and not job.status().done and time.monotonic() < deadline:
        job.wait(0.5)
    assert job.info is not None, job.status().describe()
    # built in the worker from the whole upload: one token per character with the char tokenizer
    assert job.info.train_tokens + job.info.val_tokens == BIG


def test_a_race_reads_the_first_characters_of_a_big_upload(big_text, tokenized, fresh_session_jobs):
    at = run_app("stages/training.py", corpus="upload", uploaded_corpus=("big.txt", big_text))
    open_tab(at, "training_part", "Races")
    at.button(key="switch_race").click().run()
    assert_clean(at)
    assert max(tokenized, default=0) <= 200_000, tokenized  # the server tokenizes nothing big: the race's worker does
    assert any("Races on the corpus train on its first 200,000" in caption.value for caption in at.caption)
    from llmviz.jobs.default import default_manager

    runners = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert runners
    for job in runners:  # each runner, built in the worker, read the first 200,000 characters (one token each)
        wait_for(lambda job=job: job.info is not None or job.status().done)  # built in its worker
        assert job.info is not None, job.status().error
        assert job.info.train_tokens + job.info.val_tokens <= 200_000
        job.stop()
