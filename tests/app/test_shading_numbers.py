"""Colour is never the only signal (issue 70): a token shaded by a number (Sampling's probability, Tuning's
probability under each model, Inside's loss per token) has that number written under it, and the shading follows
the number (a darker token never has a smaller number)."""

import html
import math
import re
from types import SimpleNamespace

import torch

from llmviz.lessons import tuning
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.training.checkpoint import load_checkpoint
from stages.sampling import DEFAULT_PROMPT
from tests.support.pages import by_label, run_page
from tests.support.paths import ROOT
from ui.panels.inside_features import activation_chips
from ui.panels.tuning import answer_card

# a token: its hover text, its shading's opacity, and the number written under it (ui.charts.token_with_number)
TOKEN = re.compile(
    r'<span title="([^"]*)"[^>]*>'
    r'<span style="[^"]*rgba\(\d+,\d+,\d+,([\d.]+)\)[^"]*">[^<]*</span>'
    r'<span style="[^"]*">([^<]*)</span></span>'
)


def shaded(markup: str) -> list[tuple[str, float, str]]:
    return [(html.unescape(tip), float(alpha), number) for tip, alpha, number in TOKEN.findall(markup)]


def darker_means_larger(tokens: list[tuple[str, float, str]], slack: float = 0.01) -> bool:
    """A darker token's number is never smaller, to ``slack`` (the opacity is written with two decimals)."""
    by_shade = sorted(tokens, key=lambda token: token[1])
    return all(float(a[2]) <= float(b[2]) + slack for a, b in zip(by_shade, by_shade[1:]))


def test_sampling_writes_each_generated_tokens_probability_under_it():
    """Greedy: the first token's number is the model's largest softmax probability at the prompt (torch here)."""
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    model.eval()
    at = run_page("stages/sampling.py", sampling_part="Generate")
    by_label(at.radio, "Method").set_value("greedy").run()
    by_label(at.button, "Generate").click().run()
    shown = next(m.value for m in at.markdown if "llmviz-generated" in m.value)
    tokens = shaded(shown)
    assert len(tokens) >= 10
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([tokenizer.encode(DEFAULT_PROMPT)]))[0][0, -1], dim=-1)
    assert tokens[0][2] == f"{float(probs.max()):.2f}"
    for tip, _, number in tokens:  # the number under the token is the p its hover gives, to two decimals
        assert abs(float(re.match(r"p = ([\d.]+)", tip).group(1)) - float(number)) <= 0.0051, (tip, number)
    assert darker_means_larger(tokens)


def test_tuning_writes_each_answer_tokens_probability_under_it():
    answer = tuning.ScoredAnswer(
        model="SFT",
        text="A list.",
        tokens=["A", " list", "."],
        ended=True,
        probabilities={"SFT": [0.5, 0.125, 0.975], "base": [0.1, 0.2, 0.3]},
    )
    tokens = shaded(answer_card(answer))
    assert [number for _, _, number in tokens] == ["0.50", "0.12", "0.97"]  # the model's own probabilities
    assert [tip for tip, _, _ in tokens] == ["p = 0.500", "p = 0.125", "p = 0.975"]
    assert darker_means_larger(tokens)


def test_inside_writes_each_tokens_loss_under_it():
    """Each token's loss under it is the loss its hover gives (−ln p), and a redder token has a larger loss."""
    at = run_page("stages/inside.py", look="Loss per token")
    shown = next(m.value for m in at.markdown if 'class="tok"' in m.value)
    tokens = shaded(shown)
    assert len(tokens) >= 5
    for tip, _, number in tokens:
        loss, p = re.match(r"loss ([\d.]+) = −ln ([\d.]+)", tip).groups()
        assert abs(float(number) - float(loss)) <= 0.0051, (tip, number)  # the same loss, to two decimals
        assert abs(math.exp(-float(loss)) - float(p)) <= 5.1e-5 + 6e-4 * float(p)  # −ln p, to the digits shown
    worst = max(float(number) for _, _, number in tokens)  # full strength: the opacity is loss / worst
    assert darker_means_larger(tokens, slack=0.01 * worst)


def test_a_features_tokens_write_their_activation_where_it_fires():
    """The feature browser's contexts: green by activation, the activation written under each token that fires."""
    tokenizer = CharTokenizer.train("abcdef ")
    view = SimpleNamespace(tokenizer=tokenizer)  # what activation_chips reads of the picked model: its tokenizer
    context = SimpleNamespace(ids=tokenizer.encode("abcd"), values=[0.0, 0.5, 2.0, 1.0], peak=2)
    chips = re.findall(
        r'<span title="activation ([\d.]+)" class="tok"[^>]*><span style="[^"]*rgba\(47,158,68,([\d.]+)\)[^"]*">'
        r'([^<]*)</span><span style="[^"]*">([^<]*)</span></span>',
        activation_chips(view, context, peak_scale=2.0),
    )
    assert [(token, number) for _, _, token, number in chips] == [
        ("a", ""),
        ("b", "0.50"),
        ("c", "2.00"),
        ("d", "1.00"),
    ]
    assert [float(alpha) for _, alpha, _, _ in chips] == [0.0, 0.25, 1.0, 0.5]  # the shading: activation / peak
