"""The Tuning page's numbers: the shipped tuned checkpoints' figures in docs/tuning.md, recomputed; the answers side
by side scored under every model; the response mask over an example's tokens."""

import re

import pytest
import torch

from llmviz.adapt import instructions, sft
from llmviz.lessons import tuning
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def shipped():
    return tuning.shipped_models()


def documented_rows() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "tuning.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (base|SFT|DPO) \| (.+) \|$", text, flags=re.MULTILINE)
    return {name: [cell.strip() for cell in rest.split("|")] for name, rest in rows}


def test_the_documented_figures_are_what_the_shipped_checkpoints_give(shipped):
    documented = documented_rows()
    assert set(documented) == {"base", "SFT", "DPO"}
    for row in tuning.figures(shipped):
        loss, prefers, ends, reward = documented[row.model]
        assert loss == f"{row.answer_loss:.3f}"
        assert prefers == f"{row.preference_accuracy:.0%}".replace("%", " %")
        assert ends == f"{row.ends_answers:.0%}".replace("%", " %")
        assert reward == ("—" if row.reward_accuracy is None else f"{row.reward_accuracy:.0%}".replace("%", " %"))


def test_each_answer_token_is_scored_by_every_model_as_a_forward_pass_gives_it(shipped):
    answers = tuning.side_by_side(shipped, tuning.example_prompts()[0], sampled=False, seed=0, max_new_tokens=12)
    assert [a.model for a in answers] == ["base", "SFT", "DPO"]
    model, tokenizer = shipped["SFT"]
    prompt_ids = sft.encode(tokenizer, instructions.prompt_text(tuning.example_prompts()[0]))
    for answer in answers:
        ids = sft.encode(tokenizer, "".join(answer.tokens), allowed_special="all")
        assert len(answer.probabilities["SFT"]) == len(answer.tokens)
        with torch.no_grad():  # the first answer token's probability, from one plain forward pass
            logits, _ = model(torch.tensor([prompt_ids]))
        first = float(torch.softmax(logits[0, -1].double(), -1)[ids[0]])
        assert answer.probabilities["SFT"][0] == pytest.approx(first, rel=1e-4)
    assert answers[0].probabilities["base"] == pytest.approx(
        sft.answer(shipped["base"][0], tokenizer, tuning.example_prompts()[0], 12).probabilities, rel=1e-4
    )


def test_the_mask_view_marks_the_answer_and_the_end_token_only(shipped):
    _, tokenizer = shipped["base"]
    tokens = tuning.mask_view(tokenizer, "Q?", "A.")
    inside = [t for t in tokens if t.in_loss]
    assert "".join(t.text for t in inside) == "A.<|endoftext|>" and inside[-1].token_id == 4095
    assert "".join(t.text for t in tokens if not t.in_loss) == instructions.prompt_text("Q?")
