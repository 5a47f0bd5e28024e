"""Caches shared by every session of the server are keyed by content, never by a label: two AppTest sessions (one
process, so one set of Streamlit caches, as on a server) never see each other's cached numbers.

- an upload named like a built-in corpus ("Python reference manual") and the built-in corpus itself: the Tokens
  page's vocabularies of the corpus's characters and words, each checked against a count made here;
- a checkpoint rewritten in place under the same name (a teacher retrains ``runs/lesson``): every page's cache of
  what the model computes follows the new weights (the Sampling page's next-token distribution, checked against
  the model's own forward pass).
"""

from __future__ import annotations

import json
import re

import torch

from llmviz.data import corpus
from tests.support.pages import assert_clean, run_app

BUILT_IN = corpus.info("python-docs").title  # "Python reference manual"
UPLOADED = "alpha beta gamma delta\nbeta gamma\n" * 40


def corpus_rows(at) -> dict[str, dict]:
    """Each tokenizer card's name (its subheader) and vocabulary (its caption), by kind (characters, words)."""
    at.multiselect(key="tokenizers").set_value(["characters", "words"]).run()
    assert_clean(at)
    names = [h.value for h in at.subheader if h.value.startswith(("Characters of", "Words of"))]
    sizes = [c.value for c in at.caption if " tokens** · " in c.value]
    assert len(names) == len(sizes) == 2, (names, sizes)
    return {
        name.split(" of ")[0].lower(): {"tokenizer": name.replace("\\", ""), "caption": size}
        for name, size in zip(names, sizes)
    }


def vocabulary(row) -> int:
    return int(re.sub(r"[^\d]", "", row["caption"].split("vocabulary")[-1]))


def test_an_upload_under_a_built_in_name_and_the_built_in_never_share_numbers():
    upload = run_app("stages/tokens.py", corpus="upload", uploaded_corpus=(BUILT_IN, UPLOADED))
    built_in = run_app("stages/tokens.py")  # a second session: the built-in corpus of the same name
    again = run_app("stages/tokens.py", corpus="upload", uploaded_corpus=(BUILT_IN, UPLOADED))
    text = corpus.load("python-docs")
    for at, source in ((upload, UPLOADED), (built_in, text), (again, UPLOADED)):
        rows = corpus_rows(at)
        assert rows["characters"]["tokenizer"].startswith(f"Characters of {BUILT_IN}")  # the same name, both
        assert vocabulary(rows["characters"]) == len(set(source))  # counted here: the distinct characters
        # the upload's words by the page's rule (words, punctuation marks, whitespace runs): alpha, beta, gamma,
        # delta, " " and "\n"; the manual has thousands
        six = rows["words"]["tokenizer"].endswith("(all 6 of its words)")
        assert six == (source is UPLOADED), rows["words"]["tokenizer"]


def test_a_checkpoint_rewritten_in_place_is_never_served_from_the_old_weights(tmp_path, monkeypatch):
    from llmviz.training.checkpoint import save_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    def write(steps: int) -> float:
        config = TrainConfig(model="gpt-nano", tokenizer="char", context_length=8, steps=steps, lr=1e-2)
        trainer = Trainer.from_text("the cat sat on the mat\n" * 40, config)
        for _ in trainer.run():  # a few steps make the next-token distribution of "the c" peak on "a"
            pass
        save_checkpoint(tmp_path / "runs" / "lesson", trainer, trainer_state=False)
        with torch.no_grad():  # the reference: this model's own forward pass and PyTorch's softmax, outside the app
            ids = torch.tensor([trainer.dataset.tokenizer.encode("the c")])
            logits = trainer.model.eval()(ids)
            logits = logits[0] if isinstance(logits, tuple) else logits
            return torch.softmax(logits[0, -1].double(), dim=-1).max().item()

    def bars(at) -> list[float]:
        """Every bar length the page's Plotly charts draw."""
        assert_clean(at)
        found = []
        for chart in at.get("plotly_chart"):
            for trace in json.loads(chart.proto.spec).get("data", []):
                if trace.get("type") == "bar":
                    found += [v for v in trace.get("x", []) if isinstance(v, float)]
        return found

    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(tmp_path / "runs"))
    first = write(steps=1)
    before = run_app("stages/sampling.py", {"prompt": "the c"}, _picker_selected="dir:lesson")
    assert any(abs(v - first) < 1e-5 for v in bars(before)), first
    second = write(steps=40)
    assert second - first > 0.1
    after = run_app("stages/sampling.py", {"prompt": "the c"}, _picker_selected="dir:lesson")  # another session
    assert any(abs(v - second) < 1e-5 for v in bars(after)), second  # the new weights' numbers, not the cached old
    assert not any(abs(v - first) < 1e-9 for v in bars(after))
